"""The answer of the session's step fit (the user's own runs) for the scenario on a page, before the model's."""

from __future__ import annotations

import streamlit as st

from pages.parts.calibration import step_fits
from pages.parts.text import no_links, plain
from specmodel.fit.saved import chosen_fit
from specmodel.words.step_fit import fit_decision

_BOX = {"pays_off": st.success, "loses": st.error, "uncertain": st.warning}


def session_fit(scenario):
    """The session's step fit for the scenario's k and method (a SavedFit), or None."""
    fits = step_fits()
    return chosen_fit(fits, scenario.k, scenario.method.name) if fits else None


def show_step_fit(scenario, tokens_per_step: float | None = None) -> bool:
    """One line from the step fit of the scenario's k and method at its concurrency, where the session has
    one (True); nothing otherwise. tokens_per_step: the page's E, where it is the user's rather than the runs'.
    Where it stops paying is the page's decision line (pages.parts.decision)."""
    saved = session_fit(scenario)
    if saved is None:
        if step_fits():
            st.caption(no_links(f"Your runs' step fits do not cover k = {scenario.k} with {scenario.method.name}: "
                                "the verdict below is the model's alone."))
        return False
    decision, words = fit_decision(saved.fit, float(scenario.concurrency), tokens_per_step)
    at = "" if tokens_per_step is None else f" at E = {tokens_per_step:.2f} tokens per step"
    _BOX[decision](plain(f"Your runs ({saved.label}){at}: {words}. The model's verdict follows."))
    return True
