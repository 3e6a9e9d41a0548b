"""Past runs: upload benchmark results; measured verdicts first, the model's beside them; calibrate."""

from functools import partial

import json

import streamlit as st

from pages.calibration import calibration, calibration_badge, set_calibration
from pages.common import base_scenario
from pages.display import chart, no_links, plain, show_error
from specmodel import SpecModelError
from specmodel.calibrate import calibrate, calibration_from_json
from specmodel.figures_runs import VERDICT_COLOURS, break_even_chart, predicted_vs_measured
from specmodel.limits import MAX_ROWS_TOTAL, MAX_UPLOAD_MB
from specmodel.report import break_even_csv, html_report
from specmodel.runs import FALLBACK_KINDS, SAMPLES, RunDefaults, read_runs, sample_files
from specmodel.runs import view as runs_view
from specmodel.runs.review import model_headline, review, verdict_lines

UPLOADS = "runs_uploads"  # (name, bytes) of the files uploaded in this session: kept across pages
LOADED = "runs_loaded"  # (load key, RunTable, Review) of the last load: kept across pages and reruns

st.title("Past runs: did speculation pay off where it ran?")
st.caption("A run with a measured speedup is judged by it; the model's prediction for the same run (its GPU, models, "
           "k, acceptance, concurrency) sits beside it. Rows naming no known GPU or model use the sidebar's.")

top_left, top_right = st.columns([3, 2])
with top_left:
    returning = "run_files" not in st.session_state  # the uploader's state is gone after another page ran
    uploads = st.file_uploader("Run files", type=["csv", "tsv", "txt", "json"], accept_multiple_files=True,
                               key="run_files", max_upload_size=MAX_UPLOAD_MB,
                               help=f"Up to {MAX_UPLOAD_MB} MB each and {MAX_ROWS_TOTAL:,} runs in all "
                                    "(the first ones load). Formats and column names: docs/formats.md.")
with top_right:
    sample = st.pills("…or load a sample", list(SAMPLES), key="sample", bind="query-params", wrap=True)
    k_default = st.number_input("k for files that do not record it (guidellm)", 1, 16, 4, key="runs_k",
                                bind="query-params")

# Uploaded files live in the session: they are still here after a visit to another page.
if uploads:
    st.session_state[UPLOADS] = [(u.name, u.getvalue()) for u in uploads]
elif not returning and st.session_state.get("runs_uploader_had_files"):
    st.session_state.pop(UPLOADS, None)  # the user removed them from the uploader
st.session_state["runs_uploader_had_files"] = bool(uploads)
files = list(st.session_state.get(UPLOADS, []))
kept_box = st.container()  # one block whether or not files are kept, so what follows keeps its place
if files and not uploads:
    kept_note, kept_clear = kept_box.columns([5, 1], vertical_alignment="center")
    kept_note.caption("Using the files uploaded earlier in this session: "
                      + ", ".join(plain(name) for name, _ in files))
    if kept_clear.button("Clear", key="runs_clear_uploads", help="Forget the files uploaded earlier"):
        st.session_state.pop(UPLOADS, None)
        st.rerun()
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
                                  key=f"pair_{name}", persist_state="session")
            if choice != "automatic":
                pairs[name] = choice

s = base_scenario()
defaults = RunDefaults(gpu=s.gpu, target=s.target, method=s.method, draft=s.draft, tp=s.tp,
                       context_len=s.context_len, k=int(k_default),
                       said_as=dict.fromkeys(FALLBACK_KINDS, "the sidebar choice"))
efficiency = calibration()
key = runs_view.load_key(files, defaults, pairs, efficiency)
loaded = st.session_state.get(LOADED)
holder = st.empty()  # a progress bar while a large file loads; each update is where a closed tab stops the work
if loaded is None or loaded[0] != key:
    bar = []

    def report(stage: str, share: tuple[float, float], done: int, total: int) -> None:
        if total < runs_view.PROGRESS_FROM_ROWS:
            return
        if not bar:
            bar.append(holder.progress(0.0))
        bar[0].progress(min(1.0, share[0] + share[1] * done / total), text=f"{stage}: {done:,} of {total:,} runs")

    try:
        table = read_runs(files, defaults, pairs, progress=partial(report, "Reading", (0.0, 0.6)))
        result = review(table.rows, efficiency, progress=partial(report, "Predicting", (0.6, 0.4)))
    except SpecModelError as exc:
        show_error(exc)
        st.stop()
    holder.empty()
    st.session_state[LOADED] = (key, table, result)
    st.session_state["runs_rows"] = table.rows  # the Traffic mix page can start from these workloads
else:
    _, table, result = loaded

problems = runs_view.problem_lines(table)
with st.expander(runs_view.problems_label(table), expanded=table.rows.empty):
    show = {"error": st.error, "warning": st.warning, "info": st.caption}
    for severity, line in problems:
        show.get(severity, st.caption)(no_links(line))
if table.rows.empty:
    st.error("No run could be read from the file(s): see the problems above.")
    st.stop()

summary = result.summary
headline = model_headline(summary, result.table)
(st.warning if summary.get("model_disagreements") else st.info)(plain(headline))
counts = runs_view.verdict_counts(result.evaluated)
m1, m2, m3, m4, m5 = st.columns([2, 2, 2, 3, 1.3], vertical_alignment="bottom")
m1.metric("Runs loaded", f"{len(table.rows):,}")
m2.metric("Speedup error (MAPE)", "–" if summary["mape_speedup_pct"] is None else f"{summary['mape_speedup_pct']:.1f}%",
          help="Mean absolute percentage error of predicted vs measured speedup, over runs that have both.")
m3.metric("Verdicts agree", "–" if not summary["rows_compared"] else
          f"{runs_view.compact(summary['verdicts_agreeing'])} of {runs_view.compact(summary['rows_compared'])}",
          help="The model's verdict and the measured one are the same (±5% counts as borderline).")
m4.metric("Pay off · borderline · lose", " · ".join(runs_view.compact(counts[v]) for v in ("clears", "borderline", "fails")),
          help=f"{counts['measured']:,} verdicts from a measured speedup, {counts['predicted']:,} predicted (runs with "
               "only an acceptance).")
with m5:
    calibration_badge()

LABELS = {"clears": ":green[**clears**]", "borderline": ":orange[**borderline**]", "fails": ":red[**fails**]"}
left, right = st.columns([3, 2])
with left:
    shown, note = runs_view.shown_rows(result.evaluated, runs_view.CHART_RUNS_SHOWN, "The chart", spread=True)
    chart(predicted_vs_measured(shown), "runs_scatter")
    st.caption(note or "")
with right:
    table_shown, note = runs_view.shown_rows(result.table, runs_view.TABLE_ROWS_SHOWN, "The table")
    styled = table_shown.style.map(lambda v: f"color: {VERDICT_COLOURS[v]}; font-weight: 600"
                                   if v in VERDICT_COLOURS else "", subset=["verdict", "predicted_verdict"]) \
        if len(table_shown) <= 1000 else table_shown  # styling every cell of a long table costs seconds
    st.dataframe(styled, key="break_even_table", hide_index=True, height=440,
                 column_order=["verdict", "workload", "concurrency", "measured_speedup", "predicted_verdict",
                               "predicted_speedup", "disagreement", "k", "tokens_per_step", "break_even_tokens_per_step",
                               "margin_pct", "advice", "verdict_basis", "margin_tokens_per_step", "method",
                               "gpu_preset", "file", "row"],
                 column_config={"verdict": st.column_config.TextColumn("verdict", width="small", help="From the "
                                                                       "measured speedup where there is one; else "
                                                                       "predicted"),
                                "workload": st.column_config.TextColumn("workload", width="small"),
                                "predicted_verdict": st.column_config.TextColumn("model"),
                                "disagreement": st.column_config.TextColumn("model vs measured"),
                                "tokens_per_step": st.column_config.NumberColumn("tokens/step", format="%.2f"),
                                "break_even_tokens_per_step": st.column_config.NumberColumn("break-even", format="%.2f"),
                                "margin_tokens_per_step": st.column_config.NumberColumn("margin (tokens)",
                                                                                        format="%+.2f"),
                                "margin_pct": st.column_config.NumberColumn(
                                    "margin", format="percent", help="Of the verdict's number: measured speedup − 1, "
                                    "or measured ÷ break-even tokens per step − 1 where predicted"),
                                "measured_speedup": st.column_config.NumberColumn("measured ×", format="%.2f"),
                                "predicted_speedup": st.column_config.NumberColumn("predicted ×", format="%.2f")})
    st.caption(note or "")

st.subheader("Verdicts per workload")
st.caption("Measured: the run's measured speedup against 1 ± 5%. Predicted: runs with only an acceptance, judged by "
           "their tokens per step against the model's break-even there. Where the model's own verdict differs from "
           "the measured one, the line says so.")
lines = verdict_lines(result.table)
with st.container(height=260 if len(lines) > 8 else "content", border=False):
    st.markdown("  \n".join(f"{LABELS[label]}: {plain(sentence)}"  # workload names are user text
                            for label, sentence in lines))
chart(break_even_chart(shown), "runs_break_even")

st.subheader("Runs as read")
rows_shown, note = runs_view.shown_rows(table.rows, runs_view.TABLE_ROWS_SHOWN, "The table")
st.dataframe(rows_shown, key="runs_table", hide_index=True,
             column_order=["file", "row", "workload", "concurrency", "k", "method", "alpha",
                           "tokens_per_step", "acceptance_from", "baseline_tok_s", "spec_tok_s",
                           "measured_speedup", "gpu", "gpu_preset", "target_preset", "draft_preset",
                           "context_len", "remarks"],
             column_config={"alpha": st.column_config.NumberColumn("α", format="%.3f"),
                            "tokens_per_step": st.column_config.NumberColumn("tokens/step", format="%.2f"),
                            "measured_speedup": st.column_config.NumberColumn("measured ×", format="%.2f"),
                            "baseline_tok_s": st.column_config.NumberColumn("baseline tok/s", format="%.0f"),
                            "spec_tok_s": st.column_config.NumberColumn("spec tok/s", format="%.0f")})
st.caption(note or "")

st.subheader("Calibration")
st.caption("Fit the model's free parameters (bandwidth and compute efficiency, fixed and speculation overheads, "
           "the draft's bandwidth penalty; each bounded to a physical range) to these runs by least squares. The "
           "fitted values apply on every page for the rest of the session, and travel in the page link (`cal`).")
fit_rows, fit_note = runs_view.calibration_rows(table.rows)
st.caption(f"Large file: {fit_note}." if fit_note else "")
clicked = st.button("Calibrate on these runs", key="calibrate", type="primary")
calibration_box = st.container()  # the fit's result or its error: one block either way
if clicked:
    try:
        with st.spinner("Fitting …"):
            fitted = calibrate(fit_rows)
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


def report_html(result, problems, cal_dict, shown) -> str:
    figures = [predicted_vs_measured(shown), break_even_chart(shown)]
    return html_report(result.evaluated, result.table, result.summary, figures, problems, cal_dict)


st.subheader("Export")
d1, d2 = st.columns(2)
d1.download_button("Break-even table (CSV)", partial(break_even_csv, result.table), file_name="break_even.csv",
                   mime="text/csv", key="download_csv", on_click="ignore")
d2.download_button("Report (HTML, self-contained)",  # built when clicked: plotly.js inline is ~5 MB
                   partial(report_html, result, table.problems, cal, shown),
                   file_name="speculative_decoding_runs.html", mime="text/html", key="download_html",
                   on_click="ignore")  # no rerun: a rerun re-registers the deferred report under a new id
