"""What the pages show beside a result: the figures' wording (specmodel.show.readouts) and the verdicts' tone."""

import pytest

from specmodel import Scenario, summarize
from specmodel.metrics import prom
from specmodel.model.decide import tone_of
from specmodel.show import readouts

SEED = Scenario.from_names(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3)  # the seed: 1.70x, E = 2.77, break-even 1.63


def shown(rs):
    return {r.label: r for r in rs}


def test_whatif_figures_show_the_seed_numbers():
    r = shown(readouts.whatif_readouts(summarize(SEED)))
    assert r["Speedup"].value == "1.70x"
    assert r["Tokens per step E"].value == "2.77"
    assert r["Tokens per step E"].delta == "+1.14 vs 1.63"  # short enough for its box at 1280 wide
    assert r["Best k here"].value.endswith("x)") and r["Crossover batch"].value not in ("", "—")
    line = readouts.whatif_arms_line(summarize(SEED))
    assert line.startswith("Plain: ") and "Speculative: " in line and "inter-token latency" in line


def test_whatif_speedup_shows_the_models_80_percent_band_under_it():
    summary = summarize(SEED)
    low, high = summary.band
    caption = shown(readouts.whatif_readouts(summary))["Speedup"].caption
    assert caption == f"80% band {low:.2f}–{high:.2f}x"
    assert low < 1.70 < high and "straddles" not in caption
    # batch 32 on an L40S with a 1B draft at α = 0.6: the band straddles 1.0 and the caption says so
    busy = summarize(Scenario.from_names(gpu="L40S", draft="Llama 3.2 1B", alpha=0.6, k=4, concurrency=32))
    assert busy.uncertain
    assert shown(readouts.whatif_readouts(busy))["Speedup"].caption.endswith("(straddles 1.0)")
    off = summarize(Scenario.from_names(alpha=0.7, k=0, t_target_ms=19, t_draft_ms=3))
    assert shown(readouts.whatif_readouts(off))["Speedup"].caption is None  # no speculation, no band


def test_whatif_with_speculation_off_has_no_delta_and_says_off():
    summary = summarize(Scenario.from_names(alpha=0.7, k=0, t_target_ms=19, t_draft_ms=3))
    r = shown(readouts.whatif_readouts(summary))
    assert r["Tokens per step E"].delta is None
    assert summary.verdict.tone == "neutral"


@pytest.mark.parametrize("label, tone", [("pays off", "good"), ("borderline", "caution"), ("loses", "bad"),
                                         ("off", "neutral"), ("unknown", "neutral")])
def test_verdict_labels_have_one_tone_each(label, tone):
    assert tone_of(label) == tone


def _stats(measured: bool) -> prom.LiveStats:
    w = prom.SpecWindow(server="vllm-v1", k=3 if measured else None, window_s=10.0, spec_enabled=measured,
                        drafts=1000.0 if measured else None, draft_tokens=3000.0 if measured else None,
                        accepted=1500.0 if measured else None, per_position=(800.0, 500.0, 200.0) if measured else None,
                        generation_tokens=5000.0, running=12.0, waiting=2.0, kv_usage=0.25)
    return prom.stats_from_window(w)


def test_live_band_line_names_the_band_and_says_when_it_straddles_1():
    from specmodel.metrics import live

    sure = live.live_verdict(_stats(True), Scenario())
    lo, hi = sure.band
    line = readouts.live_band_line(sure)
    assert line.startswith(f"The model's 80% band here: {lo:.2f}–{hi:.2f}x (the window's acceptance interval")
    assert ("straddles 1.0" in line) == (lo < 1.0 < hi)
    busy = live.live_verdict(_stats(True), Scenario.from_names(gpu="A100 80GB"))  # 12 running: 1.29x, band 0.93–2.01x
    assert busy.uncertain and "straddles 1.0" in readouts.live_band_line(busy)


def test_live_figures_with_intervals_where_measured_and_dashes_where_not():
    r = shown(readouts.live_readouts(_stats(True)))
    assert r["Tokens per step E"].value == "2.50" and r["Tokens per step E"].caption.startswith("95%: ")
    assert r["Accepted ÷ drafted"].value == "0.500"
    assert r["Running / waiting"].value == "12 / 2" and r["KV cache used"].value == "25%"
    assert r["Generated tokens/s"].value == "500"
    off = shown(readouts.live_readouts(_stats(False)))
    assert [off[x].value for x in ("Tokens per step E", "α (per token)", "Accepted ÷ drafted")] == ["—"] * 3


def test_fleet_alerts_name_the_losing_down_and_unreadable_instances_with_their_tone():
    from specmodel.metrics import fleet, promapi, samples

    server = promapi.PromServer(samples.FLEET_SAMPLE_URL, promapi.PromAuth(None, None, None))
    with samples.recorded_prometheus_client() as client:
        report = fleet.fleet(client, server, Scenario(), window=samples.FLEET_SAMPLE_WINDOW,
                             at_s=samples.fleet_sample_time())
    alerts = readouts.fleet_alerts(report)
    bad = [a for a in alerts if a.tone == "bad"]
    assert [a.instance for a in bad] == [i.instance for i in report.losing] and bad
    assert all(a.detail.startswith(f"({i.model_name}, job {i.job}) loses") for a, i in zip(bad, report.losing))
    down = [a for a in alerts if "is down" in a.detail]
    assert [a.instance for a in down] == [d["instance"] for d in report.down] and all(a.tone == "caution" for a in down)
    table = report.table()
    counts = readouts.fleet_counts(table["verdict"])
    assert sum(int(part.split(" ")[0]) for part in counts.split(", ")) == len(table)
    from specmodel.runs.review import with_band_text

    assert set(readouts.FLEET_COLUMNS) <= set(with_band_text(table).columns)  # the band as the page shows it
    predicted = table.dropna(subset=["predicted_speedup"])
    assert len(predicted) and ((predicted["speedup_low"] < predicted["predicted_speedup"])
                               & (predicted["predicted_speedup"] < predicted["speedup_high"])).all()


def test_fleet_counts_put_the_most_frequent_verdict_first():
    assert readouts.fleet_counts(["loses", "pays off", "pays off", "off"]) == "2 pays off, 1 loses, 1 off"


def test_a_losing_instance_whose_band_reaches_one_is_a_caution_not_an_alarm():
    """The recorded fleet's losing instance (0.38x, band 0.28-0.58x) is a red box; the same loss with a band
    reaching past 1.0 (a short window, an assumed acceptance) is amber, as its verdict box is on Live."""
    import dataclasses

    from specmodel.metrics import fleet, promapi, samples

    server = promapi.PromServer(samples.FLEET_SAMPLE_URL, promapi.PromAuth(None, None, None))
    with samples.recorded_prometheus_client() as client:
        report = fleet.fleet(client, server, Scenario(), window=samples.FLEET_SAMPLE_WINDOW,
                             at_s=samples.fleet_sample_time())
    (losing,) = report.losing
    assert [a.tone for a in readouts.fleet_alerts(report) if a.instance == losing.instance] == ["bad"]
    wide = dataclasses.replace(losing, verdict=dataclasses.replace(losing.verdict, band=(0.6, 1.2)))
    report = dataclasses.replace(report, instances=tuple(wide if i is losing else i for i in report.instances))
    assert [a.tone for a in readouts.fleet_alerts(report) if a.instance == losing.instance] == ["caution"]


def test_best_k_here_never_names_a_slower_k_as_best_without_saying_so():
    """Issue 40: the schedule's k at a batch can be a little slower there than the k set (it switches only for
    more than 2%): the readout says the k set here is faster."""
    r = shown(readouts.whatif_readouts(summarize(Scenario.from_names(gpu="H100", method="eagle3", alpha=0.9, k=6,
                                                                     concurrency=32))))
    assert r["Best k here"].value == "8 (2.77x)" and r["Best k here"].caption == "k = 6 set here is faster: 2.78x"
    assert shown(readouts.whatif_readouts(summarize(SEED)))["Best k here"].caption is None
