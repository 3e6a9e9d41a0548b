"""The Past runs page's calibration section: fit the model on the loaded runs, show the fit, offer
its file, and apply a saved one. The fitted values apply on every page (pages/parts/calibration.py)."""

from __future__ import annotations

import json

import streamlit as st

from pages.parts.calibration import set_calibration, set_step_fits
from pages.parts.display import show_error
from pages.parts.text import no_links, plain
from specmodel import Efficiency, SpecModelError
from specmodel.model.calibration_file import calibration_from_json, parameter_rows, require_physical
from specmodel.fit.saved import saved_fits
from specmodel.runs.calibrate import calibrate, no_preset_to_fit
from specmodel.show import runs_view as runs_view


def calibration_panel(rows, efficiency: Efficiency | None) -> None:
    """The Past runs page's calibration: fit on the loaded runs, show the fitted values and the error
    before and after, offer the calibration file, and apply a saved one."""
    st.subheader("Calibration")
    st.caption("Fit the model's free parameters (bandwidth and compute efficiency, fixed and speculation overheads, "
               "the draft's bandwidth penalty, the engine overhead scale; each bounded to a physical range, shown beside "
               "it below) to these runs by least squares. The "
               "fitted values apply on every page for the rest of the session, and travel in the page link (`cal`).")
    fit_rows, fit_note = runs_view.calibration_rows(rows)
    st.caption(no_links(f"Large file: {fit_note}." if fit_note else ""))
    nothing = no_preset_to_fit(fit_rows)  # every run judged on its measurement alone: no button to press for an error
    clicked = st.button("Calibrate on these runs", key="calibrate", type="primary", disabled=nothing is not None)
    box = st.container()  # the fit's result or its error: one block either way
    if nothing:
        box.info(plain(nothing))
    if clicked:
        try:
            with st.spinner("Fitting …"):
                fitted = calibrate(fit_rows)
                require_physical(fitted.efficiency, "the fit")  # bounded by calibrate; never applied if not
        except SpecModelError as exc:
            with box:
                show_error(exc)
        else:
            if fitted.fitted:
                st.session_state["runs_calibration"] = fitted.to_dict()
                st.session_state["runs_calibration_file"] = json.dumps(fitted.to_file(), indent=2)
                set_calibration(fitted.efficiency)
                st.rerun()
            box.info(plain(fitted.message))  # nothing would improve: the defaults stay, said as such
    cal = fitted_calibration(efficiency)
    if cal:
        box.dataframe(parameter_rows(efficiency, cal["fitted"], cal["held"]), hide_index=True, width="stretch")
        before, after = cal["error_before"]["speedup_mape_pct"], cal["error_after"]["speedup_mape_pct"]
        if before is not None:
            box.success(f"Speedup error {before:.1f}% before → {after:.1f}% after calibration.")
        box.caption(no_links(cal["message"]))
        if st.session_state.get("runs_calibration_file"):
            box.download_button("Calibration file (JSON, for --calibration)", st.session_state["runs_calibration_file"],
                                file_name="calibration.json", mime="application/json", key="download_calibration")
    uploaded = st.file_uploader("Apply a saved calibration file", type=["json"], key="calibration_upload",
                                help="Written by this page or by `python -m specmodel runs ... --calibrate "
                                     "--save-calibration FILE.json`.")
    if uploaded is not None and st.session_state.get("calibration_upload_applied") != uploaded.file_id:
        try:
            eff, doc = calibration_from_json(uploaded.getvalue().decode("utf-8", "replace"), uploaded.name)
            fits = saved_fits(doc, uploaded.name)
        except SpecModelError as exc:
            with box:
                show_error(exc)
        else:
            st.session_state["calibration_upload_applied"] = uploaded.file_id
            set_step_fits(fits)
            set_calibration(eff)
            st.rerun()


def fitted_calibration(efficiency: Efficiency | None) -> dict | None:
    """The last fit on the Past runs page (its values and errors), while its calibration is applied."""
    return st.session_state.get("runs_calibration") if efficiency is not None else None
