"""Issue 39 item 1 in the sidebar (AppTest): a Custom GPU by its three numbers and a target or draft by its
config.json (upload or paste) take the path --gpu-spec and --target-config take, with its messages; a bad
number or config is an st.error on the page, which keeps working; the GPU's numbers travel in the link, a
config.json does not (the link box says so)."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")
CONFIGS = ROOT / "tests" / "fixtures" / "configs"
L40S = {"gpu": "Custom GPU", "gpu_bandwidth_gbs": "864", "gpu_tflops": "362", "gpu_memory_gb": "48"}
PAGES = ("pages/past-runs.py", "pages/capacity.py", "pages/mix.py", "pages/fleet.py")


def app(query: dict | None = None, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    for key, value in (state or {}).items():
        at.session_state[key] = value
    return at.run()


def speedup(at: AppTest) -> str:
    return next(m.value for m in at.metric if m.label == "Speedup")


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.main.error]


def test_a_custom_gpu_with_a_presets_numbers_predicts_what_the_preset_does_and_its_link_carries_them():
    at = app({**L40S, "conc": "64"})
    assert not at.exception and not errors(at)
    assert [(n.key, n.value) for n in at.sidebar.number_input] == [
        ("gpu_bandwidth_gbs", 864.0), ("gpu_tflops", 362.0), ("gpu_memory_gb", 48.0)]
    preset = app({"gpu": "L40S", "conc": "64"})
    assert speedup(at) == speedup(preset)
    assert any("Custom GPU: 864 GB/s, 362 TFLOPS, 48 GB; engine kernels as on L40S" in c.value for c in at.sidebar.caption)
    link = next(c.value for c in at.sidebar.code if c.value.startswith("http"))
    for key, value in L40S.items():
        assert f"{key}={value.replace(' ', '+')}" in link, key  # whoever opens it gets the same GPU


def test_a_custom_gpu_of_new_numbers_is_predicted_under_its_name():
    at = app({"gpu": "Custom GPU", "gpu_bandwidth_gbs": "1792", "gpu_tflops": "500", "gpu_memory_gb": "96",
              "gpu_name": "RTX PRO 6000", "conc": "64"})
    assert not at.exception and not errors(at)
    assert speedup(at) not in (speedup(app({"conc": "64"})), "")
    assert any(c.value.startswith("RTX PRO 6000: 1792 GB/s, 500 TFLOPS, 96 GB") for c in at.sidebar.caption)


@pytest.mark.parametrize("bad, words", [
    ({"gpu_tflops": "0"}, "tflops = 0 is outside the accepted range 1-100000"),
    ({"gpu_bandwidth_gbs": "-5"}, "bandwidth_gbs = -5 is outside the accepted range 10-100000"),
    ({"gpu_memory_gb": "1e9"}, "memory_gb = 1e+09 is outside the accepted range 1-10000"),
    ({"gpu_tflops": ""}, "tflops is missing (accepted 1-100000)"),
])
def test_a_bad_number_is_the_gpu_specs_message_on_the_page_and_in_the_sidebar_never_a_traceback(bad, words):
    at = app({**L40S, **bad})
    assert not at.exception
    said = f"Custom GPU in the sidebar: {words}"
    assert any(said in e for e in errors(at)) and any(said in e.value for e in at.sidebar.error)
    assert not at.metric  # no verdict for a GPU that is not one


def test_every_page_says_a_bad_custom_gpu_and_keeps_working():
    for page in PAGES:
        at = app({**L40S, "gpu_tflops": "-5"})
        at.switch_page(page).run()
        assert not at.exception, page
        assert any("tflops = -5 is outside the accepted range 1-100000" in e for e in errors(at)), page


def test_an_older_link_value_no_box_accepts_is_said_and_the_box_starts_empty():
    at = app({**L40S, "gpu_tflops": "fast"})
    assert not at.exception
    assert any("The link's gpu_tflops 'fast' is not a number: its Custom GPU box starts empty" in w.value
               for w in at.sidebar.warning)
    assert any("tflops is missing" in e for e in errors(at))
    at = app({"gpu": "Custom"})  # not the choice's name: the default GPU, said
    assert not at.exception and at.selectbox(key="gpu").value == "L40S"
    assert any("The link's gpu 'Custom' is not a GPU this tool knows" in w.value for w in at.sidebar.warning)


def test_a_custom_gpus_name_cannot_put_a_link_into_the_page():
    at = app({**L40S, "gpu_name": "[click](http://127.0.0.1:9/) **x**"})
    assert not at.exception
    shown = " ".join(e.value for e in (*at.markdown, *at.caption, *at.sidebar.caption, *at.info, *at.success))
    assert "](http" not in shown and "click" in shown


def test_switching_to_custom_gpu_starts_from_the_presets_numbers():
    def script():
        import streamlit as st

        from pages.parts.custom_inputs import CUSTOM_GPU, gpu_boxes, gpu_choice_changed, remember_preset_gpu

        st.selectbox("GPU", ["H100 SXM", CUSTOM_GPU], key="gpu", on_change=gpu_choice_changed)
        remember_preset_gpu()
        gpu_boxes(st)

    at = AppTest.from_function(script, default_timeout=30).run()
    at.selectbox(key="gpu").set_value("Custom GPU").run()
    assert not at.exception
    assert [n.value for n in at.number_input] == [3350.0, 989.0, 80.0]
    assert any("engine kernels as on H100 SXM" in c.value for c in at.caption)


def _config(name: str = "llama-3.1-8b.json") -> str:
    return (CONFIGS / name).read_text()


def test_a_pasted_config_with_a_presets_numbers_predicts_what_the_preset_does():
    given = app({"target": "From a config.json", "conc": "64"},
                {"target_config_text": _config(), "draft": "Llama 3.2 1B"})
    assert not given.exception and not errors(given)
    assert speedup(given) == speedup(app({"conc": "64"}))
    assert any("8.03B parameters, 32 layers, bf16 weights" in c.value for c in given.sidebar.caption)
    box = " ".join(w.value for w in given.sidebar.warning)
    assert "does not hold the target model's config.json" in box  # the link box says what it cannot carry


def test_an_uploaded_draft_config_and_a_config_target_with_no_draft_named():
    at = app({"draft": "From a config.json"})
    assert not at.exception
    assert any("The draft model is set to come from a config.json, and none is given" in e for e in errors(at))
    at.file_uploader(key="draft_config_file").set_value(
        ("config.json", (CONFIGS / "llama-3.1-8b.json").read_bytes(), "application/json")).run()
    assert not at.exception and speedup(at)  # an 8B draft for an 8B target: a verdict ("loses"), not a message
    assert not any("config.json" in e for e in errors(at))
    at = app({"target": "From a config.json"}, {"target_config_text": _config()})
    assert at.selectbox(key="draft").value == "Qwama 0.5B"  # the smallest preset with its vocabulary


@pytest.mark.parametrize("text, words", [
    ('{"hidden_size": 4096', "not valid JSON"),
    (json.dumps({"hidden_size": 4096}), "'num_hidden_layers' is missing"),
    (json.dumps({**json.loads(_config()), "num_key_value_heads": 64}), "num_key_value_heads = 64 is more than"),
    (json.dumps({**json.loads(_config()), "torch_dtype": "float32"}), "torch_dtype 'float32' is not a serving dtype"),
    ('{"pad": "' + "x" * 1_000_001 + '"}', "over the 1 MB limit"),
])
def test_a_bad_config_is_one_message_naming_the_key_and_the_page_keeps_working(text, words):
    at = app({"target": "From a config.json"}, {"target_config_text": text})
    assert not at.exception
    assert any(words in e for e in errors(at)) and any(words in e.value for e in at.sidebar.error)
    at.switch_page("pages/capacity.py").run()
    assert not at.exception and any(words in e for e in errors(at))
