"""specmodel.model.decide.summarize_many: many runs of one setup at once, a message for each run the model
refuses."""

from dataclasses import replace

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




@pytest.mark.parametrize("s", [Scenario.from_names(method="ngram", draft=None),  # vLLM verifies matched sequences only
                               Scenario.from_names(survival=(0.8, 0.56, 0.35), k=3)])
def test_a_file_of_runs_reads_as_what_if_reads_each_run(s):
    """Past runs decides many runs of one setup at once; each reads as What-if reads that one setting."""
    alpha, k, conc = [0.35, 0.8, 0.8, 0.95], [3, 2, 5, 4], [1, 16, 96, 700]
    many = summarize_many(setup_of(s), alpha, k, conc)
    for i, (a, kk, c) in enumerate(zip(alpha, k, conc)):
        one = summarize(replace(s, alpha=a, k=kk, concurrency=c))
        assert many["speedup"][i] == pytest.approx(float(one.prediction.speedup), rel=1e-12)
        assert (many["best_k"][i], many["crossover"][i], many["off_above"][i]) == (
            one.best_k, one.crossover_concurrency, one.off_above)
        assert (many["speedup_low"][i], many["speedup_high"][i]) == pytest.approx(one.band, rel=1e-12)
