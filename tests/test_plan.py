"""`python -m specmodel plan`: the fewest runs that pin the model's unknowns, as commands for the engine's
own benchmark; the project's fixture results of such runs calibrate and narrow the band."""

import json
import shlex

import pytest

from specmodel import Scenario, summarize
from specmodel.plan.measure import measurement_plan
from tests.cli_runner import run_cli
from tests.conftest import ROOT

FIXTURES = sorted((ROOT / "tests" / "fixtures" / "plan_runs").glob("*.json"))
SEED = ["--gpu", "L40S", "--target", "Llama 3.1 8B", "--draft", "Llama 3.2 1B", "--alpha", "0.7", "--k", "4"]


def plan_json(*args):
    r = run_cli("plan", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_vllm_plan_is_plain_and_speculative_pairs_of_vllm_bench_serve_bracketing_the_off_threshold():
    out = plan_json(*SEED, "--engine", "vllm")
    assert out["engine"] == "vllm" and out["bench"] == "vllm"
    runs = [r for r in out["runs"] if not r["speculation_off"]]  # the run with speculation configured and off: below
    concs = sorted({r["concurrency"] for r in runs})
    assert len(runs) == 2 * len(concs) <= 6  # a plain and a speculative run at each batch, three batches at most
    assert concs[0] == 1  # fixed costs
    low, high = out["off_above_batch_low"], out["off_above_batch_high"]
    fits = json.loads(run_cli("predict", *SEED, "--json").stdout)["spec"]["max_concurrency"]
    assert concs[1] == max(low, 2)  # the band's low end of the off threshold ...
    assert concs[-1] == min(high or 512, fits, 512)  # ... and its high end, where the speculative arm still fits
    for r in runs:
        argv = shlex.split(r["command"])
        assert argv[:3] == ["vllm", "bench", "serve"]
        assert argv[argv.index("--max-concurrency") + 1] == str(r["concurrency"])
        assert r["why"]
        server = shlex.split(r["server"])
        assert server[:2] == ["vllm", "serve"]
        if r["speculative"]:
            config = json.loads(server[server.index("--speculative-config") + 1])
            assert config["rejection_sample_method"] == "synthetic"
            assert 1 <= config["synthetic_acceptance_length"] <= config["num_speculative_tokens"] + 1
        else:
            assert "--speculative-config" not in server
    assert out["total_seconds"] >= sum(r["seconds"] for r in out["runs"])  # the runs plus a start per server
    assert out["synthetic_acceptance"]["since"] == "vLLM 0.20.0"


def test_sglang_plan_uses_bench_serving_and_simulated_acceptance():
    out = plan_json("--method", "eagle3", "--alpha", "0.7", "--engine", "SGLang v0.5.14")
    spec = [r for r in out["runs"] if r["speculative"] and not r["speculation_off"]]
    assert spec and all(shlex.split(r["command"])[:3] == ["python", "-m", "sglang.bench_serving"] for r in out["runs"])
    assert all(r["server"].startswith("SGLANG_SIMULATE_ACC_LEN=") for r in spec)
    assert "--speculative-algorithm EAGLE3" in spec[0]["server"]
    # SGLang runs 48 requests at once while speculating unless told (server_args.py): the plan's largest
    # batch must run, not queue
    largest = max(r["concurrency"] for r in out["runs"])
    assert largest > 48 and f"--max-running-requests {largest}" in spec[0]["server"]
    assert any("runs at most 48 requests at once while speculating" in n for n in out["notes"])


@pytest.mark.parametrize("engine, prefix", [("SGLang v0.5.2", "SIMULATE_ACC_LEN="), ("SGLang v0.4.4", None),
                                            ("sglang 0.5.3", "SGLANG_SIMULATE_ACC_LEN=")])
def test_an_older_sglang_gets_its_own_synthetic_acceptance_variable_or_none(engine, prefix):
    """eagle_utils.py reads SIMULATE_ACC_LEN from v0.4.5 to v0.5.2; v0.5.3 renamed it (environ.py); v0.4.4 has
    none, and no 48-request cap yet (server_args.py from v0.4.5), so its plan sets neither."""
    out = plan_json("--method", "eagle", "--alpha", "0.7", "--engine", engine)
    server = next(r for r in out["runs"] if r["speculative"])["server"]
    if prefix:
        assert server.startswith(prefix) and out["synthetic_acceptance"]["setting"].endswith(prefix + "E")
    else:
        assert "SIMULATE_ACC_LEN" not in server and out["synthetic_acceptance"] is None
        assert "--max-running-requests" not in server
        assert any("has no synthetic-acceptance setting" in n for n in out["notes"])


def test_a_vllm_before_0_20_gets_no_synthetic_keys_its_server_would_refuse():
    out = plan_json(*SEED, "--engine", "vllm 0.10.1")
    server = shlex.split(next(r for r in out["runs"] if r["speculative"])["server"])
    config = json.loads(server[server.index("--speculative-config") + 1])
    assert "rejection_sample_method" not in config and "synthetic_acceptance_length" not in config
    assert out["synthetic_acceptance"] is None
    assert any("vllm 0.10.1 has no synthetic-acceptance setting" in n for n in out["notes"])
    assert not any("acceptance fixed at" in r["why"] for r in out["runs"])


def test_trtllm_plan_uses_guidellm_at_a_concurrent_rate():
    out = plan_json(*SEED, "--engine", "TensorRT-LLM")
    assert out["bench"] == "guidellm" and out["synthetic_acceptance"] is None
    for r in out["runs"]:
        argv = shlex.split(r["command"])
        assert argv[:2] == ["guidellm", "benchmark"]
        assert argv[argv.index("--rate-type") + 1] == "concurrent"
        assert argv[argv.index("--rate") + 1] == str(r["concurrency"])
    assert "trtllm-serve" in out["servers"]["speculative"] and "decoding_type: DraftTarget" in out["servers"]["speculative"]


def test_the_fixture_files_are_the_plans_runs_in_vllm_bench_serve_format():
    plan = measurement_plan(summarize(Scenario.from_names(gpu="L40S", target="Llama 3.1 8B", method="draft_model",
                                               draft="Llama 3.2 1B", alpha=0.7, k=4)))
    assert {f.stem for f in FIXTURES} == {f"{'off' if r.off else 'spec' if r.speculative else 'plain'}_c{r.concurrency}"
                                          for r in plan.runs}
    reference = json.loads((ROOT.parent / "shared" / "reference" / "vllm_bench_serve_sample.json").read_text()) \
        if (ROOT.parent / "shared").exists() else None
    for f in FIXTURES:
        d = json.loads(f.read_text())
        assert d["max_concurrency"] > 0 and d["output_throughput"] > 0 and d["completed"] == d["num_prompts"]
        if reference:  # every scalar key the real client writes (the per-request lists are optional)
            missing = {k for k, v in reference.items() if not isinstance(v, list) and not k.startswith("spec_")} - set(d)
            assert missing <= {"note"}, missing


def test_uploading_the_plans_results_calibrates_and_narrows_the_band(monkeypatch):
    from specmodel.plan import measure

    # The text run below prints the band the JSON run computed for the same scenario and rows: one calibration
    # (~3 s of CPU, a least-squares fit per engine behaviour) for both outputs; other inputs compute their own.
    real, done = measure.calibrated_band, {}

    def once(s, rows):
        key = (s, rows.to_csv())
        if key not in done:
            done[key] = real(s, rows)
        return done[key]

    monkeypatch.setattr(measure, "calibrated_band", once)
    out = plan_json(*SEED, "--engine", "vllm", "--results", *map(str, FIXTURES))
    c = out["calibrated"]
    assert c["calibration"]["rows_used"] == 3  # three plain + speculative pairs
    assert c["engine_after"] == "vllm 0.14.0"  # the runs tell which release's scheduler the server has
    assert c["narrower"] and c["width_after"] < c["width_before"]
    assert c["calibration"]["error_after"]["speedup_mape_pct"] < c["calibration"]["error_before"]["speedup_mape_pct"]
    text = run_cli("plan", *SEED, "--engine", "vllm", "--results", *map(str, FIXTURES))
    assert "band before:" in text.stdout and "after calibrating on the results" in text.stdout


def test_runs_reads_the_fixture_files_without_a_problem():
    r = run_cli("runs", *map(str, FIXTURES), "--json")
    assert r.returncode == 0
    out = json.loads(r.stdout)
    assert len(out["rows"]) == 3 and not [p for p in out["problems"] if p["severity"] == "error"]


@pytest.mark.parametrize("engine", ["xla"])
def test_an_engine_without_a_benchmark_is_refused_in_one_line(engine):
    r = run_cli("plan", "--engine", engine)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "choose vllm, sglang or trtllm" in r.stderr


def test_results_naming_no_preset_lead_with_their_step_fit_and_say_why_the_model_was_not_fitted():
    """Lab pass 6's n-gram server at concurrency 1 and 4 (target 'tiny-llama', no preset): `plan --results` leads
    with what those runs decide (their step fit: loses at every batch), then the model's plan for the flags'
    scenario. The note names why the model was not fitted (no run names a preset; it said "none of the runs has
    both an acceptance and a measured throughput", which all four have) and ends its sentence (it stopped at
    "the step fits are")."""
    lab = ROOT / "tests" / "fixtures" / "real_engine" / "lab" / "pass6_temp0.3"
    files = [str(lab / f"{arm}_c{c}.json") for arm in ("plain", "ngram") for c in (1, 4)]
    r = run_cli("plan", "--results", *files)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Your runs (each setup's step fit):"
    assert "speculation loses at every batch, band included: turn it off" in lines[1]
    assert lines[2].startswith("The model's plan for the scenario of the flags") and lines[3].startswith("Measurement plan")
    # its commands are for the flags' defaults (Llama 3.1 8B on L40S), not the runs' server: said where it is headed
    assert lines[2].endswith("not your runs' 'tiny-llama': give --target and --gpu for its commands):")
    note, = [line for line in r.stderr.splitlines() if line.startswith("note: the model's parameters")]
    assert "2 runs name no preset the model can predict" in note and "none of the runs has both" not in note
    assert note.endswith("The step fits are from the results alone")
