"""`python -m specmodel mix FILE` as a reviewer runs it: a real subprocess for the journeys, main() for errors."""

import json

import pytest

from specmodel.cli import main
from tests.cli_runner import run_cli

EXAMPLE = "label,share,alpha,temperature,notes\nextraction,0.5,0.7,0,JSON extraction\nchat,0.5,0.4,0.8,chat assistant\n"


def cli(*args):
    return run_cli(*args)  # in-process; tests/test_cli_smoke.py runs each command once as a subprocess


@pytest.fixture
def example(tmp_path):
    path = tmp_path / "mix.csv"
    path.write_text(EXAMPLE)
    return path


def test_mix_json_has_the_comparison(example):
    r = cli("mix", str(example), "--gpus", "2", "--concurrency", "64", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["gpus"] == 2 and out["concurrency"] == 64 and out["gpu"] == "L40S" and out["k"] == 4
    for key in ("single_on", "single_off", "single_best", "splits", "best", "recommendation", "notes"):
        assert key in out
    on = out["single_on"]
    assert on["pools"][0]["setting"] == "draft_model k=4" and on["fits"] is True
    assert set(on["per_workload"]) == {"extraction", "chat"}
    assert set(on["per_workload"]["chat"]) >= {"per_sequence_tok_s", "itl_ms", "throughput_tok_s"}
    assert out["single_off"]["speedup_vs_off"] == 1.0
    split = out["splits"][0]
    assert len(split["pools"]) == 2 and sum(p["gpus"] for p in split["pools"]) == 2
    assert out["best"]["throughput_tok_s"] >= out["single_best"]["throughput_tok_s"]


def test_mix_text_prints_every_plan_and_the_recommendation(example):
    r = cli("mix", str(example), "--gpus", "2", "--method", "ngram", "--k", "3")
    assert r.returncode == 0, r.stderr
    for text in ("single pool, ngram k=3", "single pool, speculation off", "single pool, best setting",
                 "split #1", "ITL ms", "Best:"):
        assert text in r.stdout


def test_shares_not_summing_to_one_are_normalised_and_the_output_says_so(tmp_path, capsys):
    path = tmp_path / "mix.json"
    path.write_text(json.dumps([{"label": "a", "share": 30, "alpha": 0.7}, {"label": "b", "share": 10, "alpha": 0.3}]))
    assert main(["mix", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [w["share"] for w in out["workloads"]] == [0.75, 0.25]
    assert any("normalised" in n for n in out["notes"])
    assert main(["mix", str(path)]) == 0
    assert "note: shares summed to 40" in capsys.readouterr().out


def test_a_plan_that_does_not_fit_is_marked_in_the_text(example, capsys):
    assert main(["mix", str(example), "--gpus", "2", "--concurrency", "300"]) == 0
    out = capsys.readouterr().out
    assert "[does not fit: sequences queue]" in out and "does not fit in memory: 32 sequences" in out


@pytest.mark.parametrize("text,args,message", [
    ("label,share,alpha\nextraction,0.5,0.7\nchat,0.5,\n", [], "workload 'chat' refused: has no acceptance"),
    ("label,share,alpha\nx,1,0.5\n", ["--gpus", "3", "--tp", "2"], "multiple of 2"),
    ("label,share,alpha\nx,1,0.5\n", ["--gpu", "Abacus"], "unknown GPU 'Abacus'"),
    ("label,share,alpha\nx,0,0.5\n", [], "share is 0"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, text, args, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    assert main(["mix", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_missing_file_and_bad_flag_exit_2(tmp_path):
    r = cli("mix", str(tmp_path / "nope.csv"))
    assert r.returncode == 2 and "nope.csv: cannot read the file (no such file)" in r.stderr and "Traceback" not in r.stderr
    r = cli("mix", str(tmp_path / "nope.csv"), "--gpus", "0")
    assert r.returncode == 2 and "--gpus" in r.stderr and r.stderr.count("\n") == 1


def test_a_warning_prints_as_a_warning_and_an_explanation_as_a_note():
    """A plan that does not fit in memory is a warning (it changes what to deploy); the CLI says so."""
    out = run_cli("mix", "sample_runs/traffic_mix.csv", "--gpus", "2", "--concurrency", "300")
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert "warning: single pool, draft_model k=4 does not fit in memory: 32 sequences wait in the queue" in lines
    assert not any(line.startswith("note:") and "does not fit" in line for line in lines)
