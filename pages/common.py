"""What every page shares: the sidebar (hardware and model presets), calibration, error display.

The sidebar's widgets are bound to the URL, so a link carries the presets; calibrated parameters
travel in the `cal` query parameter. Pages call base_scenario() and never re-read the sidebar.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from specmodel import Efficiency, Scenario, SpecModelError, presets

def _leave_pages_directory_mode() -> None:
    """Work around a Streamlit bug (streamlit/streamlit#9624): until some session has run app.py's
    st.navigation, Streamlit treats the `pages/` folder as old-style pages, so a shared link such as
    /live opened on a fresh server runs that page alone, without the sidebar. Every page imports
    this module first: switch the process to st.navigation mode and rerun through app.py."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


DEFAULTS = {"gpu": "L40S", "tp": 1, "target": "Llama 3.1 8B", "method": "draft_model", "ctx": 1024}
CONTEXT_CHOICES = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
# The Runs page's calibration also fits the draft's bandwidth penalty (small_model_exponent); a
# link with only the first four values keeps that parameter's default.
CAL_FIELDS = ("eta_bw", "eta_flops", "t_fixed_ms", "t_spec_overhead_ms", "small_model_exponent")


def render_sidebar() -> None:
    """Draw the shared sidebar; its values land in st.session_state under the keys below."""
    sb = st.sidebar
    sb.header("Hardware and models")
    sb.selectbox("GPU", presets.gpu_names(), index=presets.gpu_names().index(DEFAULTS["gpu"]), key="gpu",
                 bind="query-params", help="Dense BF16 TFLOPS, bandwidth and memory from the vendor's datasheet.")
    sb.selectbox("GPUs per replica (tensor parallel)", [1, 2, 4, 8], key="tp", bind="query-params")
    models = presets.model_names()
    target = sb.selectbox("Target model", models, index=models.index(DEFAULTS["target"]), key="target",
                          bind="query-params")
    sb.selectbox("Speculation method", presets.METHODS, key="method", bind="query-params",
                 format_func=lambda m: presets.find_method(m).label,
                 help="Draft cost and memory per method: a draft model runs its own forward passes; "
                      "n-gram lookup costs no GPU time; EAGLE/MTP run one extra layer; Medusa one pass of heads.")
    if st.session_state.get("method", DEFAULTS["method"]) == "draft_model":
        default_draft = presets.find_model(target).default_draft or models[0]
        sb.selectbox("Draft model", models, index=models.index(default_draft), key="draft", bind="query-params")
    sb.select_slider("Mean context length (tokens in the KV cache)", CONTEXT_CHOICES, value=DEFAULTS["ctx"],
                     key="ctx", bind="query-params",
                     help="Longer contexts fill memory (fewer sequences fit) and make every step read more KV cache.")
    eff = calibration()
    if eff is not None:
        sb.success("Calibrated on your runs: "
                   f"η_bw {eff.eta_bw:.2f}, η_flops {eff.eta_flops:.2f}, "
                   f"fixed {eff.t_fixed_ms:.2f} ms, spec overhead {eff.t_spec_overhead_ms:.2f} ms")
        if sb.button("Use uncalibrated defaults", key="reset_calibration"):
            set_calibration(None)
            st.rerun()
    else:
        sb.caption("Model parameters: defaults (η_bw 0.8, η_flops 0.6). Calibrate them on the Past runs page.")


def calibration() -> Efficiency | None:
    """The session's calibrated parameters, from session state or else from the URL's `cal`."""
    eff = st.session_state.get("calibration")
    if eff is not None:
        return eff
    raw = st.query_params.get("cal")
    if not raw:
        return None
    try:
        values = [float(x) for x in raw.split(",")]
        if len(values) not in (len(CAL_FIELDS) - 1, len(CAL_FIELDS)):
            raise ValueError
        eff = Efficiency(**dict(zip(CAL_FIELDS, values)))
        if not (0 < eff.eta_bw <= 1 and 0 < eff.eta_flops <= 1 and eff.t_fixed_ms >= 0
                and eff.t_spec_overhead_ms >= 0 and 0 <= eff.small_model_exponent <= 1):
            raise ValueError
    except ValueError:
        del st.query_params["cal"]  # an invalid link parameter falls back to the defaults
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
    st.query_params["cal"] = ",".join(f"{getattr(eff, f):.4g}" for f in CAL_FIELDS)


def base_scenario(**changes) -> Scenario:
    """The sidebar's choices as a Scenario (with calibration); keyword arguments override fields."""
    ss = st.session_state
    method = ss.get("method", DEFAULTS["method"])
    target = ss.get("target", DEFAULTS["target"])
    draft = None
    if method == "draft_model":
        draft = ss.get("draft") or presets.find_model(target).default_draft
    s = Scenario(gpu=ss.get("gpu", DEFAULTS["gpu"]), tp=int(ss.get("tp", DEFAULTS["tp"])), target=target,
                 method=method, draft=draft, context_len=int(ss.get("ctx", DEFAULTS["ctx"])),
                 efficiency=calibration() or Efficiency())
    return dataclasses.replace(s, **changes)


def show_error(exc: Exception) -> None:
    """A message for a person, never a traceback."""
    if isinstance(exc, SpecModelError):
        st.error(str(exc), icon="⚠️")
    else:
        st.error(f"Something went wrong: {exc}. Change the inputs and try again.", icon="⚠️")


def _use_context(value: int) -> None:
    st.session_state["ctx"] = value


def show_does_not_fit(exc) -> None:
    """A scenario where not even one sequence fits: what it needs, what the GPU has, the closest
    setting that fits, and a button for the longest context the sidebar offers that fits."""
    st.error(f"**Does not fit**: {str(exc).removeprefix('does not fit: ')}", icon="🧱")
    fitting = [c for c in CONTEXT_CHOICES if exc.closest_context_len is not None and c <= exc.closest_context_len]
    if fitting:
        st.button(f"Use context {fitting[-1]:,} (the longest choice that fits)", key="use_fitting_context",
                  on_click=_use_context, args=(fitting[-1],))


def chart(fig, key: str) -> None:
    st.plotly_chart(fig, key=key, width="stretch", config={"displaylogo": False})


# Last, once every name above exists: st.rerun() aborts this import, and a session importing this
# module at the same moment (several sessions opening a fresh server at once) is handed the aborted
# module object as it stands; called any earlier, that session failed with "cannot import name
# 'render_sidebar'" (found by bench/bench_load.py).
_leave_pages_directory_mode()
