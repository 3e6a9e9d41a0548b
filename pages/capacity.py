"""Capacity: GPUs needed for a load at a latency target, with and without speculation."""

from pages.parts.streamlit_mode import imports_in_turn, through_app

with imports_in_turn(__file__):  # one session's imports at a time (streamlit_mode, 5)
    import streamlit as st

    from pages.parts.calibration import calibration_badge, step_fits
    from pages.parts.common import base_scenario
    from pages.parts.link_values import unaccepted_values
    from pages.parts.display import chart, show_error, show_notes, show_readouts, show_verdict
    from pages.parts.text import no_links, plain
    from specmodel.fit.saved import chosen_fit
    from specmodel.words.capacity import fit_capacity_line
    from specmodel import SpecModelError
    from specmodel.plan import capacity as planning
    from specmodel.show import readouts
    from specmodel.show.figures import capacity as figures_capacity


through_app()  # a run of this file alone after folder mode was left starts again through app.py

USERS, RATE = "concurrent users", "requests per second"  # option texts are what the URL carries
SPEED, ITL = "tok/s per user", "inter-token latency"
K_CHOICES = ["best"] + [str(k) for k in range(1, planning.K_MAX + 1)]
# URL parameter -> (lowest, highest, what it is): a link with a value outside these falls back to the
# widget's default, and the page says so instead of silently showing another load.
URL_NUMBERS = {"cap_users": (1, 1_000_000, "concurrent users (a whole number)"),
               "cap_rps": (0.01, 100_000, "requests per second"),
               "cap_out": (1, 100_000, "mean output tokens per request (a whole number)"),
               "cap_tok_s": (0.1, 10_000, "tok/s per user"), "cap_itl": (0.1, 10_000, "inter-token latency in ms"),
               "cap_alpha": (0, 1, "acceptance α")}
URL_CHOICES = {"cap_load": (USERS, RATE), "cap_target": (SPEED, ITL), "cap_k": tuple(K_CHOICES)}


st.title("Capacity: how many GPUs for this load at this latency?")
st.caption("Speculation trades aggregate throughput for per-user speed. For the GPU, models and method in the "
           "sidebar: the GPUs each way needs so that every user sees the target, and the frontier behind it.")

url_problems = unaccepted_values(URL_NUMBERS, URL_CHOICES)  # before the widgets, which would drop them unsaid
c = st.columns(3)
with c[0]:
    load_kind = st.radio("Load given as", [USERS, RATE], key="cap_load", bind="query-params", horizontal=True)
    if load_kind == USERS:
        users = st.number_input("Concurrent users", 1, 1_000_000, 64, key="cap_users", bind="query-params",
                                help="Users decoding at the same time across the whole fleet.")
        load = planning.Load(users=users)
    else:
        rps = st.number_input("Requests per second", 0.01, 100_000.0, 4.0, key="cap_rps", bind="query-params")
        out_tokens = st.number_input("Mean output tokens per request", 1, 100_000, 256, key="cap_out",
                                     bind="query-params",
                                     help="With the request rate this is the token rate to serve; Little's law "
                                          "turns it into concurrent users (rate × tokens ÷ per-user speed).")
        load = planning.Load(rps=rps, output_tokens=out_tokens)
with c[1]:
    target_kind = st.radio("Latency target for every user", [SPEED, ITL], key="cap_target", bind="query-params",
                           horizontal=True)
    if target_kind == SPEED:
        speed = st.number_input("Every user sees at least (tok/s)", 0.1, 10_000.0, 30.0, key="cap_tok_s",
                                bind="query-params")
        target = planning.Target(min_user_tok_s=speed)
    else:
        itl = st.number_input("Mean inter-token latency at most (ms)", 0.1, 10_000.0, 30.0, key="cap_itl",
                              bind="query-params")
        target = planning.Target(max_itl_ms=itl)
with c[2]:
    alpha = st.slider("Acceptance α (per draft token)", 0.0, 1.0, 0.70, 0.01, key="cap_alpha", bind="query-params",
                      help="Probability that the target accepts each draft token (as on the What-if page).")
    k_choice = st.selectbox("Draft tokens per step k of the speculative arm", K_CHOICES, key="cap_k",
                            bind="query-params", help="best: the k in 1..8 that needs the fewest GPUs (then gives "
                                                      "users the most speed).")

for problem in url_problems:
    st.warning(no_links(problem))

try:
    frontier = planning.frontier(base_scenario(alpha=alpha))
    result = planning.plan_on(frontier, load, target, None if k_choice == "best" else int(k_choice))
except SpecModelError as exc:
    show_error(exc)
    st.stop()

saved = chosen_fit(step_fits(), None if k_choice == "best" else int(k_choice), frontier.scenario.method.name) \
    if step_fits() else None
if saved is not None:  # the session's step fit (Past runs' "Use these step fits on every page") answers first
    by_fit = planning.replicas_by_fit(saved.fit, load, target)
    st.info(plain(fit_capacity_line(saved.label, by_fit)))
show_verdict(result.tone, result.verdict_text, result.advice)
calibration_badge()
show_notes(result.notes)
show_readouts(readouts.capacity_readouts(result))
st.dataframe(result.table_rows(), key="cap_table", hide_index=True, width="stretch", column_config={
    "tok/s per user": st.column_config.NumberColumn(format="%.1f", help="On the fullest replica; if the target "
                                                                       "is missed, the best this arm reaches"),
    "ITL ms": st.column_config.NumberColumn(format="%.1f"),
    "tok/s per GPU": st.column_config.NumberColumn(format="%.0f", help="Aggregate at the operating point"),
    "fit per replica": st.column_config.NumberColumn(help="Sequences one replica holds in its KV cache")})
chart(figures_capacity.frontier_chart(frontier, result), "fig_frontier")

with st.expander("How the plan is computed"):
    st.markdown(
        "- The frontier: for every batch of users per replica (1 to 4096), the What-if model's per-user speed "
        "and aggregate throughput, for plain decoding and for speculation at each k. Users beyond what fits in "
        "the KV cache queue: throughput stops growing and their per-user speed falls.\n"
        "- Concurrent users N: the fewest replicas r such that the fullest replica, ⌈N ÷ r⌉ users, still meets "
        "the target and fits in memory (a plan never queues users).\n"
        "- Requests per second λ with T output tokens: the fleet must produce λ·T tokens/s; one replica gives at "
        "most the throughput of the largest batch that still meets the target. Little's law gives the "
        "concurrency (λ·T ÷ per-user speed). Decode only: prefill is not modelled.\n"
        "- The speculative arm uses the k that needs the fewest GPUs (then the fastest users), or the k chosen. "
        "GPUs = replicas × the sidebar's tensor-parallel GPUs. Calibration from Past runs applies.")
