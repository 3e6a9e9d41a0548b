"""Past runs: upload benchmark results, compare predicted with measured speedup, flag break-even, calibrate."""

from functools import partial

import json

import streamlit as st

from pages.common import base_scenario, calibration, chart, no_links, plain, set_calibration, show_error
from specmodel import SpecModelError
from specmodel.breakeven import review, verdict_lines
from specmodel.calibrate import calibrate, calibration_from_json
from specmodel.figures_runs import VERDICT_COLOURS, break_even_chart, predicted_vs_measured
from specmodel.report import break_even_csv, html_report
from specmodel.runs import (MAX_FILE_BYTES, SAMPLES, RunDefaults, collapse_problems, fallback_line, read_runs,
                            sample_files)

st.title("Past runs: did speculation clear break-even?")
st.caption("Upload benchmark results (plain CSV, `vllm bench serve --save-result` JSON, guidellm CSV/JSON) or load "
           "a sample. Each run is predicted at its own concurrency, k and acceptance; rows that do not name a known "
           "GPU or model use the sidebar's choice.")


@st.cache_data(show_spinner=False, max_entries=32)
def load(files, defaults, pairs, efficiency):
    table = read_runs(files, defaults, dict(pairs))
    return table, review(table.rows, efficiency)


@st.cache_data(show_spinner=False, max_entries=8)
def report_html(files, defaults, pairs, efficiency, cal_dict):
    table, result = load(files, defaults, pairs, efficiency)
    figures = [predicted_vs_measured(result.evaluated), break_even_chart(result.evaluated)]
    return html_report(result.evaluated, result.table, result.summary, figures, table.problems, cal_dict)


top_left, top_right = st.columns([3, 2])
with top_left:
    uploads = st.file_uploader("Run files", type=["csv", "tsv", "txt", "json"], accept_multiple_files=True,
                               key="run_files", max_upload_size=MAX_FILE_BYTES // 2**20, help=f"Up to {MAX_FILE_BYTES // 2**20} MB each. Formats and column "
                                                     "names: see the README (Runs section).")
with top_right:
    sample = st.pills("…or load a sample", list(SAMPLES), key="sample", bind="query-params", wrap=True)
    k_default = st.number_input("k for files that do not record it (guidellm)", 1, 16, 4, key="runs_k",
                                bind="query-params")

files = [(u.name, u.getvalue()) for u in uploads or []]
sample_box = st.container()  # an empty block unless the sample fails: the page keeps one shape
try:
    if sample:
        files += sample_files(sample)
except SpecModelError as exc:
    with sample_box:
        show_error(exc)
if not files:
    st.info("Upload one or more run files, or pick a sample above.")
    st.stop()

pairs = {}
pairing = st.container()  # one block whether or not there is anything to pair, so what follows keeps its place
if len(files) > 1:
    with pairing.expander("Pair a speculative run with its baseline by hand"):
        names = [name for name, _ in files]
        for name in names:
            choice = st.selectbox(f"Baseline for {name}", ["automatic", *[n for n in names if n != name]],
                                  key=f"pair_{name}")
            if choice != "automatic":
                pairs[name] = choice

s = base_scenario()
defaults = RunDefaults(gpu=s.gpu, target=s.target, method=s.method, draft=s.draft, tp=s.tp,
                       context_len=s.context_len, k=int(k_default))
efficiency = calibration()
try:
    table, result = load(tuple(files), defaults, tuple(sorted(pairs.items())), efficiency)
except SpecModelError as exc:
    show_error(exc)
    st.stop()

st.session_state["runs_rows"] = table.rows  # the Traffic mix page can start from these workloads
st.subheader("Runs as read")
fallbacks = fallback_line(table.fallbacks, len(table.rows))
if fallbacks:
    st.warning(no_links(fallbacks), icon="⚠️")
left, right = st.columns([3, 2])
with left:
    if table.rows.empty:
        st.error("No run could be read from the file(s): see the problems beside this message.")
    else:
        st.dataframe(table.rows, key="runs_table", hide_index=True,
                     column_order=["file", "row", "workload", "concurrency", "k", "method", "alpha",
                                   "tokens_per_step", "acceptance_from", "baseline_tok_s", "spec_tok_s",
                                   "measured_speedup", "gpu", "gpu_preset", "target_preset", "draft_preset",
                                   "context_len", "remarks"],
                     column_config={"alpha": st.column_config.NumberColumn("α", format="%.3f"),
                                    "tokens_per_step": st.column_config.NumberColumn("tokens/step", format="%.2f"),
                                    "measured_speedup": st.column_config.NumberColumn("measured ×", format="%.2f"),
                                    "baseline_tok_s": st.column_config.NumberColumn("baseline tok/s", format="%.0f"),
                                    "spec_tok_s": st.column_config.NumberColumn("spec tok/s", format="%.0f")})
with right:
    if table.problems:
        st.markdown(f"**Problems in the input** ({len(table.errors)} not loaded, {len(table.warnings)} warnings)")
        for line in collapse_problems(table.errors, with_severity=False):  # one line per repeated problem
            st.error(no_links(line), icon="⛔")
        for line in collapse_problems(table.warnings, with_severity=False):
            st.warning(no_links(line), icon="⚠️")
    else:
        st.success("Every row was read.")
if table.rows.empty:
    st.stop()

summary = result.summary
m1, m2, m3 = st.columns(3)
m1.metric("Runs loaded", len(table.rows))
m2.metric("Speedup error (MAPE)", "–" if summary["mape_speedup_pct"] is None else f"{summary['mape_speedup_pct']:.1f}%",
          help="Mean absolute percentage error of predicted vs measured speedup, over runs that have both.")
m3.metric("Verdicts agree", "–" if not summary["rows_compared"] else
          f"{summary['verdicts_agreeing']} of {summary['rows_compared']}",
          help="Predicted and measured speedup land on the same side of break-even (±5% counts as borderline).")

chart(predicted_vs_measured(result.evaluated), "runs_scatter")

st.subheader("Break-even")
st.caption("Per workload and concurrency: the measured tokens per verify step against the tokens per step at which "
           "speculation breaks even there (model). Clears: > 5% above; fails: > 5% below; borderline between. "
           "Rows without a measured tokens per step are judged by their measured speedup.")
ICONS = {"clears": "✅", "borderline": "⚠️", "fails": "❌"}
st.markdown("  \n".join(f"{ICONS[label]} **{label}**: {plain(sentence)}"  # workload names are user text
                        for label, sentence in verdict_lines(result.table)))
st.dataframe(result.table.style.map(lambda v: f"color: {VERDICT_COLOURS[v]}; font-weight: 600"
                                    if v in VERDICT_COLOURS else "", subset=["verdict"]),
             key="break_even_table", hide_index=True,
             column_config={"tokens_per_step": st.column_config.NumberColumn("tokens/step", format="%.2f"),
                            "break_even_tokens_per_step": st.column_config.NumberColumn("break-even", format="%.2f"),
                            "margin_tokens_per_step": st.column_config.NumberColumn("margin (tokens)", format="%+.2f"),
                            "margin_pct": st.column_config.NumberColumn("margin", format="percent"),
                            "measured_speedup": st.column_config.NumberColumn("measured ×", format="%.2f"),
                            "predicted_speedup": st.column_config.NumberColumn("predicted ×", format="%.2f")})
chart(break_even_chart(result.evaluated), "runs_break_even")

st.subheader("Calibration")
st.caption("Fit the model's free parameters (bandwidth and compute efficiency, fixed and speculation overheads, "
           "the draft's bandwidth penalty; each bounded to a physical range) to these runs by least squares. The "
           "fitted values apply on every page for the rest of the session.")
clicked = st.button("Calibrate on these runs", key="calibrate", type="primary")
calibration_box = st.container()  # the fit's result or its error: one block either way
if clicked:
    try:
        fitted = calibrate(table.rows)
    except SpecModelError as exc:
        with calibration_box:
            show_error(exc)
    else:
        st.session_state["runs_calibration"] = fitted.to_dict()
        st.session_state["runs_calibration_file"] = json.dumps(fitted.to_file(), indent=2)
        set_calibration(fitted.efficiency)
        st.rerun()
cal = st.session_state.get("runs_calibration") if efficiency is not None else None
if cal:
    cols = calibration_box.columns(len(cal["parameters"]))
    for col, (name, value) in zip(cols, cal["parameters"].items()):
        col.metric(name, f"{value:.3g}", help="fitted" if name in cal["fitted"] else "held at its starting value")
    before, after = cal["error_before"]["speedup_mape_pct"], cal["error_after"]["speedup_mape_pct"]
    if before is not None:
        calibration_box.success(f"Speedup error {before:.1f}% before → {after:.1f}% after calibration.")
    calibration_box.caption(cal["message"])
    if st.session_state.get("runs_calibration_file"):
        calibration_box.download_button("Calibration file (JSON, for --calibration)",
                                        st.session_state["runs_calibration_file"], file_name="calibration.json",
                                        mime="application/json", key="download_calibration")
uploaded_cal = st.file_uploader("Apply a saved calibration file", type=["json"], key="calibration_upload",
                                help="Written by this page or by `python -m specmodel runs ... --calibrate "
                                     "--save-calibration FILE.json`.")
if uploaded_cal is not None and st.session_state.get("calibration_upload_applied") != uploaded_cal.file_id:
    try:
        eff, _ = calibration_from_json(uploaded_cal.getvalue().decode("utf-8", "replace"), uploaded_cal.name)
    except SpecModelError as exc:
        with calibration_box:
            show_error(exc)
    else:
        st.session_state["calibration_upload_applied"] = uploaded_cal.file_id
        set_calibration(eff)
        st.rerun()

st.subheader("Export")
d1, d2 = st.columns(2)
d1.download_button("Break-even table (CSV)", break_even_csv(result.table), file_name="break_even.csv",
                   mime="text/csv", key="download_csv", on_click="ignore")
d2.download_button("Report (HTML, self-contained)",  # built when clicked: plotly.js inline is ~5 MB
                   partial(report_html, tuple(files), defaults, tuple(sorted(pairs.items())), efficiency, cal),
                   file_name="speculative_decoding_runs.html", mime="text/html", key="download_html",
                   on_click="ignore")  # no rerun: a rerun re-registers the deferred report under a new id
