"""`python -m specmodel runs`: the public keys, stderr for unreadable rows, exit codes, calibration, exports."""

import json
import re

import pytest

from specmodel.cli import main
from specmodel.fit.steps import StepFit
from tests.conftest import FIXTURES, ROOT

KEYS = {"workload", "concurrency", "k", "tokens_per_step", "measured_speedup", "predicted_speedup", "verdict"}


def run(capsys, *argv):
    code = main(["runs", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_rows_carry_the_public_keys(capsys):
    code, out, err = run(capsys, FIXTURES / "seed_runs.csv", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    rows = {r["workload"]: r for r in doc["rows"]}
    assert all(KEYS <= set(r) for r in rows.values())
    assert rows["extraction"]["verdict"] == "clears" and rows["chat"]["verdict"] != "clears"
    assert rows["extraction"]["concurrency"] == 1 and rows["extraction"]["k"] == 4
    assert rows["extraction"]["tokens_per_step"] == pytest.approx(2.7731)
    assert rows["mixed extraction+chat"]["tokens_per_step"] is None  # not measured
    assert doc["summary"]["rows_compared"] == 3


def test_json_rows_carry_the_draft_acceptance_rate_wherever_the_input_states_it(capsys):
    # vLLM V1 log lines (Accepted: 2400 tokens, Drafted: 4800 tokens ...): accepted ÷ drafted, beside E
    code, out, err = run(capsys, FIXTURES / "vllm_v1_specdecode.log", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [(r["tokens_per_step"], r["draft_acceptance_rate"]) for r in rows] == [(2.5, 0.5), (2.2, 0.4), (1.6, 0.2)]
    # the real lab's n-gram log (vLLM 0.32): Accepted: 505 tokens, Drafted: 505 tokens
    code, out, err = run(capsys, FIXTURES / "real_engine" / "logs" / "ngram_server.log", "--json")
    rates = [r["draft_acceptance_rate"] for r in json.loads(out)["rows"]]
    assert code == 0 and rates[0] == 1.0 and round(836 / 840, 4) in rates and all(0 <= r <= 1 for r in rates)
    # `vllm bench serve` JSON: spec_decode_acceptance_rate is a percent (99.753), read as a fraction
    code, out, err = run(capsys, FIXTURES / "real_engine" / "ngram_c16.json", FIXTURES / "real_engine" / "plain_c16.json",
                         "--json")
    assert json.loads(out)["rows"][0]["draft_acceptance_rate"] == pytest.approx(0.9975)
    # a plain CSV without it: null, never (E - 1) / k made up
    code, out, err = run(capsys, FIXTURES / "seed_runs.csv", "--json")
    assert {r["draft_acceptance_rate"] for r in json.loads(out)["rows"]} == {None}


def test_a_fallback_is_named_by_the_flag_that_gave_it_not_by_the_page(capsys, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("workload,concurrency,k,alpha,speedup,gpu,target_model,method\n"
                    "chat,4,4,0.7,1.3,Z9000,Mystery-70B,telepathy\nqa,8,4,0.6,1.1,,Llama 3.1 8B,draft_model\n")
    code, out, err = run(capsys, runs, "--gpu", "H100 SXM", "--target", "Llama 3.1 8B", "--method", "draft_model")
    assert code == 0 and "sidebar" not in out + err
    assert "predicted on a fallback preset (--gpu, --target) because a name was not recognised" in out
    assert "GPU 'Z9000' is not a preset (not recognised): predicted with H100 SXM (--gpu)" in err
    assert "model 'Mystery-70B' is not a preset" in err and "(--target)" in err
    assert "method 'telepathy' is unknown: predicted as draft_model (--method)" in err
    # only --gpu and --draft given: the unknown target and method refuse that row, naming the nearest presets
    code, out, err = run(capsys, runs, "--gpu", "H100 SXM", "--draft", "Llama 3.2 1B", "--json")
    doc = json.loads(out)
    assert [r["workload"] for r in doc["rows"]] == ["qa"] and "no GPU named: H100 SXM (--gpu)" in doc["rows"][0]["remarks"]
    assert "target 'Mystery-70B' is no preset" in err and "method 'telepathy' is no speculation method" in err
    assert doc["summary"]["refused_by_reason"] == {"method_unknown": 1}  # each row once, its first reason
    # nothing given: the other row (no GPU in its GPU cell) is judged on its measured speedup alone, its
    # prediction empty with the one line that says which preset to name (measured first, runs.unpredicted);
    # its unnamed draft alone would not refuse it: Llama 3.1 8B's family has a draft (runs.assumed.assumed_draft)
    code, out, err = run(capsys, runs, "--json")
    assert code == 0 and "no GPU in this row's GPU column; give --gpu NAME" in err
    qa = json.loads(out)["rows"][0]
    assert qa["workload"] == "qa" and qa["predicted_speedup"] is None and qa["gpu_preset"] is None
    assert qa["measured_verdict"] == "clears" and qa["no_prediction"].startswith("no prediction")
    assert "names no draft model" not in err


def test_unreadable_rows_go_to_stderr_with_file_and_row_and_good_rows_still_print(capsys, tmp_path):
    bad = tmp_path / "mixed.csv"
    bad.write_text("workload,concurrency,k,alpha,speedup\ngood,1,4,0.7,1.5\nbad,1,4,1.7,1.2\n")
    code, out, err = run(capsys, bad, "--json")
    assert code == 0
    assert [r["workload"] for r in json.loads(out)["rows"]] == ["good"]
    assert "mixed.csv, row 3, column 'alpha'" in err


def test_exit_2_when_no_row_loaded(capsys, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, out, err = run(capsys, empty, tmp_path / "missing.json")
    assert code == 2 and out == ""
    assert "empty.csv: the file is empty" in err and "missing.json: cannot read the file" in err


def test_calibrate_reports_fitted_parameters_and_error_before_and_after(capsys):
    code, out, _ = run(capsys, FIXTURES / "seed_runs.csv", "--calibrate", "--json")
    assert code == 0
    cal = json.loads(out)["calibration"]
    assert set(cal["parameters"]) >= {"eta_bw", "eta_flops", "t_fixed_ms", "t_spec_overhead_ms"}
    assert cal["error_after"]["speedup_mape_pct"] < cal["error_before"]["speedup_mape_pct"]
    rows = {r["workload"]: r for r in json.loads(out)["rows"]}
    mixed = rows["mixed extraction+chat"]
    assert mixed["predicted_speedup"] < 1 and mixed["predicted_speedup_uncalibrated"] < 1  # measured 0.85x
    assert abs(mixed["predicted_speedup"] - 0.85) <= abs(mixed["predicted_speedup_uncalibrated"] - 0.85) + 0.02


def test_text_output_and_gpu_flag_for_rows_without_a_known_gpu(capsys):
    code, out, _ = run(capsys, FIXTURES / "vllm_bench_serve_sample.json", FIXTURES / "vllm_bench_serve_baseline_sample.json",
                       "--gpu", "H100 SXM")
    assert code == 0
    # the decision per workload first (issue 40), in the page's words, with the runs that would pin it
    lines = out.splitlines()
    assert lines[0] == "decision per workload:"
    # one run pins the fit at its batch only: on by the fit everywhere, uncertain where its band reaches 1.0
    assert lines[1] == ("  1280 in / 256 out tokens, k = 3: on up to batch 137, uncertain above: the fit stays on, its "
                        "band reaches 1.0 (your runs)")
    assert lines[2].startswith("    Pin it: plain and speculative runs at batch ") and lines[3] == ""
    # the file's GPU is "simulated": one line above the table says the rows ran on the --gpu preset instead
    assert lines[4].startswith("1 of 1 row predicted on a fallback preset") and "GPU 'simulated'" in out
    assert lines[5].split()[:3] == ["workload", "conc", "k"]
    assert "1280 in / 256 out tokens" in out and "pays off" in out
    code, out, _ = run(capsys, FIXTURES / "vllm_bench_serve_sample.json", "--gpu", "H100 SXM", "--json")
    assert json.loads(out)["rows"][0]["gpu_preset"] == "H100 SXM"


def test_k_flag_reads_guidellm_and_pair_flag_fixes_a_pairing(capsys, tmp_path):
    code, out, err = run(capsys, FIXTURES / "guidellm_benchmarks_sample.csv")
    assert code == 2 and "column 'k'" in err
    code, out, _ = run(capsys, FIXTURES / "guidellm_benchmarks_sample.csv", "--k", "3", "--json")
    assert code == 0 and [r["concurrency"] for r in json.loads(out)["rows"]] == [1, 4, 16]
    base = json.loads((FIXTURES / "vllm_bench_serve_baseline_sample.json").read_text())
    base["max_concurrency"] = 64
    (tmp_path / "base.json").write_text(json.dumps(base))
    spec = FIXTURES / "vllm_bench_serve_sample.json"
    code, out, _ = run(capsys, spec, tmp_path / "base.json", "--json", "--pair", f"{spec.name}=base.json",
                       "--gpu", "H100 SXM")  # the sample says "gpu": "simulated"
    assert json.loads(out)["rows"][0]["measured_speedup"] == pytest.approx(1.538, abs=1e-3)


def test_bad_pair_argument_is_one_line_exit_2(capsys):
    code, _, err = run(capsys, FIXTURES / "seed_runs.csv", "--pair", "nonsense")
    assert code == 2 and err.strip().startswith("error: --pair expects SPEC_FILE=BASELINE_FILE")


def test_csv_and_html_exports_neutralise_formulas_and_escape_user_strings(capsys, tmp_path):
    hostile = tmp_path / "hostile.csv"
    hostile.write_text('workload,concurrency,k,alpha,speedup\n"=HYPERLINK(""http://x"")",1,4,0.7,1.5\n'
                       '<script>alert(1)</script>,1,4,0.4,0.9\n')
    code, _, _ = run(capsys, hostile, "--csv", tmp_path / "t.csv", "--html", tmp_path / "r.html")
    assert code == 0
    csv_text = (tmp_path / "t.csv").read_text()
    assert "'=HYPERLINK" in csv_text and "\n=HYPERLINK" not in csv_text
    html_text = (tmp_path / "r.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html_text
    assert "<script>alert(1)</script>" not in html_text
    assert "Plotly" in html_text and "<script src=" not in html_text  # plotly.js inline: self-contained


def test_rows_over_the_limit_load_the_first_ones_and_the_command_says_so(capsys, tmp_path, monkeypatch):
    from specmodel import bounds

    monkeypatch.setattr(bounds, "MAX_ROWS_PER_FILE", 10)
    monkeypatch.setattr(bounds, "MAX_ROWS_TOTAL", 15)
    rows = [f"w{i},{i + 1},4,0.7,1.5\n" for i in range(30)]
    (tmp_path / "big.csv").write_text("workload,concurrency,k,alpha,speedup\n" + "".join(rows))
    (tmp_path / "small.csv").write_text("workload,concurrency,k,alpha,speedup\n" + "".join(rows[:8]))
    code, out, err = run(capsys, tmp_path / "big.csv", tmp_path / "small.csv", "--json")
    assert code == 0
    loaded = [r["workload"] for r in json.loads(out)["rows"]]
    assert loaded[:10] == [f"w{i}" for i in range(10)] and len(loaded) == 15
    assert "big.csv: has 30 runs; only the first 10 were loaded (the limit per file)" in err
    assert "small.csv: 3 of its 8 runs were not loaded: 15 runs in all files is the limit" in err


def test_calibrated_decision_line_is_the_step_fit_it_prints(capsys):
    """`runs --calibrate` on the sample's code-completion sweep: the decision line leads with the threshold its
    step-fit section gives (off above batch 235). It said "on at every batch the fit looks at" while the
    section said "stops paying above batch 235": the line's fit was shaped by the calibrated model, the
    section's by the model it started from. The fitted values the optimiser left at ~1e-8 read as 0, not
    in exponent notation."""
    code, out, _ = run(capsys, ROOT / "sample_runs" / "multi_workload.csv", "--calibrate")
    assert code == 0
    lines = out.splitlines()
    decision = next(line for line in lines if line.strip().startswith("code completion, k = 4:"))
    section = next(line for line in lines if line.strip().startswith("code completion: fitted on"))
    threshold = section.split("stops paying above batch ")[1].split()[0]
    assert f"off above batch {threshold} (" in decision
    calibrated = next(line for line in lines if line.startswith("calibrated: "))
    assert "e-0" not in calibrated and "e-1" not in calibrated and "t_fixed_ms 0 ms" in calibrated


def test_a_baseline_without_its_speculative_pair_is_named_and_the_fit_says_which_run_would_pin_it(capsys):
    """Lab pass 6: plain runs at 1 and 4, the n-gram server's run at 1 only. The plain run at 4 is said to have no
    speculative run to compare with, at its concurrency as a number ('4', was '4.0'), and its plain step joins the
    n-gram server's step fit (it said "not used"); a fit of one speculative concurrency still predicts nothing
    elsewhere, and the run that would pin how the step grows is the speculative one at 4, where the plain run is."""
    lab = FIXTURES / "real_engine" / "lab" / "pass6_temp0.3"
    code, out, err = run(capsys, lab / "plain_c1.json", lab / "plain_c4.json", lab / "ngram_c1.json", "--calibrate")
    assert code == 0
    assert ("warning: plain_c4.json: a run without speculation and no speculative run to compare it with "
            "(concurrency 4); its plain step is used in the step fit of the speculative run of its model and "
            "dataset") in err.splitlines()
    assert "fitted on concurrency 1 and plain runs at 4: nothing predicted at other batches" in out
    assert "to pin the rest: run speculative at concurrency 4 too (the plain run there pins the plain step)" in out


def test_plain_runs_without_a_speculative_pair_pin_the_plain_step_where_speculation_was_not_run(capsys):
    """Lab pass 5 (quiet): the n-gram server run at 1, 2 and 4 and the plain server at 1–16. The plain runs at 8
    and 16 have no speculative run to compare with, but they measure the plain server's step where the decision
    is made: they join the step fit (they were "not used"), whose plain arm then holds the measured 11.63 ms step
    at 16 (1000 × 16 / 1375.6 tok/s, plain_c16.json) within the fit's residual, not the line of 1–4 extended."""
    lab = FIXTURES / "real_engine" / "lab" / "pass5_quiet"
    files = [lab / f"plain_c{c}.json" for c in (1, 2, 4, 8, 16)] + [lab / f"ngram_c{c}.json" for c in (1, 2, 4)]
    code, out, err = run(capsys, *files, "--calibrate", "--json")
    assert code == 0
    joined = [line.split(":")[1].strip() for line in err.splitlines()
              if line.endswith("its plain step is used in the step fit of the 3 speculative runs of its model and dataset")]
    assert sorted(joined) == ["plain_c16.json", "plain_c8.json"]
    fit = StepFit.from_dict(json.loads(out)["step_fits"][0]["fit"])
    assert fit.batches == (1.0, 2.0, 4.0) and fit.plain_batches == (1.0, 2.0, 4.0, 8.0, 16.0)
    plain16 = float(fit.ms_per_token("plain", 16.0)[0])
    assert plain16 == pytest.approx(11.63, rel=0.15)


def test_an_output_path_that_cannot_be_written_is_refused_before_the_runs_are_read(capsys, tmp_path):
    """`runs --calibrate --save-calibration` into a folder that does not exist said so only after reading and
    fitting every run (seconds on a large file); it is refused first: the missing run file is not reached."""
    code, _, err = run(capsys, tmp_path / "no-such-runs.csv", "--calibrate", "--save-calibration",
                       tmp_path / "missing" / "cal.json")
    assert code == 2
    assert "cannot write the calibration to" in err and "missing" in err and "no-such-runs.csv" not in err
    code, _, err = run(capsys, tmp_path / "no-such-runs.csv", "--html", tmp_path)
    assert code == 2 and "it is a folder" in err and "no-such-runs.csv" not in err


def test_the_text_table_reads_each_setup_by_concurrency_whatever_order_the_files_came_in(capsys):
    # the shell gives *_c*.json as c1, c16, c4: the table lists 1, 4, 16 under each setup; --json keeps the order read
    files = sorted((FIXTURES / "real_engine" / "lab" / "pass6_temp0.3").glob("*_c*.json"))
    assert [f.stem for f in files][:3] == ["draft_c1", "draft_c16", "draft_c4"]
    code, out, _ = run(capsys, *files)
    assert code == 0
    row = re.compile(r"^128 in / 128 out tokens +(Draft model|N-gram \(prompt lookup\)) +(\d+) ")
    by_setup = [(m[1], int(m[2])) for m in map(row.match, out.splitlines()) if m]
    assert by_setup == [("Draft model", 1), ("Draft model", 4), ("Draft model", 16),
                        ("N-gram (prompt lookup)", 1), ("N-gram (prompt lookup)", 4), ("N-gram (prompt lookup)", 16)]
    code, out, _ = run(capsys, *files, "--json")
    assert [r["concurrency"] for r in json.loads(out)["rows"]][:3] == [1, 16, 4]


def test_the_html_report_reads_each_setup_by_concurrency_as_the_text_does(capsys, tmp_path):
    files = sorted((FIXTURES / "real_engine" / "lab" / "pass6_temp0.3").glob("*_c*.json"))
    code, _, _ = run(capsys, *files, "--html", tmp_path / "r.html")
    assert code == 0
    text = re.sub("<[^>]+>", " ", (tmp_path / "r.html").read_text())
    rows = re.findall(r"(Draft model|N-gram \(prompt lookup\))\s+(\d+)\s+4\s", text[text.index("Break-even"):])
    assert rows == [("Draft model", "1"), ("Draft model", "4"), ("Draft model", "16"),
                    ("N-gram (prompt lookup)", "1"), ("N-gram (prompt lookup)", "4"), ("N-gram (prompt lookup)", "16")]
