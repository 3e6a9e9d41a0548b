"""More workloads than the split search separates (six): the single-pool comparison still shows for
all of them, the split search takes the six the user picks (by default the busiest), and the others
share one pool in every split."""

from __future__ import annotations


from specmodel.model.scenario import with_changes

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from specmodel import Scenario, SpecModelError, cli
from specmodel.plan import mix
from specmodel.plan.workloads import Workload, workload_records
from tests.conftest import ROOT

SHARES = [0.20, 0.15, 0.04, 0.11, 0.12, 0.03, 0.10, 0.05, 0.13, 0.07]
ALPHAS = [0.80, 0.30, 0.60, 0.50, 0.70, 0.40, 0.20, 0.90, 0.55, 0.65]
TEN = [Workload(f"w{i}", s, a) for i, (s, a) in enumerate(zip(SHARES, ALPHAS))]
BUSIEST = ["w0", "w1", "w3", "w4", "w6", "w8"]  # shares 0.20, 0.15, 0.11, 0.12, 0.10, 0.13


def test_ten_workloads_get_the_single_pool_comparison_and_a_split_search_over_the_busiest_six():
    assert mix.busiest(TEN) == BUSIEST
    report = mix.compare(Scenario.from_names(k=4, concurrency=32), TEN, 32, 2)
    assert [p.kind for p in report.plans[:3]] == ["single_on", "single_off", "single_best"]
    assert all(len(p.pools[0].labels) == 10 for p in report.plans[:3])  # the single pool serves all ten
    assert report.splits
    rest = {"w2", "w5", "w7", "w9"}
    for plan in report.splits:
        holders = [set(pool.labels) for pool in plan.pools if set(pool.labels) & rest]
        assert len(holders) == 1 and rest <= holders[0]  # the others always share one pool
        assert sorted(label for pool in plan.pools for label in pool.labels) == sorted(w.label for w in TEN)
    assert any("the other 4 (w2, w5, w7, w9) share one pool" in n for n in report.notes)


def test_the_user_picks_which_workloads_to_split_apart():
    report = mix.compare(Scenario.from_names(k=4, concurrency=32), TEN, 32, 2, split_among=["w7", "w6"])
    assert any("separates 2 workloads; the other 8" in n for n in report.notes)
    for plan in report.splits:
        assert max(len(pool.labels) for pool in plan.pools) >= 8


@pytest.mark.parametrize("chosen, words", [(["w1", "nope"], "'nope'"), ([f"w{i}" for i in range(7)], "at most 6")])
def test_a_bad_choice_is_named(chosen, words):
    with pytest.raises(SpecModelError, match=words):
        mix.compare(Scenario.from_names(k=4, concurrency=32), TEN, 32, 2, split_among=chosen)


def test_too_many_splits_still_compare_the_single_pool():
    report = mix.compare(Scenario.from_names(k=4, concurrency=64), TEN, 64, 32)
    assert report.splits == () and report.single_best.pools
    assert any("too many to search: only the single pool is compared" in n for n in report.notes)


def test_cli_takes_the_split_choice(tmp_path, capsys):
    path = tmp_path / "ten.csv"
    pd.DataFrame(workload_records(TEN)).to_csv(path, index=False)
    assert cli.main(["mix", str(path), "--gpus", "2", "--split", "w7,w6", "--json"]) == 0
    out = capsys.readouterr().out
    assert "separates 2 workloads" in out and '"single_best"' in out


def test_the_page_lets_the_user_pick_six_and_shows_the_single_pool_comparison():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.session_state["mix_table"] = pd.DataFrame(workload_records(TEN))
    at.switch_page("pages/mix.py").run()
    assert not at.exception
    picker = at.multiselect(key="mix_split_among")
    assert picker.value == BUSIEST and len(picker.options) == 10
    plans = list(at.dataframe[1].value["plan"])  # [0] is the workload table
    assert plans[:3] == ["single pool, draft_model k=4", "single pool, speculation off", "single pool, best setting"]
    assert not any("at most 6" in e.value for e in at.error)
    picker.set_value(["w7", "w2"]).run()
    assert not at.exception
    assert any("the other 8" in c.value for c in at.caption)


def test_a_pool_of_many_workloads_is_each_workloads_own_prediction_at_the_pools_batch():
    """The pool predicts its α-only members in one vectorised call: every member's numbers must be
    what predict() gives that workload alone at the pool's batch (a survival member included)."""
    from specmodel import predict

    members = [*TEN, Workload("profiled", 0.05, 0.6, (0.8, 0.55, 0.35, 0.2))]
    base = Scenario.from_names(k=4, concurrency=32)
    pool = mix.pool_result(base, members, 48, 2, "draft_model", 4)
    batch = 48 * sum(w.share for w in members) / 2  # two replicas share the pool's sequences
    for w, r in zip(members, pool.workloads):
        alone = predict(with_changes(base, alpha=w.alpha, survival=w.survival, draft="Llama 3.2 1B"), k=4,
                        concurrency=batch)
        assert r.label == w.label
        assert r.tokens_per_step == pytest.approx(float(alone.tokens_per_step), rel=1e-12)
        assert r.itl_ms == pytest.approx(float(alone.spec.itl_ms), rel=1e-12)
    assert len({round(r.itl_ms, 9) for r in pool.workloads}) > 1  # each its own E: not one number for all


@pytest.mark.parametrize("cap", [
    40,  # the rule on a small mix: the quick loop's
    pytest.param(None, marks=pytest.mark.slow),  # the cap itself: comparing 10,000 workloads takes ~2 s of CPU
])
def test_a_mix_past_the_cap_loads_its_first_rows_and_says_how_many_were_left_out(cap, monkeypatch):
    from specmodel.plan import workloads as module
    from specmodel.plan.workloads import parse_workloads

    if cap is not None:
        monkeypatch.setattr(module, "MAX_MIX_WORKLOADS", cap)
    else:
        assert module.MAX_MIX_WORKLOADS == 10_000
    cap = module.MAX_MIX_WORKLOADS
    records = [{"label": f"w{i}", "share": 1, "alpha": 0.3 + 0.6 * (i % 10) / 10} for i in range(cap + 5)]
    workloads, problems, _ = parse_workloads(records, source="mix.csv")
    assert len(workloads) == cap
    assert problems == [f"mix.csv has {cap + 5:,} rows: the first {cap:,} load, the other 5 were left out; merge "
                        "workloads of similar acceptance"]
    report = mix.compare(Scenario.from_names(k=4, concurrency=32), workloads, 32, 2)
    assert len(report.single_on.pools[0].labels) == cap and report.splits
