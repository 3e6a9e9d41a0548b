"""How pages show things: user text made inert in Markdown, errors without tracebacks, charts."""

from __future__ import annotations

import re

import streamlit as st

from pages.common import CONTEXT_CHOICES
from specmodel import SpecModelError


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


def show_error(exc: Exception) -> None:
    """A message for a person, never a traceback."""
    if isinstance(exc, SpecModelError):
        st.error(str(exc))
    else:
        st.error(f"Something went wrong: {exc}. Change the inputs and try again.")


def _use_context(value: int) -> None:
    st.session_state["ctx"] = value


def show_does_not_fit(exc) -> None:
    """A scenario where not even one sequence fits: what it needs, what the GPU has, the closest
    setting that fits, and a button for the longest context the sidebar offers that fits."""
    st.error(f"**Does not fit**: {str(exc).removeprefix('does not fit: ')}")
    fitting = [c for c in CONTEXT_CHOICES if exc.closest_context_len is not None and c <= exc.closest_context_len]
    if fitting:
        st.button(f"Use context {fitting[-1]:,} (the longest choice that fits)", key="use_fitting_context",
                  on_click=_use_context, args=(fitting[-1],))


def chart(fig, key: str) -> None:
    st.plotly_chart(fig, key=key, width="stretch", config={"displaylogo": False})
