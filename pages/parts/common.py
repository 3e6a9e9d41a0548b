"""What every page shares: the sidebar (hardware and model presets), calibration, error display.

The sidebar's widgets are bound to the URL, so a link carries the presets; calibrated parameters
travel in the `cal` query parameter. Pages call base_scenario() and never re-read the sidebar.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from pages.parts.calibration import calibration, keep_calibration_in_link, set_calibration
from pages.parts.custom_inputs import (CUSTOM_GPU, FROM_CONFIG, config_boxes, config_draft, configs_in_use, gpu_boxes,
                                       gpu_choice_changed, remember_preset_gpu, sidebar_gpu, sidebar_model)
from pages.parts.engine import engine_inputs
from pages.parts.kept_tables import remember_table, restore_tables  # noqa: F401 (Traffic mix imports it from here)
from pages.parts.share import link_popover
from pages.parts.streamlit_mode import leave_pages_directory_mode, write_bound_url
from pages.parts.method_alpha import method_changed
from pages.parts.text import no_links
from specmodel import Efficiency, Scenario, SpecModelError
from specmodel.model import presets
from specmodel.model.engines import DEFAULT_ENGINE, engine_names, with_version
from specmodel.model.scenario import resolved_engine, resolved_method, resolved_model
from specmodel.show import links
from specmodel.words.calibration import calibration_line

DEFAULTS = {"gpu": "L40S", "tp": 1, "target": "Llama 3.1 8B", "method": "draft_model", "ctx": 1024,
            "engine": DEFAULT_ENGINE}
CONTEXT_CHOICES = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]


# How each sidebar widget writes its value into the URL (a selectbox with format_func writes the label).
_URL_FORM = {"method": lambda m: resolved_method(m).label, "engine": lambda e: resolved_engine(e).label}


def _read_link_choices() -> tuple[list[str], dict[str, str]]:
    """Before the widgets: a link's sidebar values written as people write them ("h100", "eagle",
    "llama-3.1-70b") become the widgets' own, so the link opens what it names; what cannot be read
    is said (the widget keeps its default). Returns the lines to say and {key: the URL value each
    read choice gets once its widget ran}."""
    own = {"gpu": [*presets.gpu_names(), CUSTOM_GPU], "tp": ["1", "2", "4", "8"],
           "target": [*presets.model_names(), FROM_CONFIG], "draft": [*presets.model_names(), FROM_CONFIG],
           "method": [resolved_method(m).label for m in presets.METHODS],
           "engine": [resolved_engine(e).label for e in engine_names()]}
    given = {k: st.query_params[k] for k in links.VIEW_KEYS
             if k in st.query_params and k not in st.session_state and st.query_params[k] not in own[k]}
    values, problems = links.read_view_params(given)
    if "gpu" not in st.session_state and st.query_params.get("gpu") == CUSTOM_GPU:  # numbers that are not: said
        problems += links.gpu_number_problems(st.query_params.to_dict())
    for key, value in values.items():
        st.session_state[key] = value  # the bound widget starts from it
    return problems, {key: _URL_FORM.get(key, str)(value) for key, value in values.items()}


def _start(key: str, options: list, default=None) -> int:
    """A sidebar selectbox's starting index: its default, unless a link's value was put in session
    state (then index 0, so Streamlit does not see a default and a session-state value both set)."""
    return 0 if key in st.session_state else options.index(default or DEFAULTS[key])


def render_sidebar(page_path: str = "") -> None:
    """Draw the shared sidebar; its values land in st.session_state under the keys below."""
    sb = st.sidebar
    problems, read = _read_link_choices()
    for problem in problems:
        sb.warning(no_links(problem[:1].upper() + problem[1:] + "."))  # it quotes the link's text
    sb.header("Hardware and models")
    gpus = [*presets.gpu_names(), CUSTOM_GPU]
    sb.selectbox("GPU", gpus, index=_start("gpu", gpus), key="gpu", bind="query-params", on_change=gpu_choice_changed,
                 help="Dense BF16 TFLOPS, bandwidth and memory from the vendor's datasheet; Custom GPU: your own "
                      "three numbers (the link carries them).")
    remember_preset_gpu()
    gpu_boxes(sb)
    sb.selectbox("GPUs per replica (tensor parallel)", [1, 2, 4, 8], key="tp", bind="query-params")
    models = presets.model_names()
    choices = [*models, FROM_CONFIG]
    target = sb.selectbox("Target model", choices, index=_start("target", choices), key="target",
                          bind="query-params", help="A preset, or any model by its Hugging Face config.json.")
    config_boxes(sb, "target")
    sb.selectbox("Speculation method", presets.METHODS, key="method", bind="query-params",
                 format_func=lambda m: resolved_method(m).label, on_change=method_changed,
                 help="Draft cost and memory per method: a draft model runs its own forward passes; "
                      "n-gram lookup costs no GPU time; EAGLE/MTP run one extra layer; Medusa one pass of heads.")
    if st.session_state.get("method", DEFAULTS["method"]) == "draft_model":
        default_draft = (config_draft() if target == FROM_CONFIG else resolved_model(target).default_draft) or models[0]
        sb.selectbox("Draft model", choices, index=_start("draft", choices, default_draft), key="draft",
                     bind="query-params")
        config_boxes(sb, "draft")
    engine_inputs(sb, _start("engine", engine_names()))
    sb.select_slider("Mean context length (tokens in the KV cache)", CONTEXT_CHOICES, value=DEFAULTS["ctx"],
                     key="ctx", bind="query-params",
                     help="Longer contexts fill memory (fewer sequences fit) and make every step read more KV cache.")
    for key, text in read.items():  # the link now says what the widgets show, as they would write it
        write_bound_url(key, text)
    eff = calibration()
    keep_calibration_in_link(eff)
    restore_tables()
    if eff is not None:
        sb.success(f"Calibrated: {calibration_line(eff)}")
        if sb.button("Use uncalibrated defaults", key="reset_calibration"):
            set_calibration(None)
            st.rerun()
    else:
        d = Efficiency()
        sb.caption(f"Model parameters: defaults (η_bw {d.eta_bw:g}, η_flops {d.eta_flops:g}, engine overheads as "
                   "listed for the engine). Calibrate them on the Past runs page.")
    note = st.session_state.pop("calibration_note", None)
    if note:
        sb.warning(no_links(note))
    link_popover(sb, eff is not None, page_path, configs_in_use())


def base_scenario(**changes) -> Scenario:
    """The sidebar's choices as a Scenario (with calibration); keyword arguments override fields."""
    ss = st.session_state
    method = ss.get("method", DEFAULTS["method"])
    target = sidebar_model("target") or DEFAULTS["target"]  # a preset's name, or the Model of a config.json
    draft = (sidebar_model("draft") or resolved_model(target).default_draft) if method == "draft_model" else None
    engine = with_version(ss.get("engine", DEFAULTS["engine"]), ss.get("engine_version"))
    s = Scenario.from_names(gpu=sidebar_gpu(), tp=int(ss.get("tp", DEFAULTS["tp"])), target=target,
                 method=method, draft=draft, context_len=int(ss.get("ctx", DEFAULTS["ctx"])),
                 efficiency=calibration() or Efficiency(), engine=engine)
    return dataclasses.replace(s, **changes)


def base_scenario_or_stop(**changes) -> Scenario:
    """base_scenario, or where the sidebar's choices make none (a Custom GPU's number out of its range, a
    config.json not given) its message in the page, and the page stops there: never a traceback."""
    try:
        return base_scenario(**changes)
    except SpecModelError as exc:
        st.error(no_links(str(exc)))
        st.stop()


# Last, once every name above exists: st.rerun() aborts this import, and a session importing this
# module at the same moment (several sessions opening a fresh server at once) is handed the aborted
# module object as it stands; called any earlier, that session failed with "cannot import name
# 'render_sidebar'" (found by bench/bench_load.py).
leave_pages_directory_mode()
