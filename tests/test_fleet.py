"""Fleet view against a real Prometheus (Debian's) scraping replayed vLLM V1, V0 and SGLang servers.

One Prometheus for the module (about 11 s: Prometheus applies new scrape targets after 5 s, then
six 1 s scrapes). Ratios (E, α, survival, draft acceptance rate) are exact: every series of a target
is scraped at the same instant, so increase()'s extrapolation scales them alike. Rates
(generation tok/s) are compared within 10 %: rate() extrapolates to the window's edges and scrapes
jitter by milliseconds.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from specmodel import Scenario, SpecModelError, cli
from specmodel.metrics import fleet, live, promapi
from specmodel.show import readouts
from specmodel.model import acceptance
from tests.prometheus_harness import FLEET, V1_GOOD_TIMING, V1_OFF_TIMING

WINDOW = "4s"  # shorter than the scraped span, so rate() needs no extrapolation past the data
RATE_TOLERANCE = 0.10
APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture(scope="module")
def report(prom_fleet):
    with httpx.Client() as client:
        return fleet.fleet(client, promapi.PromServer(prom_fleet.url), Scenario(), window=WINDOW)


def by_key(report, prom_fleet) -> dict:
    out = {}
    for key, target in prom_fleet.targets.items():
        rows = [i for i in report.instances if i.instance == target]
        assert len(rows) == 1, f"{key}: expected one row for {target}, got {len(rows)}"
        out[key] = rows[0]
    return out


def inc(key: str, name: str):
    return FLEET[key].increments[name]


def test_every_replayed_instance_has_the_statistics_its_counters_imply(report, prom_fleet):
    rows = by_key(report, prom_fleet)

    good = rows["v1-good"].stats
    drafts = inc("v1-good", "vllm:spec_decode_num_drafts_total")
    e = 1 + inc("v1-good", "vllm:spec_decode_num_accepted_tokens_total") / drafts
    assert (good.server, good.k, rows["v1-good"].job) == ("vllm-v1", 3, "vllm-pool-a")
    assert good.tokens_per_step == pytest.approx(e, rel=1e-6)
    assert good.alpha == pytest.approx(acceptance.alpha_from_tokens_per_step(e, 3), rel=1e-6)
    assert good.survival == pytest.approx(
        [x / drafts for x in inc("v1-good", "vllm:spec_decode_num_accepted_tokens_per_pos_total")], rel=1e-6)
    assert good.draft_acceptance_rate == pytest.approx(
        inc("v1-good", "vllm:spec_decode_num_accepted_tokens_total")
        / inc("v1-good", "vllm:spec_decode_num_draft_tokens_total"), rel=1e-6)
    assert good.running == 4
    assert good.generation_tok_s == pytest.approx(inc("v1-good", "vllm:generation_tokens_total"), rel=RATE_TOLERANCE)
    assert rows["v1-good"].verdict.label == "pays off"

    losing = rows["v1-losing"]
    assert losing.stats.tokens_per_step == pytest.approx(
        1 + inc("v1-losing", "vllm:spec_decode_num_accepted_tokens_total")
        / inc("v1-losing", "vllm:spec_decode_num_drafts_total"), rel=1e-6)
    assert losing.verdict.concurrency == 160
    assert losing.verdict.label == "loses"
    assert report.losing == (losing,)

    off = rows["v1-off"]
    assert not off.stats.spec_enabled and off.stats.tokens_per_step is None
    assert off.stats.generation_tok_s == pytest.approx(inc("v1-off", "vllm:generation_tokens_total"),
                                                       rel=RATE_TOLERANCE)
    assert off.to_dict()["verdict"] == "off" and off.verdict.concurrency == 64

    v0 = rows["v0"].stats
    assert (v0.server, v0.k, v0.model_name) == ("vllm-v0", 4, "meta-llama/Llama-3.1-70B-Instruct")
    assert v0.tokens_per_step == pytest.approx(0.6826666666666666 * 5, rel=1e-9)  # efficiency gauge · (k + 1)
    assert v0.running == 24
    # The 70B instance is predicted on its own model (from its model_name label), not the sidebar's 8B.
    assert rows["v0"].verdict.scenario.target.name == "Llama 3.1 70B"
    assert rows["v0"].predicted_on.startswith("Llama 3.1 70B + Llama 3.2 1B, TP 4")
    assert rows["v1-good"].predicted_on == "Llama 3.1 8B + Llama 3.2 1B"

    sg = rows["sglang"].stats
    e_sg = ((inc("sglang", "sglang:generation_tokens_total") - inc("sglang", "sglang:num_requests_total"))
            / inc("sglang", "sglang:spec_verify_calls_total"))
    assert (sg.server, sg.k) == ("sglang", 3)
    assert sg.tokens_per_step == pytest.approx(e_sg, rel=1e-6)
    assert sg.running == 31


def test_a_server_restart_inside_the_window_is_handled_as_increase_does(prom_fleet):
    with httpx.Client() as client:  # a window over every sample, the restart included
        report = fleet.fleet(client, promapi.PromServer(prom_fleet.url), Scenario(), window="1m")
    [restarted] = [i for i in report.instances if i.instance == prom_fleet.targets["v1-restarted"]]
    drafts = inc("v1-restarted", "vllm:spec_decode_num_drafts_total")
    assert restarted.stats.tokens_per_step == pytest.approx(
        1 + inc("v1-restarted", "vllm:spec_decode_num_accepted_tokens_total") / drafts, rel=1e-6)
    assert restarted.stats.survival == pytest.approx(
        [x / drafts for x in inc("v1-restarted", "vllm:spec_decode_num_accepted_tokens_per_pos_total")], rel=1e-6)
    # Without reset handling the window would span the drop from the sample's lifetime totals.
    assert restarted.stats.drafts > 0


def test_a_target_that_is_down_is_reported_with_prometheus_error(report, prom_fleet):
    assert [d["instance"] for d in report.down] == [prom_fleet.dead]
    assert report.down[0]["job"] == "vllm-legacy"
    assert "connection refused" in report.down[0]["last_error"]
    assert all(i.up for i in report.instances)


def test_history_gives_e_and_concurrency_per_instance(prom_fleet):
    with httpx.Client() as client:
        frame = fleet.history(client, promapi.PromServer(prom_fleet.url), window="2s", span="4s")
    good = frame[frame["instance"] == prom_fleet.targets["v1-good"]].dropna(subset=["tokens_per_step"])
    assert len(good) >= 3
    assert good["tokens_per_step"].tolist() == pytest.approx([2.9] * len(good), rel=1e-6)
    assert set(good["running"]) == {4.0}
    assert set(frame["instance"]) == set(prom_fleet.targets.values())
    assert fleet.select(frame, jobs=["sglang"])["instance"].unique().tolist() == [prom_fleet.targets["sglang"]]


@pytest.mark.parametrize("selector, expected", [
    ('job="no-such-job"', 'or lmdeploy series matching {job="no-such-job"} in the last 4s'),
    ('job=~"("', "rejected the query"),
])
def test_queries_that_return_nothing_or_are_invalid_say_so(prom_fleet, selector, expected):
    with httpx.Client() as client, pytest.raises(SpecModelError) as err:
        fleet.fleet(client, promapi.PromServer(prom_fleet.url), Scenario(), window=WINDOW, selector=selector)
    assert expected in str(err.value)


def test_only_down_targets_match_gives_their_errors(prom_fleet):
    with httpx.Client() as client, pytest.raises(SpecModelError) as err:
        fleet.fleet(client, promapi.PromServer(prom_fleet.url), Scenario(), window=WINDOW,
                    selector=f'instance="{prom_fleet.dead}"')
    message = str(err.value)
    assert "1 scrape target(s) are down" in message and prom_fleet.dead in message
    assert "connection refused" in message


def test_cli_json_has_one_object_per_instance_with_the_scrape_keys(prom_fleet, capsys):
    assert cli.main(["fleet", prom_fleet.url, "--window", WINDOW, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    instances = {r["instance"]: r for r in rows}
    assert set(instances) == set(prom_fleet.targets.values()) | {prom_fleet.dead}
    keys = {"instance", "model_name", "server", "k", "tokens_per_step", "alpha", "per_position",
            "draft_acceptance_rate", "running_requests", "generation_tok_s", "window_s", "verdict",
            "predicted_speedup"}
    good = instances[prom_fleet.targets["v1-good"]]
    assert keys <= set(good)
    assert good["per_position"] == pytest.approx([0.85, 0.65, 0.4])
    assert good["window_s"] == 4.0 and good["verdict"] == "pays off" and good["predicted_speedup"] > 1
    assert instances[prom_fleet.targets["v1-losing"]]["verdict"] == "loses"
    assert instances[prom_fleet.dead]["verdict"] == "down"


def test_cli_text_calls_out_losing_and_down_instances(prom_fleet, capsys):
    assert cli.main(["fleet", prom_fleet.url, "--window", WINDOW, "--match", 'job=~"vllm-.*"']) == 0
    out = capsys.readouterr().out
    assert f"LOSES  {prom_fleet.targets['v1-losing']}" in out
    assert f"DOWN   {prom_fleet.dead}" in out
    assert prom_fleet.targets["sglang"] not in out  # filtered out by the label filter


def test_cli_failure_is_one_line_and_exit_2(prom_fleet, capsys):
    assert cli.main(["fleet", prom_fleet.url, "--window", WINDOW, "--match", 'job="nothing"']) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: Prometheus at ")


def fleet_page(**query) -> AppTest:
    """The Fleet page opened from a link carrying `query` (the page's widgets are bound to the URL)."""
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    return at.switch_page("pages/fleet.py").run()


def test_page_lists_instances_and_calls_out_the_losing_one(prom_fleet):
    at = fleet_page(prom_url=prom_fleet.url, fleet_window=WINDOW, fleet_span="6s")
    assert not at.exception
    losing = prom_fleet.targets["v1-losing"]
    assert [e.value for e in at.error if losing in e.value] and "turn speculation off" in at.error[0].value
    assert prom_fleet.dead in at.warning[0].value
    decisions, *tables = at.dataframe  # the decision per instance first (issue 40), then the instances' tables
    said = decisions.value.set_index("instance")["decision"]
    assert set(said.index) == set(prom_fleet.targets.values())
    assert said[losing].startswith("off at batch") and "up to batch" in said[prom_fleet.targets["v1-good"]]
    table = tables[0].value
    assert len(table) == len(FLEET) and set(table["instance"]) == set(prom_fleet.targets.values())
    assert table.set_index("instance").loc[prom_fleet.targets["v1-good"], "verdict"] == "pays off"
    assert table.set_index("instance").loc[prom_fleet.targets["v0"], "predicted_on"].startswith("Llama 3.1 70B")
    # the instance with speculation off measures no E, α or k: empty cells (the grid draws a missing number
    # as "None"), and every instance carries the model's band
    for sent in tables[:2]:
        shown = sent.value[list(sent.proto.column_order)]
        assert not shown.isna().any().any(), shown.isna().sum()
    off = tables[1].value.set_index("instance").loc[prom_fleet.targets["v1-off"]]
    assert (off["tokens_per_step"], off["alpha"], off["k"]) == ("", "", "") and "–" in off["speedup_band"]

    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert titles == ["Where each instance runs: predicted speedup at its own concurrency",
                      "Acceptance and load over time, per instance"]

    at.multiselect(key="fleet_jobs").select("sglang").run()
    assert at.dataframe[0].value["instance"].tolist() == [prom_fleet.targets["sglang"]]  # the decisions follow
    assert at.dataframe[1].value["instance"].tolist() == [prom_fleet.targets["sglang"]]


def test_a_link_with_a_job_filter_shows_only_that_job(prom_fleet):
    at = fleet_page(prom_url=prom_fleet.url, fleet_window=WINDOW, fleet_span="6s", fleet_jobs=["vllm-pool-a"])
    assert not at.exception
    for frame in at.dataframe[:2]:  # the decisions and the instances alike
        assert sorted(frame.value["instance"]) == sorted([prom_fleet.targets["v1-good"], prom_fleet.targets["v1-losing"]])


def test_page_shows_a_message_when_prometheus_is_down():
    from tests.browser import free_port

    at = fleet_page(prom_url=f"http://127.0.0.1:{free_port()}")
    assert not at.exception
    assert "cannot reach Prometheus" in at.error[0].value
    assert len(at.dataframe) == 0


def test_page_with_a_bad_window_says_how_to_write_one():
    at = fleet_page(prom_url="http://127.0.0.1:9", fleet_window="5 minutes")
    assert not at.exception
    assert "'5 minutes' is not a time window" in at.error[0].value


def test_page_without_url_explains_what_to_enter():
    at = fleet_page()
    assert not at.exception and "Prometheus server" in at.info[0].value


@pytest.mark.browser
def test_browser_user_enters_a_prometheus_url_and_sees_the_losing_instance(prom_fleet, streamlit_server, browser_page):
    from tests.browser import PATIENCE_MS, open_from_sidebar, wait_for_app, wait_for_charts

    page = browser_page
    page.goto(streamlit_server + "/")
    wait_for_app(page)
    open_from_sidebar(page, "Fleet", "/fleet")
    page.get_by_role("textbox", name="Window").fill(WINDOW, timeout=PATIENCE_MS)
    page.get_by_role("textbox", name="Window").press("Enter")
    wait_for_app(page)
    page.get_by_role("textbox", name="Prometheus URL").fill(prom_fleet.url)
    page.get_by_role("textbox", name="Prometheus URL").press("Enter")
    wait_for_app(page)
    losing = prom_fleet.targets["v1-losing"]
    alert = page.locator("[data-testid='stAlertContainer']", has_text=losing)
    alert.wait_for()
    assert "loses" in alert.inner_text() and "turn speculation off" in alert.inner_text()
    assert page.locator("[data-testid='stAlertContainer']", has_text=prom_fleet.dead).inner_text().count("down") >= 1
    assert page.get_by_text(f"{len(FLEET)} instance(s)", exact=False).count() == 1
    # the history chart comes from a second query: wait for it to be drawn before counting
    page.locator("[data-testid='stPlotlyChart']").nth(1).wait_for(timeout=PATIENCE_MS)
    wait_for_charts(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() == 2
    assert "prom_url=" in page.url and "fleet_window=4s" in page.url


def test_an_instance_whose_model_has_no_preset_is_unknown_model_and_never_counted_as_paying_off(report, prom_fleet):
    good = by_key(report, prom_fleet)["v1-good"]
    renamed = dataclasses.replace(good.stats, model_name="acme/secret-model-v3")
    verdict, predicted_on = fleet.judge_instance(renamed, Scenario(), live.COMMAND_LINE)
    assert (verdict.label, predicted_on, verdict.speedup) == ("unknown model", "unknown model", None)
    assert "'acme/secret-model-v3' is not a model this tool has a preset for" in verdict.text
    one = dataclasses.replace(good, stats=renamed, verdict=verdict, predicted_on=predicted_on)
    assert not one.loses and readouts.fleet_counts([one.to_dict()["verdict"]]) == "1 unknown model"


# --- issue 44: `fleet --calibration` with a saved step fit, and the servers' own step timing ----------------

def _fleet_calibration(path: Path) -> dict:
    """A calibration holding one step fit of the fleet's model (Llama 3.1 8B as vLLM names it, a draft model,
    k = 3), fitted by fit.steps on two concurrencies: plain 10 and 12 ms a step at 1 and 8, speculative 4 and 9 ms
    a token at E = 2.9. Written as `runs --calibrate --save-calibration` writes one."""
    from specmodel.fit.saved import SavedFit
    from specmodel.fit.steps import StepPoint, fit_steps
    from specmodel.model.calibration_file import calibration_document, save_document
    from specmodel.model.roofline import Efficiency

    fit = fit_steps([StepPoint(1, 10.0, 4.0, tokens_per_step=2.9), StepPoint(8, 12.0, 9.0, tokens_per_step=2.9)], k=3)
    saved = SavedFit("fleet", "Draft model", "meta-llama/Llama-3.1-8B-Instruct", "draft_model", fit)
    save_document({**calibration_document(Efficiency(), "nothing fitted"), "step_fits": [saved.to_dict()]}, str(path))
    return fit


def test_cli_with_the_servers_runs_at_two_k_says_which_k_up_to_which_batch_per_instance(prom_fleet, capsys, tmp_path):
    """The calibration holds the fleet model's runs at k = 3 and at k = 1 (speculative 6 and 8 ms a token at E = 1.7):
    each instance its k = 3 fit decides gets the schedule across both k at its own acceptance, under its decision
    (`decision_across_k` in --json); an instance of another model gets none."""
    from specmodel.fit.saved import SavedFit
    from specmodel.fit.steps import StepPoint, fit_steps
    from specmodel.model.calibration_file import calibration_document, save_document
    from specmodel.model.roofline import Efficiency

    k3 = _fleet_calibration(tmp_path / "one.json")
    k1 = fit_steps([StepPoint(1, 10.0, 6.0, tokens_per_step=1.7), StepPoint(8, 12.0, 8.0, tokens_per_step=1.7)], k=1)
    saved = [SavedFit("fleet", "Draft model", "meta-llama/Llama-3.1-8B-Instruct", "draft_model", f) for f in (k3, k1)]
    cal = tmp_path / "cal.json"
    save_document({**calibration_document(Efficiency(), "nothing fitted"), "step_fits": [f.to_dict() for f in saved]},
                  str(cal))
    args = ["fleet", prom_fleet.url, "--window", WINDOW, "--calibration", str(cal), "--method", "draft_model"]
    assert cli.main([*args, "--json"]) == 0
    rows = {r["instance"]: r for r in json.loads(capsys.readouterr().out)}
    at = {key: rows[target] for key, target in prom_fleet.targets.items()}
    losing = at["v1-losing"]["decision_across_k"]
    assert losing["decision_line"].startswith(f"{prom_fleet.targets['v1-losing']}: k = 1 up to batch ")
    assert losing["decision_line"].endswith("(your runs at k = 1 and 3, at this window's acceptance)")
    assert losing["schedule"][0][:1] == [1] and losing["schedule"][0][2] == 1  # k = 1 from batch 1
    assert "decision_across_k" not in at["v0"]  # Llama 3.1 70B: not the fits' model
    assert cli.main(args) == 0
    text = capsys.readouterr().out.splitlines()
    at_line = text.index(f"  decision: {at['v1-losing']['decision_line']}")
    assert text[at_line + 1] == f"  across k: {losing['decision_line']}"


def test_cli_with_a_calibration_judges_each_instance_on_its_step_fit_and_its_own_timing(prom_fleet, capsys, tmp_path):
    fit = _fleet_calibration(tmp_path / "cal.json")
    assert cli.main(["fleet", prom_fleet.url, "--window", WINDOW, "--json", "--calibration", str(tmp_path / "cal.json"),
                     "--method", "draft_model"]) == 0
    rows = {r["instance"]: r for r in json.loads(capsys.readouterr().out)}
    at = {key: rows[target] for key, target in prom_fleet.targets.items()}

    # v1-good exposes its step timing: 8.59 ms a token at batch 3.99, against the fit's plain step there
    good = at["v1-good"]
    t = V1_GOOD_TIMING
    ms = 1000 * t["vllm:inter_token_latency_seconds_sum"] / (2900 - t["vllm:time_to_first_token_seconds_count"])
    batch = round(t["vllm:inter_token_latency_seconds_count"] / t["vllm:iteration_tokens_total_count"], 1)
    plain = float(fit.plain.at(fit.shape, "plain", batch)[0])
    assert good["verdict_rests_on"] == "measured + step fit"
    assert good["timing"]["ms_per_token"] == pytest.approx(ms, rel=1e-6)
    assert good["timed"]["speedup"] == pytest.approx(plain / ms, abs=1e-3)
    assert good["step_fit"]["decision"] in ("pays_off", "uncertain", "loses") and good["step_fit"]["batch"] == batch
    assert good["model_verdict"] and good["verdict_text"].startswith("measured + step fit: ")

    # v1-losing exposes no timing increase: the fit decides at its running batch (160) and measured E (1.417)
    losing = at["v1-losing"]
    s, _low, high = fit.speedup(160.0, losing["tokens_per_step"])
    assert losing["verdict_rests_on"] == "step fit" and losing["verdict"] == "loses"
    assert losing["step_fit"]["speedup"] == pytest.approx(float(s), abs=1e-3) and float(high) < 1

    # v1-off runs no speculation: its measured plain step against the fit's speculative one, verdict still "off"
    off = at["v1-off"]
    t = V1_OFF_TIMING
    plain_ms = 1000 * t["vllm:inter_token_latency_seconds_sum"] / (5000 - t["vllm:time_to_first_token_seconds_count"])
    batch = round(t["vllm:inter_token_latency_seconds_count"] / t["vllm:iteration_tokens_total_count"], 1)
    assert off["verdict"] == "off" and off["verdict_rests_on"] == "measured + step fit"
    assert off["timed"]["speedup"] == pytest.approx(plain_ms / float(fit.spec.at(fit.shape, "spec", batch)[0]), abs=1e-3)
    assert off["headline"].startswith("measured + step fit: speculation is off here; turned on, by the step fit: loses")

    # the vLLM V0 instance serves Llama 3.1 70B: the fit is another model's, so its verdict rests on presets
    assert at["v0"]["verdict_rests_on"] == "presets" and at["v0"]["step_fit"] is None
    assert not any("step fit" in w for w in at["v0"]["warnings"])
    # SGLang (no step timing in its metrics) on the fit's model and k: the fit decides
    assert at["sglang"]["verdict_rests_on"] == "step fit"
