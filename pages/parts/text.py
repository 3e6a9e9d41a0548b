"""User text (file, workload and model names, labels from a server, values from a link) made inert in
what Streamlit renders as Markdown: no formatting, link, image, HTML or maths can come from it.

Both are `specmodel.text.safe_text`, the one text-safety function (control characters removed, cut,
Markdown inert); these names keep the pages short."""

from __future__ import annotations

from specmodel.text import MAX_LABEL_CHARS, MAX_MESSAGE_CHARS, safe_text


def plain(text, limit: int = MAX_MESSAGE_CHARS) -> str:
    """User-supplied text made inert inside st.markdown: no formatting, links, HTML or maths."""
    return safe_text(text, limit, markdown="plain")


def name(text) -> str:
    """A name (file, workload, model, label) inside st.markdown: cut to 200 characters and inert."""
    return safe_text(text, MAX_LABEL_CHARS, markdown="plain")


def no_links(text, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A message quoting user text (a file, row or workload name) for st.error / st.warning: no
    link, image, HTML or code can appear in it; ordinary punctuation stays as typed."""
    return safe_text(text, limit, markdown="message")


def own_words(text, limit: int = MAX_MESSAGE_CHARS) -> str:
    """The app's own sentence that marks `code` (a launch flag, a config key): its code spans render as
    code; no link, image or HTML can appear in it."""
    return safe_text(text, limit, markdown="code_message")


def code(text, limit: int = MAX_LABEL_CHARS) -> str:
    """Text for inside a Markdown code span (`` `{code(key)}` ``): cleaned and cut, its backticks removed
    (nothing else is interpreted inside a code span, so escapes would show)."""
    return safe_text(text, limit).replace("`", "")
