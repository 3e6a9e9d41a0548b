""""Try it with a recorded server": Live replays bundled /metrics snapshots, Fleet shows a recorded
Prometheus answer; both say they are samples, and neither touches the network."""

from __future__ import annotations

import re

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from specmodel import Scenario
from specmodel.metrics import fleet, live, promapi, samples
from specmodel.metrics.prom import stats_from_window, window_over
from tests.conftest import ROOT

APP = str(ROOT / "app.py")


@pytest.fixture
def no_network(monkeypatch):
    """Any real HTTP request fails the test: the samples must be answered in process."""
    def refuse(self, request):
        raise AssertionError(f"the sample made a network request: {request.url}")

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", refuse)


def test_the_recorded_server_is_a_load_ramp_whose_verdict_turns():
    snaps = [samples.live_sample_snapshot(i, 1_000.0) for i in range(samples.live_sample_length())]
    assert len(snaps) == 8 and [s.at for s in snaps] == [1_000.0 + 10 * i for i in range(8)]
    first = live.live_verdict(stats_from_window(window_over(snaps[:2])), Scenario())
    last = live.live_verdict(stats_from_window(window_over(snaps[-2:])), Scenario())
    stats = stats_from_window(window_over(snaps[-2:]))
    assert stats.k == 3 and stats.tokens_per_step == pytest.approx(2.71)  # 1 + 1710 / 1000
    assert first.label == "pays off" and last.label == "loses"  # on the default L40S, at 20 and 256 running


def test_the_recorded_prometheus_answers_the_fleet_queries(no_network):
    with samples.recorded_prometheus_client() as client:
        report = fleet.fleet(client, promapi.PromServer(samples.FLEET_SAMPLE_URL), Scenario(),
                             window=samples.FLEET_SAMPLE_WINDOW, at_s=samples.fleet_sample_time())
    table = report.table().set_index("instance")
    assert set(table.index) == {"v1-good:8000", "v1-losing:8000", "v1-restarted:8000", "v1-off:8000", "v0:8000",
                                "sglang:8000"}
    assert table.loc["v1-good:8000", "tokens_per_step"] == pytest.approx(2.9)
    assert table.loc["v1-losing:8000", "verdict"] == "loses"
    assert [d["instance"] for d in report.down] == ["v0-down:8000"]


def _page(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    return at.switch_page(path).run()


def test_live_replays_the_recording_labelled_as_a_sample(no_network):
    at = _page("pages/live.py")
    at.button(key="live_try_sample").click().run()
    assert not at.exception
    assert any(c.value == samples.LIVE_SAMPLE_SHORT for c in at.caption)  # the whole label is its tooltip
    assert any("First scrape done" in i.value for i in at.info)
    at.run()  # the next refresh replays the next scrape
    # the decision first (issue 40): k = 3 up to the batch where the schedule turns it off, the range the band leaves
    # for it, and the two runs that would pin it
    said = [m.value for m in at.markdown]
    assert "**meta-llama/Llama-3.1-8B-Instruct: k = 3 up to batch 114 (43–512+), off above**" in said
    assert any(c.value == "Pin it: plain and speculative runs at batch 43 and 134." for c in at.caption)
    # pays off 1.22x at batch 32 with a band of 0.91-1.90x: an amber box (uncertain), not a green one; under the
    # charts, the whole headline says first that the verdict rests on presets (no step fit or measured plain step)
    assert not at.success
    assert at.warning[0].value == "**Right now: uncertain (pays off by the estimate): 1.22x at batch 32 (80% band 0.91–1.90x)**"
    whole = next(w.value for w in at.warning if w.value.startswith("**Right now: rests on presets"))
    assert whole.startswith("**Right now: rests on presets (Llama 3.1 8B on L40S, assumed; no step fit or measured "
                            "plain step): uncertain (pays off by the estimate): 1.22x")
    assert "— 0.91x to 1.90x across the model's 80% band" in whole
    assert len(at.get("plotly_chart")) >= 2
    for _ in range(samples.live_sample_length()):
        at.run()
    assert not at.exception
    # the load rose to 256: loses 0.68x, and the band (about 0.5-1.06x) still reaches 1.0, so amber too
    assert at.warning[0].value.startswith("**Right now: uncertain (loses by the estimate)")
    whole = next(w.value for w in at.warning if w.value.startswith("**Right now: rests on presets"))
    assert whole.startswith("**Right now: rests on presets (Llama 3.1 8B on L40S, assumed; no step fit "
                            "or measured plain step): uncertain (loses by the estimate)")
    assert re.search(r"— 0\.\d\dx to 1\.\d\dx across the model's 80% band", whole)
    assert any("End of the recording (8 scrapes)" in c.value for c in at.caption)
    at.button(key="live_stop_sample").click().run()
    assert any("Enter the metrics URL" in i.value for i in at.info)


def _two_k_fits() -> list:
    """Step fits of the recorded fleet's model (a draft model) at k = 3 and k = 1, as Past runs' "Use these step fits
    on every page" keeps them: plain 10 and 12 ms a step at batch 1 and 8; speculative 4 and 9 ms a token at
    E = 2.9 (k = 3), 6 and 8 ms at E = 1.7 (k = 1)."""
    from specmodel.fit.saved import SavedFit
    from specmodel.fit.steps import StepPoint, fit_steps

    k3 = fit_steps([StepPoint(1, 10.0, 4.0, tokens_per_step=2.9), StepPoint(8, 12.0, 9.0, tokens_per_step=2.9)], k=3)
    k1 = fit_steps([StepPoint(1, 10.0, 6.0, tokens_per_step=1.7), StepPoint(8, 12.0, 8.0, tokens_per_step=1.7)], k=1)
    return [SavedFit("fleet", "Draft model", "meta-llama/Llama-3.1-8B-Instruct", "draft_model", f) for f in (k3, k1)]


def test_fleet_judges_each_instance_on_the_sessions_step_fits_and_says_which_k_up_to_which_batch(no_network):
    """Past runs' "Use these step fits on every page" reached What-if and Live, not Fleet: its instances were
    judged on presets (v1-losing: "off at batch 160; k = 1 up to batch 14 (0–74)", the model's) while `fleet
    --calibration` judged them on the fit. Now each instance of the fits' model and k is decided by them ("your
    runs"), and with the server's runs at k = 1 too, the schedule across both k at the instance's acceptance."""
    at = _page("pages/fleet.py")
    at.session_state["step_fits"] = _two_k_fits()
    at.button(key="fleet_try_sample").click().run()
    assert not at.exception
    decisions = at.dataframe[0].value.set_index("instance")
    assert decisions.loc["v1-losing:8000", "decision"] == "k = 3: off above batch 2 (1–3, your runs)"
    assert decisions.loc["v1-losing:8000", "across k"] == ("k = 1 up to batch 25, off above (your runs at k = 1 and "
                                                           "3, at this window's acceptance)")
    assert decisions.loc["v1-good:8000", "across k"].startswith("k = 3 to batch 4, then 1 up to 512+ (your runs")
    # the 70B instance is not the fits' model, and v1-off runs no speculation: the model decides, no schedule
    assert decisions.loc["v0:8000", "decision"] == "k = 4 up to batch 512+" and decisions.loc["v0:8000", "across k"] == ""
    assert decisions.loc["v1-off:8000", "decision"].endswith("(α assumed)")
    assert decisions.loc["v1-off:8000", "across k"] == ""


def test_fleet_shows_the_recorded_answer_labelled_as_a_sample(no_network):
    at = _page("pages/fleet.py")
    at.button(key="fleet_try_sample").click().run()
    assert not at.exception
    assert any(c.value == samples.FLEET_SAMPLE_SHORT for c in at.caption)  # the whole label is its tooltip
    assert any("v1-losing:8000" in e.value and "loses" in e.value for e in at.error)
    assert any("v0-down:8000" in w.value and "down" in w.value for w in at.warning)
    decisions = at.dataframe[0].value.set_index("instance")  # the decision per instance, first (issue 40)
    assert decisions.loc["v1-losing:8000", "decision"] == "off at batch 160; k = 1 up to batch 14 (0–74)"
    assert decisions.loc["v1-losing:8000", "runs that pin it"] == "batch 2 and 74"
    assert len(at.dataframe[1].value) == 6
    assert len(at.get("plotly_chart")) == 2
    assert any("the recorded Prometheus (sample)" in c.value for c in at.caption)
    notes = " ".join(m.value for m in at.markdown)
    assert "- ⚠️ speculative decoding is off on this server" in notes  # a warning, marked as one
    assert "- no per-position counts from this server" in notes  # a note that only explains: unmarked
    table = at.dataframe[1].value.set_index("instance")
    assert table.loc["v0:8000", "predicted_on"].startswith("Llama 3.1 70B")  # its own model, not the sidebar's 8B
    # the rules offered beside it judge that instance on the same model and k (the one place that decides it)
    assert any("each of the 5 instance(s) read at the k, target and draft the table judges it on" in c.value
               for c in at.caption)
    assert "- α = 0.70 and k = 4 are assumed (the model's defaults for a server that measures none)" in notes
    assert "--alpha" not in notes and "What-if" not in notes
    # the SGLang instance's band (0.93-1.89x) straddles 1.0: the page calls it uncertain, counts it so and says
    # between which batch sizes to measure
    assert table.loc["sglang:8000", "verdict"] == "uncertain" and table.loc["v1-good:8000", "verdict"] == "pays off"
    assert any("3 pays off, 1 uncertain, 1 loses, 1 off" in c.value for c in at.caption)
    why = [c.value for c in at.caption if c.value.startswith("**sglang:8000**")]
    assert len(why) == 1 and why[0].startswith("**sglang:8000** uncertain (pays off by the estimate): 1.25x")
    # "between 45": against the schedule's off band, not free on SGLang (model.off_state); 24 against a free one
    assert "0.93x to 1.89x across the model's 80% band" in why[0] and "between 45 and 512" in why[0]
