"""specmodel.model.decide.summarize_many: many runs of one setup at once, a message for each run the model
refuses, and every α at once only where the speedup factors into tokens per step × a grid free of α."""

from dataclasses import replace

import numpy as np
import pytest

from specmodel import Scenario
from specmodel.model.decide import setup_of, summarize_many
from specmodel.words import summarize


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


def test_a_model_where_acceptance_changes_step_times_falls_back_to_summarize(monkeypatch, request):
    """If speedup stopped being tokens × (something free of α), the vectorised shortcut would be
    wrong; the check catches it and the runs of each α are decided apart, as summarize() decides one."""
    import specmodel.model.decide as grouped
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
    setup = setup_of(Scenario.from_names())
    many = grouped.summarize_many(setup, [0.5, 0.9], [4, 4], [1, 64])
    ref = [summarize(replace(setup, alpha=a, k=4, concurrency=c)) for a, c in ((0.5, 1), (0.9, 64))]
    assert many["speedup"].tolist() == pytest.approx([float(r.prediction.speedup) for r in ref], rel=1e-12)
    assert many["best_k"].tolist() == [r.best_k for r in ref]
    assert many["best_k_speedup"].tolist() == pytest.approx([r.best_k_speedup for r in ref], rel=1e-12)
