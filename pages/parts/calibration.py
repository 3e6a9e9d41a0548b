"""The session's calibrated model parameters: kept in session state and in every page's link (`cal`),
so a link copied from any page carries the calibration its numbers were computed with."""

from __future__ import annotations

import streamlit as st

from specmodel import Efficiency, SpecModelError
from specmodel.show import links
from specmodel.words.calibration import calibration_line


def keep_calibration_in_link(eff: Efficiency | None) -> None:
    """Put the session's calibration into this page's URL. Following a sidebar link opens the next
    page without the previous page's query parameters; writing `cal` on every run keeps it there,
    so a link copied from any page carries the calibration its numbers were computed with."""
    if eff is None:
        return
    value = links.efficiency_to_link(eff)
    if st.query_params.get("cal") != value:
        st.query_params["cal"] = value


def calibration_badge() -> None:
    """A small badge beside a verdict: whether the model's parameters are fitted to the user's runs."""
    eff = calibration()
    if eff is not None:
        st.badge("calibrated", color="green",
                 help=f"Model parameters calibrated: {calibration_line(eff)} (the link carries every one as `cal`).")
    else:
        st.badge("uncalibrated", color="gray",
                 help="Model parameters at their defaults: not fitted to any runs. Calibrate on the Past runs page.")


def calibration() -> Efficiency | None:
    """The session's calibrated parameters, from session state or else from the URL's `cal`
    (checked against calibration's own bounds: an invalid one is dropped with a visible note)."""
    eff = st.session_state.get("calibration")
    if eff is not None:
        return eff
    raw = st.query_params.get("cal")
    if not raw:
        return None
    try:
        eff = links.efficiency_from_link(raw)
    except SpecModelError as exc:
        del st.query_params["cal"]  # an invalid link parameter falls back to the defaults
        st.session_state["calibration_note"] = f"{exc}: the link's calibration was ignored (defaults used)."
        return None
    st.session_state["calibration"] = eff
    return eff


def set_calibration(eff: Efficiency | None) -> None:
    """Apply calibrated parameters on every page for the rest of the session (and in the URL)."""
    if eff is None:
        st.session_state.pop("calibration", None)
        st.query_params.pop("cal", None)
        return
    st.session_state["calibration"] = eff
    st.query_params["cal"] = links.efficiency_to_link(eff)



def step_fits() -> list:
    """The session's saved step fits (specmodel.fit.saved.SavedFit): from the Past runs page or a calibration
    file. They are not carried in page links (a fit is kilobytes): a link says so where it is copied."""
    return st.session_state.get("step_fits", [])


def set_step_fits(fits: list) -> None:
    """Use these step fits on every page for the rest of the session ([] forgets them)."""
    st.session_state["step_fits"] = list(fits)
