"""Tokens per step, α from E, and every engine's acceptance number: against published numbers."""

import csv

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel import SpecModelError
from specmodel.model import acceptance
from tests.conftest import FIXTURES

alphas = st.floats(0.0, 1.0, allow_nan=False)
ks = st.integers(0, 16)


@given(alphas, ks)
def test_tokens_per_step_lies_between_one_and_k_plus_one(alpha, k):
    e = float(acceptance.tokens_per_step(alpha, k))
    assert 1.0 - 1e-12 <= e <= k + 1 + 1e-12


@given(alphas, alphas, st.integers(1, 16))
def test_tokens_per_step_grows_with_alpha(a1, a2, k):
    lo, hi = sorted((a1, a2))
    assert acceptance.tokens_per_step(lo, k) <= acceptance.tokens_per_step(hi, k) + 1e-12


@given(st.floats(0.2, 1.0), st.integers(0, 10))
def test_tokens_per_step_grows_with_k(alpha, k):
    # (α^(k+1) stays above float resolution in this range, so the growth is strict.)
    assert acceptance.tokens_per_step(alpha, k + 1) > acceptance.tokens_per_step(alpha, k)


@given(st.floats(0.0, 0.999), st.integers(1, 12))
def test_alpha_from_tokens_per_step_round_trips(alpha, k):
    e = acceptance.tokens_per_step(alpha, k)
    assert acceptance.alpha_from_tokens_per_step(e, k) == pytest.approx(alpha, abs=1e-6)


def test_alpha_one_and_k_zero_have_no_division_by_zero():
    assert acceptance.tokens_per_step(1.0, 4) == 5.0
    assert acceptance.tokens_per_step(0.0, 4) == 1.0
    assert acceptance.tokens_per_step(0.7, 0) == 1.0


def test_seed_table_tokens_per_step():
    with open(FIXTURES / "seed_cost_table.csv") as f:
        for row in csv.DictReader(f):
            e = acceptance.tokens_per_step(float(row["alpha"]), int(row["k"]))
            assert e == pytest.approx(float(row["expected_tokens_per_step"]), abs=0.005)


def test_break_even_alpha_of_the_seed():
    # 31 ms per speculative step / 19 ms per plain step = 1.63 tokens per step; α ≈ 0.39.
    assert acceptance.alpha_from_tokens_per_step(31 / 19, 4) == pytest.approx(0.39, abs=0.005)


def test_vllm_draft_acceptance_rate_is_not_alpha():
    # Reference vLLM V1 sample: 48594 accepted of 84750 draft tokens in 28250 drafts, k = 3.
    rate = 48594 / 84750
    acc = acceptance.from_draft_acceptance_rate(rate, 3)
    assert acc.tokens_per_step == pytest.approx(1 + 48594 / 28250, abs=1e-9)
    assert acc.tokens_per_step == pytest.approx(2.720, abs=0.001)
    assert acc.alpha > rate + 0.1  # reading the rate as α understates acceptance badly
    assert acceptance.from_counts(48594, 28250, draft_tokens=84750).tokens_per_step == pytest.approx(2.720, abs=1e-3)


def test_survival_profile_of_the_reference_sample():
    survival = [22732 / 28250, 15952 / 28250, 9910 / 28250]
    acc = acceptance.from_survival(survival)
    assert [round(p, 4) for p in survival] == [0.8047, 0.5647, 0.3508]
    assert acc.tokens_per_step == pytest.approx(2.720, abs=1e-3)
    assert acc.k == 3
    cond = acceptance.conditional_acceptance(survival)
    assert cond[1] == pytest.approx(15952 / 22732)
    # A profile predicts fewer drafts directly and more drafts by a geometric tail.
    assert acceptance.tokens_per_step_at_k(1, survival=survival) == pytest.approx(1.8047, abs=1e-4)
    assert acceptance.tokens_per_step_at_k(5, survival=survival) > acc.tokens_per_step


def test_bench_percent():
    assert acceptance.from_vllm_percent(57.34, 3).tokens_per_step == pytest.approx(2.7202, abs=1e-4)


@pytest.mark.parametrize("call", [
    lambda: acceptance.from_alpha(1.2, 4),
    lambda: acceptance.from_tokens_per_step(5.5, 4),
    lambda: acceptance.from_tokens_per_step(0.5, 4),
    lambda: acceptance.from_survival([0.5, 0.7]),
    lambda: acceptance.from_counts(10, 0),
    lambda: acceptance.from_vllm_percent(140, 3),
])
def test_impossible_acceptance_numbers_are_refused_with_a_message(call):
    with pytest.raises(SpecModelError) as err:
        call()
    assert len(str(err.value)) > 20


@pytest.mark.parametrize("engine, alpha", [("vllm", 0.65), ("sglang", 0.43)])
def test_spec_benchs_pld_figure_is_read_in_each_engines_convention(engine, alpha):
    """Spec-Bench's PLD (Vicuna-7B): 1.74 tokens per step at 10 candidates, averaged over every step (its
    pld.py verifies a placeholder where no n-gram matches). vLLM counts acceptance only over steps with
    a proposal and the model applies its proposal rate, so the figure is read back to those steps
    first; SGLang pads every step, as Spec-Bench does. Either way the model emits 1.74 per step at k = 10."""
    from specmodel.model import spec_defaults
    from specmodel.words import published_remark
    from specmodel.model.scenario import Scenario, default_proposal_rate, predict, resolved_engine, resolved_method
    rate = default_proposal_rate(resolved_method("ngram"), resolved_engine(engine))
    found = spec_defaults.assumed_acceptance("ngram", "llama", "", None, rate)
    assert found.alpha == pytest.approx(alpha, abs=0.005)
    assert ("count every step" in published_remark(found)) == (engine == "vllm")
    s = Scenario.from_names(gpu="A100 80GB", target="Llama 3.1 8B", method="ngram", draft=None, k=10, alpha=found.alpha,
                 engine=engine)
    p = predict(s)
    emitted = float(acceptance.emitted_per_step(p.tokens_per_step, rate))
    assert emitted == pytest.approx(1.74, rel=0.005)
