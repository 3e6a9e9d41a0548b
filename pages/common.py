"""What every page shares: the sidebar (hardware and model presets), calibration, error display.

The sidebar's widgets are bound to the URL, so a link carries the presets; calibrated parameters
travel in the `cal` query parameter. Pages call base_scenario() and never re-read the sidebar.
"""

from __future__ import annotations

import dataclasses
import re

import streamlit as st

from specmodel import Efficiency, Scenario, SpecModelError, links, presets, scrape
from specmodel.engines import DEFAULT_ENGINE, engine_names, find_engine

def _leave_pages_directory_mode() -> None:
    """Work around a Streamlit bug (streamlit/streamlit#9624): until some session has run app.py's
    st.navigation, Streamlit treats the `pages/` folder as old-style pages, so a shared link such as
    /live opened on a fresh server runs that page alone, without the sidebar. Every page imports
    this module first: switch the process to st.navigation mode and rerun through app.py."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


DEFAULTS = {"gpu": "L40S", "tp": 1, "target": "Llama 3.1 8B", "method": "draft_model", "ctx": 1024,
            "engine": DEFAULT_ENGINE}
CONTEXT_CHOICES = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
# The Runs page's calibration also fits the draft's bandwidth penalty (small_model_exponent); a
# link with only the first four values keeps that parameter's default.
CAL_FIELDS = links.CAL_FIELDS


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
    sb.selectbox("Serving engine", engine_names(), key="engine", bind="query-params",
                 index=engine_names().index(DEFAULTS["engine"]), format_func=lambda e: find_engine(e).label,
                 help="Each engine's own cost per step, per draft pass and per sequence (scheduling, launches, "
                      "sampling), with its source; 'No engine overhead' is kernels only.")
    sb.select_slider("Mean context length (tokens in the KV cache)", CONTEXT_CHOICES, value=DEFAULTS["ctx"],
                     key="ctx", bind="query-params",
                     help="Longer contexts fill memory (fewer sequences fit) and make every step read more KV cache.")
    eff = calibration()
    keep_calibration_in_link(eff)
    _restore_tables()
    if eff is not None:
        sb.success("Calibrated on your runs: "
                   f"η_bw {eff.eta_bw:.2f}, η_flops {eff.eta_flops:.2f}, "
                   f"fixed {eff.t_fixed_ms:.2f} ms, spec overhead {eff.t_spec_overhead_ms:.2f} ms")
        if sb.button("Use uncalibrated defaults", key="reset_calibration"):
            set_calibration(None)
            st.rerun()
    else:
        d = Efficiency()
        sb.caption(f"Model parameters: defaults (η_bw {d.eta_bw:g}, η_flops {d.eta_flops:g}, engine overheads as "
                   "listed for the engine). Calibrate them on the Past runs page.")
    note = st.session_state.pop("calibration_note", None)
    if note:
        sb.warning(note)
    with sb.popover("Copy link to this view", width="stretch"):
        st.caption("This link opens this page with these inputs" + (" and this calibration" if eff else "")
                   + ". Copy it with the icon at the right of the box.")
        st.code(links.view_link(st.context.url, st.query_params.to_dict()), language=None, wrap_lines=True)


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
                 help=f"Model parameters fitted to your runs: η_bw {eff.eta_bw:.2f}, η_flops {eff.eta_flops:.2f}, "
                      f"fixed {eff.t_fixed_ms:.2f} ms, spec overhead {eff.t_spec_overhead_ms:.2f} ms (the link "
                      "carries them as `cal`).")
    else:
        st.badge("uncalibrated", color="gray",
                 help="Model parameters at their defaults: not fitted to any runs. Calibrate on the Past runs page.")


# Tables a page edits with st.data_editor, whose edits would otherwise be lost on a page switch (the
# editor's widget state is dropped when another page runs): {table key: editor key}.
_KEPT_TABLES = {"mix_table": "mix_editor"}


def remember_table(table_key: str, edited) -> None:
    """Call right after st.data_editor(st.session_state[table_key], key=...): keeps the edited table
    for this session, so the page opens with it after a visit to another page."""
    st.session_state[f"{table_key}__kept"] = (st.session_state.get(table_key), edited)


def _restore_tables() -> None:
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
                 efficiency=calibration() or Efficiency(), engine=ss.get("engine", DEFAULTS["engine"]))
    return dataclasses.replace(s, **changes)


def move_link_credentials(url_key: str, user_key: str, password_key: str) -> None:
    """Call before the URL widget: a `user:password@` in its value moves to the unlinked user and
    password fields, so the URL the page puts in its link, the browser history and every message
    carries no secret. A link opened with credentials in it seeds the widget on the first run (the
    URL wins there): `rerun_without_credentials` after the widget makes this run again on the rerun."""
    raw = st.session_state.get(url_key)
    if not raw or "@" not in raw:
        return
    url, user, password = scrape.split_credentials(raw)
    if user is None:
        return
    st.session_state[url_key] = url  # the bound widget's value: Streamlit rewrites the link from it
    st.session_state[user_key] = user
    if password:
        st.session_state[password_key] = password
    st.session_state[f"{url_key}_moved_note"] = (
        "The user name and password in the URL were moved to the credential fields below (kept for this "
        "session only), so the page link and your browser history do not carry them.")


def rerun_without_credentials(url_key: str, url: str) -> None:
    """Call right after the URL widget. If its value still holds credentials (a link opened with
    them), rerun at once, before anything is fetched; move_link_credentials then takes them out.
    After they were moved, write the clean URL into the browser's address bar: the frontend put
    the typed value there itself, and a bound widget's programmatic value does not replace it."""
    if "@" in url and scrape.split_credentials(url)[1] is not None:
        st.rerun()
    if st.session_state.get(f"{url_key}_moved_note"):
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as params:  # Streamlit's own URL correction for bound widgets
            params.set_corrected_value(url_key, url, "string_value")


# Markdown that user text (file and workload names, labels from a server) must not trigger: emphasis,
# code, links, HTML, tables and maths; and the bare URLs (`http://`, `www.`) and e-mail addresses
# Streamlit turns into links (an escape inside them breaks the pattern; the text reads the same).
_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|~$@"})
_AUTOLINK = re.compile(r"(?i)(://|www\.)")


_LINK_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`@"})  # raw HTML is never rendered


def _no_autolinks(escaped: str) -> str:
    return _AUTOLINK.sub(lambda m: "\\:\\/\\/" if m.group(1) == "://" else m.group(1)[:3] + "\\.", escaped)


def plain(text) -> str:
    """User-supplied text made inert inside st.markdown: no formatting, links, HTML or maths."""
    return _no_autolinks(str(text).translate(_MARKDOWN_SPECIAL))


def no_links(text) -> str:
    """A message quoting user text (a file, row or workload name) for st.error / st.warning: no
    link, image, HTML or code can appear in it; ordinary punctuation stays as typed."""
    return _no_autolinks(str(text).translate(_LINK_SPECIAL).replace("](", "]\\("))


def show_error(exc: Exception) -> None:
    """A message for a person, never a traceback."""
    if isinstance(exc, SpecModelError):
        st.error(str(exc))
    else:
        st.error(f"Something went wrong: {exc}. Change the inputs and try again.")


def _use_context(value: int) -> None:
    st.session_state["ctx"] = value


def show_does_not_fit(exc) -> None:
    """A scenario where not even one sequence fits: what it needs, what the GPU has, the closest
    setting that fits, and a button for the longest context the sidebar offers that fits."""
    st.error(f"**Does not fit**: {str(exc).removeprefix('does not fit: ')}")
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
