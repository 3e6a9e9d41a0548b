"""One decision, every statement: the advice's k, the schedule, the off threshold, the crossover and
every engine's config (deploy_by_engine) come from one computation and agree in every scenario here;
vLLM's config passes the rules of its own validator, TensorRT-LLM's keys are upper bounds."""

import itertools
import json
import re
import shlex

import pytest

from specmodel import Scenario, summarize
from specmodel.export.deploy import deploy_by_engine
from specmodel.export.prediction import prediction_dict
from specmodel.model.decide import SWITCH_GAIN, k_at, off_above
from tests.cli_runner import run_cli

CASES = [dict(gpu=g, target="Llama 3.1 8B", method=m, alpha=a, k=4, concurrency=c,
              **({"draft": "Llama 3.2 1B"} if m == "draft_model" else {}))
         for g, m, a, c in itertools.product(["L40S", "H100"], ["draft_model", "ngram", "eagle3"], [0.4, 0.7, 0.9],
                                             [1, 32])]


def ids(case):
    return f"{case['gpu']}-{case['method']}-a{case['alpha']}-c{case['concurrency']}"


def expand(schedule, upto=512):
    """The k at every batch 1..upto of [[lo, hi, k], ...] (vLLM's inclusive ranges)."""
    out = {}
    for lo, hi, k in schedule:
        for b in range(lo, min(hi, upto) + 1):
            out[b] = k
    return [out.get(b) for b in range(1, upto + 1)]


def check_vllm_schedule(config):
    """vLLM's rules for num_speculative_tokens_per_batch_size (v0.24.0+,
    vllm/v1/spec_decode/dynamic/utils.py): [start, end, k] triples, inclusive, start <= end, positive,
    sorted and non-overlapping, the first starting at 1, k >= 0; num_speculative_tokens > 0 caps every k."""
    table = config["num_speculative_tokens_per_batch_size"]
    assert table and table[0][0] == 1
    previous_end = 0
    for entry in table:
        assert len(entry) == 3 and all(isinstance(x, int) for x in entry)
        start, end, k = entry
        assert 0 < start <= end and start > previous_end and k >= 0
        assert start == previous_end + 1  # ours leave no gap either
        previous_end = end
    assert config["num_speculative_tokens"] > 0
    assert config["num_speculative_tokens"] >= max(k for _, _, k in table)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_advice_schedule_threshold_and_every_engine_config_agree(case):
    summary = summarize(Scenario.from_names(**case))
    s = summary.scenario
    out = prediction_dict(summary)
    by_engine = out["deploy_by_engine"]
    schedule = summary.schedule
    here = k_at(schedule, s.concurrency)
    # advice <-> schedule: the k the advice names is the schedule's k at this batch, or 0 where a server without
    # speculation beats the schedule there by more than the noise (the schedule's k loses here but still beats
    # its own off band, which is not free on vLLM: off_state); then the advice says what a restart gains
    if summary.best_k != here:
        assert summary.best_k == 0 and summary.restart_gain > 1 + SWITCH_GAIN
        assert f"restart without speculation: {summary.restart_gain:.2f}x this schedule" in out["advice"]
    assert summary.best_k == out["best_k"]
    if summary.best_k and here != s.k:
        assert f"k to {here} " in out["advice"]
    if summary.best_k == 0:
        assert "turn speculation off" in out["advice"]
    # threshold <-> schedule <-> advice
    off = off_above(schedule)
    assert out["off_above_batch"] == off
    if off is not None and off >= s.concurrency and summary.best_k:
        assert f"turn it off above batch {off}" in out["advice"]
    # crossover <-> threshold: said in words where both appear and differ
    cross = summary.crossover_concurrency
    if off is not None and cross is not None and off != cross and s.k:
        assert f"loses {'from batch 1' if cross == 0 else f'above batch {cross}'}" in out["threshold_text"]
        assert f"above batch {off}" in out["threshold_text"] or off == 0
    # vLLM: the same schedule, valid by vLLM's rules, and a command that carries exactly that config
    vllm = by_engine["vllm"]
    if vllm["config"] is not None:
        assert vllm["config"]["num_speculative_tokens_per_batch_size"] == schedule
        check_vllm_schedule(vllm["config"])
        argv = shlex.split(vllm["command"])
        assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
        assert json.loads(argv[argv.index("--speculative-config") + 1]) == vllm["config"]
        assert vllm["min_version"]["num_speculative_tokens_per_batch_size"] == "0.24.0"
    # TensorRT-LLM: keys are upper bounds; above the last key speculation is off
    trt = by_engine["trtllm"]["config"]["speculative_config"] if by_engine["trtllm"]["config"] else None
    if trt is not None:
        if "draft_len_schedule" in trt:
            keys = sorted(trt["draft_len_schedule"])
            got = [next((trt["draft_len_schedule"][key] for key in keys if b <= key), 0) for b in range(1, 513)]
            assert trt["draft_len_schedule"][keys[0]] == trt["max_draft_len"]
            capped = [min(k, trt["max_draft_len"]) for k in expand(schedule)]
            assert got == capped
            assert "max_concurrency" not in trt  # mutually exclusive in TensorRT-LLM
        else:
            assert trt["max_concurrency"] == off and trt["max_draft_len"] == max(k for _, _, k in schedule)
    # SGLang: one k per slot, from the slot's key up to the next key, equal to the schedule
    sg = by_engine["sglang"]
    if sg["config"] and sg["config"]["adaptive_config"]:
        slots = sorted((int(key), v["candidate_steps"]) for key, v in sg["config"]["adaptive_config"].items())
        got = [next(steps for key, steps in reversed(slots) if key <= b) for b in range(1, 513)]
        assert all(len(steps) == 1 for steps in got) and [steps[0] for steps in got] == expand(schedule)
    elif sg["config"]:
        k_flag = re.search(r"--speculative-num-draft-tokens (\d+)", sg["command"])
        assert int(k_flag.group(1)) == max(k for _, _, k in schedule) + 1


@pytest.mark.parametrize("case", CASES[:12], ids=ids)
def test_the_schedule_never_switches_k_for_a_gain_inside_the_noise(case):
    summary = summarize(Scenario.from_names(**case))
    grid = summary.grid
    for (_lo, hi, k_before), (lo, _hi, k_after) in zip(summary.schedule, summary.schedule[1:]):
        assert lo == hi + 1
        assert grid[k_after, lo - 1] > grid[k_before, lo - 1] * (1 + SWITCH_GAIN)


def test_no_one_or_two_batch_ranges_in_n_gram_schedules():
    for alpha, gpu in itertools.product([0.5, 0.6, 0.7, 0.8, 0.9], ["L40S", "H100", "A100"]):
        schedule = summarize(Scenario.from_names(gpu=gpu, method="ngram", alpha=alpha, k=4)).schedule
        assert all(hi - lo >= 2 for lo, hi, _k in schedule[:-1]), (alpha, gpu, schedule)


def test_traps_are_warnings_where_they_apply():
    summary = summarize(Scenario.from_names(gpu="L40S", method="eagle3", alpha=0.5, k=4))
    plain, _ = deploy_by_engine(summary)
    dp, _ = deploy_by_engine(summary, dp=2)
    assert not any("data parallelism" in w for w in plain["vllm"]["warnings"])
    assert any("data parallelism (2)" in w and "0.26.0" in w for w in dp["vllm"]["warnings"])
    assert dp["sglang"]["config"]["adaptive_config"] is None  # adaptive steps refuse attention DP
    lo, hi = summary.off_above_range
    assert lo != hi and any("inside the model's band" in w for w in plain["vllm"]["warnings"])
    assert any("under 2%" in w for w in plain["vllm"]["warnings"])  # the per-batch best flips for < 2% here


def test_an_engine_that_cannot_run_the_method_is_null_with_the_reason():
    out = prediction_dict(summarize(Scenario.from_names(gpu="L40S", method="medusa", alpha=0.7, k=4)))
    assert out["deploy_by_engine"]["trtllm"] is None and "TensorRT backend" in out["deploy_by_engine_unavailable"]["trtllm"]
    assert out["deploy_by_engine"]["vllm"]["config"]["method"] == "medusa"
    selfspec = prediction_dict(summarize(Scenario.from_names(gpu="L40S", method="self_spec", alpha=0.7, k=4)))
    assert all(selfspec["deploy_by_engine"][e] is None for e in ("vllm", "sglang", "trtllm"))
    assert set(selfspec["deploy_by_engine_unavailable"]) == {"vllm", "sglang", "trtllm"}
    assert selfspec["deploy"] is not None  # the old key stays


def test_the_cli_never_says_loses_above_batch_0_and_explains_two_thresholds():
    r = run_cli("predict", "--alpha", "0.4", "--k", "4")
    assert r.returncode == 0 and "loses above batch 0" not in r.stdout
    assert "k = 4 loses already at batch 1" in r.stdout
    r = run_cli("predict", "--alpha", "0.7", "--k", "4", "--concurrency", "8")
    assert "(the crossover); the schedule turns speculation off above batch" in r.stdout
