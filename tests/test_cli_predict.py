"""`python -m specmodel predict|presets` as scripts and pipelines call it: a real subprocess."""

import json

import pytest

from specmodel.model.scenario import Scenario, predict
from tests.cli_runner import run_cli


def cli(*args):
    return run_cli(*args)  # in-process; tests/test_cli_smoke.py runs each command once as a subprocess


def test_seed_scenario_as_json():
    r = cli("predict", "--alpha", "0.7", "--k", "4", "--t-target-ms", "19", "--t-draft-ms", "3",
            "--concurrency", "1", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert round(out["speedup"], 2) == 1.70
    assert round(out["tokens_per_step"], 2) == 2.77
    for key in ("tokens_per_step", "speedup", "verdict", "break_even_tokens_per_step", "break_even_alpha",
                "best_k", "best_k_speedup", "crossover_concurrency"):
        assert key in out
    assert out["verdict"] == "pays off"
    assert out["break_even_tokens_per_step"] == pytest.approx(31 / 19, abs=0.005)
    cross = out["crossover_concurrency"]  # the largest batch that still gains: it loses one above
    seed = Scenario.from_names(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3)
    assert predict(seed, concurrency=cross).speedup >= 1.0 > predict(seed, concurrency=cross + 1).speedup
    for arm in ("plain", "spec"):
        assert set(out[arm]) >= {"step_ms", "throughput_tok_s", "max_concurrency"}
    assert out["spec"]["step_ms"] == pytest.approx(31.0, abs=0.01)


def test_loose_preset_names_and_human_summary():
    r = cli("predict", "--gpu", "h100", "--target", "meta-llama/Llama-3.1-8B-Instruct", "--draft",
            "llama-3.2-1b", "--concurrency", "256")
    assert r.returncode == 0, r.stderr
    assert "H100 SXM" in r.stdout and "verdict:" in r.stdout and "num_speculative_tokens_per_batch_size" in r.stdout
    out = json.loads(cli("predict", "--gpu", "H100 SXM", "--method", "ngram", "--accept-len", "2.5", "--json").stdout)
    assert out["method"] == "ngram" and out["tokens_per_step"] == pytest.approx(2.5, abs=1e-3)


def test_crossover_is_reported_under_load():
    out = json.loads(cli("predict", "--gpu", "L40S", "--alpha", "0.7", "--k", "4", "--json").stdout)
    assert isinstance(out["crossover_concurrency"], int) and out["crossover_concurrency"] > 1


def test_presets_lists_every_gpu_and_model():
    r = cli("presets")
    assert r.returncode == 0
    for name in ("A100 40GB", "A100 80GB", "H100 SXM", "H100 PCIe", "H200", "L40S", "L4", "A10G", "MI300X",
                 "B200", "Llama 3.1 8B", "Llama 3.1 70B", "Llama 3.2 1B", "Llama 3.2 3B", "Qwen2.5 7B",
                 "Qwen2.5 0.5B", "Qwen3 8B", "Qwen3 0.6B"):
        assert name in r.stdout
    data = json.loads(cli("presets", "--json").stdout)
    assert all(g["source"].startswith(("NVIDIA", "AMD", "AWS", "Google", "Intel")) for g in data["gpus"])
    assert all("huggingface.co" in m["source"] or "arxiv.org" in m["source"] for m in data["models"])


@pytest.mark.parametrize("args, words", [
    (["--alpha", "1.5"], "--alpha"),
    (["--alpha", "abc"], "--alpha"),
    (["--k", "-1"], "--k"),
    (["--t-target-ms", "-5", "--t-draft-ms", "1"], "--t-target-ms"),
    (["--gpu", "nope"], "unknown GPU 'nope'"),
    (["--target", "llama-3.1-70b"], "does not fit: Llama 3.1 70B needs 141 GB for its weights alone"),
    (["--draft", "qwen3-0.6b", "--method", "ngram"], "conflicts"),
    (["--alpha", "0.5", "--accept-len", "2"], "not allowed with"),
    (["--accept-len", "9", "--k", "4"], "[1, 5]"),
])
def test_bad_arguments_exit_2_with_one_clear_line(args, words):
    r = cli("predict", *args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert words in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2  # argparse's usage line at most, then the error


def test_flags_take_the_names_people_write_and_a_tp_in_the_gpu_text():
    out = run_cli("predict", "--gpu", "8x H100 (TP=8)", "--target", "meta-llama/Llama-3.1-70B-Instruct",
                  "--method", "EAGLE-3", "--engine", "SGLang", "--concurrency", "64", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["gpu"], doc["tp"], doc["target"], doc["method"], doc["engine"]) == \
        ("H100 SXM", 8, "Llama 3.1 70B", "eagle3", "sglang")


def test_a_gpu_text_and_a_tp_flag_that_disagree_are_refused_in_one_line():
    out = run_cli("predict", "--gpu", "8x H100 (TP=8)", "--tp", "4")
    assert out.returncode == 2
    assert out.stderr.strip() == "error: --gpu '8x H100 (TP=8)' says TP 8 but --tp is 4: give one of them"


def test_an_unknown_method_lists_the_known_ones():
    out = run_cli("predict", "--method", "magic")
    assert out.returncode == 2
    assert "'magic' is not a speculation method; one of draft_model, ngram, eagle, eagle3" in out.stderr
