"""Fleet: the Live statistics for every instance a Prometheus server scrapes, and a verdict for each."""

from pages.parts.streamlit_mode import imports_in_turn, through_app

with imports_in_turn(__file__):  # one session's imports at a time (streamlit_mode, 5)
    import streamlit as st

    from pages.parts.calibration import calibration_badge, step_fits
    from pages.parts.common import base_scenario_or_stop
    from pages.parts.credentials import move_link_credentials, rerun_without_credentials
    from pages.parts.display import chart, show_error, show_notes, sidebar_names, tone_box
    from pages.parts.rules_download import offer_rules
    from pages.parts.fleet_answer import fleet_decisions
    from pages.parts.tables import fleet_tables
    from pages.parts.text import no_links, plain
    from specmodel import SpecModelError
    from specmodel.metrics import fleet, promapi, samples, scrape
    from specmodel.metrics.schemas import SERVERS_IN_WORDS
    from specmodel.show import readouts
    from specmodel.show.figures import fleet as figures_fleet


through_app()  # a run of this file alone after folder mode was left starts again through app.py

st.title("Fleet: which instances gain from speculation?",
         help="Per instance, over the window: tokens per verify step E, acceptance α and k from the spec-decode "
              "counters (Prometheus increase()), load and throughput, and the model's predicted speedup at that "
              "instance's own concurrency, for the GPU and models chosen in the sidebar.")

move_link_credentials("prom_url", "prom_user", "prom_password")
top = st.columns([3, 1, 1, 2])
url = top[0].text_input("Prometheus URL", key="prom_url", bind="query-params", placeholder="http://prometheus:9090",
                        help=f"Base URL of a Prometheus server that scrapes your {SERVERS_IN_WORDS} servers.")
rerun_without_credentials("prom_url", url)
window = top[1].text_input("Window", value="5m", key="fleet_window", bind="query-params",
                           help="Prometheus duration the statistics cover: 30s, 5m, 1h. Use at least four "
                                "scrape intervals.")
span = top[2].text_input("Chart span", value="1h", key="fleet_span", bind="query-params",
                         help="How far back the chart of E and concurrency goes.")
match = top[3].text_input("Label filter (optional)", key="fleet_match", bind="query-params",
                      placeholder='job=~"vllm-.*"', help="PromQL label matchers applied to every series.")
moved = st.session_state.pop("prom_url_moved_note", None)
if moved:
    st.info(no_links(moved))
with st.expander("Credentials (optional; never shown, stored or put in the link)", expanded=bool(moved)):
    cred = st.columns(3)
    user = cred[0].text_input("User", key="prom_user")
    password = cred[1].text_input("Password", type="password", key="prom_password")
    token = cred[2].text_input("Bearer token", type="password", key="prom_token")

rules_box = st.expander("Alert and dashboard for your own Prometheus and Grafana")  # filled once the fleet is read
scenario = base_scenario_or_stop()  # a sidebar choice that makes none (a Custom GPU's bad number): said, then stop


def _sample(on: bool) -> None:
    st.session_state["fleet_sample"] = on


sample = not url.strip() and st.session_state.get("fleet_sample", False)  # a URL typed in takes over
if not url.strip() and not sample:
    st.info("Enter the URL of the Prometheus server that scrapes your inference fleet. docs/live-and-fleet.md shows a "
            "minimal scrape config for vLLM servers.")
    st.button("Try it with a recorded server", key="fleet_try_sample", on_click=_sample, args=(True,),
              help="Shows a real Prometheus' recorded answers, bundled with the app: nothing is fetched.")
    offer_rules(rules_box, scenario, window)
    st.stop()
said, *f, buttons = st.container().columns([1.8, 2, 2, 1.5], vertical_alignment="bottom")  # the filters go in f
if sample:
    said.caption(samples.FLEET_SAMPLE_SHORT, help=samples.FLEET_SAMPLE_HELP)
    buttons.button("Stop the sample", key="fleet_stop_sample", on_click=_sample, args=(False,))
    url, window, span, match = samples.FLEET_SAMPLE_URL, samples.FLEET_SAMPLE_WINDOW, samples.FLEET_SAMPLE_SPAN, ""


NAMES = sidebar_names(assumed="the model's defaults for a server that measures none")


def _client(server, sample: bool):
    """A client for this server; for the sample, one that answers from the recording in process."""
    return samples.recorded_prometheus_client() if sample else scrape.make_client(server.policy)


def _at(sample: bool):
    return samples.fleet_sample_time() if sample else None


@st.cache_data(ttl=30, max_entries=64, show_spinner="Querying Prometheus…")
def load(url, window, match, user, password, token, scenario, sample, fits):
    server = promapi.PromServer(url, promapi.PromAuth(user or None, password or None, token or None))
    with _client(server, sample) as client:  # the session's step fits judge each instance of their model first
        return fleet.fleet(client, server, scenario, window=window, selector=match, at_s=_at(sample), names=NAMES,
                           fits=fits, method=scenario.method.name)


@st.cache_data(ttl=30, max_entries=64, show_spinner="Querying Prometheus for the history…")
def load_history(url, window, span, match, user, password, token, sample):
    server = promapi.PromServer(url, promapi.PromAuth(user or None, password or None, token or None))
    with _client(server, sample) as client:
        return fleet.history(client, server, window=window, span=span, selector=match, end_s=_at(sample))


if not sample and buttons.button("Refresh now", key="fleet_refresh"):
    load.clear()
    load_history.clear()
try:
    report = load(url, window, match, user, password, token, scenario, sample, fits := tuple(step_fits()))
except SpecModelError as exc:
    offer_rules(rules_box, scenario, window)
    show_error(exc)
    st.stop()
offer_rules(rules_box, scenario, window, fleet.instance_models(report))  # each instance as the table judges it

table = readouts.fleet_shown(report.table())  # 'uncertain' where the band straddles 1.0
models = f[0].multiselect("Models", sorted(table["model_name"].dropna().unique()), key="fleet_models",
                          bind="query-params", placeholder="all models")
jobs = f[1].multiselect("Jobs", sorted(table["job"].unique()), key="fleet_jobs", bind="query-params",
                        placeholder="all jobs")
shown = fleet.select(table, models=models, jobs=jobs)
fleet_decisions(report, shown, fits, scenario.method.name)  # the decision per instance first, then where each operates
chart(figures_fleet.operating_points(shown), key="fleet_points")
alerts = st.container()  # however many instances lose, are down or unreadable: one block
for alert in readouts.fleet_alerts(report):
    tone_box(alert.tone, alerts)(f"**{plain(alert.instance)}** {no_links(alert.detail)}")
st.caption(no_links(f"{len(table)} instance(s) at {'the recorded Prometheus (sample)' if sample else report.prometheus} "
           f"over the last {report.window}: {readouts.fleet_counts(table['verdict'])}"))
calibration_badge()

fleet_tables(shown)  # verdicts in view, measurements under an expander: both fit at 1280 wide
for who, words in readouts.fleet_uncertain(shown):  # why "uncertain", and where to measure
    st.caption(f"**{plain(who)}** {no_links(words)}")

notes = fleet.notes(report, shown)
with st.container():  # present or not, one block
    if notes:
        with st.expander(f"Notes on {len(notes)} instance(s)"):
            for who, lines in notes.items():
                show_notes(lines, heading=plain(who))

try:
    frame = load_history(url, window, span, match, user, password, token, sample)
except SpecModelError as exc:
    show_error(exc)
    st.stop()
chart(figures_fleet.history(fleet.select(frame, like=shown), window), key="fleet_history")
