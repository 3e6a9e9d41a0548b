"""Live: scrape a server's /metrics on an interval; the window's statistics, the operating point, a verdict."""

import time

from pages.parts.streamlit_mode import imports_in_turn, through_app

with imports_in_turn(__file__):  # one session's imports at a time (streamlit_mode, 5)
    import streamlit as st

    from pages.parts.credentials import move_link_credentials, rerun_without_credentials
    from pages.parts.display import show_error, sidebar_names
    from pages.parts.live_answer import show_results
    from pages.parts.live_timing import step_time_inputs
    from pages.parts.text import no_links
    from specmodel import SpecModelError
    from specmodel.metrics import live, samples
    from specmodel.metrics.schemas import SERVERS_IN_WORDS
    from specmodel.show import readouts


through_app()  # a run of this file alone after folder mode was left starts again through app.py

st.title("Live: is speculation paying off right now?",
         help=f"Point this at the /metrics endpoint of a running {SERVERS_IN_WORDS} server. Every scrape adds a "
              "window: its tokens per step, α and load are placed on the model for the GPU and models chosen in the "
              "sidebar.")

move_link_credentials("live_url", "live_user", "live_password")
top = st.columns([4, 2, 2])
url = top[0].text_input("Metrics URL", key="live_url", bind="query-params",
                        placeholder="http://localhost:8000/metrics",
                        help="The inference server's own Prometheus endpoint, usually /metrics on the API port.")
rerun_without_credentials("live_url", url)
interval = top[1].select_slider("Scrape every (seconds)", [2, 5, 10, 15, 30, 60], value=5, key="live_every",
                                bind="query-params")
window = top[2].select_slider("Statistics over", list(live.WINDOWS), value="1 min", key="live_window",
                              bind="query-params", help="Longer windows give tighter intervals; 'last interval' reacts fastest.")
# The element tree keeps one shape on every rerun (bench/bench_load.py found "Cannot set a node at a delta
# path" under load): optional messages go into containers that always exist, and the auto-refreshing
# panel writes exactly one container, so a panel run landing mid-rerun never addresses a moved block.
notice = st.container()
moved = st.session_state.pop("live_url_moved_note", None)
if moved:
    notice.info(moved)
with st.expander("Connection and model options", expanded=bool(moved)):
    auth, opts = st.columns(3), st.columns(4)
    token = auth[0].text_input("Bearer token (optional)", type="password", key="live_token",
                               help="Sent only to this URL's host; never shown, logged or put in the page link.")
    user = auth[1].text_input("User (optional, basic auth)", key="live_user", help="Never shown, logged or put in the page link.")
    password = auth[2].text_input("Password", type="password", key="live_password")
    k_given = opts[0].number_input("k, if the server does not reveal it (vLLM V0; 0 = infer)", 0, 32, 0,
                                   key="live_k", bind="query-params")
    alpha_assumed = opts[1].slider("α to assume where the server measures none", 0.0, 1.0, 0.70, 0.01,
                                   key="live_alpha", bind="query-params")
    k_assumed = opts[2].number_input("k to assume where the server measures none", 1, 32, 4, key="live_k_assumed",
                                     bind="query-params")
    seen = st.session_state.get("live_session", live.LiveSession())
    model_name = seen.first_model  # stay on the model the first scrape chose
    if len(seen.model_names) > 1:
        model_name = opts[3].selectbox("Model served", seen.model_names, key="live_model", index=seen.first_model_index,
                                       help="This server serves several models; the first scrape chose the busiest.")
    fits, plain_ms = step_time_inputs(st.columns(2))
auto = st.toggle("Auto-refresh", value=True, key="live_auto", bind="query-params",
                 help="Only the live panel below reruns; the rest of the page stays as it is.")
NAMES = sidebar_names(assumed="the α and k to assume, under Connection and model options")


def _sample(on: bool) -> None:
    st.session_state["live_replay"] = samples.LiveReplay(time.time()) if on else None


def sample_on() -> bool:
    return not url.strip() and st.session_state.get("live_replay") is not None  # a URL typed in takes over

sample = sample_on()
intro = st.container()  # one element whatever it holds, so the panel below keeps its place
if sample:
    said, stop = intro.columns([5, 1], vertical_alignment="center")
    said.caption(samples.LIVE_SAMPLE_SHORT, help=samples.LIVE_SAMPLE_LABEL)
    stop.button("Stop the sample", key="live_stop_sample", on_click=_sample, args=(False,))

session_key = ("recorded sample", st.session_state["live_replay"].started_at) if sample else (url.strip(), int(k_given))
st.session_state["live_session"] = seen.watching(session_key)


# The auto-refreshing panel is called on every run, also before a URL is entered (then a hint, no timer):
# a run_every fragment a later run no longer calls keeps its browser timer and writes into a tree without
# its place: "Cannot set a node at a delta path" (streamlit/streamlit#15084; bench/bench_load.py saw it).
@st.fragment(run_every=interval if auto and (url.strip() or sample) else None)
def live_panel() -> None:
    with st.container():  # the panel's only top-level element, whatever it shows this time
        panel_body()


def panel_body() -> None:
    if sample_on() != sample:  # the sample was started from the panel: the whole page follows (label, timer)
        st.rerun()
    if not url.strip() and not sample:
        st.info(f"Enter the metrics URL of a {SERVERS_IN_WORDS} server, e.g. http://localhost:8000/metrics.")
        st.button("Try it with a recorded server", key="live_try_sample", on_click=_sample, args=(True,),
                  help="Replays a recorded vLLM server's /metrics, bundled with the app: nothing is fetched.")
        return
    try:
        if sample:
            snap = st.session_state["live_replay"].next_snapshot()
            if snap is None:
                st.caption(no_links(samples.LIVE_SAMPLE_END.format(scrapes=samples.live_sample_length())))
        else:
            snap = live.scrape_once(url, interval, user, password, token, model_name, int(k_given) or None)
        if snap is not None:  # None: the recording has ended; keep showing its last window
            st.session_state["live_session"] = st.session_state["live_session"].with_snapshot(snap)
    except SpecModelError as exc:
        show_error(exc)
        if auto:
            st.caption(f"Trying again every {interval:g} s.")
    session = st.session_state["live_session"]
    if len(session.snapshots) == 1:
        st.info(no_links(readouts.live_first_scrape(session.snapshots[-1], interval, auto)))
    if len(session.snapshots) < 2:
        return
    try:
        show_results(session, window, (alpha_assumed, k_assumed), fits, plain_ms, NAMES)
    except SpecModelError as exc:
        show_error(exc)
    if not auto:
        st.button("Scrape now", key="live_scrape_now")


live_panel()
