"""Never a silent reading (issue 40, item 3): an acceptance column whose name does not say which acceptance it
holds is read one stated way, said on every row and in the headline, and the user can say which it is
(`--acceptance-means`); an acceptance the file does not give is never filled without the headline saying how
many rows use one and from where; a row with a measured speedup loads without k (no prediction, the reason)."""

import json

import pytest

from specmodel.cli import main
from tests.conftest import FIXTURES

# The field report's hand-written CSV: 0.7 / 0.4, meant as α; read as vLLM's rate it predicts 1.45x for chat
# against a measured 0.98x.
ACCEPT_RATE = ("workload,concurrency,k,{column},baseline_tok_s,spec_tok_s,gpu\n"
               "extraction,1,4,{extraction},48,88,L40S\nchat,1,4,{chat},48,47,L40S\n")


def runs(capsys, tmp_path, text: str, *flags: str, name: str = "runs.csv"):
    path = tmp_path / name
    path.write_text(text)
    code = main(["runs", str(path), *flags])
    out, err = capsys.readouterr()
    return code, out, err


def runs_json(capsys, tmp_path, text: str, *flags: str, name: str = "runs.csv") -> dict:
    code, out, err = runs(capsys, tmp_path, text, "--json", *flags, name=name)
    assert code == 0, err
    return json.loads(out)


def by_workload(doc: dict) -> dict:
    return {r["workload"]: r for r in doc["rows"]}


def test_an_accept_rate_column_is_read_as_the_draft_acceptance_rate_and_every_place_says_so(capsys, tmp_path):
    doc = runs_json(capsys, tmp_path, ACCEPT_RATE.format(column="accept_rate", extraction=0.7, chat=0.4))
    headline = doc["summary"]["headline"]
    assert ("'accept_rate' (2 rows of runs.csv) is read as the draft acceptance rate (accepted ÷ drafted): its name "
            "does not say which acceptance it is; say which if it is another (--acceptance-means alpha|rate|length)"
            in headline)
    assert doc["summary"]["acceptance_readings"] == [{"file": "runs.csv", "column": "accept_rate", "read_as": "rate",
                                                      "said": False, "rows": 2}]
    for row in doc["rows"]:
        assert (row["acceptance_read_as"], row["acceptance_meaning_said"], row["acceptance_from"]) == \
            ("rate", False, "accept_rate")
        assert "'accept_rate' read as the draft acceptance rate (accepted ÷ drafted): its name does not say" in \
            row["remarks"]
    [note] = [p for p in doc["problems"] if p["column"] == "accept_rate"]
    assert note["severity"] == "warning" and "--acceptance-means" in note["message"]
    assert by_workload(doc)["chat"]["predicted_speedup"] == pytest.approx(1.45, abs=0.01)  # the reading, unchanged


@pytest.mark.parametrize(("means", "column", "values"), [("alpha", "alpha", (0.7, 0.4)),
                                                         ("rate", "draft_acceptance_rate", (0.7, 0.4)),
                                                         ("length", "tokens_per_step", (3.1, 1.9))])
def test_acceptance_means_reads_the_column_as_said(capsys, tmp_path, means, column, values):
    said = runs_json(capsys, tmp_path, ACCEPT_RATE.format(column="acceptance", extraction=values[0], chat=values[1]),
                     "--acceptance-means", means)
    named = runs_json(capsys, tmp_path, ACCEPT_RATE.format(column=column, extraction=values[0], chat=values[1]))
    for workload, row in by_workload(said).items():  # the same prediction as a column whose name says it
        assert row["predicted_speedup"] == by_workload(named)[workload]["predicted_speedup"]
        assert (row["acceptance_read_as"], row["acceptance_meaning_said"]) == (means, True)
    assert "'acceptance' (2 rows of runs.csv) is read as" in said["summary"]["headline"]
    assert "as said." in said["summary"]["headline"] and "does not say" not in said["summary"]["headline"]
    assert [p["severity"] for p in said["problems"] if p["column"] == "acceptance"] == ["info"]


def test_read_as_alpha_the_field_reports_chat_row_is_predicted_near_what_was_measured(capsys, tmp_path):
    text = ACCEPT_RATE.format(column="accept_rate", extraction=0.7, chat=0.4)
    chat = by_workload(runs_json(capsys, tmp_path, text, "--acceptance-means", "alpha"))["chat"]
    assert chat["measured_speedup"] == pytest.approx(0.98, abs=0.01)
    assert chat["predicted_speedup"] < 1.0 < by_workload(runs_json(capsys, tmp_path, text))["chat"]["predicted_speedup"]


def test_acc_is_read_not_ignored_and_a_value_the_reading_refuses_says_how_to_say_another(capsys, tmp_path):
    code, out, err = runs(capsys, tmp_path, ACCEPT_RATE.format(column="acc", extraction=2.6, chat=0.4))
    assert code == 0
    assert "not a column this reader knows" not in err
    assert "row 2, column 'acc': '2.6' is above 1" in err and "say which: --acceptance-means alpha|rate|length" in err
    assert "'acc' (1 row of runs.csv) is read as the draft acceptance rate" in out


def test_acceptance_not_in_the_file_is_filled_only_with_the_headline_saying_how_many_and_from_where(capsys):
    code = main(["runs", str(FIXTURES / "incident_l40s.csv"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert ("3 of 3 rows use an assumed acceptance, none being in the file: 3 a published figure ('Draft model "
            "T5-small for T5-XXL, WMT En-De'); their bands span α ± 0.15." in doc["summary"]["headline"])
    assert doc["summary"]["acceptance_assumed"] == {"rows": 3, "of": 3, "file_mean": 0, "published_figure": 3,
                                                    "figures": {"Draft model T5-small for T5-XXL, WMT En-De": 3}}
    for row in doc["rows"]:
        assert (row["acceptance_assumed"], row["acceptance_assumed_source"]) == (True, "published_figure")
    main(["runs", str(FIXTURES / "seed_runs.csv")])
    out = capsys.readouterr().out
    assert "1 of 3 rows uses an assumed acceptance, none being in the file: 1 the mean α of the file's other rows" in out


def test_a_file_that_gives_every_acceptance_says_nothing_of_assumed_ones(capsys, tmp_path):
    doc = runs_json(capsys, tmp_path, ACCEPT_RATE.format(column="alpha", extraction=0.7, chat=0.4))
    assert "assumed acceptance" not in doc["summary"]["headline"] and "is read as" not in doc["summary"]["headline"]
    assert doc["summary"]["acceptance_assumed"]["rows"] == 0 and doc["summary"]["acceptance_readings"] == []
    assert all(r["acceptance_assumed"] is False and r["acceptance_read_as"] is None for r in doc["rows"])


NO_K = ("workload,concurrency,alpha,baseline_tok_s,spec_tok_s,gpu\n"
        "extraction,1,0.7,48,88,L40S\nmixed,32,,1120,952,L40S\npredicted only,8,0.6,,,L40S\n")


def test_a_row_with_a_measured_speedup_loads_without_k_its_prediction_empty_with_the_reason(capsys, tmp_path):
    code, out, err = runs(capsys, tmp_path, NO_K)
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith(("extraction", "mixed"))}
    assert lines["mixed"].split()[1:5] == ["32", "–", "–", "–"] and "loses" in lines["mixed"]  # measured 0.85x
    assert "pays off" in lines["extraction"]
    assert "no prediction (judged on its measurement): k (draft tokens per step) is not in the file" in err
    assert "row 4" in err and "k (draft tokens per step) is needed to read alpha" in err  # no measurement: refused
    doc = runs_json(capsys, tmp_path, NO_K)
    rows = by_workload(doc)
    assert set(rows) == {"extraction", "mixed"}
    for row in rows.values():
        assert row["k"] is None and row["predicted_speedup"] is None and row["verdict_basis"] == "measured speedup"
        assert row["no_prediction"].startswith("no prediction (judged on its measurement): k (draft tokens per step)")
    assert doc["summary"]["refused_by_reason"] == {"no_k": 3}  # 2 not predicted, 1 not loaded
    given = by_workload(runs_json(capsys, tmp_path, NO_K, "--k", "4"))
    assert given["mixed"]["predicted_speedup"] is not None and given["mixed"]["no_prediction"] is None
