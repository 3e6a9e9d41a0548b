"""How pages show things: user text made inert in Markdown, errors without tracebacks, verdicts
and notes in the box their tone and severity call for, metric rows, charts."""

from __future__ import annotations

import functools

import streamlit as st

from pages.parts.common import CONTEXT_CHOICES
from pages.parts.text import no_links
from specmodel import SpecModelError
from specmodel.notes import severity_of


def show_error(exc: Exception) -> None:
    """A message for a person, never a traceback."""
    if isinstance(exc, SpecModelError):
        st.error(no_links(str(exc)))
    else:
        st.error(no_links(f"Something went wrong: {exc}. Change the inputs and try again."))


def _use_context(value: int) -> None:
    st.session_state["ctx"] = value


def show_does_not_fit(exc) -> None:
    """A scenario where not even one sequence fits: what it needs, what the GPU has, the closest
    setting that fits, and a button for the longest context the sidebar offers that fits."""
    st.error(f"**Does not fit**: {no_links(str(exc).removeprefix('does not fit: '))}")
    fitting = [c for c in CONTEXT_CHOICES if exc.closest_context_len is not None and c <= exc.closest_context_len]
    if fitting:
        st.button(f"Use context {fitting[-1]:,} (the longest choice that fits)", key="use_fitting_context",
                  on_click=_use_context, args=(fitting[-1],))


def chart(fig, key: str) -> None:
    st.plotly_chart(fig, key=key, width="stretch", config={"displaylogo": False})


_TONE_BOX = {"good": "success", "caution": "warning", "bad": "error", "neutral": "info"}  # notes.TONES
_ALERTS = frozenset(_TONE_BOX.values())


def alert(box, body, **kwargs):
    """st.success/info/warning/error(body), telling Streamlit there is no icon to look for where the
    body cannot start with one (an ASCII character other than ":" that no keycap mark follows), so the
    same box is drawn. Otherwise Streamlit loads its emoji catalog for any non-ASCII body: one regex
    of every emoji, about a tenth of a second of the first page's run on a loaded 2-core machine."""
    head = str(body).strip()[:2]
    if "icon" not in kwargs and head[:1] != ":" and head.isascii():
        kwargs["icon"] = ""
    return box(body, **kwargs)


def tone_box(tone: str, where=st):
    """The box a verdict's tone calls for (specmodel.notes.TONES): st.success, st.warning, st.error, st.info."""
    return functools.partial(alert, getattr(where, _TONE_BOX[tone]))


def show_verdict(tone: str, headline: str, advice: str = "", where=st, under: str | None = None) -> None:
    """A verdict in the box its tone calls for: the headline in bold (first letter capitalised),
    then the advice; `under`, a line under the box (the model's band)."""
    tone_box(tone, where)(f"**{no_links(headline[:1].upper() + headline[1:])}**"
                          + (f" — {no_links(advice)}." if advice else ""))
    if under:
        where.caption(no_links(under))


def show_notes(notes, where=st, info: str = "caption", heading: str | None = None) -> None:
    """Notes as their severity says: a warning in a warning box, the others as `info` says
    ("caption", or "info" where a page shows them in an info box). With a heading (Markdown,
    already made inert), one bulleted list under it instead, warnings marked ⚠️. User text
    inside a note (a model or workload name) cannot become a link."""
    if heading is not None:
        where.markdown(f"**{heading}**\n" + "\n".join(
            f"- {'⚠️ ' if severity_of(n) == 'warning' else ''}{no_links(n)}" for n in notes))
        return
    for note in notes:
        box = where.warning if severity_of(note) == "warning" else getattr(where, info)
        if box.__name__ in _ALERTS:
            alert(box, no_links(note))
        else:
            box(no_links(note))


def show_readouts(readouts, where=st) -> None:
    """Metric boxes, one per specmodel.show.readouts.Readout, each with its caption below: one row of up
    to five, else two rows (six boxes in a row cut their labels at 1280 wide)."""
    per_row = len(readouts) if len(readouts) <= 5 else -(-len(readouts) // 2)
    for start in range(0, len(readouts), per_row):
        row = readouts[start:start + per_row]
        for col, r in zip(where.columns(per_row), row):
            col.metric(r.label, r.value, delta=r.delta, help=r.help)
            if r.caption:
                col.caption(no_links(r.caption))


def sidebar_names(assumed: str):
    """How the live verdict's notes name a page's inputs (an InputNames): the sidebar's target, and
    `assumed` for where the page takes the α and k it assumes for a server that measures none."""
    from specmodel.metrics.live import InputNames  # the scraper loads with the pages that scrape

    return InputNames(target="the sidebar's target", choose_target="choose {model} in the sidebar", assumed=assumed,
                      give_k="give k (the server's draft tokens per step) under Connection and model options")


def column_config(columns: dict, widths: dict | None = None, pinned: tuple = (), as_text: tuple = ()) -> dict:
    """st.dataframe's column_config from {column: (heading, number format or None, help or None[, width])};
    `widths` ({column: pixels or "small"/"medium"/"large"}) overrides a column's width where a page lays
    the table out to fit, `pinned` columns stay in view when a table scrolls sideways, `as_text` number
    columns already written as text (runs_view.blank_where_missing) stay aligned right as numbers are."""
    config = {}
    for c, (head, fmt, tip, *width) in columns.items():
        size = (widths or {}).get(c, width[0] if width else None)
        common = {"help": tip, "width": size, "pinned": c in pinned or None}
        if c in as_text:
            config[c] = st.column_config.TextColumn(head, alignment="right", **common)
        elif fmt:
            config[c] = st.column_config.NumberColumn(head, format=fmt, **common)
        else:
            config[c] = st.column_config.Column(head, **common)
    return config
