"""The shortcuts that keep the What-if rerun cheap give the same answers as the long way round."""

from __future__ import annotations

import numpy as np
import pytest

from specmodel import Scenario, predict, summarize
from specmodel.model.scenario import speedup_grid
from specmodel.model.acceptance import alpha_from_tokens_per_step
from specmodel.model.decide import crossover_concurrency
from specmodel.show.figures import whatif as figures


def _crossover_one_pass(s: Scenario, max_batch: int = 4096):
    speed = np.asarray(predict(s, concurrency=np.arange(1, max_batch + 1)).speedup, dtype=float)
    losing = np.flatnonzero(~(speed >= 1.0))
    return None if losing.size == 0 else int(losing[0])


@pytest.mark.parametrize("s", [Scenario(), Scenario.from_names(alpha=0.95, k=2, gpu="H100 SXM", target="Llama 3.1 70B", tp=4),
                               Scenario.from_names(alpha=0.2, k=6), Scenario.from_names(method="ngram", draft=None,
                                                                                        alpha=0.8, k=3),
                               Scenario.from_names(alpha=0.9, k=1, gpu="H200")])
def test_crossover_searched_in_two_stages_equals_one_pass_over_4096_batches(s):
    assert crossover_concurrency(s) == _crossover_one_pass(s)


def test_a_crossover_beyond_512_is_still_found():
    late = [s for s in (Scenario.from_names(alpha=a, k=1, gpu=g, method="ngram", draft=None)
                        for a in (0.6, 0.8, 0.95) for g in ("H200", "H100 SXM", "L40S"))
            if (crossover_concurrency(s) or 0) > 512 or crossover_concurrency(s) is None]
    assert late, "no scenario whose crossover lies past batch 512 to check"
    for s in late:
        assert crossover_concurrency(s) == _crossover_one_pass(s)


def test_inverting_one_value_matches_the_array_bisection():
    rng = np.random.default_rng(1)
    e, k = rng.uniform(0.5, 9.0, 500), rng.integers(0, 9, 500)
    vectorised = alpha_from_tokens_per_step(e, k)
    one_by_one = np.array([alpha_from_tokens_per_step(float(a), int(b)) for a, b in zip(e, k)])
    assert np.array_equal(np.isnan(vectorised), np.isnan(one_by_one))
    assert np.nanmax(np.abs(vectorised - one_by_one)) < 1e-9


def test_figures_given_the_summary_equal_figures_that_predict_for_themselves():
    s = Scenario.from_names(alpha=0.63, k=4, concurrency=24, gpu="H100 SXM")
    summary = summarize(s)
    for with_summary, alone in [
        (figures.speedup_vs_alpha(s, summary.prediction), figures.speedup_vs_alpha(s)),
        (figures.speedup_vs_concurrency(s, summary.crossover_concurrency, summary.prediction),
         figures.speedup_vs_concurrency(s))]:
        assert with_summary.to_json() == alone.to_json()


def test_the_alpha_k_grid_is_shared_across_alpha_and_k_but_not_concurrency():
    a = figures._alpha_k_grid(Scenario.from_names(alpha=0.3, k=2, concurrency=8))
    b = figures._alpha_k_grid(Scenario.from_names(alpha=0.9, k=6, concurrency=8))
    c = figures._alpha_k_grid(Scenario.from_names(alpha=0.3, k=2, concurrency=64))
    assert a is b and a is not c
    fresh = np.asarray(predict(Scenario.from_names(concurrency=64), alpha=figures.ALPHAS[None, :],
                               k=np.arange(0, 9)[:, None]).speedup, dtype=float)
    assert np.array_equal(c, fresh)


@pytest.mark.parametrize("s", [
    Scenario(), Scenario.from_names(alpha=0.95, k=2, gpu="H100 SXM", target="Llama 3.1 70B", tp=4),
    Scenario.from_names(method="ngram", draft=None, alpha=0.8, k=3),  # vLLM verifies matched sequences only: rate 0.4
    Scenario.from_names(method="ngram", draft=None, alpha=0.8, k=3, engine="sglang"),
    Scenario.from_names(survival=(0.8, 0.56, 0.35)), Scenario.from_names(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3),
    Scenario.from_names(method="eagle", draft=None, alpha=0.6, draft_depth=3, branching=2),
    Scenario.from_names(target="Llama 3.1 70B", draft="Llama 3.1 8B", gpu="H100 SXM", tp=4, context_len=32768),  # few fit
    Scenario.from_names(target="Llama 3.1 70B", draft="Llama 3.1 8B", gpu="H100 SXM", tp=2, context_len=2700),  # no draft fits
])
def test_the_speedup_grid_scaled_from_one_alpha_equals_predict_at_every_k_and_batch(s):
    ks, batches = np.arange(0, 9), np.arange(1, 700)
    direct = np.asarray(predict(s, k=ks[:, None], concurrency=batches[None, :]).speedup, dtype=float)
    scaled = speedup_grid(s, ks, batches)
    assert np.array_equal(np.isnan(direct), np.isnan(scaled)) and np.array_equal(direct == 0, scaled == 0)
    assert np.allclose(scaled, direct, rtol=1e-12, atol=0, equal_nan=True)
    for alpha in (0.0, 0.33, 1.0):  # the steps' grid cached at one α serves every other
        moved = Scenario.from_names(**{**s.__dict__, "alpha": alpha, "survival": None})
        assert np.allclose(speedup_grid(moved, ks, batches), predict(moved, k=ks[:, None], concurrency=batches[None, :])
                           .speedup, rtol=1e-12, atol=0, equal_nan=True)


def test_moving_alpha_k_or_concurrency_reuses_the_steps_grid_of_the_scenario():
    from specmodel.model import scenario

    summarize(Scenario.from_names(alpha=0.41, k=3, concurrency=5, gpu="H200"))
    before = scenario._per_emitted.cache_info()
    summarize(Scenario.from_names(alpha=0.77, k=6, concurrency=9, gpu="H200"))
    after = scenario._per_emitted.cache_info()
    # Only best_k at the new concurrency (one column) is new; the schedule and crossover grids are reused.
    assert after.misses - before.misses <= 1 and after.hits > before.hits


@pytest.mark.parametrize("s", [Scenario.from_names(alpha=0.55, k=3, concurrency=16), Scenario.from_names(method="ngram",
                                                                                                         draft=None, alpha=0.8),
                               Scenario.from_names(target="Llama 3.1 70B", draft="Llama 3.1 8B", gpu="H100 SXM", tp=2,
                                        context_len=2700)])
def test_deploy_options_throughputs_equal_predicting_every_k_at_every_batch(s):
    summary = summarize(s)
    rows = figures.deploy_option_rows(summary)
    p = predict(s, k=np.arange(0, 9)[:, None], concurrency=rows["batch"][None, :])
    spec = np.nan_to_num(np.asarray(p.spec.throughput_tok_s, dtype=float), nan=0.0)
    assert np.allclose(rows["off"], np.asarray(p.plain.throughput_tok_s)[0], rtol=1e-12)
    assert np.allclose(rows["fixed"], spec[rows["fixed_k"]], rtol=1e-12, atol=1e-9)
    cols = np.arange(len(rows["batch"]))
    for name in ("schedule", "upper"):
        ks = rows[f"{name}_k"]
        # k = 0 in a schedule is its off band: speculation configured, not free (model.off_state, the grid's row 0)
        band = rows["off"] * summary.grid[0][rows["batch"] - 1]
        expected = np.where(ks == 0, band, spec[ks, cols])
        assert np.allclose(rows[name], expected, rtol=1e-12, atol=1e-9)


def test_a_schedule_switches_k_only_for_a_gain_beyond_switch_gain():
    """ks_in_use (the one walk, for one grid or many): a k 1% better is not worth a switch, one 3% better is."""
    import numpy as np

    from specmodel.model.decide import SWITCH_GAIN, ks_in_use

    # a k 1% better is not worth a switch, one 3% better is
    grid = np.array([[1.0, 1.0, 1.0], [1.1, 1.1, 1.1], [1.0, 1.1 * (1 + SWITCH_GAIN / 2), 1.1 * (1 + SWITCH_GAIN * 1.5)]])
    assert ks_in_use(grid).tolist() == [1, 1, 2]


_STEP_CASES = [
    Scenario(), Scenario.from_names(alpha=0.95, k=2, gpu="H100 SXM", target="Llama 3.1 70B", tp=4, concurrency=48),
    Scenario.from_names(method="ngram", draft=None, alpha=0.8, k=3),
    Scenario.from_names(survival=(0.8, 0.56, 0.35), k=3), Scenario.from_names(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3),
    Scenario.from_names(method="eagle", draft=None, alpha=0.6, k=4, draft_depth=3, branching=2),
    Scenario.from_names(method="medusa", draft=None, alpha=0.5, k=3),
    Scenario.from_names(target="Llama 3.1 70B", draft="Llama 3.1 8B", gpu="H100 SXM", tp=2, context_len=2700),  # no draft fits
]


def _fields(p) -> list:
    return [np.asarray(v, dtype=float) for v in (p.alpha, p.k, p.concurrency, p.tokens_per_step, p.speedup,
                                                 p.break_even_tokens_per_step, *p.plain.__dict__.values(),
                                                 *p.spec.__dict__.values())]


@pytest.mark.parametrize("s", _STEP_CASES)
def test_predict_with_the_cached_step_times_equals_predict_computing_them(s, monkeypatch):
    """predict() keeps step times per scenario apart from α, the profile, k and the batch; after an α move,
    a profile or a k and batch grid, every field equals the long way round exactly (the same arithmetic)."""
    from specmodel.model import scenario

    calls = [dict(), dict(k=np.arange(0, 9)[:, None], concurrency=np.array([1, 4, 64, 512])[None, :]),
             dict(alpha=np.array([0.2, 0.9]), concurrency=np.array([3.0, 700.0])),
             dict(k=1),  # same shapes as above, other values
             dict(k=np.arange(1, 10)[:, None], concurrency=np.array([2, 5, 65, 513])[None, :])]
    moved = [s, Scenario.from_names(**{**s.__dict__, "alpha": 0.33}), Scenario.from_names(**{**s.__dict__, "alpha": 0.9,
                                                                                             "survival": None})]
    cached = [_fields(predict(m, **kw)) for m in moved for kw in calls]
    again = [_fields(predict(m, **kw)) for m in moved for kw in calls]  # served from the cache
    monkeypatch.setattr(scenario, "_STEPS_MAX_CELLS", -1)  # every call computes its steps
    scenario.clear_caches()
    fresh = [_fields(predict(m, **kw)) for m in moved for kw in calls]
    for a, b, c in zip(cached, again, fresh):
        for x, y, z in zip(a, b, c):
            assert np.array_equal(x, z, equal_nan=True) and np.array_equal(y, z, equal_nan=True)


@pytest.mark.parametrize("s", _STEP_CASES)
def test_predict_once_per_distinct_k_and_batch_equals_every_cell_computed(s, monkeypatch):
    """A file's runs (a few dozen (k, concurrency) pairs over thousands of cells) and a k x batch grid
    beyond the sequences that fit have their step times, and the α at break-even, computed once per
    distinct input: every field, break_even_alpha too, equals computing each cell, to the last bit."""
    from specmodel.model import distinct, scenario

    rng = np.random.default_rng(1)
    runs = dict(alpha=rng.uniform(0.3, 0.95, 6000).round(2), k=rng.integers(0, 9, 6000),
                concurrency=(2 ** rng.integers(0, 10, 6000)).astype(float))
    grid = dict(k=np.arange(0, 9)[:, None], concurrency=np.arange(1, 4097)[None, :])
    cells = []
    real = scenario._spec_step_ms
    monkeypatch.setattr(scenario, "_spec_step_ms", lambda s, c, kk, b, rate: cells.append(np.size(b)) or real(s, c, kk, b, rate))
    once = [predict(s, **kw) for kw in (runs, grid)]
    assert cells[0] <= 90  # 9 k x 10 concurrencies, not 6,000 runs
    monkeypatch.setattr(distinct, "DISTINCT_AT", 10 ** 12)  # every cell computed
    scenario.clear_caches()
    every = [predict(s, **kw) for kw in (runs, grid)]
    for a, b in zip(once, every):
        for x, y in zip([*_fields(a), np.asarray(a.break_even_alpha)], [*_fields(b), np.asarray(b.break_even_alpha)]):
            assert x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
            assert np.array_equal(np.signbit(x), np.signbit(y))


def test_per_distinct_computes_each_distinct_input_once_and_tells_minus_zero_apart():
    from specmodel.model.distinct import per_distinct

    seen = []

    def double(k, b):
        seen.append(len(k))
        return np.where(np.signbit(b), -1.0, 2.0 * k + b)

    k = np.tile([1, 2, 3], 4000)
    b = np.tile([0.0, -0.0, 5.0, 0.0], 3000)
    assert np.array_equal(per_distinct(double, k, b), double(k, b))
    assert seen[0] == 9  # 3 k x 3 batches (0.0, -0.0 and 5.0) repeat: 9 pairs of 12,000 cells
    assert per_distinct(double, k[:100], b[:100]).shape == (100,) and seen[2] == 100  # small: as it is


def test_writing_into_a_prediction_does_not_change_the_next_one():
    s = Scenario.from_names(alpha=0.61, k=3, gpu="H200")
    batches = np.array([1.0, 8.0, 32.0])
    first = predict(s, concurrency=batches)
    kept = np.array(first.spec.step_ms, copy=True)
    first.spec.step_ms[:] = -1.0
    first.plain.batch[:] = 0.0
    second = predict(Scenario.from_names(alpha=0.62, k=3, gpu="H200"), concurrency=batches)
    assert np.array_equal(second.spec.step_ms, kept) and np.all(second.plain.batch > 0)


def test_the_page_figures_after_an_alpha_move_equal_those_computed_without_step_caches(monkeypatch):
    """What reaches the browser (each figure's JSON) and the summary are the same whether the page's
    rerun after an α move found the steps cached or computed everything afresh."""
    from specmodel.model import scenario

    s = Scenario.from_names(alpha=0.47, k=5, concurrency=24, gpu="H100 SXM")
    figures.whatif_view(Scenario.from_names(alpha=0.12, k=5, concurrency=24, gpu="H100 SXM"))  # the steps, cached
    summary, figs = figures.whatif_view.__wrapped__(s)
    monkeypatch.setattr(scenario, "_STEPS_MAX_CELLS", -1)
    scenario.clear_caches()
    figures._alpha_k_grid_for.cache_clear()
    figures._best_k_by_batch.cache_clear()
    summary_fresh, figs_fresh = figures.whatif_view.__wrapped__(s)
    assert [f.to_json() for f in figs] == [f.to_json() for f in figs_fresh]
    assert summary.verdict == summary_fresh.verdict and summary.best_k == summary_fresh.best_k
    assert summary.crossover_concurrency == summary_fresh.crossover_concurrency
