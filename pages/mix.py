"""Traffic mix: one pool serving several workloads with one method and k, against splitting the
GPUs into pools by traffic shape. The workload table is editable; the sidebar gives GPU and models."""

from pages.parts.streamlit_mode import imports_in_turn, through_app

with imports_in_turn(__file__):  # one session's imports at a time (streamlit_mode, 5)
    import pandas as pd
    import streamlit as st

    from pages.parts.calibration import calibration_badge
    from pages.parts.common import base_scenario, remember_table
    from pages.parts.decision import decision_slot, show_decisions
    from pages.parts.display import chart, show_error, show_notes, tone_box
    from pages.parts.link_values import unaccepted_values
    from pages.parts.mixed import MIX_EDITOR, MIX_TABLE, RUNS_KEY, receive_from_whatif
    from pages.parts.tables import mix_tables
    from pages.parts.text import no_links, plain
    from pages.parts.step_fit_answer import session_fit
    from specmodel.words.step_fit import mix_fit_line
    from specmodel import SpecModelError
    from specmodel.plan import mix
    from specmodel.show import links
    from specmodel.plan.workloads import example_workloads, parse_workloads, workload_records, workload_records_from_runs
    from specmodel.show.figures import mix as figures_mix


through_app()  # a run of this file alone after folder mode was left starts again through app.py

# The table the editor starts from (the example, the Past runs workloads, or What-if's), its editor, and
# where Past runs leaves its canonical run table for other pages: pages/parts/mixed.py.
EDITOR_KEY, TABLE_KEY = MIX_EDITOR, MIX_TABLE

st.title("Traffic mix: one pool, or split by traffic shape?",
         help="One server applies one speculation method and one k to every sequence, so a low-acceptance workload "
              "pays for the verify work of a high-acceptance one. Compare one pool with speculation on and off "
              "against giving each kind of traffic its own GPUs and setting.")
decision = decision_slot()  # the decision, first: filled once the comparison is made

url_problems = unaccepted_values(links.MIX_NUMBERS)  # before the widgets, which would drop them unsaid
if TABLE_KEY not in st.session_state:
    st.session_state[TABLE_KEY] = pd.DataFrame(workload_records(example_workloads()))
receive_from_whatif()  # What-if's link: its α fills the table once

runs_frame = st.session_state.get(RUNS_KEY)
if not isinstance(runs_frame, pd.DataFrame) or runs_frame.empty:
    runs_frame = None
reset_col, runs_col = st.columns([1.4, 3], vertical_alignment="center")
if reset_col.button("Reset to the example", key="mix_reset"):
    st.session_state[TABLE_KEY] = pd.DataFrame(workload_records(example_workloads()))
    st.session_state.pop(EDITOR_KEY, None)
    st.rerun()
if runs_frame is None:
    runs_col.caption("Load runs on the Past runs page to fill this table from their workloads.")
elif runs_col.button("Fill from Past runs", key="mix_from_runs",
                     help="One row per workload of the runs loaded on the Past runs page."):
    st.session_state[TABLE_KEY] = pd.DataFrame(workload_records_from_runs(runs_frame))
    st.session_state.pop(EDITOR_KEY, None)
    st.rerun()

if st.session_state.pop("mix_sent_from_whatif", False):
    st.info("Opened from What-if with its k and concurrency; edit the workloads to your traffic.")
edited = st.data_editor(
    st.session_state[TABLE_KEY], key=EDITOR_KEY, num_rows="dynamic", width="stretch", hide_index=True,
    placeholder="",  # an empty optional cell reads empty, not "None"
    column_config={
        "label": st.column_config.TextColumn("label", help="A name for this kind of traffic", required=True,
                                               width=120),
        "share": st.column_config.NumberColumn("share", min_value=0.0, format="%.2f",
                                               help="Fraction of the concurrent sequences (normalised to sum to 1)"),
        "alpha": st.column_config.NumberColumn("alpha", min_value=0.0, max_value=1.0, format="%.2f",
                                               help="Per-token acceptance α measured with the sidebar's method"),
        "survival": st.column_config.TextColumn("survival", help="Optional measured p_1,...,p_k (overrides α)",
                                                  width=100),
        "alpha_ngram": st.column_config.NumberColumn("alpha_ngram", min_value=0.0, max_value=1.0, format="%.2f",
                                                     help="Optional, a number 0–1: α with n-gram (prompt lookup) "
                                                          "drafts; lets a split give this workload n-gram "
                                                          "speculation. Empty: not measured, n-gram not tried"),
        "temperature": st.column_config.NumberColumn("temperature", min_value=0.0, format="%.1f", width=105),
        "notes": st.column_config.TextColumn("notes", width=175),  # the table fits at 1280 wide
    })
remember_table(TABLE_KEY, edited)  # the edits survive a visit to another page

c = st.columns(3)
concurrency = c[0].number_input("Concurrent sequences, whole mix", 1, 4096, 32, key="mix_conc", bind="query-params",
                                help="Sequences decoding at once across all workloads (the pool's batch).")
gpus = c[1].number_input("GPUs in total", 1, 32, 2, key="mix_gpus", bind="query-params",
                         help="GPUs of the sidebar's type; a split gives each pool whole GPUs.")
k = c[2].slider("k of the single pool as deployed (0 = off)", 0, 8, 4, key="mix_k", bind="query-params")

workloads, problems, notes = parse_workloads(edited.to_dict(orient="records"), source="workload table")
messages = st.container()  # however many problems and notes: one block, so what follows keeps its place
for problem in url_problems:
    messages.warning(no_links(problem))
for problem in problems:
    messages.error(no_links(problem))
show_notes(notes, where=messages, info="info")
if not workloads:
    st.stop()

split_among = None
if len(workloads) > mix.MAX_WORKLOADS:  # the single pool takes them all; the split search separates six
    labels = [w.label for w in workloads]
    split_among = st.multiselect(
        f"Workloads the split search separates (at most {mix.MAX_WORKLOADS})", labels,
        default=mix.busiest(workloads), max_selections=mix.MAX_WORKLOADS, key="mix_split_among",
        help=f"{len(workloads)} workloads are more than the split search tries apart; the ones not chosen share "
             "one pool in every split. The single pool always serves all of them. Default: the busiest "
             "(largest shares).")
answer = st.container()
try:
    report = mix.compare(base_scenario(k=int(k), concurrency=int(concurrency)), workloads, int(concurrency),
                         int(gpus), split_among=split_among)
except SpecModelError as exc:
    with answer:
        show_error(exc)
    st.stop()

show_decisions(decision, report.decision_lines)
saved = session_fit(report.scenario)  # the session's step fit for the pool's k and method
with answer:
    if saved is not None:  # the session's step fit (Past runs' "Use these step fits on every page"): the runs first
        st.info(plain(f"Your runs: {mix_fit_line(saved.label, mix.workloads_by_fit(report, saved.fit))}. The model's "
                      "comparison follows."))
    calibration_badge()
chart(figures_mix.comparison_bars(report), "fig_mix")
tone_box(report.tone)(no_links(report.recommendation))  # the comparison in words, what each workload gets
show_notes(report.notes)

st.subheader("Comparison")
mix_tables(report.table_rows())  # totals in view, per-workload numbers under an expander
st.download_button("Download the comparison (JSON)", data=mix.report_json(report), file_name="traffic_mix.json",
                   mime="application/json", key="mix_download")

with st.expander("How the comparison is computed"):
    st.markdown(
        "- A pool runs one method and one k for every sequence: its step time is the What-if step time at the "
        "pool's batch (each sequence's k + 1 tokens are verified together); each workload emits its own "
        "E(α, k) tokens per step, so its tok/s per sequence is E ÷ step time.\n"
        "- A pool on G GPUs runs G ÷ tensor-parallel replicas, each holding an equal part of the pool's sequences.\n"
        "- The split search tries every grouping of the workloads, every whole-GPU allocation, and for each "
        "pool every k from 0 (off) to 8 with the sidebar's method (and n-gram where alpha_ngram is given); "
        "plans are ranked by aggregate throughput at the same offered concurrency.\n"
        "- A plan that cannot hold all its sequences in memory is marked; the extra sequences queue.")
