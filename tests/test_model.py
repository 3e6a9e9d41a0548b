"""The cost model: the seed's batch-1 numbers, the published Leviathan predictions, behaviour under load."""

import csv

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel import Scenario, SpecModelError, best_k, crossover_concurrency, predict, summarize
from specmodel.model.decide import k_schedule
from specmodel.model.scenario import with_changes
from tests.conftest import FIXTURES, examples

SEED = Scenario.from_names(gpu="L40S", target="Llama 3.1 8B", draft="Llama 3.2 1B", k=4, t_target_ms=19, t_draft_ms=3)
LOAD = Scenario.from_names(gpu="L40S", target="Llama 3.1 8B", draft="Llama 3.2 1B", k=4, alpha=0.7)


def rows(name):
    with open(FIXTURES / name) as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("row", rows("seed_cost_table.csv"), ids=lambda r: f"alpha={r['alpha']}")
def test_seed_cost_table_is_reproduced(row):
    s = Scenario.from_names(gpu="L40S", target="Llama 3.1 8B", draft="Llama 3.2 1B", alpha=float(row["alpha"]),
                 k=int(row["k"]), t_target_ms=float(row["t_target_ms"]), t_draft_ms=float(row["t_draft_ms"]),
                 concurrency=int(row["concurrency"]))
    p = predict(s)
    assert p.tokens_per_step == pytest.approx(float(row["expected_tokens_per_step"]), abs=0.005)
    assert p.speedup == pytest.approx(float(row["expected_speedup"]), abs=0.005)


def test_seed_break_even():
    p = predict(SEED)
    assert p.break_even_tokens_per_step == pytest.approx(31 / 19, abs=0.005)
    assert p.break_even_alpha == pytest.approx(0.39, abs=0.005)
    assert summarize(SEED.__class__(**{**SEED.__dict__, "alpha": 0.3})).verdict.label == "loses"
    assert summarize(SEED.__class__(**{**SEED.__dict__, "alpha": 0.7})).verdict.label == "pays off"


@pytest.mark.parametrize("row", rows("leviathan_2023.csv"), ids=lambda r: f"{r['draft_model']}-k{r['k']}-{r['task'][:4]}")
def test_leviathan_predicted_speedups(row):
    # Batch 1, draft cost c = T_d / T_t: the paper's own prediction E / (1 + k·c).
    t_target = 50.0
    s = Scenario.from_names(alpha=float(row["alpha"]), k=int(row["k"]), t_target_ms=t_target,
                 t_draft_ms=t_target * float(row["cost_coefficient_c"]))
    assert predict(s).speedup == pytest.approx(float(row["paper_predicted_speedup"]), abs=0.1)


def test_under_load_speedup_falls_with_concurrency_and_a_crossover_exists():
    batches = np.array([1, 8, 32, 64, 128, 180])
    speed = np.asarray(predict(LOAD, concurrency=batches).speedup)
    assert np.all(np.diff(speed) < 0), speed
    assert speed[0] > 1.3
    cross = crossover_concurrency(LOAD)
    assert cross is not None and 1 < cross < 4096
    assert predict(LOAD, concurrency=cross).speedup >= 1.0 > predict(LOAD, concurrency=cross + 1).speedup


def test_long_context_keeps_verification_memory_bound():
    # KV reads grow with context, so a verify pass of k+1 tokens stays memory-bound at a batch where
    # 1k-context verification has turned compute-bound. 64 sequences of 8k tokens need ~69 GB of KV
    # cache: that fits an H200, not an L40S (there the memory tax decides, see the next test).
    h200 = with_changes(LOAD, gpu="H200", concurrency=64)
    short = predict(h200.__class__(**{**h200.__dict__, "context_len": 1024}))
    long = predict(h200.__class__(**{**h200.__dict__, "context_len": 8192}))
    assert long.plain.batch == long.spec.batch == 64  # nothing queues: the comparison is of step costs
    assert long.speedup > short.speedup + 0.1


def test_on_l40s_long_context_at_64_sequences_queues_and_says_so():
    s = LOAD.__class__(**{**LOAD.__dict__, "concurrency": 64, "context_len": 8192})
    summary = summarize(s)
    assert summary.prediction.plain.max_concurrency < 64
    assert any("wait in the queue" in n for n in summary.notes)


def test_qwen3_draft_costs_over_40_percent_of_max_concurrency():
    s = Scenario.from_names(gpu="L40S", target="Qwen3 8B", draft="Qwen3 0.6B", k=4)
    p = predict(s)
    assert p.spec.max_concurrency < 0.6 * p.plain.max_concurrency


def test_ngram_costs_no_memory_and_eagle_little():
    plain_fit = predict(LOAD).plain.max_concurrency
    ngram = predict(Scenario.from_names(method="ngram", draft=None, k=4)).spec.max_concurrency
    eagle = predict(Scenario.from_names(method="eagle", draft=None, k=4)).spec.max_concurrency
    draft = predict(LOAD).spec.max_concurrency
    assert ngram == pytest.approx(plain_fit, abs=1)  # only the k extra slots per sequence
    assert draft < eagle < plain_fit + 1


@settings(max_examples=examples(40), deadline=None)
@given(st.floats(0.0, 1.0), st.integers(1, 512), st.sampled_from(["L40S", "H100 SXM", "L4", "A100 80GB"]),
       st.sampled_from(["draft_model", "ngram", "eagle", "medusa", "mtp"]))
def test_best_k_is_never_worse_than_off(alpha, concurrency, gpu, method):
    s = Scenario.from_names(gpu=gpu, alpha=alpha, concurrency=concurrency, method=method,
                 draft="Llama 3.2 1B" if method == "draft_model" else None)
    k, speed = best_k(s)
    assert speed >= 1.0
    assert 0 <= k <= 8
    if k > 0:
        assert predict(s, k=k).speedup == pytest.approx(speed)


def test_vectorised_predict_matches_scalar_calls():
    alphas = np.array([0.2, 0.6, 0.9])
    kk = np.array([0, 2, 5])
    bb = np.array([1, 16, 200])
    grid = predict(LOAD, alpha=alphas[:, None, None], k=kk[None, :, None], concurrency=bb[None, None, :])
    step_ms = np.broadcast_to(grid.spec.step_ms, grid.speedup.shape)  # step time does not depend on α
    for i, a in enumerate(alphas):
        for j, k in enumerate(kk):
            for m, b in enumerate(bb):
                one = predict(LOAD, alpha=a, k=int(k), concurrency=int(b))
                assert grid.speedup[i, j, m] == pytest.approx(one.speedup, rel=1e-12)
                assert step_ms[i, j, m] == pytest.approx(one.spec.step_ms, rel=1e-12)


def test_alpha_one_and_k_zero_work():
    assert predict(Scenario.from_names(alpha=1.0, k=4)).speedup > 1
    off = predict(Scenario.from_names(alpha=0.7, k=0))
    assert off.speedup == 1.0
    assert off.tokens_per_step == 1.0


def test_schedule_turns_speculation_off_at_high_batch_for_low_acceptance():
    s = Scenario.from_names(gpu="A100 80GB", alpha=0.5, k=4)
    schedule = k_schedule(s)
    assert schedule[0][0] == 1 and schedule[-1][1] == 512
    assert schedule[0][2] >= 1 and schedule[-1][2] == 0
    assert all(a[1] + 1 == b[0] for a, b in zip(schedule, schedule[1:]))  # contiguous ranges


@pytest.mark.parametrize("changes, words", [
    ({"target": "Llama 3.1 70B"}, "needs 141 GB"),
    ({"alpha": 1.5}, "α"),
    ({"k": -1}, "k"),
    ({"t_target_ms": -3}, "milliseconds"),
    ({"t_target_ms": 0.001}, "faster than"),
    ({"gpu": "TPU v9"}, "unknown GPU"),
])
def test_impossible_scenarios_say_what_is_wrong(changes, words):
    with pytest.raises(SpecModelError, match=words):
        predict(Scenario.from_names(**changes))


def test_a_draft_that_does_not_fit_loses_with_a_reason():
    # Llama 3.1 70B on 2 × L40S leaves room for the target but a 3B draft's KV halves what fits;
    # on one A10G an 8B target barely fits and the 3B draft does not.
    s = Scenario.from_names(gpu="A10G", target="Llama 3.1 8B", draft="Llama 3.2 3B", k=4)
    summary = summarize(s)
    assert summary.prediction.spec.max_concurrency == 0
    assert summary.verdict.label == "loses"
    assert "does not fit" in summary.verdict.text and "Llama 3.2 3B draft" in summary.verdict.text
    assert "Llama 3.2 1B" in summary.verdict.advice  # the closest setting that fits
