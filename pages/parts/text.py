"""User text (file, workload and model names, labels from a server, values from a link) made inert in
what Streamlit renders as Markdown: no formatting, link, image, HTML or maths can come from it."""

from __future__ import annotations

import re

# Markdown that user text (file and workload names, labels from a server) must not trigger: emphasis,
# code, links, HTML, tables and maths; and the bare URLs (`http://`, `www.`) and e-mail addresses
# Streamlit turns into links (an escape inside them breaks the pattern; the text reads the same).
_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|~$@"})
_AUTOLINK = re.compile(r"(?i)(://|www\.)")


_LINK_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`@"})  # raw HTML is never rendered


def _no_autolinks(escaped: str) -> str:
    return _AUTOLINK.sub(lambda m: "\\:\\/\\/" if m.group(1) == "://" else m.group(1)[:3] + "\\.", escaped)


def plain(text) -> str:
    """User-supplied text made inert inside st.markdown: no formatting, links, HTML or maths."""
    return _no_autolinks(str(text).translate(_MARKDOWN_SPECIAL))


def no_links(text) -> str:
    """A message quoting user text (a file, row or workload name) for st.error / st.warning: no
    link, image, HTML or code can appear in it; ordinary punctuation stays as typed."""
    return _no_autolinks(str(text).translate(_LINK_SPECIAL).replace("](", "]\\("))
