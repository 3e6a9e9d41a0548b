"""`python -m specmodel capacity` as a reviewer runs it: a real subprocess for the journeys, main() for errors."""

import json

import pytest

from specmodel import Scenario
from specmodel.cli import main
from specmodel.plan.capacity import Load, Target, plan
from tests.cli_runner import run_cli

ARM_KEYS = {"gpus", "replicas", "batch_per_replica", "user_tok_s", "itl_ms", "throughput_tok_s_per_gpu", "k"}
VERDICTS = {"saves GPUs", "costs GPUs", "only spec meets the target", "neither meets the target", "same"}


def cli(*args):
    return run_cli(*args)  # in-process; tests/test_cli_smoke.py runs each command once as a subprocess


def test_capacity_json_for_concurrent_users_has_the_issue_keys_and_the_model_numbers():
    r = cli("capacity", "--users", "100", "--min-user-tok-s", "40", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"plain", "spec", "gpus_saved", "verdict", "advice"} <= set(out)
    assert ARM_KEYS <= set(out["plain"]) and ARM_KEYS <= set(out["spec"])
    assert out["verdict"] in VERDICTS
    expected = plan(Scenario(), Load(users=100), Target(min_user_tok_s=40.0))  # the CLI's defaults are Scenario's
    assert out["plain"]["gpus"] == expected.plain.gpus and out["spec"]["gpus"] == expected.spec.gpus
    assert out["spec"]["k"] == expected.spec.k and out["plain"]["k"] == 0
    assert out["gpus_saved"] == out["plain"]["gpus"] - out["spec"]["gpus"]
    assert out["plain"]["user_tok_s"] >= 40 and out["spec"]["user_tok_s"] >= 40
    assert out["plain"]["itl_ms"] == pytest.approx(1e3 / out["plain"]["user_tok_s"], rel=1e-3)
    assert out["load"]["users"] == 100 and out["latency_target"]["min_user_tok_s"] == 40


def test_capacity_from_a_request_rate_and_an_itl_target_with_fixed_k():
    r = cli("capacity", "--rps", "5", "--output-tokens", "300", "--max-itl-ms", "25", "--k", "4", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["spec"]["k"] == 4 and out["k_fixed"] is True
    assert out["load"]["token_rate_tok_s"] == 1500
    for arm in (out["plain"], out["spec"]):
        assert arm["itl_ms"] <= 25
        # Little's law: concurrent users = requests/s × output tokens ÷ per-user speed
        assert arm["concurrency"] == pytest.approx(1500 / arm["user_tok_s"], rel=1e-3)
    assert any("Little's law" in n for n in out["notes"])


def test_capacity_text_prints_both_gpu_counts_and_the_verdict():
    r = cli("capacity", "--users", "500", "--min-user-tok-s", "40", "--gpu", "H100 SXM", "--alpha", "0.6")
    assert r.returncode == 0, r.stderr
    expected = plan(Scenario.from_names(gpu="H100 SXM", alpha=0.6), Load(users=500), Target(min_user_tok_s=40.0))
    gpu_line = next(line for line in r.stdout.splitlines() if line.strip().startswith("GPUs"))
    assert gpu_line.split()[1:] == [str(expected.plain.gpus), str(expected.spec.gpus)]
    assert "verdict:" in r.stdout and "advice:" in r.stdout
    assert "500 concurrent users" in r.stdout and "≥ 40 tok/s per user" in r.stdout


def test_an_unreachable_target_is_an_answer_not_an_error(capsys):
    assert main(["capacity", "--users", "8", "--min-user-tok-s", "100000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "neither meets the target" and out["gpus_saved"] is None
    assert out["plain"]["gpus"] is None and out["spec"]["gpus"] is None
    assert out["plain"]["meets_target"] is False and out["spec"]["best_reachable_user_tok_s"] > 0
    assert "best reachable" in out["verdict_text"]
    assert main(["capacity", "--users", "8", "--min-user-tok-s", "100000"]) == 0
    text = capsys.readouterr().out
    assert "impossible" in text and "neither meets the target; best reachable" in text


@pytest.mark.parametrize("args,message", [
    (["--users", "0", "--min-user-tok-s", "30"], "concurrent users must be a whole number ≥ 1, got 0"),
    (["--users", "-5", "--min-user-tok-s", "30"], "got -5"),
    (["--rps", "2", "--output-tokens", "0", "--max-itl-ms", "30"], "mean output tokens per request must be ≥ 1"),
    (["--rps", "2", "--max-itl-ms", "30"], "needs the mean output tokens"),
    (["--users", "3", "--min-user-tok-s", "0"], "must be a number of tokens/s > 0"),
    (["--users", "3", "--max-itl-ms", "-1"], "must be a number of ms > 0"),
    (["--users", "3", "--min-user-tok-s", "30", "--k", "0"], "k ≥ 1"),
    (["--users", "3", "--min-user-tok-s", "30", "--gpu", "Abacus"], "unknown GPU 'Abacus'"),
    (["--users", "3"], "one of the arguments --min-user-tok-s --max-itl-ms is required"),
    (["--min-user-tok-s", "3"], "one of the arguments --users --rps is required"),
    (["--users", "nan", "--min-user-tok-s", "3"], "expected a finite number"),
    (["--users", "3", "--rps", "1", "--min-user-tok-s", "3"], "not allowed with argument"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, message):
    try:
        code = main(["capacity", *args])
    except SystemExit as exc:  # argparse's own checks exit from inside main
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_bad_input_through_the_real_command_has_no_traceback():
    r = cli("capacity", "--users", "0", "--min-user-tok-s", "30")
    assert r.returncode == 2 and r.stderr.startswith("error: concurrent users") and "Traceback" not in r.stderr


def test_a_saving_inside_the_band_is_uncertain_and_one_clear_of_it_is_not():
    """The default 8B + 1B on an L40S. 64 users at ITL ≤ 24 ms: speculation saves 3 GPUs as predicted, but at
    the low end of the model's 80% band it saves none, so the plan says uncertain, where to measure, and
    reads amber. At ITL ≤ 23 ms it saves 5 (2 to 6 across the band): a clear saving."""
    inside = json.loads(cli("capacity", "--users", "64", "--max-itl-ms", "24", "--json").stdout)
    assert (inside["verdict"], inside["gpus_saved"]) == ("saves GPUs", 3)
    assert inside["gpus_saved_low"] < 1 <= inside["gpus_saved_high"] and inside["uncertain"] is True
    assert (inside["verdict_low"], inside["verdict_high"]) == ("same", "saves GPUs")
    assert inside["verdict_text"].startswith("uncertain: by the estimate speculation saves 3 GPUs")
    assert "— across the model's 80% band speculation needs the same GPUs at its low end" in inside["verdict_text"]
    assert "users per replica to settle it" in inside["verdict_text"]
    clear = json.loads(cli("capacity", "--users", "64", "--max-itl-ms", "23", "--json").stdout)
    assert clear["verdict"] == "saves GPUs" and clear["uncertain"] is False
    assert 1 <= clear["gpus_saved_low"] <= clear["gpus_saved"] <= clear["gpus_saved_high"]
    assert "uncertain" not in clear["verdict_text"]
    assert plan(Scenario(), Load(users=64), Target(max_itl_ms=24.0)).tone == "caution"
    assert plan(Scenario(), Load(users=64), Target(max_itl_ms=23.0)).tone == "good"


def test_a_band_whose_ends_both_say_leave_it_off_is_not_uncertain():
    """The Capacity page's default (64 users at ≥ 30 tok/s each): speculation costs 1 GPU, and none at the
    band's high end. Either way the advice is to leave it off, so the plan commits to it."""
    r = plan(Scenario(), Load(users=64), Target(min_user_tok_s=30.0))
    assert r.verdict == "costs GPUs" and r.band_verdicts == ("costs GPUs", "same")
    assert not r.uncertain and "uncertain" not in r.verdict_text and r.tone == "caution"  # costs GPUs: its own amber
    d = r.to_dict()
    assert (d["gpus_saved_low"], d["gpus_saved"], d["gpus_saved_high"]) == (-1, -1, 0) and d["uncertain"] is False
