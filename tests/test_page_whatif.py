"""The What-if page in Streamlit's AppTest: what a reviewer sees after moving a widget or opening a link."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def run(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def banner(at: AppTest) -> str:
    texts = [e.value for e in (*at.success, *at.warning, *at.error)]
    assert texts, "no verdict shown"
    return texts[0]


def test_page_runs_clean_with_verdict_metrics_and_five_charts():
    at = run()
    assert not at.exception
    assert "Pays off" in banner(at)
    labels = [m.label for m in at.metric]
    assert labels[:5] == ["Speedup", "Tokens per step E", "Break-even α", "Best k here", "Crossover batch"]
    charts = at.get("plotly_chart")
    assert len(charts) == 5
    titles = " ".join(json.loads(c.proto.spec)["layout"]["title"]["text"] for c in charts)
    for title in ("Speedup vs acceptance", "Speedup vs concurrency", "Speedup over α and k", "k to deploy by batch size",
                  "Off, fixed k, schedule or per-batch best"):
        assert title in titles


def test_moving_alpha_below_break_even_flips_the_verdict():
    at = run()
    assert "Pays off" in banner(at)
    at.slider(key="alpha").set_value(0.3).run()
    assert not at.exception
    # 0.79x by the estimate, but the band (0.59-1.19x) reaches above 1.0: the headline says uncertain first
    assert banner(at).startswith("**Uncertain (loses by the estimate): 0.79x")
    assert "lower k to 1" in banner(at)  # one draft token still clears break-even at α = 0.3
    at.slider(key="alpha").set_value(0.1).run()
    assert "turn speculation off at batch 1" in banner(at)


def test_url_parameters_set_the_widgets():
    at = run({"alpha": "0.35", "k": "6", "conc": "128", "gpu": "H100 SXM", "target": "Qwen3 8B",
              "timings": "measured", "t_target": "25", "t_draft": "4.5", "ctx": "4096"})
    assert at.slider(key="alpha").value == pytest.approx(0.35)
    assert at.slider(key="k").value == 6
    assert at.number_input(key="conc").value == 128
    assert at.select_slider(key="conc_slider").value == 128  # the typed value sits on the log slider
    assert at.selectbox(key="gpu").value == "H100 SXM"
    assert at.selectbox(key="target").value == "Qwen3 8B"
    assert at.selectbox(key="draft").value == "Qwen3 0.6B"
    assert at.radio(key="timings").value == "measured"
    assert at.number_input(key="t_target").value == 25.0
    assert at.select_slider(key="ctx").value == 4096
    assert not at.exception


def test_invalid_url_parameters_fall_back_to_defaults():
    at = run({"alpha": "7", "k": "many", "conc": "-3", "gpu": "Abacus"})
    assert not at.exception
    assert at.slider(key="alpha").value == pytest.approx(0.70)
    assert at.slider(key="k").value == 4
    assert at.number_input(key="conc").value == 1
    assert at.selectbox(key="gpu").value == "L40S"


def test_measured_timings_reproduce_the_seed():
    at = run({"timings": "measured"})
    assert at.metric[0].value == "1.70x"
    assert at.metric[1].value == "2.77"


def test_a_model_that_does_not_fit_says_so_instead_of_plotting():
    at = run({"target": "Llama 3.1 70B"})
    assert not at.exception
    assert "needs 141 GB for its weights alone" in at.error[0].value
    assert "closest setting that fits: 4 × L40S" in at.error[0].value
    assert len(at.get("plotly_chart")) == 0


def test_a_bad_acceptance_profile_is_explained():
    at = run()
    at.text_input(key="profile").input("0.8, oops").run()
    assert not at.exception
    assert "the acceptance profile must be numbers p_1,...,p_k separated by commas" in at.error[0].value
    at.text_input(key="profile").input("0.5, 0.7").run()
    assert "increases with position" in at.error[0].value
    at.text_input(key="profile").input("0.80, 0.56, 0.35").run()
    assert not at.error
    assert any("geometric tail" in i.value for i in at.info)  # k = 4 is beyond the 3 measured positions
    at.slider(key="k").set_value(3).run()
    assert at.metric[1].value == "2.71"
    assert not any("geometric tail" in i.value for i in at.info)


def test_k_zero_means_off():
    at = run({"k": "0"})
    assert not at.exception
    assert at.metric[0].value == "1.00x"


def test_concurrency_is_a_number_box_and_a_log_scale_slider_kept_in_step():
    at = run()
    slider = at.select_slider(key="conc_slider")
    assert slider.options == [str(2 ** i) for i in range(10)]  # 1, 2, 4 … 512: one press doubles
    at.select_slider(key="conc_slider").set_value(32).run()  # five steps, not 31 key presses
    assert not at.exception
    assert at.number_input(key="conc").value == 32
    assert at.query_params["conc"] in ("32", ["32"])
    at.number_input(key="conc").set_value(48).run()  # any typed value, also between the stops
    assert not at.exception
    assert at.select_slider(key="conc_slider").value == 48
    assert at.select_slider(key="conc_slider").options[5:8] == ["32", "48", "64"]
    assert any(m.label == "Speedup" for m in at.metric)
    at.number_input(key="conc").set_value(2000).run()  # beyond the slider's 512
    assert not at.exception and at.select_slider(key="conc_slider").options[-1] == "2000"
    assert not at.warning or all("Session State" not in w.value for w in at.warning)


def test_switching_the_method_brings_its_own_default_acceptance_with_its_source():
    at = run()
    assert at.slider(key="alpha").value == pytest.approx(0.70)
    at.selectbox(key="method").set_value("ngram").run()
    assert not at.exception
    # Spec-Bench's PLD on Vicuna-7B: 1.74 tokens per step at 10 candidates, counted over every step (its
    # pld.py verifies a placeholder where nothing matches). vLLM (the default engine) verifies drafts only
    # on a match and counts acceptance there: at its proposal rate 0.4 that is 2.85 per proposal, α 0.65
    assert at.slider(key="alpha").value == pytest.approx(0.65)
    caption = " ".join(c.value for c in at.caption)
    assert "N-gram (prompt lookup)'s default acceptance" in caption and "Spec-Bench" in caption
    assert "count every step" in caption and "2.85 per step with a proposal" in caption
    at.slider(key="alpha").set_value(0.6).run()  # the user's own α: the caption goes
    assert "default acceptance" not in " ".join(c.value for c in at.caption)
    # (AppTest drops app.py's sidebar after a sidebar change: a fresh run for the next switch)
    # SGLang pads every sequence to k drafts and averages over every step, as Spec-Bench does: α 0.43
    at = run({"engine": "sglang"})
    at.selectbox(key="method").set_value("ngram").run()
    assert not at.exception and at.slider(key="alpha").value == pytest.approx(0.43)
    assert "count every step" not in " ".join(c.value for c in at.caption)
    at = run({"alpha": "0.55"})
    at.selectbox(key="method").set_value("medusa").run()  # no published default: α stays
    assert at.slider(key="alpha").value == pytest.approx(0.55)
    assert "no published default acceptance" in " ".join(c.value for c in at.caption)


def test_switching_the_engine_rereads_the_methods_default_acceptance_until_the_slider_moves():
    """Spec-Bench's n-gram figure is α 0.65 for vLLM (its proposal rate applied) and 0.43 for SGLang (every
    step padded): a new engine re-reads it while the default is still the α in use, and keeps a moved one."""
    def after_engine_switch(alpha: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["method"], at.query_params["alpha"] = "ngram", alpha
        at.session_state["alpha_from"] = ("α 0.65: N-gram (prompt lookup)'s default acceptance", 0.65)
        at.run()  # as after switching to n-gram on vLLM (the default engine)
        return at.selectbox(key="engine").set_value("sglang").run()

    at = after_engine_switch("0.65")
    assert not at.exception and at.slider(key="alpha").value == pytest.approx(0.43)
    assert "α 0.43: N-gram (prompt lookup)'s default acceptance" in " ".join(c.value for c in at.caption)
    assert after_engine_switch("0.6").slider(key="alpha").value == pytest.approx(0.6)  # the user's own α stays
