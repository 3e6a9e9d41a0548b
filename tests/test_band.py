"""The band and what it leaves open: an 80% interval (decide.BAND_RATIO, from leave-one-source-out
residuals on the development set), the range of the batch above which speculation stops paying,
and an "uncertain" verdict that says where to measure."""

import json

from specmodel import Scenario, summarize
from specmodel.cli import main
from specmodel.model.decide import BAND_RATIO, JUDGED, TONE_OF_LABEL, tone_of
from specmodel.notes import TONES


def _predict_json(capsys, *args):
    assert main(["predict", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_band_is_the_prediction_widened_by_the_measured_ratio():
    s = summarize(Scenario.from_names(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3))  # the seed's worked example
    low, high = s.band
    assert low == float(s.prediction.speedup) * BAND_RATIO[0] and high == float(s.prediction.speedup) * BAND_RATIO[1]
    assert 0.7 < BAND_RATIO[0] < 0.9 and 1.3 < BAND_RATIO[1] < 1.7  # ~×0.77 to ×1.50 from the development set


def test_an_uncertain_verdict_gives_the_range_of_the_off_threshold_and_says_to_measure_there(capsys):
    out = _predict_json(capsys, "--concurrency", "40")  # the default 8B + 1B on an L40S, near its crossover
    assert out["uncertain"] is True and out["speedup_low"] < 1 < out["speedup_high"]
    low, mid, high = out["off_above_batch_low"], out["off_above_batch"], out["off_above_batch_high"]
    # against the schedule's off band (not free on vLLM: model.off_state) the high end pays beyond 512 here
    assert low < mid and (high is None or mid < high)
    top = "512, or beyond it" if high is None else f"{high}"
    assert f"between {low} and {top}" in out["verdict_text"] and "measure" in out["verdict_text"]


def test_an_uncertain_verdict_reads_as_a_caution_whichever_way_its_speedup_leans():
    """A box that says "pays off" in green while its band reaches below 1.0 is read as a go: the What-if,
    Live and Fleet boxes are amber ("caution") where the band straddles 1.0, green or red where it is clear."""
    from specmodel.model.decide import band_tone

    near = summarize(Scenario.from_names(concurrency=40))  # near its crossover: 1.0x to either side within the band
    clear = summarize(Scenario.from_names(concurrency=1))  # 1.15-2.32x
    assert near.uncertain and near.tone == "caution" and near.verdict.tone in ("good", "neutral", "bad")
    assert not clear.uncertain and clear.tone == clear.verdict.tone == "good"
    assert band_tone("loses", "bad", (0.6, 1.2)) == "caution" and band_tone("loses", "bad", (0.3, 0.6)) == "bad"
    assert band_tone("off", "neutral", (0.7, 1.4)) == "neutral"  # speculation off judges no speedup


def test_the_range_keys_are_there_when_nothing_fits_too(capsys):
    assert main(["predict", "--json", "--target", "Llama 3.1 70B"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "does not fit" and out["off_above_batch_low"] is None and "off_above_batch_high" in out


def test_a_calibrated_band_sits_around_the_calibrated_prediction_and_not_the_shipped_one():
    """Calibrated on a source's other runs, the next run's error is as wide as BAND_RATIO
    (`python -m bench fidelity`, "calibrated band": 27 runs, ×0.85..×1.50, 89% inside), so the band of
    a calibrated scenario is BAND_RATIO around its own prediction; it used to stretch to the
    uncalibrated prediction too (here ×1.4 overheads moved the prediction by ~8%)."""
    from specmodel.model.roofline import Efficiency

    shipped = summarize(Scenario.from_names(gpu="H100", target="Llama 3.1 8B", method="eagle3", draft=None, k=3, concurrency=32,
                                 engine="vllm 0.11.0"))
    calibrated = summarize(Scenario.from_names(gpu="H100", target="Llama 3.1 8B", method="eagle3", draft=None, k=3,
                                    concurrency=32, engine="vllm 0.11.0",
                                    efficiency=Efficiency(overhead_scale=1.4, spec_seq_scale=2.0)))
    moved = float(calibrated.prediction.speedup)
    assert abs(moved / float(shipped.prediction.speedup) - 1) > 0.03  # calibration moved the prediction
    low, high = calibrated.band
    assert low == moved * BAND_RATIO[0] and high == moved * BAND_RATIO[1]
    old = (min(moved, float(shipped.prediction.speedup)) * BAND_RATIO[0],
           max(moved, float(shipped.prediction.speedup)) * BAND_RATIO[1])
    assert high - low < (old[1] - old[0]) * 0.97  # narrower than the span of both predictions it was


def test_runs_text_calls_a_predicted_verdict_uncertain_and_the_json_keeps_its_code(tmp_path, capsys):
    runs = tmp_path / "near.csv"
    runs.write_text("workload,gpu,target_model,draft_model,method,k,concurrency,alpha,speedup\n"
                    "near,L40S,Llama 3.1 8B,Llama 3.2 1B,draft_model,4,40,0.7,\n"
                    "measured,L40S,Llama 3.1 8B,Llama 3.2 1B,draft_model,4,40,0.7,1.1\n")
    assert main(["runs", str(runs)]) == 0
    text = capsys.readouterr().out
    near = next(line for line in text.splitlines() if line.startswith("near"))
    measured = next(line for line in text.splitlines() if line.startswith("measured "))
    assert "uncertain*" in near and "pays off" in measured  # a measured 1.10x stays a measured verdict
    assert main(["runs", str(runs), "--json"]) == 0
    rows = {r["workload"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["near"]["verdict"] == "clears" and rows["near"]["uncertain"] is True  # public codes unchanged


def test_every_verdict_reads_in_one_of_the_tones():
    """notes.TONES is every tone a verdict's box can take: each judged label has its own, "off" is neutral."""
    assert {tone_of(label) for label in (*JUDGED, "off", "unknown")} == set(TONES)
    assert set(TONE_OF_LABEL) == set(JUDGED)
