"""What-if: move α, k, step times and concurrency; read the verdict, the advice and four charts."""

from pages.parts.streamlit_mode import imports_in_turn, through_app

with imports_in_turn(__file__):  # one session's imports at a time (streamlit_mode, 5)
    import streamlit as st

    from pages.parts.common import base_scenario
    from pages.parts.link_values import unaccepted_values
    from pages.parts.mixed import mixed_traffic_path
    from pages.parts.text import no_links, own_words
    from pages.parts.decision import decision_slot
    from pages.parts.display import chart, show_does_not_fit, show_error, show_readouts
    from pages.parts.deploy_section import deploy_tabs
    from pages.parts.plan_section import plan_section
    from pages.parts.whatif_answer import show_answer
    from specmodel import SpecModelError
    from specmodel.errors import DoesNotFit
    from specmodel.export.deploy import deploy_advice
    from specmodel.show.decisions import with_runs_schedule
    from specmodel.words.decision_line import RUNS_DEPLOYED
    from specmodel.model import acceptance
    from specmodel.show import links, readouts
    from specmodel.show.figures import whatif as figures


through_app()  # a run of this file alone after folder mode was left starts again through app.py

MAX_CONCURRENCY = 4096
SLIDER_STOPS = [2 ** i for i in range(10)]  # 1 … 512
TIMINGS = ("from hardware", "measured")


def concurrency_stops(typed: int) -> list[int]:
    return sorted({*SLIDER_STOPS, int(typed)})


def _follow_slider() -> None:
    st.session_state["conc"] = st.session_state["conc_slider"]


st.title("What-if: does speculative decoding pay off here?",
         help="Speedup = speculative throughput ÷ plain throughput at the same number of concurrent sequences, "
              "for the GPU, models and method chosen in the sidebar.")
decision = decision_slot()  # the decision line, first: filled once the model has answered

# before the widgets drop what they do not accept: said under them, the default kept
url_problems = unaccepted_values(links.WHATIF_NUMBERS, {"timings": TIMINGS})
left, right = st.columns(2)
with left:
    timings = st.radio("Step times", TIMINGS, key="timings", bind="query-params",
                       horizontal=True,
                       help="From hardware: the GPU and model presets give every step time. Measured: your "
                            "batch-1 step times pin the memory-bound floor; the GPU preset still gives the shape "
                            "under load.")
    alpha = st.slider("Acceptance α (per draft token)", 0.0, 1.0, 0.70, 0.01, key="alpha", bind="query-params",
                      help="Probability that the target accepts each draft token. Not vLLM's 'draft acceptance "
                           "rate' (accepted ÷ drafted), which is lower for the same drafts.")
    said, for_alpha = st.session_state.get("alpha_from") or (None, None)
    if said and for_alpha == alpha:  # the method's own default, until the slider moves
        st.caption(no_links(said))
    profile_text = st.text_input("…or a measured per-position acceptance profile (optional)", key="profile",
                                 bind="query-params", placeholder="e.g. 0.80, 0.56, 0.35",
                                 help="p_i = fraction of drafts with at least i tokens accepted (vLLM's per-position "
                                      "counters ÷ drafts). Overrides α.")
    k = st.slider("Draft tokens per step k (0 = off)", 0, 8, 4, key="k", bind="query-params")
with right:
    # A number box for any value and a log-scale slider (1, 2, 4 … 512, plus the typed value) kept in step.
    concurrency = st.number_input("Concurrent sequences (batch size)", min_value=1, max_value=MAX_CONCURRENCY,
                                  step=1, key="conc", bind="query-params",
                                  help="Type any batch size up to 4096, or drag the slider below.")
    st.session_state["conc_slider"] = concurrency
    st.select_slider("Concurrent sequences on a log scale", concurrency_stops(concurrency), key="conc_slider",
                     label_visibility="collapsed", on_change=_follow_slider)
    if timings == "measured":
        steps = st.columns(2)  # typed, to the hundredth of a millisecond: measured times are not half-ms steps
        t_target = steps[0].number_input("Target step at batch 1 (ms)", 1.0, 200.0, 19.0, 0.1, format="%.2f",
                                         key="t_target", bind="query-params")
        t_draft = steps[1].number_input("Draft cost per draft token at batch 1 (ms)", 0.0, 50.0, 3.0, 0.1,
                                        format="%.2f", key="t_draft", bind="query-params")
    else:
        t_target = t_draft = None
    answer = st.container()  # the verdict and its notes (or why nothing fits), beside the inputs: one block

for problem in url_problems:
    st.warning(no_links(problem))
try:
    survival = None
    if profile_text.strip():
        survival = acceptance.parse_survival(profile_text, "the acceptance profile")
    scenario = base_scenario(alpha=alpha, k=k, concurrency=concurrency, survival=survival,
                             t_target_ms=t_target, t_draft_ms=t_draft)
    summary, (fig_alpha, fig_heatmap, fig_concurrency, fig_best_k, fig_deploy) = figures.whatif_view(scenario)
except DoesNotFit as exc:  # an answer for these settings, with the closest one that fits
    with answer:
        show_does_not_fit(exc)
    st.stop()
except SpecModelError as exc:
    with answer:
        show_error(exc)
    st.stop()

# the decision line, the verdict, the why and notes behind an expander; the schedule the session's step fits give
ran, off_note = show_answer(decision, answer, summary)

c1, c2 = st.columns(2)
with c1:
    chart(fig_alpha, "fig_alpha")
    chart(fig_heatmap, "fig_heatmap")
with c2:
    chart(fig_concurrency, "fig_concurrency")
    chart(fig_best_k, "fig_best_k")
show_readouts(readouts.whatif_readouts(summary))
st.caption(no_links(readouts.whatif_arms_line(summary)))
mixed_traffic_path(alpha, k, concurrency)

st.subheader("What to deploy")
deployed = summary if ran is None else with_runs_schedule(summary, ran)  # as the decision above says it
advice = deploy_advice(deployed)  # in the sidebar's serving engine's own terms
if ran is not None:
    st.caption(RUNS_DEPLOYED)
if off_note:  # the runs measured the off state: a k = 0 band may not be how to turn it off
    st.caption(no_links(off_note))
st.markdown(own_words(advice.intro))
if advice.code:
    st.code(advice.code, language=advice.language, wrap_lines=True)
if advice.note:
    st.caption(no_links(advice.note))
# Drawn while open (opening reruns the page): closed, the page sends none of its tabs' commands and configs.
with st.expander("The same decision in vLLM, SGLang and TensorRT-LLM terms", key="deploy_tabs",
                 on_change="rerun") as engine_terms:
    if engine_terms.open:
        deploy_tabs(deployed)
chart(fig_deploy, "fig_deploy_options")
plan_section(summary)

with st.expander("How the model computes this", key="how_computed", on_change="rerun") as how:
    if how.open:  # drawn while open, as the boxes above
        st.markdown(
            "- Tokens per step: E = (1 − α^(k+1)) / (1 − α), or 1 + Σ p_i from a measured profile.\n"
            "- Step time: two rooflines (weights and KV cache), each the smooth maximum of memory time and "
            "compute time, with a latency per GEMM kernel and per attention layer; a verify step carries k + 1 "
            "tokens per sequence (mixture-of-experts targets read more experts for them; GPUs without packed GQA "
            "verify kernels re-read the KV cache per query head); tensor parallelism adds two all-reduces per layer.\n"
            "- Speculative step = draft passes (the first takes in the accepted tokens) + one verify pass + the "
            "engine's own costs per step, per draft pass and per sequence (sidebar: serving engine). Memory: the "
            "draft's weights and KV cache shrink how many sequences fit; sequences that do not fit wait in the queue.\n"
            "- Speedup = (sequences running × E / speculative step) ÷ (sequences running / plain step).")
