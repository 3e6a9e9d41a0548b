"""Capacity at a latency target (specmodel.plan.capacity): every expectation is derived from predict()."""

from __future__ import annotations

import json
import math
from dataclasses import replace

from specmodel.model.scenario import with_changes

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel import Scenario, SpecModelError, predict
from specmodel.plan.capacity import MAX_BATCH, Load, Target, frontier, plan, plan_on
from specmodel.runs import RunDefaults, read_runs
from specmodel.show.figures.capacity import frontier_chart
from specmodel.show.readouts import capacity_readouts
from tests.test_mix import L40S, SEED_RUNS, _seed_efficiency
from tests.conftest import examples

LOOSE = Target(min_user_tok_s=1e-3)  # every batch that fits meets it


def oracle_replicas(s: Scenario, users: int, need_tok_s: float, k: int) -> int | None:
    """The fewest replicas r whose fullest replica, ceil(users / r) sequences, fits and serves each
    at ≥ need_tok_s: a plain loop over r, one predict() per r (k = 0: plain decoding)."""
    for r in range(1, users + 1):
        b = math.ceil(users / r)
        p = predict(s, k=max(k, 1), concurrency=b)
        arm = p.plain if k == 0 else p.spec
        if arm.max_concurrency >= b and arm.per_seq_tok_s >= need_tok_s * (1 - 1e-9):
            return r
    return None


# --- batch 1: the What-if speedup ----------------------------------------------------------------

@pytest.mark.parametrize("method", ["draft_model", "ngram", "eagle", "medusa"])
@pytest.mark.parametrize("alpha", [0.2, 0.55, 0.9])
@pytest.mark.parametrize("k", [1, 4, 8])
def test_at_batch_one_spec_speed_is_plain_times_the_whatif_speedup(method, alpha, k):
    s = with_changes(L40S, method=method, alpha=alpha)
    result = plan(s, Load(users=1), LOOSE, k=k)
    assert result.plain.batch_per_replica == result.spec.batch_per_replica == 1
    assert result.plain.gpus == result.spec.gpus == 1
    whatif = predict(replace(s, k=k, concurrency=1))
    assert result.plain.user_tok_s == pytest.approx(whatif.plain.per_seq_tok_s, rel=1e-12)
    assert result.spec.user_tok_s == pytest.approx(result.plain.user_tok_s * whatif.speedup, rel=1e-9)
    assert result.spec.itl_ms == pytest.approx(whatif.spec.itl_ms, rel=1e-9)


@settings(max_examples=examples(30))
@given(alpha=st.floats(0, 1), k=st.integers(1, 8), gpu=st.sampled_from(["L40S", "H100 SXM", "A100 80GB"]),
       ctx=st.sampled_from([128, 1024, 8192]))
def test_batch_one_property_holds_across_hardware(alpha, k, gpu, ctx):
    s = with_changes(L40S, gpu=gpu, alpha=alpha, context_len=ctx)
    result = plan(s, Load(users=1), LOOSE, k=k)
    speedup = predict(replace(s, k=k, concurrency=1)).speedup
    assert result.spec.user_tok_s == pytest.approx(result.plain.user_tok_s * speedup, rel=1e-9)


# --- the plan against a brute-force search over replicas ----------------------------------------

@pytest.mark.parametrize("users,need", [(1, 30.0), (32, 40.0), (100, 40.0), (300, 25.0), (77, 44.0)])
def test_users_plan_is_the_fewest_replicas_a_loop_over_predict_finds(users, need):
    s = replace(L40S, alpha=0.7)
    result = plan(s, Load(users=users), Target(min_user_tok_s=need), k=4)
    for arm, k in ((result.plain, 0), (result.spec, 4)):
        assert arm.replicas == oracle_replicas(s, users, need, k)
        assert arm.meets_target  # every case is one each arm can serve: the checks below always run
        assert arm.batch_per_replica == math.ceil(users / arm.replicas)
        assert arm.user_tok_s >= need * (1 - 1e-9)
        assert arm.gpus == arm.replicas * s.tp


def test_tensor_parallel_replicas_count_their_gpus():
    s = with_changes(L40S, target="Llama 3.1 70B", tp=4, alpha=0.7)
    result = plan(s, Load(users=64), Target(min_user_tok_s=15.0), k=3)
    for arm, k in ((result.plain, 0), (result.spec, 3)):
        assert arm.replicas == oracle_replicas(s, 64, 15.0, k)
        assert arm.gpus == 4 * arm.replicas


def test_request_rate_plan_serves_the_token_rate_and_little_s_law_gives_the_users():
    s = replace(L40S, alpha=0.7)
    load = Load(rps=6.0, output_tokens=400)
    need = 35.0
    result = plan(s, load, Target(min_user_tok_s=need), k=4)
    demand = 6.0 * 400
    batches = np.arange(1, MAX_BATCH + 1)
    p = predict(replace(s, k=4), concurrency=batches)
    for arm, a in ((result.plain, p.plain), (result.spec, p.spec)):
        meets = (batches <= a.max_concurrency) & (a.per_seq_tok_s >= need)
        best_replica_tok_s = np.max(np.where(meets, a.throughput_tok_s, 0.0))
        assert arm.replicas * best_replica_tok_s >= demand  # enough replicas
        assert (arm.replicas - 1) * best_replica_tok_s < demand  # and not one too many
        b = arm.batch_per_replica
        assert a.throughput_tok_s[b - 1] * arm.replicas >= demand * (1 - 1e-9)  # the operating batch serves it
        assert arm.user_tok_s == pytest.approx(a.per_seq_tok_s[b - 1], rel=1e-12) and arm.user_tok_s >= need
        assert arm.concurrency == pytest.approx(demand / arm.user_tok_s, rel=1e-9)  # Little's law


def test_best_k_is_the_k_needing_fewest_gpus():
    s = replace(L40S, alpha=0.7)
    load, target = Load(users=200), Target(min_user_tok_s=38.0)
    best = plan(s, load, target)
    per_k = {k: plan(s, load, target, k=k).spec for k in range(1, 9)}
    fewest = min(a.gpus for a in per_k.values() if a.gpus is not None)
    assert best.spec.gpus == fewest
    assert best.spec.k == min((k for k, a in per_k.items() if a.gpus == fewest),
                              key=lambda k: (-per_k[k].user_tok_s, k))
    assert best.plain.k == 0


# --- monotonic properties ------------------------------------------------------------------------

FRONTIERS = {a: frontier(replace(L40S, alpha=a)) for a in (0.3, 0.55, 0.8)}


@settings(max_examples=examples(60))
@given(alpha=st.sampled_from(sorted(FRONTIERS)), n1=st.integers(1, 2000), n2=st.integers(1, 2000),
       need=st.floats(5, 80), itl=st.booleans())
def test_more_users_never_need_fewer_gpus(alpha, n1, n2, need, itl):
    f = FRONTIERS[alpha]
    lo, hi = sorted((n1, n2))
    target = Target(max_itl_ms=1e3 / need) if itl else Target(min_user_tok_s=need)
    a, b = plan_on(f, Load(users=lo), target), plan_on(f, Load(users=hi), target)
    for small, big in ((a.plain, b.plain), (a.spec, b.spec)):
        assert small.meets_target == big.meets_target  # with users, only batch 1 decides possibility
        if big.meets_target:
            assert big.gpus >= small.gpus
    for k in (1, 4, 8):
        sa, sb = plan_on(f, Load(users=lo), target, k=k).spec, plan_on(f, Load(users=hi), target, k=k).spec
        if sb.meets_target:
            assert sb.gpus >= sa.gpus


@settings(max_examples=examples(60))
@given(alpha=st.sampled_from(sorted(FRONTIERS)), r1=st.floats(0.01, 500), r2=st.floats(0.01, 500),
       tokens=st.integers(1, 4000), need=st.floats(5, 80))
def test_more_requests_never_need_fewer_gpus(alpha, r1, r2, tokens, need):
    f = FRONTIERS[alpha]
    lo, hi = sorted((r1, r2))
    target = Target(min_user_tok_s=need)
    a, b = plan_on(f, Load(rps=lo, output_tokens=tokens), target), plan_on(f, Load(rps=hi, output_tokens=tokens), target)
    for small, big in ((a.plain, b.plain), (a.spec, b.spec)):
        assert small.meets_target == big.meets_target
        if big.meets_target:
            assert big.gpus >= small.gpus


@settings(max_examples=examples(60))
@given(alpha=st.sampled_from(sorted(FRONTIERS)), users=st.integers(1, 2000), t1=st.floats(5, 80),
       t2=st.floats(5, 80), k=st.sampled_from([None, 2, 5]))
def test_a_looser_target_never_needs_more_gpus(alpha, users, t1, t2, k):
    f = FRONTIERS[alpha]
    loose, tight = sorted((t1, t2))
    a = plan_on(f, Load(users=users), Target(min_user_tok_s=loose), k=k)
    b = plan_on(f, Load(users=users), Target(min_user_tok_s=tight), k=k)
    for easy, hard in ((a.plain, b.plain), (a.spec, b.spec)):
        if hard.meets_target:
            assert easy.meets_target and easy.gpus <= hard.gpus
    # the same target as an inter-token latency gives the same plan
    c = plan_on(f, Load(users=users), Target(max_itl_ms=1e3 / tight), k=k)
    assert (c.plain.gpus, c.spec.gpus, c.verdict) == (b.plain.gpus, b.spec.gpus, b.verdict)


# --- verdicts ------------------------------------------------------------------------------------

def test_a_target_only_speculation_can_meet_is_found():
    s = replace(L40S, alpha=0.7)
    plain_best = predict(s, concurrency=1).plain.per_seq_tok_s
    spec_best = float(np.max(predict(s, k=np.arange(1, 9), concurrency=1).spec.per_seq_tok_s))
    assert spec_best > plain_best * 1.2  # precondition: speculation is clearly faster for one user here
    need = (plain_best + spec_best) / 2
    for target in (Target(min_user_tok_s=need), Target(max_itl_ms=1e3 / need)):
        result = plan(s, Load(users=50), target)
        assert result.verdict == "only spec meets the target"
        assert result.plain.gpus is None and not result.plain.meets_target
        assert result.plain.best_reachable_user_tok_s == pytest.approx(plain_best, rel=1e-12)
        assert result.spec.gpus == oracle_replicas(s, 50, need, result.spec.k)
        assert result.spec.user_tok_s >= need * (1 - 1e-9)
        assert result.gpus_saved is None
        assert "only speculation meets" in result.verdict_text and "plain decoding reaches at most" in result.verdict_text
        # the target sits 10% below the speculative best: at the band's low end (×0.77) speculation misses it too
        assert result.band_verdicts == ("neither meets the target", "only spec meets the target")
        assert result.uncertain and result.tone == "caution" and result.verdict_text.startswith("uncertain: by the")
        shown = {r.label: r for r in capacity_readouts(result)}
        assert shown["GPUs without speculation"].value == "impossible"
        assert shown["GPUs without speculation"].help.startswith("Misses the target: ")
        assert shown[f"GPUs with speculation (k = {result.spec.k})"].value == f"{result.spec.gpus:,}"
        assert shown["GPUs saved by speculation"].value == "—"
        rows = result.table_rows()
        assert [r["meets target"] for r in rows] == ["no", "yes"] and rows[1]["GPUs"] == result.spec.gpus


def test_a_target_nothing_reaches_is_an_answer_with_the_best_reachable_value():
    s = replace(L40S, alpha=0.7)
    spec_best = float(np.max(predict(s, k=np.arange(1, 9), concurrency=1).spec.per_seq_tok_s))
    result = plan(s, Load(users=10), Target(min_user_tok_s=spec_best * 1.6))  # beyond the band's high end too
    assert result.verdict == "neither meets the target" and result.tone == "bad" and not result.uncertain
    assert result.plain.gpus is None and result.spec.gpus is None and result.gpus_saved is None
    assert result.spec.best_reachable_user_tok_s == pytest.approx(spec_best, rel=1e-12)
    assert f"best reachable: {spec_best:.1f} tok/s per user" in result.verdict_text
    itl = plan(s, Load(users=10), Target(max_itl_ms=1e3 / (spec_best * 1.6)))
    assert f"best reachable: ITL {1e3 / spec_best:.1f} ms" in itl.verdict_text
    assert "or more" in itl.advice  # relaxing an ITL target means a larger number


def test_saves_costs_and_same_follow_the_gpu_counts():
    s = replace(L40S, alpha=0.7)
    verdicts = set()
    for users, need, k in ((200, 38.0, None), (32, 20.0, None), (150, 30.0, 8), (64, 45.0, 1)):
        r = plan(s, Load(users=users), Target(min_user_tok_s=need), k=k)
        # both arms meet the target in every case (else there are no GPU counts to compare): checked, not assumed
        assert r.plain.meets_target and r.spec.meets_target, (users, need, k, r.verdict_text)
        expected = {1: "saves GPUs", -1: "costs GPUs", 0: "same"}[np.sign(r.plain.gpus - r.spec.gpus)]
        assert r.verdict == expected and r.gpus_saved == r.plain.gpus - r.spec.gpus
        assert r.tone == ("caution" if r.uncertain else
                          {"saves GPUs": "good", "costs GPUs": "caution", "same": "neutral"}[expected])
        saved = {x.label: x.value for x in capacity_readouts(r)}["GPUs saved by speculation"]
        assert saved == f"{r.gpus_saved:+,}"
        verdicts.add(r.verdict)
    assert verdicts == {"saves GPUs", "costs GPUs", "same"}  # the cases reach each of the three


def test_the_seed_mix_at_32_users_needs_no_fewer_gpus_plain_than_with_k4():
    # The seed's mixed run: Llama 3.1 8B + Llama 3.2 1B on an L40S, k = 4, 32 concurrent sequences,
    # measured 0.85x. The runs reader gives the mixed row the mean α of its peers (0.55); the
    # calibrated parameters are the ones tests/test_mix.py fits on the same file.
    rows = read_runs([SEED_RUNS], RunDefaults(gpu=L40S.gpu, target=L40S.target, draft=L40S.draft)).rows
    mixed = rows[rows["concurrency"] == 32].iloc[0]
    s = replace(L40S, alpha=float(mixed["alpha"]), k=int(mixed["k"]), efficiency=_seed_efficiency())
    at_32 = predict(s, concurrency=32)
    assert at_32.speedup < 1.0, "precondition: the calibrated model must predict the seed's loss at 32"

    # The target: the per-user speed plain decoding gave the 32 users on one GPU.
    need = at_32.plain.per_seq_tok_s
    result = plan(s, Load(users=32), Target(min_user_tok_s=need), k=4)
    assert result.plain.gpus == 1 and result.plain.batch_per_replica == 32
    assert result.plain.gpus <= result.spec.gpus
    assert result.spec.gpus == oracle_replicas(s, 32, need, 4) > 1  # the loss at 32 forces a second GPU
    assert result.verdict == "costs GPUs" and result.gpus_saved < 0
    assert "leave speculation off" in result.advice


# --- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("load,target,message", [
    (Load(users=0), LOOSE, "concurrent users must be a whole number ≥ 1, got 0"),
    (Load(users=-4), LOOSE, "got -4"),
    (Load(users=2.5), LOOSE, "whole number"),
    (Load(users=float("nan")), LOOSE, "whole number"),
    (Load(), LOOSE, "give the load"),
    (Load(users=3, rps=1.0), LOOSE, "give the load"),
    (Load(rps=2.0, output_tokens=0), LOOSE, "mean output tokens per request must be ≥ 1, got 0"),
    (Load(rps=2.0), LOOSE, "needs the mean output tokens"),
    (Load(rps=0.0, output_tokens=10), LOOSE, "request rate must be"),
    (Load(users=3, output_tokens=10), LOOSE, "go with a request rate"),
    (Load(users=3), Target(min_user_tok_s=0), "per-user speed target must be a number of tokens/s > 0"),
    (Load(users=3), Target(max_itl_ms=-2), "inter-token latency target must be a number of ms > 0"),
    (Load(users=3), Target(), "give one latency target"),
    (Load(users=3), Target(min_user_tok_s=3, max_itl_ms=3), "give one latency target"),
])
def test_bad_input_is_a_message(load, target, message):
    with pytest.raises(SpecModelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan(L40S, load, target)


def test_k_zero_for_the_speculative_arm_is_refused():
    with pytest.raises(SpecModelError, match="k ≥ 1"):
        plan(L40S, Load(users=3), LOOSE, k=0)


def test_a_draft_that_does_not_fit_makes_speculation_impossible_not_an_error():
    ctx = next(L for L in range(100_000, 200_001, 10_000)
               if predict(replace(L40S, context_len=L)).spec.max_concurrency == 0
               and predict(replace(L40S, context_len=L)).plain.max_concurrency >= 1)
    result = plan(replace(L40S, context_len=ctx), Load(users=2), LOOSE, k=4)
    assert result.plain.meets_target and result.plain.gpus == 2  # one long sequence per GPU
    assert not result.spec.meets_target and "no room for one sequence" in result.spec.reason
    assert result.verdict == "costs GPUs" and result.gpus_saved is None
    nothing = plan(replace(L40S, context_len=1_000_000), Load(users=2), LOOSE)
    assert nothing.verdict == "neither meets the target" and "not one sequence fits" in nothing.verdict_text


# --- the frontier and its figure -----------------------------------------------------------------

def test_frontier_rows_are_predict_with_queueing_counted():
    s = replace(L40S, alpha=0.6)
    f = frontier(s)
    assert f.ks.tolist() == list(range(0, 9)) and f.batches[0] == 1 and f.batches[-1] == MAX_BATCH
    p = predict(replace(s, k=3), concurrency=f.batches)
    row = f.row(3)
    assert f.max_batch[row] == p.spec.max_concurrency
    np.testing.assert_allclose(f.replica_tok_s[row], p.spec.throughput_tok_s, rtol=1e-12)
    np.testing.assert_allclose(f.replica_tok_s[0], p.plain.throughput_tok_s, rtol=1e-12)
    fits = int(f.max_batch[row])
    # beyond the KV limit the throughput stays, the users wait: per-user speed = throughput ÷ users
    assert f.user_tok_s[row, fits + 99] == pytest.approx(p.spec.throughput_tok_s[fits - 1] / (fits + 100))
    assert f.user_tok_s[row, fits - 1] == pytest.approx(p.spec.per_seq_tok_s[fits - 1])


@pytest.mark.parametrize("target", [Target(min_user_tok_s=40.0), Target(max_itl_ms=25.0)], ids=["speed", "itl"])
def test_frontier_figure_json_has_one_curve_per_arm_and_k_the_target_and_both_operating_points(target):
    s = replace(L40S, alpha=0.7)
    f = frontier(s)
    result = plan_on(f, Load(users=100), target)
    checked = go.Figure(frontier_chart(f, result).to_dict())  # the validating constructor
    fig = json.loads(checked.to_json())
    names = [t["name"] for t in fig["data"]]
    assert len(fig["data"]) == 1 + 8 + 1 + 2
    assert names[0] == "without speculation"
    assert names[1:9] == [f"speculation k = {k}" + (" (plan)" if k == result.spec.k else "") for k in range(1, 9)]
    assert names[9] == f"target: {target.describe()}"
    itl = target.is_itl
    y_of = (lambda v: 1e3 / v) if itl else (lambda v: v)
    # curves: x is tok/s per GPU from 0 to the plain arm's full-KV throughput, y starts at batch 1
    plain = fig["data"][0]
    fits = int(f.max_batch[0])
    assert min(plain["x"]) == pytest.approx(f.replica_tok_s[0, 0])
    assert max(plain["x"]) == pytest.approx(f.replica_tok_s[0, fits - 1])
    assert plain["y"][0] == pytest.approx(y_of(predict(s, concurrency=1).plain.per_seq_tok_s))
    for t in fig["data"][:9]:
        assert all(x > 0 for x in t["x"]) and all(y > 0 for y in t["y"]) and len(t["x"]) >= 40
    line = fig["data"][9]
    assert line["y"] == [y_of(target.user_tok_s)] * 2 and line["x"][0] == 0 and line["x"][1] > max(plain["x"])
    for t, arm in zip(fig["data"][10:], (result.plain, result.spec)):
        assert t["x"] == [pytest.approx(arm.throughput_tok_s_per_gpu)]
        assert t["y"] == [pytest.approx(arm.itl_ms if itl else arm.user_tok_s)]
        assert f"{arm.gpus} GPUs" in t["name"]
    layout = fig["layout"]
    assert "Per-user speed vs throughput per GPU" in layout["title"]["text"]
    assert "(tok/s per GPU)" in layout["xaxis"]["title"]["text"]
    assert ("(ms" if itl else "(tok/s per user") in layout["yaxis"]["title"]["text"]
    assert layout["showlegend"] is True


def test_figure_marks_a_missed_target_at_the_best_reachable_point():
    s = replace(L40S, alpha=0.7)
    f = frontier(s)
    result = plan_on(f, Load(users=10), Target(min_user_tok_s=500.0))
    fig = frontier_chart(f, result)
    points = fig.data[10:]
    assert len(points) == 2 and all("misses the target (best reachable)" in t.name for t in points)
    assert points[0].y == (pytest.approx(result.plain.best_reachable_user_tok_s),)
