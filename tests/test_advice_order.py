"""Issue 40, item 4: advice never names a worse option as the better one. Over a grid of scenarios (GPUs,
methods, acceptance, k, concurrency), no advice recommends a k whose predicted speedup is lower than the
k set here: a smaller k within the noise but slower here is named as such ("keep k = 4 (k = 3 is within 1%
…)"), never advised; each sentence advises one k (the schedule's k that stops paying, where it is another,
has a sentence of its own); the one scenario's advice (summarize) and the many runs' (advice_of_runs) agree."""

import itertools
import math
import re

import numpy as np
import pytest

from specmodel import Scenario, summarize
from specmodel.model.decide import K_TIE, SWITCH_GAIN, summarize_many
from specmodel.words import advice_of_runs

GPUS = ["L40S", "H100", "A100 80GB"]
METHODS = ["draft_model", "eagle3", "ngram"]
ALPHAS = [0.3, 0.5, 0.6, 0.7, 0.8, 0.9]
KS = [1, 2, 3, 4, 5, 6]
BATCHES = [1, 8, 32, 64, 128]
ADVISED = re.compile(r"\b(?:lower|raise) k to (\d+) \(([\d.]+)x")
KEPT_WITHIN = re.compile(r"^keep k = (\d+) \(k = (\d+) is within (\d)%")


def _setup(gpu: str, method: str) -> Scenario:
    return Scenario.from_names(gpu=gpu, method=method, alpha=0.5, k=0, concurrency=1,
                               **({"draft": "Llama 3.2 1B"} if method == "draft_model" else {}))


GRID = [(a, k, c) for a, k, c in itertools.product(ALPHAS, KS, BATCHES)]


@pytest.fixture(scope="module", params=list(itertools.product(GPUS, METHODS)), ids=lambda p: f"{p[0]}-{p[1]}")
def advised(request):
    setup = _setup(*request.param)
    alpha, k, conc = (np.array(x) for x in zip(*GRID))
    runs = summarize_many(setup, alpha, k, conc)
    return setup, runs, advice_of_runs(setup, alpha, k, conc, runs)


def test_no_advice_recommends_a_k_slower_than_the_one_set_here(advised):
    _, runs, advice = advised
    checked = kept = 0
    for i, (alpha, k, conc) in enumerate(GRID):
        said = advice[i]
        if said is None or runs["error"][i] is not None:
            continue
        speedup, best, best_speed = float(runs["speedup"][i]), runs["best_k"][i], float(runs["best_k_speedup"][i])
        for named_k, shown in ADVISED.findall(said):
            checked += 1
            assert int(named_k) == best, said
            # the advised k is at least as fast as the one set here (as shown, to the hundredth)
            assert float(shown) >= round(speedup, 2) - 0.005, (alpha, k, conc, speedup, said)
        if best not in (0, k) and best_speed < speedup:  # another k within noise, slower here: kept, said so
            kept += 1
            assert best_speed >= speedup * (1 - SWITCH_GAIN - K_TIE)  # the schedule's k, or the smallest within K_TIE
            m = KEPT_WITHIN.match(said)
            assert m and (int(m[1]), int(m[2])) == (k, best), (alpha, k, conc, said)
            assert int(m[3]) == math.ceil(round((1 - best_speed / speedup) * 100, 6)) or int(m[3]) == 1, said
    assert checked > 20  # the grid reaches advice that changes k


def test_each_sentence_advises_one_k(advised):
    for said in advised[2]:
        if not said:
            continue
        for sentence in said.split(". "):
            named = re.sub(r"\(k = \d+ is within [^)]*\)", "", sentence)  # the k named as within noise, not advised
            ks = set(re.findall(r"\bk (?:to|=) (\d+)", named))
            assert len(ks) <= 1, said


def test_the_grid_holds_a_smaller_k_within_noise_that_is_kept():
    """The case issue 40 found ("lower k to 3 (1.27×, within 1% of k = 4)" while k = 4 gives 1.29×) is in the grid:
    the advice keeps k = 4 and says where k = 3 holds to."""
    s = Scenario.from_names(gpu="L40S", method="eagle3", alpha=0.6, k=4, concurrency=8)
    d = summarize(s)
    assert d.best_k == 3 and d.best_k_speedup < float(d.prediction.speedup)
    assert d.verdict.advice.startswith("keep k = 4 (k = 3 is within 1% and holds to batch 124, then off)")
    # the schedule's k (8, kept from batch 1 within SWITCH_GAIN) is a little slower at batch 32 than k = 6: kept too
    s = Scenario.from_names(gpu="H100", method="eagle3", alpha=0.9, k=6, concurrency=32)
    d = summarize(s)
    assert d.best_k == 8 and d.best_k_speedup < float(d.prediction.speedup)
    assert d.verdict.advice.startswith("keep k = 6 (k = 8 is within 1%)")


@pytest.mark.parametrize("case", [(0.6, 4, 8), (0.8, 5, 32), (0.5, 3, 1), (0.7, 4, 1), (0.3, 6, 64)])
def test_one_scenario_and_many_runs_say_the_same(case):
    alpha, k, conc = case
    setup = _setup("L40S", "eagle3")
    runs = summarize_many(setup, np.array([alpha]), np.array([k]), np.array([conc]))
    many = advice_of_runs(setup, [alpha], [k], [conc], runs)[0]
    one = summarize(Scenario.from_names(gpu="L40S", method="eagle3", alpha=alpha, k=k, concurrency=conc))
    assert many == one.verdict.advice
