"""The decision a page leads with: one line per workload (specmodel.show.decisions, the words of
specmodel.words.decision_line), each with the runs that would pin an open threshold under it, in a box of
its own above everything else; and the box under the answer that keeps the why, the caveats and the notes
out of the way until opened."""

from __future__ import annotations

import streamlit as st

from pages.parts.display import show_notes, show_verdict
from pages.parts.text import no_links, plain
from specmodel.notes import severity_of

HELP = ("What to deploy: the k to run and the batch above which to turn speculation off. In brackets, the range "
        "of batches the model's 80% band (or your runs' fit) leaves for that threshold (N+: still paying at the "
        "largest batch looked at); \"your runs\": your own runs' step fit decided it, not the model.")
DECISION_KEY = "decision_lines"  # the box's key: browser tests find the decision line by it


def decision_slot(where=st):
    """The place the decision goes, first on the page: filled once the page has its answer."""
    return where.container(key=DECISION_KEY)


def show_decisions(slot, decided, more: int = 0) -> None:
    """Each decision (show.decisions.Decided, or a plain line) in bold, the runs that would pin its threshold
    under it, and how many workloads the lines leave to the tables below."""
    with slot.container(border=True):
        for i, d in enumerate(decided):
            line, extras = (d, ()) if isinstance(d, str) else (d.line, (d.per_batch, d.off_note, d.pin))
            st.markdown(f"**{plain(line)}**", help=None if i else HELP)
            for extra in filter(None, extras):  # a schedule across k as vLLM takes it; the runs that would pin it
                st.caption(no_links(extra))
        if more:
            st.caption(no_links(f"… and {more} more workload(s): the table below has each"))


def why_box(label: str, lines=(), notes=(), where=st, verdict: tuple[str, str, str] | None = None,
            notes_as: str = "info") -> None:
    """The why, the caveats and the notes behind an expander (closed), so the decision and the first chart
    come first: `verdict` (tone, headline, advice) in its box, then `lines`, then the notes (as `notes_as` says:
    "info" boxes or "caption"s); a warning stays in view above it. Nothing where there is nothing to say."""
    lines = [line for line in lines if line]
    show_notes([n for n in notes if severity_of(n) == "warning"], where=where)  # a warning stays in view
    quiet = [n for n in notes if severity_of(n) != "warning"]
    if not lines and not quiet and verdict is None:
        return
    with where.expander(label):
        if verdict is not None:
            show_verdict(*verdict)
        for line in lines:
            st.caption(no_links(line))
        show_notes(quiet, info=notes_as)
