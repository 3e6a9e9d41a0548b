"""The Past runs page's step fit: each setup's step time against the batch from its own runs, where it
stops paying, the runs that would pin the rest, and the calibration file that carries the fits."""

from __future__ import annotations

import json
from functools import partial

import streamlit as st

from pages.parts.calibration import set_step_fits
from pages.parts.display import chart
from pages.parts.text import no_links, plain
from specmodel import Efficiency
from specmodel.fit.saved import SavedFit
from specmodel.model.calibration_file import calibration_document
from specmodel.words.calibration import NOTHING_FITTED
from specmodel.runs.step_points import fit_setups, rows_by_fit, setup_points
from specmodel.show.figures.step_fit import MAX_SETUPS_DRAWN, step_fit_chart
from specmodel.words.step_fit import fit_line, line_e_words, pinned_words, runs_to_pin


def step_fit_section(rows, efficiency: Efficiency | None) -> None:
    st.subheader("Step fit: where speculation stops paying, from your own runs")
    st.caption("Each setup's plain and speculative step time against the batch, fitted on its runs (two or three "
               "concurrencies pin it; no preset needed). Filled points were fitted, open ones are predicted by the "
               "fit: set a largest concurrency to check the fit on runs it did not see.")
    top = st.number_input("Fit on runs at concurrency up to", min_value=1, value=None, step=1, key="fit_up_to",
                          placeholder="every run", help="`runs --calibrate --fit-up-to N` on the command line")
    groups, drawn, every = _fits(rows, efficiency, None if top is None else float(top))
    if not groups:
        st.info("No run gives a measured speedup or throughput to fit.")
        return
    owned = list(zip(drawn, rows_by_fit(rows, drawn)))
    measured = [[(float(r["concurrency"]), float(r["measured_speedup"]), i in f.rows)
                 for i, r in own if r.get("measured_speedup") == r.get("measured_speedup")
                 and r.get("measured_speedup") is not None] for f, own in owned]
    for f, own in owned:
        name = ", ".join(p for p in (f.workload, f.setup) if p) or "The runs"
        st.markdown(f"**{plain(name)}**: {plain(fit_line(f.fit))}")
        off_line = line_e_words(f.fit, [r.get("tokens_per_step") for i, r in own if i in f.rows])
        for note in ([_first_upper(pinned_words(f.fit))] if f.fit.usable and pinned_words(f.fit) else []) + \
                [f"To pin the rest: {line}" for line in runs_to_pin(f.fit)] + \
                ([_first_upper(off_line)] if off_line and f.fit.usable else []):
            st.caption(no_links(note))
    if len(groups) > len(drawn):
        st.caption(f"{len(groups) - len(drawn):,} more setups are fitted: the calibration file below holds every fit, "
                   "`runs --calibrate` prints them all.")
    if any(f.fit.usable for f in drawn):
        chart(step_fit_chart(drawn, measured), "step_fit_chart")
    saved = partial(_saved, rows, efficiency, groups, drawn, every)  # every setup's fit: made when asked for
    if st.button("Use these step fits on every page", key="use_step_fits",
                 help="What-if, Live, Fleet and Capacity then answer from your runs first, for the k and method "
                      "they ran; page links do not carry step fits: save the calibration file below to keep them"):
        set_step_fits(saved())
    st.download_button("Calibration file with the step fits (JSON, for --calibration)",
                       partial(_document, efficiency, saved), file_name="calibration.json",  # built when clicked
                       mime="application/json", key="download_step_fits", on_click="ignore")



def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _document(efficiency: Efficiency | None, saved) -> str:
    doc = calibration_document(efficiency or Efficiency(), NOTHING_FITTED)
    doc["step_fits"] = [f.to_dict() for f in saved()]
    return json.dumps(doc, indent=2, allow_nan=False)


def _fits(rows, efficiency: Efficiency | None, top: float | None) -> tuple[list, list, dict]:
    """(setup_points of the loaded table, the fits of the setups drawn: the first MAX_SETUPS_DRAWN, a holder
    of every setup's saved fit once made), once per table and largest concurrency (a rerun moves no run). The
    other setups are fitted when their fits are asked for (_saved): a file of hundreds of setups spent most of
    the page's run fitting setups it does not draw."""
    key = (id(rows), len(rows), efficiency, top)
    kept = st.session_state.get("step_fits_of_table")
    if kept is None or kept[0] != key:
        groups = setup_points(rows, top)
        kept = (key, groups, fit_setups(rows, groups[:MAX_SETUPS_DRAWN], efficiency), {})
        st.session_state["step_fits_of_table"] = kept
    return kept[1], kept[2], kept[3]


def _saved(rows, efficiency: Efficiency | None, groups: list, drawn: list, every: dict) -> list[SavedFit]:
    """Every setup's fit as saved (fit.saved.SavedFit), in setup_fits' order: the drawn ones', then the rest
    fitted now, once (kept in `every`; no session state: the download builds it outside the script's run)."""
    if "saved" not in every:
        fits = drawn + fit_setups(rows, groups[len(drawn):], efficiency)
        every["saved"] = [SavedFit(f.workload, f.setup, f.target, f.method, f.fit) for f in fits]
    return every["saved"]
