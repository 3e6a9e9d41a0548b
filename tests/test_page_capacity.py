"""The Capacity page in Streamlit's AppTest: what a reviewer sees after setting a load and a target."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from specmodel import Efficiency, Scenario
from specmodel.plan.capacity import Load, Target, plan
from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def open_page(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    return at.switch_page("pages/capacity.py").run()


def metrics(at: AppTest) -> dict:
    return {m.label: m.value for m in at.metric}


def banner(at: AppTest) -> str:
    texts = [e.value for e in (*at.success, *at.info, *at.error) if e.value.startswith("**")]
    texts += [e.value for e in at.warning if e.value.startswith("**")]
    assert len(texts) == 1, texts
    return texts[0]


def test_page_opens_with_both_gpu_counts_the_verdict_and_the_frontier():
    at = open_page()
    assert not at.exception
    assert at.title[0].value.startswith("Capacity")
    expected = plan(Scenario(), Load(users=64), Target(min_user_tok_s=30.0))  # the page's defaults
    m = metrics(at)
    assert m["GPUs without speculation"] == str(expected.plain.gpus)
    assert m[f"GPUs with speculation (k = {expected.spec.k})"] == str(expected.spec.gpus)
    assert m["Verdict"] == expected.verdict
    assert expected.verdict_text[1:] in banner(at)
    (fig,) = at.get("plotly_chart")
    spec = json.loads(fig.proto.spec)
    assert "Per-user speed vs throughput per GPU" in spec["layout"]["title"]["text"]
    assert len(spec["data"]) == 12


def test_url_sets_a_request_rate_an_itl_target_and_k():
    at = open_page({"cap_load": "requests per second", "cap_rps": "3", "cap_out": "500",
                    "cap_target": "inter-token latency", "cap_itl": "20", "cap_k": "4", "cap_alpha": "0.6"})
    assert not at.exception
    assert at.number_input(key="cap_rps").value == 3 and at.number_input(key="cap_itl").value == 20
    expected = plan(Scenario.from_names(alpha=0.6), Load(rps=3.0, output_tokens=500), Target(max_itl_ms=20.0), k=4)
    m = metrics(at)
    plain = "impossible" if expected.plain.gpus is None else str(expected.plain.gpus)
    assert m["GPUs without speculation"] == plain
    assert m["GPUs with speculation (k = 4)"] == str(expected.spec.gpus)
    assert any("Little's law" in c.value for c in at.caption)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "(ms" in spec["layout"]["yaxis"]["title"]["text"]


def test_changing_the_load_changes_the_gpus():
    at = open_page({"cap_tok_s": "38"})
    before = metrics(at)["GPUs without speculation"]
    at.number_input(key="cap_users").set_value(640).run()
    assert not at.exception
    after = metrics(at)["GPUs without speculation"]
    assert after == str(plan(Scenario(), Load(users=640), Target(min_user_tok_s=38.0)).plain.gpus)
    assert int(after) > int(before)


def test_an_unreachable_target_shows_neither_meets_and_the_best_reachable_value():
    at = open_page({"cap_tok_s": "5000"})
    assert not at.exception
    assert banner(at).startswith("**Neither meets the target; best reachable:")
    assert at.error and "relax the target" in at.error[0].value
    m = metrics(at)
    assert m["GPUs without speculation"] == "impossible" and m["GPUs saved by speculation"] == "—"
    assert at.get("plotly_chart")  # the frontier still shows how far off the target is


@pytest.mark.parametrize("query,key", [({"cap_users": "0"}, "cap_users=0"), ({"cap_users": "-3"}, "cap_users=-3"),
                                       ({"cap_load": "requests per second", "cap_out": "0"}, "cap_out=0"),
                                       ({"cap_tok_s": "abc"}, "cap_tok_s=abc")])
def test_a_link_with_an_invalid_number_says_so_and_uses_the_default(query, key):
    at = open_page(query)
    assert not at.exception
    assert any(key in w.value and "default is used" in w.value for w in at.warning)
    assert at.get("plotly_chart")


def test_calibration_from_the_link_applies():
    # every value inside its physical range (a link outside it is refused: tests/test_calibration_shown.py)
    cal = Efficiency(eta_bw=0.6, eta_flops=0.45, t_fixed_ms=3.0, t_spec_overhead_ms=0.5, small_model_exponent=0.18)
    at = open_page({"cal": "0.6,0.45,3,0.5,0.18", "cap_users": "200", "cap_tok_s": "20"})
    assert not at.exception
    expected = plan(Scenario.from_names(efficiency=cal), Load(users=200), Target(min_user_tok_s=20.0))
    default = plan(Scenario(), Load(users=200), Target(min_user_tok_s=20.0))
    assert expected.plain.gpus != default.plain.gpus  # precondition: calibration changes the answer
    assert metrics(at)["GPUs without speculation"] == str(expected.plain.gpus)
