"""Issue 40, item 1: every page leads with its decision line, in the words `predict`, `runs` and `mix` print,
before its inputs' answer and its charts; the why, the caveats and the notes wait behind an expander; beside
an open threshold, the runs that would pin it (item 5). What-if, Past runs and Traffic mix here (Live and
Fleet: tests/test_samples.py with their recorded servers; all five in a browser: tests/test_browser_decision.py)."""

from streamlit.testing.v1 import AppTest

from tests.cli_runner import run_cli
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
SIDEBAR = {"gpu": "L40S", "target": "Llama 3.1 8B", "method": "draft_model", "draft": "Llama 3.2 1B", "tp": "1"}


def open_page(path: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in {**SIDEBAR, **(query or {})}.items():
        at.query_params[key] = value
    at.run()
    return at.switch_page(path).run() if path != "pages/whatif.py" else at


def decision_box(at: AppTest) -> list[str]:
    """The text of the decision box (pages/parts/decision.py's container, key "decision_lines"), in order."""
    block = next(b for b in _blocks(at.main) if getattr(b, "key", None) == "decision_lines")
    return [e.value for e in _elements(block)]


def _blocks(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _blocks(child)


def _elements(node):
    for child in getattr(node, "children", {}).values():
        if hasattr(child, "value") and isinstance(getattr(child, "value", None), str):
            yield child
        yield from _elements(child)


def test_what_if_leads_with_the_decision_line_of_predict():
    at = open_page("pages/whatif.py", {"alpha": "0.7", "k": "4", "conc": "1"})
    assert not at.exception
    said = decision_box(at)
    cli = run_cli("predict", "--gpu", "L40S", "--target", "Llama 3.1 8B", "--method", "draft_model", "--draft",
                  "Llama 3.2 1B", "--alpha", "0.7", "--k", "4", "--concurrency", "1").stdout.splitlines()[1]
    assert said[0] == "**Draft model: k = 3 up to batch 92 (33–512+), off above**"
    assert cli.endswith(said[0].strip("*"))  # the same words
    assert said[1] == "Pin it: plain and speculative runs at batch 33 and 134."
    # the notes (engine version, the off band's cost) and the crossover wait behind the expander
    why = next(e for e in at.expander if e.label.startswith("Why"))
    assert why.label == "Why, and 2 notes" and any("version not given" in i.value for i in why.info)


def test_past_runs_leads_with_each_workloads_decision():
    at = open_page("pages/past-runs.py", {"sample": "Two workloads (illustrative)"})
    assert not at.exception
    said = decision_box(at)
    assert said[:3] == ["**code completion, k = 4: off above batch 235 (115–4096+, your runs)**",
                        "Pin it: plain and speculative runs at batch 115 and 305.",
                        "**open-ended chat, k = 4: off at every batch, band included (your runs)**"]


def test_traffic_mix_leads_with_its_decision():
    at = open_page("pages/mix.py", {"mix_conc": "32", "mix_k": "4", "mix_gpus": "1"})
    assert not at.exception
    assert decision_box(at) == ["**mixed at 32: off (0.91× with k = 4; band 0.70–1.37×)**"]
    at = open_page("pages/mix.py", {"mix_conc": "32", "mix_k": "4", "mix_gpus": "2"})
    assert decision_box(at) == ["**split at 32: 1.16× one pool without speculation (band 1.01–1.49×)**",
                                "**extraction: k = 3, own pool on 1 GPU**", "**chat: off, own pool on 1 GPU**"]
