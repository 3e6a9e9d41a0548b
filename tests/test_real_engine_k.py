"""One real server measured at two k (issue 44's "which k, and above which batch"): the real-engine lab's passes 8-10
(tests/fixtures/real_engine/README.md), vLLM 0.32's CPU build serving the lab's tiny Llama plain and with
speculation at k = 2 and at k = 4, at concurrency 1, 4 and 16. Fitted on each k's runs at 1 and 4 (`runs --calibrate
--fit-up-to 4`), the schedule across k is checked against what both k measured at 16."""

from __future__ import annotations

import json

import pytest

from specmodel import cli
from tests.conftest import ROOT

LAB = ROOT / "tests/fixtures/real_engine/lab"


def _runs(folder: str, capsys, *flags: str) -> dict:
    files = sorted(str(p) for p in (LAB / folder).glob("*_c*.json"))
    assert cli.main(["runs", *files, "--calibrate", *flags, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# (folder, the schedule across k fitted at 1 and 4, each k's fit at 16 and what it measured there)
PASSES = [
    # n-gram, greedy: E 2.95 at k = 2, 4.73 at k = 4; both pay at every concurrency, k = 4 more (1.46x against 1.22x
    # at 16): the schedule runs k = 4 throughout
    ("pass10_ngram_k2_k4", [[1, 512, 4]], {2: (1.37, 1.222), 4: (1.88, 1.457)}),
    # draft model, temperature 0.1 and greedy: the draft's proposals are rejected (E 1.00-1.02), both k lose
    # everywhere (0.35x-0.53x): off at every batch
    ("pass8_k2_k4", [[1, 512, 0]], {2: (0.42, 0.441), 4: (0.33, 0.359)}),
    ("pass9_greedy_k2_k4", [[1, 512, 0]], {2: (0.45, 0.526), 4: (0.34, 0.415)}),
]


@pytest.mark.parametrize(("folder", "schedule", "at_16"), PASSES)
def test_a_server_at_two_k_fitted_at_1_and_4_gets_the_k_that_measured_faster_at_16(folder, schedule, at_16, capsys):
    data = _runs(folder, capsys, "--fit-up-to", "4")
    lines = data["summary"]["decision_lines"]
    assert lines[0]["schedule"] == schedule and lines[0]["from_runs"]
    assert lines[0]["decision_line"].endswith("(your runs at k = 2 and 4)")
    at16 = {r["k"]: r for r in data["rows"] if r["concurrency"] == 16}
    for k, (fitted, measured) in at_16.items():
        assert at16[k]["measured_speedup"] == pytest.approx(measured, abs=1e-3)  # the recording, as read
        assert at16[k]["fit_speedup"] == pytest.approx(fitted, abs=0.005)  # the fit of 1 and 4, not of 16
    faster = max(at16, key=lambda k: at16[k]["measured_speedup"])
    chosen = schedule[0][2]  # the k the schedule runs at 16
    if max(measured for _, measured in at_16.values()) < 1.0:
        assert chosen == 0  # both k lost at 16: off
    else:
        assert chosen == faster


def test_the_decision_lines_follow_the_fits_the_runs_fit_up_to_flag_shows(capsys):
    """`runs --fit-up-to 4` fitted the step-fit section on the runs at 1 and 4 ("pays off up to batch 74, uncertain
    above" for k = 4 of pass 10), while the decision lines above it came from fits of every run, 16 included ("on
    up to batch 152"): two answers for one fit on one screen. The lines now follow the flag; without it, both see
    every run."""
    fitted = _runs("pass10_ngram_k2_k4", capsys, "--fit-up-to", "4")
    every = _runs("pass10_ngram_k2_k4", capsys)
    for data in (fitted, every):
        words = {f["setup"]: f["words"] for f in data["step_fits"]}
        for line in data["summary"]["decision_lines"][1:]:
            setup = line["decision_line"].split("(")[1].split(")")[0]  # "... (k=4), k = 4: on up to batch 74, ..."
            batch = line["decision_line"].split("on up to batch ")[1].split(",")[0]
            assert f"pays off up to batch {batch}, uncertain above" in words[setup]
    assert fitted["summary"]["decision_lines"][2]["decision_line"].startswith(
        "128 in / 128 out tokens (k=4), k = 4: on up to batch 74,")
    assert every["summary"]["decision_lines"][2]["decision_line"].startswith(
        "128 in / 128 out tokens (k=4), k = 4: on up to batch 152,")


def test_predict_with_that_calibration_names_the_servers_method_and_its_schedule_across_k(tmp_path, capsys):
    """`predict --calibration` of the n-gram server's fits with no --method: the fit at k = 4 is the only one and
    answers, but its line was headed "Draft model" (the flags' default) and no schedule across k was found (it looked
    for draft-model runs). Both are now the answering fit's: the n-gram server's."""
    cal = tmp_path / "cal.json"
    files = sorted(str(p) for p in (LAB / "pass10_ngram_k2_k4").glob("*_c*.json"))
    assert cli.main(["runs", *files, "--calibrate", "--fit-up-to", "4", "--save-calibration", str(cal)]) == 0
    capsys.readouterr()
    assert cli.main(["predict", "--calibration", str(cal), "--k", "4", "--concurrency", "16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decision_line"].startswith("N-gram (prompt lookup), k = 4: on up to batch 74, uncertain above")
    assert out["decision_across_k"]["decision_line"] == ("128 in / 128 out tokens: k = 4 up to batch 512+ (your runs "
                                                         "at k = 2 and 4)")
    assert out["runs_schedule"] == [[1, 512, 4]]


def test_runs_with_speculation_configured_and_off_say_what_the_off_state_costs(capsys):
    """Lab pass 11: the same server plain, with a draft model at k = 4, and with the draft model configured and
    switched off at every batch (`num_speculative_tokens_per_batch_size: [[1, 512, 0]]`, `speculation=off`). Off ran
    at 0.64×, 0.60× and 0.73× of plain at 1, 4 and 16: vLLM 0.32 still runs the drafter's forward pass every step at
    k = 0 to keep its KV cache in sync (vllm/v1/spec_decode/llm_base_proposer.py, "No draft tokens requested"). The
    runs' step fit says turn it off; its line now says that a k = 0 band is not how."""
    data = _runs("pass11_off", capsys)
    off = {r["concurrency"]: r["off_tok_s"] / r["baseline_tok_s"] for r in data["rows"]}
    assert off == pytest.approx({1: 0.636, 4: 0.596, 16: 0.727}, abs=0.001)
    line, = data["summary"]["decision_lines"]
    assert line["decision_line"] == "128 in / 128 out tokens, k = 4: off at every batch, band included (your runs)"
    assert line["off_note"] == ("Off is not free here: configured and off (k = 0), your runs ran at 0.64× of plain at "
                                "batch 1, 0.60× at 4, 0.73× at 16; where it goes off, serve without speculation (a "
                                "restart or a plain pool), not a k = 0 band.")


def test_a_calibration_that_carries_the_off_state_says_it_where_predict_and_what_if_deploy(tmp_path, capsys):
    """The saved step fit keeps what its runs measured configured and off (`off_measured`): `predict --calibration`
    (and What-if's "What to deploy", pages/whatif.py) write the runs' schedule, here off at every batch, and the off
    state's cost beside it: a table of k = 0 would still run the drafter each step."""
    cal = tmp_path / "cal.json"
    files = sorted(str(p) for p in (LAB / "pass11_off").glob("*_c*.json"))
    assert cli.main(["runs", *files, "--calibrate", "--save-calibration", str(cal)]) == 0
    capsys.readouterr()
    off = json.loads(cal.read_text())["step_fits"][0]["fit"]["off_measured"]
    assert [b for b, _ in off] == [1, 4, 16] and [v for _, v in off] == pytest.approx([0.636, 0.596, 0.727], abs=0.001)
    assert cli.main(["predict", "--calibration", str(cal), "--k", "4", "--concurrency", "16"]) == 0
    text = capsys.readouterr().out
    assert "  vLLM schedule:    none: off at every batch, serve without --speculative-config (your runs; " in text
    assert "  off state:        Off is not free here: configured and off (k = 0), your runs ran at 0.64× of plain" in text
