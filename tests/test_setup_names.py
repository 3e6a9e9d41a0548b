"""One workload run under several setups (a method comparison, two models): the verdict lines and the
break-even chart's rows name each setup by what differs, in the file's own words, so "ShareGPT at 64"
is never two different runs under one name."""

import pandas as pd
import pytest

from specmodel.runs import read_runs
from specmodel.runs.headlines import verdict_lines
from specmodel.runs.review import review
from specmodel.runs.setups import setup_names
from specmodel.show.figures.runs import break_even_chart
from tests.conftest import FIXTURES

# ShareGPT under EAGLE-3 and n-gram on an 8B model and EAGLE-3 on a 70B one (its own 4 GPUs); chat under
# one setup only. The 8B EAGLE-3 run pays off at 64 where n-gram loses there.
CSV = (FIXTURES / "methods_compared.csv").read_bytes()


@pytest.fixture(scope="module")
def result():
    table = read_runs([("methods.csv", CSV)])
    assert not [p for p in table.problems if p.severity == "error"]
    return review(table.rows)


def test_each_setup_of_a_workload_is_named_by_what_differs_and_a_single_setup_is_not(result):
    runs = result.evaluated
    names = dict(zip(zip(runs["workload"], runs["method"], runs["target_model"], runs["concurrency"]),
                     setup_names(runs)))
    assert names == dict(zip(zip(runs["workload"], runs["method"], runs["target_model"], runs["concurrency"]),
                             runs["setup"]))  # the review's own column, as the table and `runs --json` carry it
    assert names[("ShareGPT", "eagle3", "Llama-3.1-8B-Instruct", 64)] == "Llama-3.1-8B-Instruct, EAGLE-3"
    assert names[("ShareGPT", "ngram", "Llama-3.1-8B-Instruct", 64)].startswith("Llama-3.1-8B-Instruct, N-gram")
    # the 70B run's GPUs and TP go with its model: the model alone tells it apart
    assert names[("ShareGPT", "eagle3", "Llama-3-70B-Instruct", 64)] == "Llama-3-70B-Instruct, EAGLE-3"
    assert names[("chat", "eagle3", "Llama-3.1-8B-Instruct", 16)] == ""


def test_verdict_lines_say_which_setup_pays_off_and_which_loses_at_the_same_concurrency(result):
    lines = [sentence for _, sentence in verdict_lines(result.table)]
    assert "ShareGPT (Llama-3.1-8B-Instruct, EAGLE-3) pays off at concurrency 1, 64 (measured)" in lines
    ngram = [s for s in lines if s.startswith("ShareGPT (Llama-3.1-8B-Instruct, N-gram")]
    assert any(" loses at concurrency 64 (measured)" in s for s in ngram), ngram
    assert any(s.startswith("chat pays off at concurrency 1, 16 (measured)") for s in lines), lines
    # nothing mixes two setups: no line says the same concurrency twice
    for s in lines:
        assert "at 64, " not in s.split("(measured)")[0]


def test_break_even_chart_rows_name_the_setup_instead_of_a_counter(result):
    labels = list(break_even_chart(result.evaluated).data[0].y)  # the page draws it from every run evaluated
    assert len(labels) == len(set(labels)) == len(result.evaluated)
    assert "ShareGPT @ 64, Llama-3-70B-Instruct, EAGLE-3" in labels
    assert not any("#" in label for label in labels), labels
    assert "chat @ 16" in labels


def test_true_repeats_of_one_setup_still_get_a_counter():
    runs = pd.DataFrame({"file": ["a.csv", "b.csv"], "row": [2, 2], "workload": ["chat"] * 2, "concurrency": [8, 8],
                         "k": [3, 3], "method": ["eagle3"] * 2, "gpu_preset": ["H100 SXM"] * 2, "alpha": [0.7, 0.7],
                         "tokens_per_step": [2.0, 2.1], "break_even_tokens_per_step": [1.5, 1.5],
                         "measured_speedup": [1.2, 1.25], "verdict": ["clears", "clears"]})
    assert list(break_even_chart(runs).data[0].y) == ["chat @ 8 #1", "chat @ 8 #2"]


def test_runs_command_prints_a_setup_column_and_json_rows_carry_setup(tmp_path, capsys):
    from specmodel.cli import main
    import json

    path = tmp_path / "methods.csv"
    path.write_bytes(CSV)
    assert main(["runs", str(path)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("decision")  # the decision per workload first (words/decision_line.py), then the table
    assert next(line for line in text if line.startswith("workload")).split()[:3] == ["workload", "setup", "conc"]
    assert any(line.startswith("ShareGPT") and "Llama-3-70B-Instruct, EAGLE-3" in line for line in text)
    assert main(["runs", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["setup"] for r in rows if r["workload"] == "chat"} == {""}
    assert {r["setup"] for r in rows if r["workload"] == "ShareGPT"} >= {"Llama-3.1-8B-Instruct, EAGLE-3",
                                                                         "Llama-3-70B-Instruct, EAGLE-3"}


def test_html_report_has_a_setup_column_only_where_a_workload_has_several_setups(tmp_path):
    from specmodel.cli import main

    several, one = tmp_path / "several.html", tmp_path / "one.html"
    assert main(["runs", str(FIXTURES / "methods_compared.csv"), "--html", str(several)]) == 0
    assert main(["runs", str(FIXTURES / "seed_runs.csv"), "--html", str(one)]) == 0
    assert "<th>setup</th>" in several.read_text() and "Llama-3-70B-Instruct, EAGLE-3" in several.read_text()
    assert "<th>setup</th>" not in one.read_text()


def test_names_take_any_cell_a_table_may_hold_without_failing():
    table = pd.DataFrame({"workload": ["chat", "chat", "chat", None], "method": ["eagle3", "no such", "eagle3", "x"],
                          "temperature": [0.0, "greedy", None, 1.0], "k": [3, 3, float("nan"), 2]})
    names = setup_names(table).tolist()
    # method and k split the three chat rows; temperature splits them no further (it goes with them)
    assert names[:3] == ["EAGLE-3, k=3", "no such, k=3", "EAGLE-3"]  # an empty k adds nothing
    assert names[3] == ""  # the row without a workload is a group of its own, one setup: no name
    assert setup_names(table.assign(k=3)).tolist()[:3] == ["EAGLE-3, temperature 0", "no such, greedy", "EAGLE-3"]


def test_the_headlines_example_names_the_setup_it_comes_from(result):
    from specmodel.runs.headlines import model_headline

    headline = model_headline(result.summary, result.table)
    assert "(e.g. ShareGPT (Llama-3.1-8B-Instruct, N-gram" in headline, headline
