"""The Live page in Streamlit's AppTest, scraping replay servers on 127.0.0.1."""

import json
import re

from streamlit.testing.v1 import AppTest

from tests import replay
from tests.conftest import ROOT
from tests.replay import ReplayServer

APP = str(ROOT / "app.py")


def open_live(url: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/live.py").run()
    if url is not None:
        at.text_input(key="live_url").set_value(url).run()
    return at


def texts(elements) -> str:
    """The elements' text as a person reads it: Markdown escapes rendered, the joiners that break autolinks dropped."""
    return re.sub(r"\\(.)", r"\1", " | ".join(e.value for e in elements)).replace("\u200d", "")


def test_without_a_url_the_page_asks_for_one():
    at = open_live()
    assert not at.exception
    assert "Enter the metrics URL" in texts(at.info)


def test_two_scrapes_give_the_statistics_the_verdict_and_the_charts():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        at = open_live(srv.url)
        assert not at.exception
        assert "First scrape done: vllm-v1" in texts(at.info)
        at.run()  # the next scrape completes the first window
    assert not at.exception
    # the headline says first what the verdict rests on: presets (no step fit or measured plain step given)
    assert ("Right now: rests on presets (Llama 3.1 8B on L40S, assumed; no step fit or measured plain step): "
            "pays off") in texts(at.success)
    assert "measured E = 2.50 tokens per step with k = 3" in texts(at.success)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Tokens per step E"] == "2.50"
    assert metrics["Accepted ÷ drafted"] == "0.500"
    assert metrics["Running / waiting"] == "12 / 2"
    assert metrics["KV cache used"] == "25%"
    titles = " ".join(json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart"))
    assert "Operating point on the model" in titles and "Tokens per step and load" in titles
    assert "Acceptance by draft position" in titles
    table = at.dataframe[0].value
    assert list(table["k'"]) == [0, 1, 2, 3]


def test_a_link_with_the_url_and_interval_opens_the_same_view():
    with ReplayServer("sglang_specdecode_sample.txt", increments=replay.SGLANG) as srv:
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["live_url"] = srv.url
        at.query_params["live_every"] = "10"
        at.run()
        at.switch_page("pages/live.py").run()
        assert at.text_input(key="live_url").value == srv.url
        assert at.select_slider(key="live_every").value == 10
        at.run()
    assert not at.exception
    # its band straddles 1.0 at this load, so the verdict is an amber box (what the link carries is the point)
    assert "measured E = 2.50 tokens per step with k = 3" in texts(at.success) + texts(at.warning)
    assert "sglang" in " ".join(c.value for c in at.caption)


def test_speculation_off_shows_load_and_the_model_prediction():
    with ReplayServer("vllm_v1_nospec_sample.txt", increments=replay.V1_NOSPEC, gauges=replay.V1_GAUGES) as srv:
        at = open_live(srv.url)
        at.run()
    assert not at.exception
    assert "speculation is off on this server; the model predicts k = 4" in texts(at.info)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Tokens per step E"] == "—" and metrics["Running / waiting"] == "12 / 2"
    assert metrics["Generated tokens/s"] != "—"
    # The note that speculation is off asks for attention (a warning box); the assumption is a caption
    # naming this page's own input, not the What-if page or the command line.
    assert "speculative decoding is off on this server" in texts(at.warning)
    captions = " ".join(c.value for c in at.caption)
    assert "α = 0.70 and k = 4 are assumed (the α and k to assume, under Connection and model options)" in captions
    assert "sidebar" not in texts(at.warning) and "--alpha" not in captions


def test_live_assumes_its_own_alpha_and_k_not_the_whatif_pages():
    with ReplayServer("vllm_v1_nospec_sample.txt", increments=replay.V1_NOSPEC, gauges=replay.V1_GAUGES) as srv:
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.slider(key="alpha").set_value(0.3)  # the What-if page's widgets: Live does not read them
        at.slider(key="k").set_value(2).run()
        at.switch_page("pages/live.py").run()
        at.text_input(key="live_url").set_value(srv.url).run()
        at.slider(key="live_alpha").set_value(0.8)
        at.number_input(key="live_k_assumed").set_value(3).run()
        at.run()
    assert not at.exception
    assert "the model predicts k = 3 at α = 0.80" in texts(at.info)


def test_failures_show_a_message_and_the_page_keeps_going():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, mode="500") as srv:
        at = open_live(srv.url)
        assert not at.exception
        assert "HTTP 500" in texts(at.error) and srv.url in texts(at.error)
        srv.mode = "ok"  # the server recovers: the next refresh measures again
        at.run()
        at.run()
    assert not at.exception and not at.error
    assert "Right now" in texts(at.success)


def test_a_server_that_restarts_is_reported_and_still_measured():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, mode="reset") as srv:
        at = open_live(srv.url)
        at.run()
    assert not at.exception
    assert "restarted" in texts(at.warning)
    assert {m.label: m.value for m in at.metric}["Tokens per step E"] == "2.50"


def two_models_text() -> str:
    """The vLLM V1 sample serving a second model beside the first (every series duplicated)."""
    out = []
    for line in replay.fixture_text("vllm_v1_specdecode_sample.txt").splitlines():
        out.append(line)
        if 'model_name="meta-llama/Llama-3.1-8B-Instruct"' in line:
            out.append(line.replace("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B"))
    return "\n".join(out) + "\n"


def test_a_server_with_two_models_lets_the_user_choose_one():
    increments = {**replay.V1_SPEC, "vllm:spec_decode_num_accepted_tokens_total": [1500, 2500],
                  "vllm:generation_tokens_total": [2500, 100],
                  # one value per series in file order: Llama and Qwen alternate at each position
                  "vllm:spec_decode_num_accepted_tokens_per_pos_total": [800, 1000, 500, 900, 200, 600]}
    with ReplayServer(two_models_text(), increments=increments) as srv:
        at = open_live(srv.url)
        at.run()
        # Both models start level, so the first is taken; the page stays on it though Llama gets busier.
        assert "measured E = 3.50" in texts(at.success)
        choice = at.selectbox(key="live_model")
        assert choice.options == ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct"]
        assert choice.value == "Qwen/Qwen3-8B"
        choice.set_value("meta-llama/Llama-3.1-8B-Instruct").run()
        assert "First scrape done" in texts(at.info)  # another model: a new window starts
        at.run()
    assert not at.exception
    assert "model meta-llama/Llama-3.1-8B-Instruct" in " ".join(c.value for c in at.caption)
    assert "measured E = 2.50" in texts(at.success)


# The server's own step timing (issue 44): per scrape 990 request steps of 25 ms over 82 engine steps (batch
# 12.1) and 20 first tokens, so (2500 − 20) decode tokens: 24.75 s / 2480 = 9.98 ms a token.
TIMING = {"vllm:inter_token_latency_seconds_sum": 24.75, "vllm:inter_token_latency_seconds_count": 990,
          "vllm:time_to_first_token_seconds_count": 20, "vllm:iteration_tokens_total_count": 82}


def step_fit_calibration(with_k1: bool = False) -> bytes:
    """A calibration with one step fit of the sample's model (a draft model, k = 3), as `runs --calibrate
    --save-calibration` writes it: plain 10 and 12 ms a step at batch 1 and 8, speculative 4 and 9 ms a token.
    `with_k1`: the same server's runs at k = 1 too (speculative 6 and 8 ms a token, E = 1.7)."""
    from specmodel.fit.saved import SavedFit
    from specmodel.fit.steps import StepPoint, fit_steps
    from specmodel.model.calibration_file import calibration_document
    from specmodel.model.roofline import Efficiency

    fits = [fit_steps([StepPoint(1, 10.0, 4.0, tokens_per_step=2.5), StepPoint(8, 12.0, 9.0, tokens_per_step=2.5)], k=3)]
    if with_k1:
        fits.append(fit_steps([StepPoint(1, 10.0, 6.0, tokens_per_step=1.7), StepPoint(8, 12.0, 8.0, tokens_per_step=1.7)],
                              k=1))
    saved = [SavedFit("page", "Draft model", "meta-llama/Llama-3.1-8B-Instruct", "draft_model", f) for f in fits]
    return json.dumps({**calibration_document(Efficiency(), "nothing fitted"),
                       "step_fits": [f.to_dict() for f in saved]}).encode()


def test_a_calibration_with_a_step_fit_sets_the_servers_own_timing_against_its_plain_step():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments={**replay.V1_SPEC, **TIMING},
                      gauges=replay.V1_GAUGES) as srv:
        at = open_live()
        at.file_uploader(key="live_step_fits").set_value(("cal.json", step_fit_calibration(), "application/json"))
        at.text_input(key="live_url").set_value(srv.url).run()
        at.run()
    assert not at.exception
    # the fit's plain step at batch 12.1 (9.71 + 0.286 · 12.1 = 13.2 ms) over the measured 9.98 ms a token: 1.32x
    headline = texts(at.success)
    assert "Right now: measured + step fit: pays off: 1.32x (1.18x to 1.48x) at batch 12.1" in headline
    assert "speculative 10.0 ms a token (measured: vllm:inter_token_latency_seconds)" in headline
    captions = " ".join(c.value for c in at.caption)
    assert "measured: time per token, speculative (vllm:inter_token_latency_seconds)" in captions
    assert {m.label: m.value for m in at.metric}["Time per token"] == "9.98 ms" and "step 25 ms, batch 12.1" in captions
    assert "The model alone, on presets: " in captions
    assert not any("your runs at k =" in m.value for m in at.markdown)  # one k's fit: no schedule across k


def test_a_calibration_of_the_server_at_two_k_says_which_k_to_run_up_to_which_batch_under_its_own_line():
    """The server runs k = 3; its step fit decided the line (k = 3 off above batch 15), and nothing said that the
    same server's runs at k = 1 stay on above it. The schedule across both k now follows its own line, at this
    window's acceptance (E = 2.50 measured at k = 3; E at k = 1 from the window's α), as `scrape` prints it."""
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments={**replay.V1_SPEC, **TIMING},
                      gauges=replay.V1_GAUGES) as srv:
        at = open_live()
        at.file_uploader(key="live_step_fits").set_value(("cal.json", step_fit_calibration(with_k1=True),
                                                          "application/json"))
        at.text_input(key="live_url").set_value(srv.url).run()
        at.run()
    assert not at.exception
    lines = [m.value for m in at.markdown]
    own = lines.index("**meta-llama/Llama-3.1-8B-Instruct, k = 3: off above batch 15 (11–23, your runs)**")
    assert lines[own + 1] == ("**meta-llama/Llama-3.1-8B-Instruct: k = 3 to batch 5, then 1 up to 512+ (your runs at "
                              "k = 1 and 3, at this window's acceptance)**")


def test_a_measured_plain_step_at_batch_one_is_grown_by_the_model():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments={**replay.V1_SPEC, **TIMING},
                      gauges=replay.V1_GAUGES) as srv:
        at = open_live()
        at.number_input(key="live_plain_ms").set_value(12.0)
        at.text_input(key="live_url").set_value(srv.url).run()
        at.run()
    assert not at.exception
    assert "Right now: measured + model: " in texts(at.success) + texts(at.warning) + texts(at.error)
    assert "from the measured batch-1 step of 12 ms" in " ".join(c.value for c in at.caption)


def test_an_upload_that_is_no_calibration_says_so_and_the_verdict_rests_on_presets():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments={**replay.V1_SPEC, **TIMING},
                      gauges=replay.V1_GAUGES) as srv:
        at = open_live()
        at.file_uploader(key="live_step_fits").set_value(("<b>cal</b>.json", b"not json", "application/json"))
        at.text_input(key="live_url").set_value(srv.url).run()
        at.run()
    assert not at.exception
    assert "<b>cal</b>.json: not a JSON calibration file" in texts(at.error)
    assert " ".join(e.value for e in at.error).startswith("\\<b>cal\\</b>.json")  # the file's name made inert
    assert "Right now: rests on presets (" in texts(at.success) + texts(at.warning)
    # the server's own timing is measured all the same, and the note says what it lacks
    assert "the server's own timing was measured (10.0 ms a token at batch 12.1" in " ".join(c.value for c in at.caption)
