"""Measured first: a run with a measured speedup takes its verdict from it; the model's verdict sits
beside it, a disagreement is flagged and counted; acceptance-only runs keep the model's, labelled."""

import json

import pandas as pd
import pytest

from specmodel.cli import main
from specmodel.runs import read_runs
from specmodel.runs.headlines import model_headline, verdict_lines
from specmodel.runs.review import review
from tests.conftest import FIXTURES

FILE = FIXTURES / "measured_vs_model.csv"  # MT-Bench at 24 measured 0.71x where the model predicts ~1.5x


@pytest.fixture(scope="module")
def result():
    return review(read_runs([FILE]).rows)


def at(table: pd.DataFrame, workload: str, concurrency: int) -> pd.Series:
    return table[(table["workload"] == workload) & (table["concurrency"] == concurrency)].iloc[0]


def test_a_measured_loss_is_a_loss_even_where_the_model_predicts_a_gain(result):
    row = at(result.table, "MT-Bench", 24)
    assert row["measured_speedup"] == pytest.approx(0.71, abs=0.005)
    assert row["predicted_speedup"] > 1.05  # the model says it pays off here
    assert (row["verdict"], row["verdict_basis"]) == ("fails", "measured speedup")
    assert (row["measured_verdict"], row["predicted_verdict"], row["model_agrees"]) == ("fails", "clears", False)
    assert row["disagreement"] == f"model: pays off ({row['predicted_speedup']:.2f}×); measured 0.71×"
    assert row["margin_pct"] == pytest.approx(0.71 - 1, abs=0.005)  # the verdict's own margin


def test_a_measured_gain_the_model_calls_borderline_clears_and_is_flagged(result):
    row = at(result.table, "summarise", 1)  # measured 160/150 = 1.07x
    assert (row["verdict"], row["predicted_verdict"], row["model_agrees"]) == ("clears", "borderline", False)


def test_agreeing_rows_say_so_and_acceptance_only_rows_keep_the_models_verdict_labelled_predicted(result):
    agree = at(result.table, "MT-Bench", 8)
    assert (agree["verdict"], agree["model_agrees"], agree["disagreement"]) == ("clears", True, "")
    predicted = at(result.table, "long context", 32)
    assert pd.isna(predicted["measured_speedup"]) and predicted["model_agrees"] is None
    assert predicted["verdict_basis"].startswith("predicted")
    assert predicted["verdict"] == "clears"  # measured 2.4 tokens/step against a break-even of ~2.1


def test_the_summary_counts_disagreements_and_the_headline_states_them(result):
    s = result.summary
    assert (s["rows_compared"], s["verdicts_agreeing"], s["model_disagreements"]) == (5, 2, 3)
    headline = model_headline(s, result.table)
    assert headline.startswith("The model's verdict differs from the measured one on 3 of 5 runs")
    assert "MT-Bench at concurrency 24: model: pays off" in headline and "measured 0.71×" in headline


def test_verdict_lines_mark_measured_and_predicted_levels_and_the_models_disagreement(result):
    lines = dict((sentence.split(" at ")[0], (label, sentence)) for label, sentence in verdict_lines(result.table))
    assert lines["MT-Bench loses"] == ("fails", "MT-Bench loses at concurrency 24, 64 (measured) — the model said "
                                                "pays off at 24, 64")
    assert lines["MT-Bench pays off"] == ("clears", "MT-Bench pays off at concurrency 1, 8 (measured)")
    assert lines["long context pays off"] == ("clears", "long context pays off at concurrency 32 (predicted)")


def test_cli_json_agrees_with_the_page(capsys):
    assert main(["runs", str(FILE), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = next(r for r in doc["rows"] if r["workload"] == "MT-Bench" and r["concurrency"] == 24)
    assert (row["verdict"], row["measured_verdict"], row["predicted_verdict"], row["model_agrees"]) == \
        ("fails", "fails", "clears", False)
    assert row["verdict_basis"] == "measured speedup" and "measured 0.71×" in row["disagreement"]
    long = next(r for r in doc["rows"] if r["workload"] == "long context")
    assert long["model_agrees"] is None and long["verdict_basis"].startswith("predicted")
    assert doc["summary"]["model_disagreements"] == 3
    assert doc["summary"]["headline"].startswith("The model's verdict differs from the measured one on 3 of 5")


def test_cli_text_marks_disagreements_and_ends_with_the_headline(capsys):
    assert main(["runs", str(FILE)]) == 0
    out = capsys.readouterr().out.splitlines()
    row = next(line for line in out if line.startswith("MT-Bench") and " 24 " in line)
    assert "loses" in row and "pays off ≠" in row
    assert out[-1].startswith("The model's verdict differs from the measured one on 3 of 5 runs")


# Two runs of a served model no preset names, measured 2.5x and 0.5x: judged on their measurement, never predicted.
UNNAMED = "lab,H100,tiny-llama,Llama 3.2 1B,1,4,3.2,100,250\nlab,H100,tiny-llama,Llama 3.2 1B,16,4,3.2,1000,500\n"


def test_the_model_error_counts_only_runs_the_model_predicted_and_says_how_many_it_left_out(result):
    mixed = review(read_runs([("mixed.csv", (FILE.read_text() + UNNAMED).encode())]).rows)
    lab = mixed.evaluated[mixed.evaluated["workload"] == "lab"]
    assert lab["predicted_speedup"].isna().all() and lab["no_prediction"].str.contains("'tiny-llama'").all()
    assert lab["verdict"].tolist() == ["clears", "fails"]  # their measured verdicts stand
    s, alone = mixed.summary, result.summary
    assert (s["rows_compared"], s["mape_speedup_pct"], s["model_disagreements"]) == \
        (alone["rows_compared"], alone["mape_speedup_pct"], alone["model_disagreements"])
    assert (s["rows_unpredicted"], alone["rows_unpredicted"]) == (2, 0)
    headline = model_headline(s, mixed.table)
    assert headline.startswith("The model's verdict differs from the measured one on 3 of 5 runs")
    assert headline.endswith(" 2 runs judged on their measurement alone, with no prediction (a name that matches "
                             "no preset), are left out of the model's accuracy check.")
    assert "left out" not in model_headline(alone, result.table)


def test_a_run_judged_on_its_measurement_alone_never_enters_the_model_error():
    """Even where a table read back carries a speedup beside the run's no_prediction line: the line decides."""
    from specmodel.runs.review import error_summary

    rows = pd.DataFrame({"measured_speedup": [1.0, 1.0], "predicted_speedup": [1.1, 5.4],
                         "measured_verdict": ["borderline", "borderline"], "predicted_verdict": ["clears", "clears"],
                         "no_prediction": [float("nan"), "no prediction (judged on its measurement): target 'x' …"]})
    s = error_summary(rows)
    assert (s["rows_compared"], round(s["mape_speedup_pct"], 6), s["rows_unpredicted"]) == (1, 10.0, 1)


def test_runs_json_counts_the_runs_left_out_of_the_comparison(tmp_path, capsys):
    path = tmp_path / "mixed.csv"
    path.write_text(FILE.read_text() + UNNAMED)
    assert main(["runs", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert (summary["rows_compared"], summary["rows_unpredicted"]) == (5, 2)
    assert summary["headline"].endswith("2 runs judged on their measurement alone, with no prediction (a name that "
                                        "matches no preset), are left out of the model's accuracy check.")
    report = tmp_path / "report.html"
    assert main(["runs", str(path), "--html", str(report)]) == 0
    assert "<p>2 runs judged on their measurement alone, with no prediction (a name that matches no preset), are left " \
           "out of the model&#39;s accuracy check.</p>" in report.read_text()
