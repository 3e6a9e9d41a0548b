"""Replay of the real-engine lab (tests/fixtures/real_engine/README.md): a real vLLM 0.32 CPU server's
`vllm bench serve` JSONs, plain / n-gram / draft model at concurrency 1, 4 and 16, served as 'tiny-llama'
(no preset) on hardware the files do not name. Uploaded together, every speculative run pairs with the
plain run at its concurrency and is judged on what the engine measured; no row claims a preset for the
target. The expected numbers are computed here from the JSON files themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specmodel.cli import main
from specmodel.runs.review import CLEARS, FAILS

HERE = Path(__file__).parent / "fixtures" / "real_engine"
ARMS = ("ngram", "draft")
LEVELS = (1, 4, 16)


def _bench(name: str) -> dict:
    return json.loads((HERE / name).read_text())


@pytest.fixture(scope="module")
def doc(tmp_path_factory) -> dict:
    import contextlib
    import io

    out = io.StringIO()
    files = sorted(str(p) for p in HERE.glob("*_c*.json"))
    assert len(files) == 9
    with contextlib.redirect_stdout(out):
        assert main(["runs", *files, "--json"]) == 0
    return json.loads(out.getvalue())


def _row(doc: dict, arm: str, c: int) -> dict:
    found = [r for r in doc["rows"] if r["file"] == f"{arm}_c{c}.json"]
    assert len(found) == 1, (arm, c, [r["file"] for r in doc["rows"]])
    return found[0]


def test_every_speculative_run_is_paired_and_read(doc):
    assert sorted(r["file"] for r in doc["rows"]) == sorted(f"{a}_c{c}.json" for a in ARMS for c in LEVELS)
    assert not [p for p in doc["problems"] if p["severity"] == "error"]
    assert not [p for p in doc["problems"] if "no baseline run" in p["message"]]


@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize("c", LEVELS)
def test_measured_speedup_and_tokens_per_step_are_the_engines(doc, arm, c):
    spec, plain = _bench(f"{arm}_c{c}.json"), _bench(f"plain_c{c}.json")
    row = _row(doc, arm, c)
    assert row["concurrency"] == c
    assert row["measured_speedup"] == pytest.approx(spec["output_throughput"] / plain["output_throughput"], rel=1e-3)
    e = spec["spec_decode_accepted_tokens"] / spec["spec_decode_num_drafts"] + 1
    assert row["tokens_per_step"] == pytest.approx(e, rel=1e-3)
    assert row["verdict_basis"] == "measured speedup" and row["verdict"] == row["measured_verdict"]
    assert row["measured_plausible"] is True
    assert row["baseline_tok_s"] == pytest.approx(plain["output_throughput"], rel=1e-6)


def test_verdicts_are_the_measurements(doc):
    # n-gram measured 0.95 / 0.24 / 0.15: never pays off (0.95 is within the borderline band), loses at 4 and 16
    assert [_row(doc, "ngram", c)["verdict"] for c in LEVELS][1:] == [FAILS, FAILS]
    assert _row(doc, "ngram", 1)["verdict"] != CLEARS
    # the draft model measured 2.57 / 1.42 / 1.48: pays off at every concurrency
    assert [_row(doc, "draft", c)["verdict"] for c in LEVELS] == [CLEARS] * 3


def test_no_row_claims_a_preset_for_tiny_llama(doc):
    for row in doc["rows"]:
        assert row["target_preset"] is None and row["predicted_speedup"] is None
        assert "tiny-llama" in row["no_prediction"]
        assert "give --target NAME or --target-config FILE to predict it as one" in row["no_prediction"]
        assert "predicted with Llama" not in (row["remarks"] or "") and "not a preset" not in (row["remarks"] or "")
    assert doc["summary"]["fallbacks"]["rows"] == 0


def _csv(text: str) -> list[tuple[str, bytes]]:
    return [("runs.csv", text.encode())]


def test_a_speedup_above_its_tokens_per_step_is_implausible_and_no_verdict():
    from specmodel.runs import read_runs
    from specmodel.runs.plausible import PLAUSIBLE_TOLERANCE
    from specmodel.runs.review import review

    assert 0 < PLAUSIBLE_TOLERANCE < 0.2
    table = read_runs(_csv("gpu,target_model,method,k,concurrency,tokens_per_step,speedup\n"
                           "H100 SXM,Llama 3.1 8B,draft_model,4,1,1.01,1.73\n"
                           "H100 SXM,Llama 3.1 8B,draft_model,4,4,1.01,2.11\n"
                           "H100 SXM,Llama 3.1 8B,draft_model,4,8,3.0,1.5\n"
                           "H100 SXM,Llama 3.1 8B,draft_model,4,16,,1.2\n"))
    assert table.rows["measured_plausible"].tolist() == [False, False, True, None]
    said = [p for p in table.problems if "not comparable" in p.message]
    assert [(p.file, p.row, p.severity) for p in said] == [("runs.csv", 2, "warning"), ("runs.csv", 3, "warning")]
    assert "1.73×" in said[0].message and "E = 1.01" in said[0].message
    evaluated = review(table.rows).evaluated
    assert evaluated["measured_verdict"].isna().tolist()[:2] == [True, True]
    assert evaluated["verdict_basis"].tolist()[:2] != ["measured speedup"] * 2
    assert evaluated["verdict_basis"].tolist()[2] == "measured speedup"
    assert review(table.rows).summary["rows_compared"] == 2  # the two implausible rows check no prediction


def test_implausible_row_in_runs_json_and_text(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text("gpu,target_model,method,k,concurrency,tokens_per_step,speedup\n"
                    "H100 SXM,Llama 3.1 8B,draft_model,4,1,1.01,1.73\n")
    assert main(["runs", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    row = json.loads(captured.out)["rows"][0]
    assert row["measured_plausible"] is False and row["measured_verdict"] is None
    assert "runs.csv, row 2" in captured.err and "not comparable" in captured.err
    assert main(["runs", str(path)]) == 0
    assert "implausible" in capsys.readouterr().out


def test_implausible_rows_with_their_own_figures_are_one_line_for_a_person_and_one_problem_each_in_json(
        tmp_path, capsys):
    # five rows of a busy sweep, each measuring more than its E with figures of its own: one warning line, not five
    path = tmp_path / "runs.csv"
    path.write_text("gpu,target_model,method,k,concurrency,tokens_per_step,speedup\n" + "".join(
        f"H100 SXM,Llama 3.1 8B,draft_model,4,{c},{e},{s}\n"
        for c, e, s in ((1, 1.01, 1.73), (2, 1.2, 2.11), (4, 1.1, 1.9), (8, 1.3, 2.0), (16, 1.05, 1.5))))
    assert main(["runs", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "not comparable" in line]
    assert len(lines) == 1
    assert lines[0].startswith("warning: runs.csv, rows 2, 3, 4, 5, 6 (5 rows), column 'measured_speedup': measured "
                               "speedup above its tokens per step E (+5% allowed)")
    assert lines[0].endswith("(row 2: 1.73× at E = 1.01; row 3: 2.11× at E = 1.20; row 4: 1.90× at E = 1.10; …)")
    problems = [p for p in json.loads(captured.out)["problems"] if "not comparable" in p["message"]]
    assert [p["row"] for p in problems] == [2, 3, 4, 5, 6]
    assert "measured speedup 2.00× is above its tokens per step E = 1.30" in problems[3]["message"]


def test_a_plain_only_upload_says_only_baselines_were_given(capsys):
    files = sorted(str(p) for p in HERE.glob("plain_c*.json"))
    assert main(["runs", *files]) == 2
    err = capsys.readouterr().err
    assert "only baseline runs" in err and "concurrency 1, 4, 16" in err and "no run could be read" not in err


def _one_arm(file: str, arm: str, tok_s: float, **values):
    from specmodel.runs.records import RunRecord

    key = "baseline_tok_s" if arm == "baseline" else "spec_tok_s"
    return RunRecord(file, None, "vllm_bench", {"concurrency": "1", key: tok_s, **values}, {}, arm=arm,
                     pair_key=("m", "d", 1.0))


def test_one_baseline_serves_every_arm_and_repeats_of_an_arm_take_one_each():
    from specmodel.runs.pairing import pair_arms

    out, problems = pair_arms([_one_arm("plain.json", "baseline", 100.0), _one_arm("ngram.json", "spec", 90.0),
                               _one_arm("draft.json", "spec", 150.0)], {})
    assert [r.values.get("baseline_tok_s") for r in out] == [100.0, 100.0] and not problems
    out, problems = pair_arms([_one_arm("p1.json", "baseline", 100.0), _one_arm("p2.json", "baseline", 110.0),
                               _one_arm("a.json", "spec", 90.0, method="ngram"),
                               _one_arm("b.json", "spec", 95.0, method="ngram")], {})
    assert [r.values.get("baseline_tok_s") for r in out] == [100.0, 110.0] and not problems


def test_rows_with_a_prediction_stay_in_the_fit_when_read_back_from_the_table():
    """A table's missing `no_prediction` text reads back as NaN, which is truthy: only a row whose line is
    set is kept out of a calibration (a NaN check once left every row out, and every fit failed)."""
    import pandas as pd

    from specmodel.runs.fit_errors import usable_runs
    from specmodel.runs.unpredicted import unpredicted

    frame = pd.DataFrame({"no_prediction": [float("nan"), "no prediction: target 'x' is no preset"],
                          "alpha": [0.7, 0.7], "measured_speedup": [1.4, 1.3], "concurrency": [1, 1]})
    rows = frame.to_dict("records")
    assert [unpredicted(r) for r in rows] == [False, True]
    assert [r["measured_speedup"] for r in usable_runs(frame)] == [1.4]


@pytest.mark.parametrize("arm, method", [("ngram", "ngram"), ("draft", "draft_model")])
def test_each_arm_is_named_by_the_speculative_config_its_server_was_started_with(doc, arm, method):
    """The lab saves the server's --speculative-config with each result (`spec_config`): its method and
    num_speculative_tokens name the arm, so the n-gram runs are not taken for a draft model's."""
    for c in LEVELS:
        config = json.loads(_bench(f"{arm}_c{c}.json")["spec_config"])
        row = _row(doc, arm, c)
        assert (row["method"], row["k"]) == (method, config["num_speculative_tokens"]) == (method, 4)
