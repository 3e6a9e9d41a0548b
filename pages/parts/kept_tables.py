"""Tables a page edits with st.data_editor, kept for the session: the editor's widget state is dropped when
another page runs, so its edits come back from here (the sidebar restores them before every page)."""

from __future__ import annotations

import streamlit as st

# Tables a page edits with st.data_editor, whose edits would otherwise be lost on a page switch (the
# editor's widget state is dropped when another page runs): {table key: editor key}.
_KEPT_TABLES = {"mix_table": "mix_editor"}


def remember_table(table_key: str, edited) -> None:
    """Call right after st.data_editor(st.session_state[table_key], key=...): keeps the edited table
    for this session, so the page opens with it after a visit to another page."""
    st.session_state[f"{table_key}__kept"] = (st.session_state.get(table_key), edited)


def restore_tables() -> None:
    """Before a page runs: where an editor's state is gone (another page ran) but its edits were kept,
    the edited table becomes the table the editor starts from. Kept edits of a table that was
    replaced meanwhile (a reset, a fill from runs) are not restored."""
    ss = st.session_state
    for table_key, editor_key in _KEPT_TABLES.items():
        kept = ss.get(f"{table_key}__kept")
        if kept is None or editor_key in ss:
            continue
        base, edited = kept
        del ss[f"{table_key}__kept"]
        if base is not None and ss.get(table_key) is base and edited is not None:
            ss[table_key] = edited
