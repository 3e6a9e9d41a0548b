"""Past runs: upload benchmark results; measured verdicts first, the model's beside them; calibrate."""

from functools import partial

from pages.parts.streamlit_mode import imports_in_turn, through_app

with imports_in_turn(__file__):  # one session's imports at a time (streamlit_mode, 5)
    import streamlit as st

    from pages.parts.calibration import calibration
    from pages.parts.common import base_scenario_or_stop
    from pages.parts.custom_inputs import sidebar_choices
    from pages.parts.display import alert, chart, column_config
    from pages.parts.plan_section import plan_section
    from pages.parts.decision import decision_slot
    from pages.parts.run_files import (acceptance_meaning, kept_uploads, no_runs_message, paired_by_hand,
                                       pairing_choices, with_sample)
    from pages.parts.runs_answer import reviewed, show_counts, show_runs_decisions, shown_decisions
    from pages.parts.runs_calibration import calibration_panel, fitted_calibration
    from pages.parts.step_fit_section import step_fit_section
    from pages.parts.tables import break_even_tables
    from pages.parts.text import no_links, plain
    from specmodel.export.report import break_even_csv, html_report
    from specmodel.bounds import MAX_ROWS_TOTAL, MAX_UPLOAD_MB
    from specmodel.runs import SAMPLES
    from specmodel.runs.headlines import as_read, model_headline, sweep_order, verdict_lines
    from specmodel.show import runs_view as runs_view
    from specmodel.show.figures.runs import break_even_chart, predicted_vs_measured


through_app()  # a run of this file alone after folder mode was left starts again through app.py

st.title("Past runs: did speculation pay off where it ran?",
         help="A run with a measured speedup is judged by it; the model's prediction for the same run (its GPU, models, "
              "k, acceptance, concurrency) sits beside it. Runs naming no GPU or model use the sidebar's.")
decision = decision_slot()  # each workload's decision line, first: filled once the runs are read

top_left, top_right = st.columns([3, 2])
with top_left:
    returning = "run_files" not in st.session_state  # the uploader's state is gone after another page ran
    uploads = st.file_uploader("Run files", type=["csv", "tsv", "txt", "json"], accept_multiple_files=True,
                               key="run_files", max_upload_size=MAX_UPLOAD_MB,
                               help=f"Up to {MAX_UPLOAD_MB} MB each and {MAX_ROWS_TOTAL:,} runs in all "
                                    "(the first ones load). Formats and column names: docs/formats.md.")
with top_right:
    sample = st.pills("…or load a sample", list(SAMPLES), key="sample", bind="query-params", wrap=True)
    with st.expander("How to read the files: k, names, acceptance"):
        k_box = st.number_input("k for files that do not record it (guidellm)", 1, 16, None, key="runs_k",
                                bind="query-params", placeholder=runs_view.K_BOX_PLACEHOLDER, help=runs_view.K_BOX_HELP)
        as_sidebar = st.checkbox(runs_view.SIDEBAR_FOR_UNKNOWN, key="runs_as_sidebar", bind="query-params",
                                 help=runs_view.SIDEBAR_FOR_UNKNOWN_HELP)
        meaning = acceptance_meaning()  # what accept_rate, acceptance or acc holds: said, or read one stated way

files = with_sample(kept_uploads(uploads, returning), sample)
if not files:
    st.info(no_links(no_runs_message(calibration() is not None)))
    plan_section(scenario=base_scenario_or_stop())
    st.stop()
pairs, pairing = paired_by_hand(files)

s = base_scenario_or_stop()
defaults = runs_view.page_defaults(s, k_box, as_sidebar, sidebar_choices(s), **meaning)  # for runs naming none
efficiency = calibration()
table, result = reviewed(files, defaults, pairs, efficiency)
pairing_choices(pairing, files, table.rows["file"] if "file" in table.rows else [])

problems = runs_view.problem_lines(table)
with st.expander(runs_view.problems_label(table), expanded=table.rows.empty):
    show = {"error": partial(alert, st.error), "warning": partial(alert, st.warning),  # no emoji search in each
            "info": st.caption}  # of a large file's thousands of lines where one cannot start with an icon
    for severity, line in problems:
        show.get(severity, st.caption)(no_links(line))
if table.rows.empty:
    st.error(plain(runs_view.why_no_run(table)))
    st.stop()

summary = result.summary
show_runs_decisions(decision, result, efficiency)
show_counts(table, result)

LABELS = {"clears": ":green[**pays off**]", "borderline": ":orange[**borderline**]", "fails": ":red[**loses**]",
          "uncertain": ":violet[**uncertain**]"}
compared = bool(summary["rows_compared"])  # no empty chart: without runs having both speedups, none is drawn
shown, note = runs_view.shown_rows(result.evaluated, runs_view.CHART_RUNS_SHOWN, "The chart", spread=True)
if compared:
    chart(predicted_vs_measured(shown), "runs_scatter")
st.caption(no_links(note or ""))
headline = model_headline(summary, result.table, defaults.acceptance_said_as)  # how far the model was off, and
(st.warning if summary.get("model_disagreements") else st.info)(plain(headline))  # how the files were read
table_shown, note = runs_view.shown_rows(sweep_order(as_read(result.table)), runs_view.TABLE_ROWS_SHOWN, "The table")
break_even_tables(table_shown)  # the table full width, in two that fit (pages/parts/tables.py)
st.caption(no_links(note or ""))

st.subheader("Verdicts per workload")
st.caption(no_links(runs_view.VERDICT_LINES_CAPTION))
lines = verdict_lines(as_read(result.table))
with st.container(height=260 if len(lines) > 8 else "content", border=False):
    st.markdown("  \n".join(f"{LABELS[label]}: {plain(sentence)}"  # workload names are user text
                            for label, sentence in lines))
if shown["break_even_tokens_per_step"].notna().any():
    chart(break_even_chart(shown), "runs_break_even")
else:
    st.caption(no_links(runs_view.NO_BREAK_EVEN_CHART))

st.subheader("Runs as read")
rows_shown, note = runs_view.shown_rows(table.rows, runs_view.TABLE_ROWS_SHOWN, "The table")
cells, cell_columns = runs_view.as_cells(rows_shown, runs_view.RUNS_COLUMNS)  # no "None" in an empty cell
with st.container(key="runs_as_read"):  # every column as read: this table scrolls, which run it is stays in view
    st.dataframe(cells, key="runs_table", hide_index=True,
                 column_config=column_config(cell_columns, pinned=("file", "row", "workload")))
st.caption(no_links(note or ""))

step_fit_section(table.rows, efficiency)
calibration_panel(table.rows, efficiency)
plan_section(scenario=s, rows=table.rows, key="runs_plan")


def report_html(result, problems, cal_dict, shown, decisions) -> str:
    figures = [predicted_vs_measured(shown), break_even_chart(shown)]
    return html_report(result.evaluated, result.table, result.summary, figures, problems, cal_dict,
                       efficiency=efficiency, decisions=decisions)


st.subheader("Export")
d1, d2 = st.columns(2)
d1.download_button("Break-even table (CSV)", partial(break_even_csv, result.table), file_name="break_even.csv",
                   mime="text/csv", key="download_csv", on_click="ignore")
d2.download_button("Report (HTML, self-contained)",  # built when clicked: plotly.js inline is ~5 MB
                   partial(report_html, result, table.problems, fitted_calibration(efficiency), shown,
                           shown_decisions()),
                   file_name="speculative_decoding_runs.html", mime="text/html", key="download_html",
                   on_click="ignore")  # no rerun: a rerun re-registers the deferred report under a new id
