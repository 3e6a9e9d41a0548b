"""specmodel.model.grouped: many runs of one setup at once give what scenario.summarize() gives each run."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from specmodel import Efficiency, Scenario, SpecModelError
from specmodel.model.decide import K_MAX, off_above, summarize
from specmodel.model.grouped import setup_of, summarize_many
from specmodel.model.scenario import with_changes
from specmodel.runs import RunDefaults, read_runs, sample_files
from specmodel.runs.review import scenario_for_row
from tests.conftest import FIXTURES

CALIBRATED = Efficiency(eta_bw=0.7, eta_flops=0.5, t_fixed_ms=0.5, t_spec_overhead_ms=0.3)


def one_by_one(setup, alphas, ks, concs) -> list:
    out = []
    for a, k, c in zip(alphas, ks, concs):
        try:
            out.append(summarize(with_changes(setup, alpha=float(a), k=int(k), concurrency=int(c))))
        except SpecModelError as exc:
            out.append(str(exc))
    return out


def assert_same(setup, alphas, ks, concs):
    many = summarize_many(setup, alphas, ks, concs)
    for i, ref in enumerate(one_by_one(setup, alphas, ks, concs)):
        if isinstance(ref, str):
            assert many["error"][i] == ref
            continue
        assert many["error"][i] is None
        p = ref.prediction
        assert many["speedup"][i] == pytest.approx(float(p.speedup), rel=1e-12)
        assert many["break_even_tokens_per_step"][i] == pytest.approx(float(p.break_even_tokens_per_step), rel=1e-12)
        assert (many["best_k"][i], many["crossover"][i], many["off_above"][i]) == \
            (ref.best_k, ref.crossover_concurrency, off_above(ref.schedule))
        assert many["best_k_speedup"][i] == pytest.approx(ref.best_k_speedup, rel=1e-12)
        assert many["advice"][i] == ref.verdict.advice
        assert (many["speedup_low"][i], many["speedup_high"][i]) == pytest.approx(ref.band, rel=1e-12)
        assert many["uncertain"][i] == ref.uncertain


GRID = [(a, k, c) for a in (0.3, 0.55, 0.8, 0.95) for k in (0, 1, 3, 6, 12) for c in (1, 3, 16, 96, 300, 5000)]


@pytest.mark.parametrize("setup", [
    Scenario(),
    Scenario.from_names(efficiency=CALIBRATED),
    Scenario.from_names(gpu="H100 SXM", target="Llama 3.1 70B", tp=4, method="eagle", draft=None),
    Scenario.from_names(method="ngram", draft=None),
    Scenario.from_names(t_target_ms=19.0, t_draft_ms=3.0),
    Scenario.from_names(method="eagle", draft=None, draft_depth=3, branching=4),
    Scenario.from_names(survival=(0.8, 0.6, 0.45)),
    Scenario.from_names(gpu="L40S", target="Qwen2.5 32B", draft="Qwen2.5 0.5B", context_len=8192),  # speculation may not fit
], ids=["default", "calibrated", "70B-tp4-eagle", "ngram", "measured", "tree", "survival", "tight-memory"])
def test_a_grid_of_runs_matches_summarize_run_by_run(setup):
    alphas, ks, concs = zip(*GRID)
    assert_same(setup_of(setup), alphas, ks, concs)


def test_runs_the_model_refuses_get_summarize_messages_and_the_rest_still_predict():
    setup = setup_of(Scenario.from_names(method="eagle", draft=None, draft_depth=3, branching=4))
    many = summarize_many(setup, [0.7, 1.5, 0.7, 0.7], [4, 4, 2, 4], [8, 8, 8, 0])
    assert many["error"][0] is None and many["speedup"][0] > 0
    assert "α (per-token acceptance) must lie in [0, 1]" in many["error"][1]
    assert "cannot be 3 deep" in many["error"][2]  # a tree deeper than its k
    assert "concurrency must be ≥ 1, got 0" in many["error"][3]  # as summarize says it


def test_a_setup_where_nothing_fits_gives_every_run_the_same_message():
    setup = setup_of(Scenario.from_names(gpu="L40S", target="Llama 3.1 70B"))
    many = summarize_many(setup, [0.7] * 3, [4] * 3, [1, 8, 64])
    assert len(set(many["error"])) == 1 and "does not fit" in many["error"][0]


def test_every_sample_and_fixture_row_matches_summarize():
    files = [FIXTURES / "published_dev.csv", FIXTURES / "seed_runs.csv", FIXTURES / "measured_vs_model.csv"]
    rows = read_runs(files + sample_files("vllm bench serve pair"), RunDefaults(explicit=frozenset({"gpu"}))).rows
    rows = rows[rows["alpha"].notna() | rows["alpha_assumed"].notna()]  # own, its source's or a published figure
    # Spec-Bench's trees of 63-64 tokens each price every k up to theirs (a grid 8x the others'): two of
    # them are enough to compare, and keep this test seconds rather than minutes
    rows = pd.concat([rows[rows["k"] <= K_MAX], rows[rows["k"] > K_MAX].head(2)])
    records = rows.to_dict("records")
    # every run with the default parameters; a quarter of them again calibrated (the parameters reach
    # the grouped path the same way for every row, so a spread subset shows it). The runs of one setup
    # go through summarize_many together, as a file's runs do, each compared with summarize() alone.
    by_setup: dict[Scenario, list[Scenario]] = {}
    for eff, chosen in ((None, records), (CALIBRATED, records[::4])):
        for r in chosen:
            try:
                s = scenario_for_row(r, eff)
            except SpecModelError:
                continue
            by_setup.setdefault(setup_of(s), []).append(s)
    for setup, runs in by_setup.items():
        assert_same(setup, [s.alpha for s in runs], [s.k for s in runs], [s.concurrency for s in runs])
    assert sum(map(len, by_setup.values())) > 300  # the runs (of 5 files) with an acceptance, a quarter calibrated
    assert len(by_setup) > 20 and max(map(len, by_setup.values())) > 1  # many setups, several runs in some


def test_a_model_where_acceptance_changes_step_times_falls_back_to_summarize(monkeypatch, request):
    """If speedup stopped being tokens × (something free of α), the vectorised shortcut would be
    wrong; the check catches it and every run goes through summarize()."""
    import specmodel.model.grouped as grouped
    import specmodel.model.scenario as scenario

    real = scenario.predict

    def alpha_costs_time(s, alpha=None, k=None, concurrency=None):
        p = real(s, alpha, k, concurrency)
        a = np.asarray(s.alpha if alpha is None else alpha, dtype=float)
        return replace(p, speedup=np.asarray(p.speedup) * (1.0 - 0.1 * a))

    monkeypatch.setattr(grouped, "predict", alpha_costs_time)
    monkeypatch.setattr(scenario, "predict", alpha_costs_time)
    scenario.clear_caches()  # the step grids cached under the real predict must not be reused, nor these after
    request.addfinalizer(scenario.clear_caches)
    setup = setup_of(Scenario())
    many = grouped.summarize_many(setup, [0.5, 0.9], [4, 4], [1, 64])
    ref = one_by_one(setup, [0.5, 0.9], [4, 4], [1, 64])
    assert many["speedup"].tolist() == pytest.approx([float(r.prediction.speedup) for r in ref], rel=1e-12)
    assert many["best_k"].tolist() == [r.best_k for r in ref]
    assert many["best_k_speedup"].tolist() == pytest.approx([r.best_k_speedup for r in ref], rel=1e-12)


def test_schedules_walked_only_up_to_the_batches_that_fit_match_summarize(monkeypatch):
    """Above the sequences that fit every batch runs the same, so the grouped schedules stop there and
    hold their k: best k, crossover, off threshold and advice still equal summarize() run by run,
    at batches below, at and above that point."""
    import specmodel.model.grouped as grouped

    widths = []
    real = grouped.ks_in_use
    monkeypatch.setattr(grouped, "ks_in_use", lambda g: widths.append(g.shape[-1]) or real(g))
    setup = setup_of(Scenario.from_names(gpu="L40S", context_len=16384))
    alphas, ks, concs = zip(*[(a, k, c) for a in (0.35, 0.6, 0.75, 0.9) for k in (1, 2, 4, 7)
                              for c in (1, 8, 20, 40, 64, 200, 512, 600)])
    assert_same(setup, alphas, ks, concs)
    assert widths and max(widths) < 512  # the walk stopped where the batches that fit end
