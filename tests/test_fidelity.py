"""The model against published measurements it has to reproduce without calibration (issue 10).

Numbers are the sources' own (bench/evidence/, copied into tests/fixtures/); each test states
the measured value and the tolerance the model is held to. The development-set tests below are
REGRESSION tests: the engine constants were fitted to that set's largest source (SpecDecode-Bench),
so passing them is not evidence of accuracy elsewhere; the leave-one-source-out test is the one
that re-fits without the source it predicts (`python -m bench fidelity` prints both side by side).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bench.bench_fidelity import (_mape, _verdicts, band_quantiles, coverage, evaluate, extrapolation, load,
                                  log_residuals, loso, moe_layer, shape_errors, step_fit_extrapolation,
                                  steptime_grid)
from specmodel.cli import main
from specmodel.export.prediction import prediction_dict
from specmodel.model.decide import BAND_RATIO
from specmodel.words import summarize
from specmodel.model.presets import find_model
from specmodel.model.roofline import Efficiency, PassShape, expert_bytes_read, experts_touched, memory_and_compute
from specmodel.model.scenario import Scenario, predict
from tests.conftest import FIXTURES


@pytest.fixture(scope="module")
def dev():
    return load(FIXTURES / "published_dev.csv")


@pytest.fixture(scope="module")
def dev_evaluated(dev):
    """The development set predicted with the default parameters (read-only: several tests judge it)."""
    return evaluate(dev)


# --- the development set, read by the project's own run reader -------------------------------------

@pytest.mark.slow  # a calibration fit judged on a published sweep: model validation, in make test only
def test_calibrated_on_a_sweeps_batch_up_to_8_it_predicts_the_batches_above_within_12_percent(dev):
    """Issue 20's extrapolation target: the one development sweep with two batch sizes at or below 8
    (MiniMax-M2.5 EAGLE-3 on 4x MI355X, S18: 1.79x at batch 4, 1.71x at 8, then 1.55x, 1.57x, 1.38x at
    16, 32, 64) calibrated on batch <= 8 predicts the fall above within 12%. Held out: the model it starts
    from (and the uncalibrated baseline) re-fitted without S18, as nothing about the sweep was known.
    When written: 12.4% calibrated, 17.0% uncalibrated (target missed by 0.4 points; over the default
    constants, fitted with S18 in the set, it read 11.9% and 12.3%; 18.0% before vLLM's ROCm verify kernel
    was priced). The bound is a regression floor, not the target."""
    (label, above, uncalibrated, calibrated), = extrapolation(dev)
    assert "MiniMax" in label and above == 3
    assert calibrated <= 12.5 and calibrated <= uncalibrated - 4


@pytest.mark.slow  # a fit per published sweep: model validation, in make test only
def test_step_fit_on_small_batches_predicts_the_large_ones(dev):
    """Issue 44's measure → fit: each development sweep with two batches ≤ 16 (mostly SpecDecode-Bench's
    batch 1 and 16 on H100, speedups only) fitted on them, predicting its 69 rows at 64 and 128. The fit's own
    constants are chosen (noise floor, prior spreads, band; fit/steps.py), but it runs over the model's shape,
    whose constants were fitted to this set (its largest source is these sweeps' SpecDecode-Bench): the shape
    comes from the model re-fitted without the sweep's source. When written: MAPE 12.4% (target ≤ 12%: missed;
    11.3% over the default constants, in-sample), band holds 87% (target 70-90%), of 20 runs measured below 1.0
    14 caught with the whole band below 1.0 and 6 called uncertain (70%); none called a win, and all 20 are
    predicted below 1.0 (18 over the default constants). Five of the 20 measured 0.97-0.99x, within a benchmark's
    noise of break-even ("borderline" by the tool's own 5%, as the model's losses are counted): of the 15 measured
    losses (below 0.95), 12 are caught (80%, the issue's target) and 3 (0.85-0.94x) uncertain. The bounds are
    regression floors, not the targets."""
    sf = step_fit_extrapolation(dev)
    assert sf["rows"] == 69
    assert sf["mape_pct"] <= 12.5
    assert 0.70 <= sf["coverage"] <= 0.90
    assert sf["losses"] == 20 and sf["caught"] >= 14 and sf["caught"] + sf["uncertain"] == sf["losses"]
    assert sf["predicted_below_1"] >= 19
    assert sf["clear_losses"] == 15 and sf["clear_caught"] >= 12
    assert sf["clear_caught"] + sf["clear_uncertain"] == sf["clear_losses"]


@pytest.mark.slow  # a re-fit per source: model validation, in make test, not in make test-fast
def test_leave_one_source_out_meets_the_targets_and_the_band_covers_about_eighty_percent(dev):
    """Each source predicted with the engine-overhead scales, the per-sequence scale among them (the
    per-sequence constants of data/engines.json were fitted to SpecDecode-Bench), re-fitted without it.
    Issue 20's targets: MAPE ≤ 20%, verdicts ≥ 92% with ≥ 80% of measured losses caught, shape error
    ≤ 12%, band coverage 70-90%. When written: MAPE 21.4% and verdicts 87.8% (both missed: without
    SpecDecode-Bench the fit takes the per-sequence cost 1.85× the preset, from the MoE sweep on MI355X
    whose fall the model does not explain), every loss caught (11/11), shape 11.2%, coverage 86%. Since
    rows are predicted on what they name (281 rows, 176 of them on a published acceptance figure):
    MAPE 20.6%, verdicts 78% (own acceptance 84%, the source's other rows 88%, a published figure 73%),
    19/19 losses, shape 11.0%, coverage 90%. With engine versions read from the rows' notes, SGLang's
    per-sequence constants re-fitted for it and the QPS rows predicted (298 rows): MAPE 20.6%, verdicts
    78%, 20/21 losses, shape 10.8%, coverage 86% (the model's own band 90%). With rows that state no k
    or no draft predicted across their spreads and left out of the fits (328 rows): the same MAPE, shape
    and coverage, verdicts 80%. With the fits taking plain throughputs of runs without acceptance and
    per-GPU throughputs read as the replica's: MAPE 20.4%, verdicts 81%, 20/21 losses, shape 12.2% (the
    fit without SpecDecode-Bench now holds the engine overheads at 1.6x, not 2.4x, and takes the MI355X
    sweep's fall as per-sequence cost, 2.0x), coverage 86% (the model's own band 86%). With vLLM's ROCm
    verify kernel from 0.19 priced (ROCM_ATTN's prefix prefill; the MI355X sweep names no version and
    runs as the newest release read): MAPE 19.6%, verdicts 84%, 19/21 losses, shape 10.2% (the fit
    without SpecDecode-Bench takes the per-sequence cost at 1.5x), coverage 86%. With Spec-Bench's n-gram
    acceptance (which counts the steps without a match) read back to vLLM's steps with a proposal:
    verdicts 89%, 18/21 losses, the rest unchanged. The bounds below are regression floors, not the
    targets."""
    out_ev, out_shape, _ = loso(dev)
    n, mape = _mape(out_ev[out_ev["own_acceptance"]])
    v = _verdicts(out_ev)
    assert n >= 25 and mape <= 20.5
    assert v["verdict"] >= 0.88 and v["caught"] / v["losses"] >= 0.8
    assert out_shape["error"].mean() <= 0.11
    res = log_residuals(out_ev)
    per_source = {s: band_quantiles(res[res.index != s]) for s in set(out_ev["source"])}
    rows, covered = coverage(out_ev, per_source)
    assert rows >= 25 and 0.70 <= covered <= 0.90
    # The shipped band is these residuals' 10-90% quantiles: re-derive decide.BAND_RATIO when this fails.
    q10, q90 = np.exp(band_quantiles(res))
    assert abs(q10 - BAND_RATIO[0]) <= 0.03 and abs(q90 - BAND_RATIO[1]) <= 0.03
    # The model's own band (speedup_low..high), predicted with the constants fitted without the source:
    # 86% when written (79% in-sample).
    rows, covered = coverage(out_ev)
    assert rows >= 25 and 0.70 <= covered <= 0.90
    # Issue 44: "uncertain" on every measured loss the model does not predict. When written, the two LOSO misses
    # (S03's vLLM draft model at 48 requests, 0.71x measured, 1.59x predicted; its n-gram at 86, 0.54x for 1.08x)
    # both have bands from below 1.0 to above 2.
    losses = out_ev[(out_ev["measured_speedup"].astype(float) < 1) & out_ev["predicted_speedup"].notna()]
    missed = losses[losses["predicted_speedup"].astype(float) >= 1]
    assert len(missed) <= 3 and missed["uncertain"].astype(bool).all()


def test_band_quantiles_weigh_each_source_once():
    import pandas as pd

    big = pd.Series([0.0] * 100, index=["A"] * 100)
    small = pd.Series([1.0] * 2, index=["B"] * 2)
    lo, hi = band_quantiles(pd.concat([big, small]))
    assert lo == pytest.approx(0.0) and hi == pytest.approx(1.0, abs=0.25)  # not 0: B counts as much as A


def test_the_models_band_holds_most_development_measurements(dev_evaluated):
    """Regression: the shipped band (decide.BAND_RATIO) holds the measured speedup on 70-90% of the rows
    with their own acceptance (79% when written; the 5-8% parameter spread it replaced held 17%)."""
    rows, covered = coverage(dev_evaluated)
    assert rows >= 25 and 0.70 <= covered <= 0.92

def test_development_set_verdicts_agree_and_measured_losses_are_caught(dev_evaluated):
    v = _verdicts(dev_evaluated)
    assert v["rows"] >= 270  # 281 since rows are predicted on what they name (issue 21), 176 on a published α
    # Regression floor: 91.1% when written (issue 10's target 92% was met on the 172 rows the reader
    # predicted before, with acceptance borrowed across methods); "always pays off" reaches 0.90.
    assert v["verdict"] >= 0.93  # 94% since the n-gram convention fix (92% before)
    assert v["losses"] >= 15 and v["caught"] / v["losses"] >= 0.8


def test_speedup_falls_with_batch_as_published_within_ten_percent_on_average(dev):
    shape = shape_errors(dev)
    assert len(shape) >= 150
    flat = (1 / shape["measured"] - 1).abs().mean()  # a batch-1 model predicts no fall at all
    assert shape["error"].mean() <= 0.10 and flat >= 0.4


def test_rows_with_their_own_acceptance_within_twenty_percent_on_average(dev_evaluated):
    ev = dev_evaluated
    own = ev[ev["own_acceptance"] & ev["predicted_speedup"].notna()]
    err = (own["predicted_speedup"] / own["measured_speedup"] - 1).abs()
    assert len(own) >= 25 and err.mean() <= 0.20
    b1 = (own["batch1_speedup"] / own["measured_speedup"] - 1).abs()
    assert err.mean() < b1.mean() / 2  # the batch-1 formula on the same rows is off by ~38%


def test_h200_step_time_grid_within_eight_percent_for_whole_layers():
    linear, layers = steptime_grid(path=FIXTURES / "h200_steptime.csv")
    assert len(layers) >= 60 and layers["error"].mean() <= 0.08
    assert linear["error"].mean() <= 0.08


# --- single published runs -----------------------------------------------------------------------

SGLANG_QWEN = dict(gpu="1x H100 80GB", target="Qwen3-8B", method="eagle3", engine="sglang 0.5.9")  # the source's version


@pytest.mark.parametrize("batch, measured", [(1, 1.65), (64, 1.31), (128, 1.22)])
def test_specdecode_bench_chain_eagle3_with_its_acceptance_length(batch, measured):
    # SpecDecode-Bench (arXiv:2601.11580): SGLang, Qwen3-8B, EAGLE-3 chain k = 3, accepted length 2.25
    s = Scenario.from_names(**SGLANG_QWEN, k=3, concurrency=batch, survival=None).validated()
    from specmodel.model.acceptance import alpha_from_tokens_per_step
    s = Scenario.from_names(**{**s.__dict__, "alpha": float(alpha_from_tokens_per_step(2.25, 3))})
    assert predict(s).speedup == pytest.approx(measured, rel=0.15)


@pytest.mark.parametrize("batch, measured", [(1, 1.84), (16, 1.34), (64, 0.59)])
def test_a_wide_tree_is_costed_by_its_depth_for_drafting_and_its_width_for_verifying(batch, measured):
    # same source: tree of 21 verified tokens, depth 3, branching 4, accepted length 2.92
    from specmodel.model.acceptance import alpha_from_tokens_per_step
    alpha = float(alpha_from_tokens_per_step(2.92, 3))
    s = Scenario.from_names(**SGLANG_QWEN, k=21, draft_depth=3, branching=4, alpha=alpha, concurrency=batch)
    assert predict(s).speedup == pytest.approx(measured, rel=0.15)
    # the same accepted length drawn as a chain of 21 sequential passes costs more
    chain_of_21 = Scenario.from_names(**SGLANG_QWEN, k=21, alpha=float(alpha_from_tokens_per_step(2.92, 21)), concurrency=batch)
    assert predict(chain_of_21).tokens_per_step == pytest.approx(2.92, abs=1e-3)
    assert predict(chain_of_21).speedup < predict(s).speedup


def test_vllm_plain_step_on_an_h100_matches_the_measured_133_tokens_per_second():
    # vLLM PR #16937: H100, Llama-3.1-8B, batch 1, vanilla 133 tok/s (7.5 ms per step)
    p = predict(Scenario.from_names(gpu="H100 SXM", target="Llama 3.1 8B", method="eagle", k=2, alpha=0.7))
    assert p.plain.step_ms == pytest.approx(7.5, rel=0.08)
    ideal = predict(Scenario.from_names(gpu="H100 SXM", target="Llama 3.1 8B", method="eagle", k=2, alpha=0.7, engine="ideal"))
    assert ideal.plain.step_ms < p.plain.step_ms - 1.0 and ideal.speedup > p.speedup


def test_magicdec_sparse_kv_self_speculation_gains_with_batch_at_32k_context():
    # MagicDec (arXiv:2408.11049), 8x H100 TP 8, Llama-3.1-8B, 32k prefill, α 0.81: 1.23x at 32, 1.43x at 64
    s = Scenario.from_names(gpu="H100 SXM", tp=8, target="Llama 3.1 8B", method="self_spec", k=3, alpha=0.81,
                 context_len=32000, engine="sglang")
    at32, at64 = (float(predict(s, concurrency=b).speedup) for b in (32, 64))
    assert at64 > at32 > 1.0
    # MagicDec runs its own engine (torch.compile(mode="reduce-overhead", fullgraph=True) around FlashInfer
    # attention: Engine/backend.py, Infini-AI-Lab/MagicDec); no preset is that engine and SGLang's
    # overheads stand in, so the level is held to 20% (1.43x when written, +16%), the rise with batch exactly.
    assert at32 == pytest.approx(1.23, rel=0.20)


def test_moe_verify_reads_more_experts_than_a_decode_step():
    m = find_model("Qwen3-30B-A3B")
    shape = PassShape.of_model(m)
    one, *_ = memory_and_compute(shape, 1, 1, 0)
    four, *_ = memory_and_compute(shape, 1, 4, 0)
    many, *_ = memory_and_compute(shape, 64, 4, 0)
    assert float(one) < float(four) < float(many)
    # 256 tokens from 64 sequences touch nearly every one of the 128 experts of each layer
    assert float(many) == pytest.approx(shape.weight_bytes + shape.expert_bytes * m.experts, rel=0.02)


def test_tensor_parallel_all_reduces_cost_time_per_layer():
    base = dict(gpu="H100 PCIe", target="Llama 3.1 70B", method="eagle", k=3, alpha=0.7, concurrency=64)
    pcie = predict(Scenario.from_names(**base, tp=4)).plain.step_ms
    nvl = predict(Scenario.from_names(**{**base, "gpu": "H100 SXM"}, tp=4)).plain.step_ms
    assert pcie > nvl  # slower links and higher all-reduce latency


# --- the band, calibration files -----------------------------------------------------------------

def test_a_verdict_whose_band_straddles_one_says_uncertain():
    s = Scenario.from_names(gpu="H100 SXM", target="Llama 3.1 8B", method="eagle", k=3, alpha=0.6)
    crossing = next(b for b in range(1, 4097) if predict(s, concurrency=b).speedup < 1.0)
    out = prediction_dict(summarize(Scenario.from_names(**{**s.__dict__, "concurrency": crossing})))
    assert out["speedup_low"] < 1.0 < out["speedup_high"] and out["uncertain"]
    assert "uncertain" in out["verdict_text"]
    clear = prediction_dict(summarize(Scenario.from_names(**{**s.__dict__, "concurrency": 1})))
    assert clear["speedup_low"] > 1.0 and not clear["uncertain"]


def test_calibration_saved_by_runs_is_applied_by_predict_and_runs(tmp_path, capsys):
    cal = tmp_path / "cal.json"
    assert main(["runs", str(FIXTURES / "seed_runs.csv"), "--calibrate", "--save-calibration", str(cal),
                 "--json"]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    doc = json.loads(cal.read_text())
    assert doc["format"] == "specmodel-calibration" and doc["fitted_on"]["rows"] == 3
    assert doc["fitted_on"]["gpus"] == ["L40S"] and set(doc["parameters"]) >= set(calibrated["calibration"]["fitted"])
    mixed = next(r for r in calibrated["rows"] if r["workload"].startswith("mixed"))
    # the same file applied to the same runs gives the same predictions
    assert main(["runs", str(FIXTURES / "seed_runs.csv"), "--calibration", str(cal), "--json"]) == 0
    again = next(r for r in json.loads(capsys.readouterr().out)["rows"] if r["workload"].startswith("mixed"))
    assert again["predicted_speedup"] == pytest.approx(mixed["predicted_speedup"], abs=1e-3)
    # and predict with it differs from the defaults exactly where the fit moved parameters
    args = ["predict", "--gpu", "L40S", "--alpha", "0.55", "--k", "4", "--concurrency", "32", "--json"]
    assert main(args) == 0
    default = json.loads(capsys.readouterr().out)["speedup"]
    assert main([*args, "--calibration", str(cal)]) == 0
    with_file = json.loads(capsys.readouterr().out)["speedup"]
    assert with_file != pytest.approx(default, abs=1e-4)
    # a flag overrides the file
    assert main([*args, "--calibration", str(cal), "--eta-bw", "0.5"]) == 0
    assert json.loads(capsys.readouterr().out)["speedup"] != pytest.approx(with_file, abs=1e-4)


@pytest.mark.parametrize("doc, words", [
    ({"format": "specmodel-calibration", "version": 1, "parameters": {}}, "version 1"),
    ({"format": "specmodel-calibration", "version": 2, "parameters": {"eta_bw": 7}}, "'eta_bw' = 7"),
    ({"format": "specmodel-calibration", "version": 2, "parameters": {"warp": 1}}, "'warp' is not"),
    ({"something": "else"}, "not a specmodel calibration file"),
])
def test_a_bad_calibration_file_is_refused_naming_the_file_and_field(tmp_path, capsys, doc, words):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["predict", "--calibration", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and words in err and err.count("\n") == 1


def test_default_efficiency_sits_inside_every_physical_range():
    from specmodel.model.calibration_file import outside_physical
    from specmodel.model.parameters import PARAMETERS
    assert outside_physical(Efficiency()) == ()
    assert set(PARAMETERS) <= set(Efficiency().as_dict())
    assert np.isfinite(list(Efficiency().as_dict().values())).all()


def test_a_routed_moe_layers_verify_costs_what_the_h200_probe_measured():
    """bench/evidence/h200_moe_layer.csv (H200, 2026-12-01, random routing): one GLM-4.5-Air MoE layer
    takes 2.66× as long for 4 tokens of one sequence as for 1, and 1.48× at batch 16; without the
    fixed per-layer cost (MOE_LAYER_US) the model said 3.47× and 1.52×, 4-22% mean error per shape.
    Held to 10% on average per expert shape and 25% at any point."""
    moe = moe_layer()
    assert len(moe) == 81 and moe.groupby("shape")["error"].mean().max() <= 0.10 and moe["error"].max() <= 0.25
    glm = moe[(moe["shape"] == "glm-4.5-air") & (moe["q"] == 4)].set_index("batch")
    assert glm.loc[1, "measured"] == pytest.approx(2.66, abs=0.01)
    assert glm.loc[1, "predicted"] == pytest.approx(2.66, rel=0.10)
    assert glm.loc[16, "predicted"] == pytest.approx(1.48, rel=0.05)


def test_a_verify_of_four_tokens_loads_the_experts_cohere_published():
    """bench/evidence/moe_routing_locality.csv (Cohere, 2026-04-21, production MoE models on vLLM):
    verifying 4 consecutive tokens of one sequence loads about 2.5x the unique experts of one token,
    up to 31% fewer than independent routing. Held to 8% and to 6 points, for 128 and 384 experts."""
    from specmodel.paths import EVIDENCE_DIR
    published = pd.read_csv(EVIDENCE_DIR / "moe_routing_locality.csv").set_index("value")
    assert {2.5, 0.31} <= set(published.index)
    for name in ("Qwen3-30B-A3B", "Kimi-K2"):
        shape = PassShape.of_model(find_model(name))
        four, one = (float(expert_bytes_read(shape, 1, q)) for q in (4, 1))
        assert four / one == pytest.approx(2.5, rel=0.08)
        independent = float(experts_touched(shape.experts, shape.experts_per_token, 4)) * shape.expert_bytes
        assert 1 - four / independent == pytest.approx(0.31, abs=0.06)
