"""The Past runs page's answer: the review of the files (read once per input, kept across pages and
reruns), the decision line of each workload it leads with (specmodel.show.runs_decisions: the runs' own step
fit where it answers, else the model's), and the counts under it."""

from __future__ import annotations

import streamlit as st

from pages.parts.calibration import calibration_badge
from pages.parts.decision import show_decisions
from pages.parts.display import show_error
from specmodel import SpecModelError
from specmodel.runs.headlines import as_read
from specmodel.show import runs_view
from specmodel.show.runs_decisions import runs_decisions

LOADED = "runs_loaded"  # (load key, RunTable, Review) of the last load: kept across pages and reruns
DECIDED = "runs_decided"  # (load key, decision lines, workloads left out) of the last load


def reviewed(files, defaults, pairs, efficiency):
    """(RunTable, Review) of the files, read and reviewed once per input (runs_view.load_key), with a progress
    bar while a large file loads; the page stops with the message where they cannot be read."""
    key = runs_view.load_key(files, defaults, pairs, efficiency)
    loaded = st.session_state.get(LOADED)
    # on every run, loaded or not: the page keeps one shape, so what the user opened below stays open on a rerun
    holder = st.empty()  # a progress bar while a large file loads; each update is where a closed tab stops the work
    if loaded is not None and loaded[0] == key:
        return loaded[1], loaded[2]
    bar = []

    def show_progress(fraction: float, text: str) -> None:
        if not bar:
            bar.append(holder.progress(0.0))
        bar[0].progress(fraction, text=text)

    try:
        table, result = runs_view.read_and_review(files, defaults, pairs, efficiency, show_progress)
    except SpecModelError as exc:
        show_error(exc)
        st.stop()
    holder.empty()
    st.session_state[LOADED] = (key, table, result)
    st.session_state["runs_rows"] = table.rows  # the Traffic mix page can start from these workloads
    return table, result


def show_runs_decisions(slot, result, efficiency) -> None:
    """The decision line of each workload (the first few; the tables have the rest), first on the page, from the
    fits the step-fit section below shows (its "Fit on runs at concurrency up to", read from the session: the
    widget is drawn further down)."""
    top = st.session_state.get("fit_up_to")
    key = (st.session_state[LOADED][0] if LOADED in st.session_state else None, top)
    decided = st.session_state.get(DECIDED)
    if decided is None or decided[0] != key:
        try:
            decided = (key, *runs_decisions(result.evaluated, efficiency, top_batch=None if top is None else float(top)))
        except SpecModelError as exc:
            show_error(exc)
            return
        st.session_state[DECIDED] = decided
    if decided[1]:
        show_decisions(slot, decided[1], decided[2])


def shown_decisions() -> tuple[list, int]:
    """The decision lines the page leads with (show_runs_decisions) and how many workloads they leave out: the
    HTML report leads with the same."""
    decided = st.session_state.get(DECIDED)
    return (decided[1], decided[2]) if decided else ([], 0)


def show_counts(table, result) -> None:
    """Runs loaded, the model's error, how often its verdict agrees, and the verdicts, in one row of metrics."""
    summary = result.summary
    counts = runs_view.verdict_counts(as_read(result.evaluated))  # "uncertain": a predicted verdict whose band straddles 1.0
    m1, m2, m3, m4, m5 = st.columns([2, 2, 2, 3, 1.3], vertical_alignment="bottom")
    m1.metric("Runs loaded", f"{len(table.rows):,}")
    error, error_help = runs_view.model_error(summary)  # runs the model predicted; those it did not are counted
    m2.metric("Model error", error, help=error_help)
    m3.metric("Verdicts agree", runs_view.agreeing_share(summary),  # a share: "302 of 331" is cut at 1280 px
              help=runs_view.agreeing_help(summary))
    label, value, uncertain = runs_view.verdict_metric(counts)
    m4.metric(label, value, uncertain, "off", delta_arrow="off", help=runs_view.verdict_metric_help(counts))
    with m5:
        calibration_badge()
