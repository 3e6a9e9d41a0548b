"""The measurement plan and the deploy options on the pages (AppTest): What-if shows the four-way
throughput chart and the plan; Past runs shows the plan, and with the plan's results uploaded, the
band before and after calibrating on them."""

import json

from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")
PLAN_RUNS = sorted((ROOT / "tests" / "fixtures" / "plan_runs").glob("*.json"))


def open_page(page: str, open_boxes: tuple[str, ...] = ()) -> AppTest:
    """The page after its first run; `open_boxes`: the keys of expanders drawn only while open
    (on_change="rerun"), opened as a click on each would, before the page runs again."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(page).run()
    if open_boxes:
        for key in open_boxes:
            at.session_state[key] = True
        at.run()
    return at


def expander(at: AppTest, label: str):
    return next(e for e in at.expander if e.label == label)


def test_whatif_sends_the_closed_boxes_of_commands_only_once_they_are_opened():
    at = open_page("pages/whatif.py")
    assert not expander(at, "The runs, as commands").children  # closed: its commands are not sent
    assert not expander(at, "The same decision in vLLM, SGLang and TensorRT-LLM terms").children
    at = open_page("pages/whatif.py", ("plan_commands", "deploy_tabs"))
    assert any("vllm bench serve " in c.value for c in expander(at, "The runs, as commands").code)
    assert len(expander(at, "The same decision in vLLM, SGLang and TensorRT-LLM terms").tabs) == 3


def chart_titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def test_whatif_compares_off_fixed_k_schedule_and_upper_bound_and_gives_the_plan():
    at = open_page("pages/whatif.py", ("plan_commands",))
    assert not at.exception
    assert "Off, fixed k, schedule or per-batch best: throughput by batch" in chart_titles(at)
    assert "Measure what the model cannot know" in [h.value for h in at.subheader]
    code = [c.value for c in at.code]
    assert any("\nvllm bench serve " in c and "--max-concurrency 1 " in c for c in code)
    assert any("synthetic_acceptance_length" in c for c in code)


def test_past_runs_calibrates_on_the_plans_results_and_shows_the_band_narrowing():
    at = open_page("pages/past-runs.py")
    assert "Measure what the model cannot know" in [h.value for h in at.subheader]  # before any upload
    at.file_uploader(key="run_files").set_value([(f.name, f.read_bytes(), "application/json") for f in PLAN_RUNS]).run()
    assert not at.exception
    at.button(key="runs_plan_band").click().run()
    assert not at.exception
    metrics = {m.label: m for m in at.metric}
    before, after = metrics["Band before"].value, metrics["Band after"].value
    width = lambda text: float(text.split("–")[1].strip(" x")) - float(text.split("–")[0].strip(" x"))  # noqa: E731
    assert width(after) < width(before)


def test_whatif_gives_every_engine_its_own_command():
    at = open_page("pages/whatif.py", ("deploy_tabs",))
    code = [c.value for c in at.code]
    assert any(c.startswith("vllm serve ") and "--speculative-config" in c for c in code)
    assert any(c.startswith("python -m sglang.launch_server") for c in code)
    assert any("trtllm-serve" in c for c in code) and any(c.startswith("speculative_config:") for c in code)
