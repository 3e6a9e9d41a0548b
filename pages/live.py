"""Live: scrape a server's /metrics on an interval; the window's statistics, the operating point, a verdict."""

import time

import streamlit as st

from pages.calibration import calibration_badge
from pages.common import base_scenario
from pages.credentials import move_link_credentials, rerun_without_credentials
from pages.display import chart, show_error
from specmodel import SpecModelError, figures_live, live, samples, scrape
from specmodel.prom import stats_from_window, window_over

SNAPSHOT_CAP = live.HISTORY_CAP

st.title("Live: is speculation paying off on this server right now?")
st.caption("Point this at the /metrics endpoint of a running vLLM (V1 or V0) or SGLang server. Every scrape "
           "adds a window: its tokens per step, α and load are placed on the model for the GPU and models "
           "chosen in the sidebar.")

move_link_credentials("live_url", "live_user", "live_password")
top = st.columns([4, 2, 2])
url = top[0].text_input("Metrics URL", key="live_url", bind="query-params",
                        placeholder="http://localhost:8000/metrics",
                        help="The inference server's own Prometheus endpoint, usually /metrics on the API port.")
rerun_without_credentials("live_url", url)
interval = top[1].select_slider("Scrape every (seconds)", [2, 5, 10, 15, 30, 60], value=5, key="live_every",
                                bind="query-params")
window = top[2].select_slider("Statistics over", list(live.WINDOWS), value="1 min", key="live_window",
                              bind="query-params",
                              help="Longer windows give tighter intervals; 'last interval' reacts fastest.")
# The element tree keeps one shape on every rerun (bench/bench_load.py found "Cannot set a node at a
# delta path" under load): optional messages go into containers that always exist, and the
# auto-refreshing panel writes exactly one container, so a panel run that lands while the page
# reruns never addresses a block whose position moved.
notice = st.container()
moved = st.session_state.pop("live_url_moved_note", None)
if moved:
    notice.info(moved)
with st.expander("Connection and model options", expanded=bool(moved)):
    opts = st.columns(3)
    token = opts[0].text_input("Bearer token (optional)", type="password", key="live_token",
                               help="Sent only to this URL's host; never shown, logged or put in the page link.")
    basic = st.columns(2)
    user = basic[0].text_input("User (optional, basic auth)", key="live_user",
                               help="Never shown in a message or put in the page link.")
    password = basic[1].text_input("Password", type="password", key="live_password")
    k_given = opts[1].number_input("k, if the server does not reveal it (vLLM V0; 0 = infer)", 0, 32, 0,
                                   key="live_k", bind="query-params")
    known_models = st.session_state.get("live_models", [])
    model_name = st.session_state.get("live_first_model")  # stay on the model the first scrape chose
    if len(known_models) > 1:
        model_name = opts[2].selectbox(
            "Model served", known_models, key="live_model",
            index=known_models.index(model_name) if model_name in known_models else 0,
            help="This server serves several models; the first scrape chose the busiest.")
auto = st.toggle("Auto-refresh", value=True, key="live_auto", bind="query-params",
                 help="Only the live panel below reruns; the rest of the page stays as it is.")



def _start_sample() -> None:
    st.session_state.update(live_sample=True, live_sample_started=time.time(), live_sample_next=0)


def _stop_sample() -> None:
    st.session_state["live_sample"] = False


def sample_on() -> bool:
    return not url.strip() and st.session_state.get("live_sample", False)  # a URL typed in takes over


sample = sample_on()
intro = st.container()  # one element whatever it holds, so the panel below keeps its place
if sample:
    intro.info(f"**{samples.LIVE_SAMPLE_LABEL}**")
    intro.button("Stop the sample", key="live_stop_sample", on_click=_stop_sample)

session_key = (("recorded sample", st.session_state.get("live_sample_started")) if sample
               else (url.strip(), int(k_given)))
if st.session_state.get("live_key") != session_key:  # a new server: start a new session history
    st.session_state.update(live_key=session_key, live_snaps=[], live_history=[], live_models=[],
                            live_first_model=None)


def show_results(snaps: list) -> None:
    base = base_scenario(alpha=st.session_state.get("alpha", 0.7), k=st.session_state.get("k", 4) or 4)
    start = live.window_start(snaps, window)
    stats = stats_from_window(window_over(snaps[start:]))
    verdict = live.live_verdict(stats, base)
    last = snaps[-1]
    if not st.session_state["live_history"] or st.session_state["live_history"][-1]["at"] != last.at:
        latest = stats_from_window(window_over(snaps[-2:]))
        st.session_state["live_history"] = live.append_history(
            st.session_state["live_history"], live.history_point(latest, last.at))

    box = {"pays off": st.success, "borderline": st.warning, "loses": st.error}.get(verdict.label, st.info)
    box(f"**Right now: {verdict.text}**" + (f" — {verdict.advice}." if verdict.advice else ""))
    calibration_badge()
    for note in stats.notes + verdict.notes:
        if "restarted" in note or "no drafts" in note or "off on this server" in note:
            st.warning(note)
        else:
            st.caption(note)

    st.caption(f"{last.server}, model {stats.model_name or 'unknown'}, k = {stats.k or '—'} ({last.k_source}); "
               f"window of {stats.window_s:.0f} s over {len(snaps) - start - 1} scrape interval(s); "
               f"E from {stats.source}.")
    m = st.columns(6)
    d = stats.to_dict()
    if stats.measured:
        ci = d["tokens_per_step_ci"]
        m[0].metric("Tokens per step E", f"{stats.tokens_per_step:.2f}",
                    help="Tokens per verify step, bonus included." + (f" 95% interval {ci[0]:.2f}–{ci[1]:.2f}."
                                                                     if ci else ""))
        if ci:
            m[0].caption(f"95%: {ci[0]:.2f}–{ci[1]:.2f}")
        m[1].metric("α (per token)", f"{stats.alpha:.3f}",
                    help="The constant per-token acceptance that gives this E at this k.")
        if d["alpha_ci"]:
            m[1].caption(f"95%: {d['alpha_ci'][0]:.3f}–{d['alpha_ci'][1]:.3f}")
        m[2].metric("Draft acceptance rate", f"{stats.draft_acceptance_rate:.3f}",
                    help="vLLM's accepted ÷ drafted tokens = (E − 1) / k; lower than α for the same drafts.")
    else:
        m[0].metric("Tokens per step E", "—")
        m[1].metric("α (per token)", "—")
        m[2].metric("Draft acceptance rate", "—")
    m[3].metric("Running / waiting", "—" if stats.running is None else
                f"{stats.running:.1f} / {stats.waiting:.1f}" if stats.waiting is not None else f"{stats.running:.1f}")
    m[4].metric("Generated tokens/s", "—" if stats.generation_tok_s is None else f"{stats.generation_tok_s:,.0f}")
    m[5].metric("KV cache used", "—" if stats.kv_usage is None else f"{stats.kv_usage:.0%}",
                help=(f"Block budget {stats.num_gpu_blocks:,} blocks × {stats.block_size} tokens = "
                      f"{stats.kv_capacity_tokens:,} tokens." if stats.kv_capacity_tokens else None))

    left, right = st.columns(2)
    with left:
        chart(figures_live.operating_point_figure(verdict), key="live_operating_point")
    with right:
        chart(figures_live.rolling_figure(st.session_state["live_history"]), key="live_rolling")
    if verdict.k_options:
        left, right = st.columns(2)
        with left:
            st.markdown("**What k' ≤ k would give at this load** (from the measured acceptance)")
            st.dataframe([{"k'": o.k, "tokens per step": o.tokens_per_step, "speedup (×)": o.speedup}
                          for o in verdict.k_options], hide_index=True, key="live_k_table",
                         column_config={"tokens per step": st.column_config.NumberColumn(format="%.3f"),
                                        "speedup (×)": st.column_config.NumberColumn(format="%.3fx")})
        with right:
            if stats.survival:
                chart(figures_live.survival_figure(stats), key="live_survival")


# The auto-refreshing panel is called on every run of this page, also before a URL is entered (it
# then shows the hint, with no timer): a run_every fragment that a later run no longer calls keeps
# its browser timer, and its next run writes into a tree that no longer has its place, which is
# "Cannot set a node at a delta path" (streamlit/streamlit#15084; bench/bench_load.py saw it).
def next_sample_snapshot():
    """The recording's next scrape, or None once all of them were replayed."""
    i = st.session_state.get("live_sample_next", 0)
    if i >= samples.live_sample_length():
        st.caption(f"End of the recording ({samples.live_sample_length()} scrapes). Press 'Stop the sample' "
                   "and enter your server's URL, or start the sample again from an empty URL.")
        return None
    st.session_state["live_sample_next"] = i + 1
    return samples.live_sample_snapshot(i, st.session_state["live_sample_started"])


@st.fragment(run_every=interval if auto and (url.strip() or sample) else None)
def live_panel() -> None:
    with st.container():  # the panel's only top-level element, whatever it shows this time
        panel_body()


def panel_body() -> None:
    if sample_on() != sample:  # the sample was started from the panel: the whole page follows (label, timer)
        st.rerun()
    if not url.strip() and not sample:
        st.info("Enter the metrics URL of a vLLM or SGLang server, e.g. http://localhost:8000/metrics.")
        st.button("Try it with a recorded server", key="live_try_sample", on_click=_start_sample,
                  help="Replays a recorded vLLM server's /metrics, bundled with the app: nothing is fetched.")
        return
    policy = scrape.ScrapePolicy.for_interval(interval)
    snaps = st.session_state["live_snaps"]
    try:
        if sample:
            snap = next_sample_snapshot()
        else:
            with scrape.make_client(policy) as client:
                snap = scrape.scrape_snapshot(client, scrape.with_credentials(url.strip(), user, password),
                                              token=token or None, policy=policy,
                                              model_name=model_name, k=int(k_given) or None)
        if snap is None:
            pass  # the recording has ended: keep showing its last window
        elif snaps and (snap.server != snaps[-1].server or snap.model_name != snaps[-1].model_name):
            snaps.clear()  # another server or model: its counters are not comparable with these
            st.session_state["live_history"] = []
        if snap is not None:
            snaps.append(snap)
            del snaps[:-SNAPSHOT_CAP]
            st.session_state["live_models"] = list(snap.model_names)
            if st.session_state.get("live_first_model") is None:
                st.session_state["live_first_model"] = snap.model_name
    except SpecModelError as exc:
        show_error(exc)
        if auto:
            st.caption(f"Trying again every {interval} s.")
    if not snaps:
        return
    if len(snaps) < 2:
        s = snaps[-1]
        st.info(f"First scrape done: {s.server}, model {s.model_name or 'unknown'}, "
                + ("speculation on, k = " + str(s.k) if s.spec_enabled else "speculation off")
                + ". The first window completes with the next scrape"
                + (f" in {interval} s." if auto else ": press Scrape now."))
        return
    try:
        show_results(snaps)
    except SpecModelError as exc:
        show_error(exc)
    if not auto:
        st.button("Scrape now", key="live_scrape_now")


live_panel()
