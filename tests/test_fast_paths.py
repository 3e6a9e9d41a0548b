"""The faster readings of the slowest accepted inputs (bench limits) give what the slow ones gave.

- files.load_json decides the depth limit from the text's brackets: it must refuse exactly the documents
  whose value depth (json_depth, the walk it replaced) is over MAX_JSON_DEPTH, for text and bytes.
- A run file repeating one survival profile converts it once: every row still gets the same acceptance.
- A traffic mix looks each workload's result up once per plan: the plans and the refusal of a repeated
  label are unchanged.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel import Scenario, SpecModelError
from specmodel.bounds import MAX_JSON_DEPTH
from specmodel.files import json_depth, load_json
from specmodel.model import acceptance
from specmodel.plan import mix
from specmodel.plan.workloads import Workload
from specmodel.runs import read_runs
from tests.conftest import examples

_leaf = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False), st.none(), st.booleans(),
                  st.sampled_from(["", "[", "]", "{", "}", '"', "\\", "\\\"[", "é{", "\u2028"]))


def _nest(inner, depth: int, as_dict: bool):
    for _ in range(depth):
        inner = {"k[": inner} if as_dict else [inner]
    return inner


@settings(max_examples=examples(300), deadline=None)
@given(depth=st.integers(MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH + 3), as_dict=st.booleans(),
       innermost=st.one_of(_leaf, st.just([]), st.just({}), st.lists(_leaf, max_size=3)),
       sibling=st.lists(_leaf, max_size=3), ascii_only=st.booleans(), as_bytes=st.sampled_from(["str", "utf-8", "utf-16"]))
def test_the_depth_limit_refuses_exactly_the_documents_the_value_walk_refused(depth, as_dict, innermost, sibling,
                                                                              ascii_only, as_bytes):
    doc = [sibling, _nest(innermost, depth, as_dict)]
    text = json.dumps(doc, ensure_ascii=ascii_only)
    given_text = text if as_bytes == "str" else text.encode(as_bytes)
    if json_depth(doc) > MAX_JSON_DEPTH:
        with pytest.raises(SpecModelError, match="nested more than"):
            load_json(given_text)
    else:
        assert load_json(given_text) == doc


def test_the_empty_container_one_past_the_limit_is_decided_by_its_values():
    """Brackets one past the limit with an empty innermost list: value depth = the limit, accepted."""
    doc = _nest([], MAX_JSON_DEPTH, as_dict=False)
    assert json_depth(doc) == MAX_JSON_DEPTH
    assert load_json(json.dumps(doc)) == doc
    with pytest.raises(SpecModelError, match="nested more than"):
        load_json(json.dumps(_nest([1], MAX_JSON_DEPTH, as_dict=False)))


def test_rows_sharing_a_survival_profile_each_get_the_profiles_acceptance():
    rows = ["0.9;0.7;0.5", "0.9 ;0.7; 0.5", "[0.9, 0.7, 0.5]", "0.8;0.6", "0.9;0.7;0.5"]
    csv = "workload,concurrency,survival,baseline_tok_s,spec_tok_s\n" + "".join(
        f'w{i},8,"{s}",100,150\n' for i, s in enumerate(rows))
    table = read_runs([("profiles.csv", csv.encode())])
    assert [tuple(s) for s in table.rows["survival"]] == [(0.9, 0.7, 0.5)] * 3 + [(0.8, 0.6), (0.9, 0.7, 0.5)]
    expected = [acceptance.from_survival([0.9, 0.7, 0.5]).tokens_per_step] * 3 + \
        [acceptance.from_survival([0.8, 0.6]).tokens_per_step, acceptance.from_survival([0.9, 0.7, 0.5]).tokens_per_step]
    assert list(table.rows["tokens_per_step"]) == pytest.approx(expected)
    assert list(table.rows["k"]) == [3, 3, 3, 2, 3]


def test_a_profile_refused_in_one_row_is_refused_in_every_row_that_repeats_it():
    csv = "workload,concurrency,survival,baseline_tok_s,spec_tok_s\n" + 'w,8,"0.5;0.9",100,150\n' * 3
    table = read_runs([("bad.csv", csv.encode())])
    assert len(table.rows) == 0
    assert [p.row for p in table.problems if "survival" in (p.column or "")] == [2, 3, 4]  # file lines


def test_every_plan_finds_each_workloads_result_and_a_repeated_label_is_refused():
    works = [Workload(f"w{i}", 1 / 6, alpha=0.3 + 0.1 * i) for i in range(6)]
    report = mix.compare(Scenario.from_names(k=4, concurrency=64), works, 64, 2)
    for plan in report.plans:
        for w in works:
            pool, result = plan.workload(w.label)
            assert w.label in pool.labels and result.label == w.label
        with pytest.raises(KeyError):
            plan.workload("nobody")
    with pytest.raises(SpecModelError, match="label 'w1' appears twice"):
        mix.compare(Scenario.from_names(k=4, concurrency=64), works + [Workload("w1", 0.1, alpha=0.5)], 64, 2)
