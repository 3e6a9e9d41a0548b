"""What to deploy, in the serving engine's own terms (specmodel/export/deploy.py), on the page and the CLI."""

import json

import pytest

from streamlit.testing.v1 import AppTest

from specmodel import Scenario, summarize
from specmodel.export.deploy import deploy_advice
from tests.cli_runner import run_cli
from tests.conftest import ROOT

SEED = dict(gpu="L40S", target="Llama 3.1 8B", method="draft_model", draft="Llama 3.2 1B", alpha=0.7, k=4)
CLI_SEED = ("--gpu", "L40S", "--target", "Llama 3.1 8B", "--method", "draft_model", "--draft", "Llama 3.2 1B",
            "--alpha", "0.7", "--k", "4")


def test_vllm_gets_its_speculative_config_with_the_per_batch_schedule():
    advice = deploy_advice(summarize(Scenario.from_names(**SEED)))
    assert advice.language == "json"
    assert json.loads(advice.code) == {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct",
                                       "num_speculative_tokens": 3,
                                       # off from 93: the off band (speculation configured, k = 0) beats k = 3
                                       # there by more than 2% (decide.SWITCH_GAIN); it is not free on vLLM
                                       # (+16-20% per step there: off_state), so later than a plain server's 56
                                       "num_speculative_tokens_per_batch_size": [[1, 92, 3], [93, 512, 0]]}


@pytest.mark.parametrize("engine, per_batch", [("vllm 0.10.1", False), ("vLLM v0.23.0", False), ("vllm 0.24.0", True),
                                               ("vllm 0.30.0", True)])
def test_a_vllm_version_named_gets_the_config_that_version_takes(engine, per_batch):
    """num_speculative_tokens_per_batch_size exists from vLLM 0.24.0 (vllm/config/speculative.py): an older
    version named gets one k and is told where to stop speculating; a newer one the per-batch table."""
    summary = summarize(Scenario.from_names(**SEED, engine=engine))
    advice = deploy_advice(summary)
    config = json.loads(advice.code)
    assert advice.language == "json" and config["method"] == "draft_model"
    assert ("num_speculative_tokens_per_batch_size" in config) is per_batch
    if not per_batch:
        assert config["num_speculative_tokens"] == summary.best_k == 3
        off = next(lo for lo, _hi, k in summary.schedule if k == 0) - 1
        assert "needs vLLM 0.24.0 or later" in advice.intro and f"Above batch {off} speculation loses" in advice.note
    tab = json.loads(run_cli("predict", *CLI_SEED, "--engine", engine, "--json").stdout)["deploy_by_engine"]["vllm"]
    assert ("num_speculative_tokens_per_batch_size" in tab["config"]) is per_batch
    assert ("num_speculative_tokens_per_batch_size" in tab["command"]) is per_batch


@pytest.mark.parametrize("engine, adaptive", [("sglang 0.5.9", False), ("sglang 0.5.13", False), ("sglang 0.5.14", True),
                                              ("sglang", True)])
def test_an_sglang_version_named_gets_adaptive_steps_only_where_it_has_them(engine, adaptive):
    """Per-batch-size slots in --speculative-adaptive-config from v0.5.13, a 0 (off) step from v0.5.14
    (speculative/adaptive_spec_params.py): a schedule that turns speculation off needs v0.5.14."""
    eagle3 = ("--gpu", "A100 80GB", "--target", "Llama 3.1 8B", "--method", "eagle3", "--alpha", "0.2", "--k", "4")
    out = json.loads(run_cli("predict", *eagle3, "--engine", engine, "--json").stdout)
    assert any(k == 0 for _lo, _hi, k in out["num_speculative_tokens_per_batch_size"])  # the schedule has an off range
    tab = out["deploy_by_engine"]["sglang"]
    assert ("--speculative-adaptive" in tab["command"]) is adaptive
    if not adaptive:
        assert tab["config"]["adaptive_config"] is None and "has no per-batch adaptive steps" in tab["note"]


def test_sglang_gets_launch_flags_for_a_chain_of_the_best_k():
    summary = summarize(Scenario.from_names(**{**SEED, "method": "eagle3", "draft": None}, engine="sglang"))
    advice = deploy_advice(summary)
    k = summary.best_k
    assert advice.language == "bash" and k > 0
    assert advice.one_line == (f"--speculative-algorithm EAGLE3 --speculative-draft-model-path YOUR_EAGLE_DRAFT "
                               f"--speculative-num-steps {k} --speculative-eagle-topk 1 "
                               f"--speculative-num-draft-tokens {k + 1}")
    standalone = deploy_advice(summarize(Scenario.from_names(**SEED, engine="sglang")))
    assert "--speculative-algorithm STANDALONE" in standalone.code
    assert "--speculative-draft-model-path meta-llama/Llama-3.2-1B-Instruct" in standalone.code


@pytest.mark.parametrize("engine", ["sglang", "SGLang v0.5.9"])
def test_sglang_above_48_requests_gets_the_flag_that_lets_them_all_run(engine):
    """SGLang resets --max-running-requests to 48 for speculative decoding (server_args.py, v0.4.6 to
    v0.5.23): at concurrency 128 the launch flags raise it and the verdict says why; at 32 neither."""
    busy = summarize(Scenario.from_names(**{**SEED, "method": "eagle3", "draft": None}, engine=engine, concurrency=128))
    advice = deploy_advice(busy)
    assert advice.one_line.endswith("--max-running-requests 128")
    assert any("runs at most 48 requests at once while speculating" in n and "queues the other 80" in n
               for n in busy.notes)
    quiet = summarize(Scenario.from_names(**{**SEED, "method": "eagle3", "draft": None}, engine=engine, concurrency=32))
    assert "--max-running-requests" not in deploy_advice(quiet).code
    assert not any("48 requests" in n for n in quiet.notes)
    vllm = summarize(Scenario.from_names(**{**SEED, "method": "eagle3", "draft": None}, engine="vllm", concurrency=128))
    assert not any("48 requests" in n for n in vllm.notes)


def test_an_engine_without_a_per_batch_schedule_is_told_where_speculation_stops_paying():
    trtllm = summarize(Scenario.from_names(**{**SEED, "gpu": "A100 80GB", "alpha": 0.3}, engine="trtllm"))
    advice = deploy_advice(trtllm)
    off = next(lo for lo, _hi, k in trtllm.schedule if k == 0) - 1
    assert advice.code is None
    assert advice.intro == f"Run k = 1 draft token per step; above batch {off} speculation loses here: turn it off there."
    sglang = deploy_advice(summarize(Scenario.from_names(**{**SEED, "gpu": "A100 80GB", "alpha": 0.3}, engine="sglang")))
    assert sglang.note.startswith("SGLang runs one k at every batch size: above batch ")
    never = deploy_advice(summarize(Scenario.from_names(**{**SEED, "alpha": 0.1})))
    assert never.code is None and never.intro.startswith("Speculation does not pay off at any batch size")


def test_the_what_if_page_shows_the_sidebar_engines_own_settings():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    assert '"num_speculative_tokens_per_batch_size"' in at.code[0].value  # vLLM by default
    at.sidebar.selectbox(key="engine").set_value("sglang").run()
    assert not at.exception
    assert at.code[0].language == "bash" and "--speculative-algorithm STANDALONE" in at.code[0].value
    assert "speculative_config" not in at.code[0].value


def test_the_cli_json_carries_the_deploy_advice():
    out = run_cli("predict", "--engine", "SGLang", "--method", "EAGLE-3", "--json")
    doc = json.loads(out.stdout)
    assert doc["deploy"]["engine"] == "sglang" and doc["deploy"]["code"].startswith("--speculative-algorithm EAGLE3")
    assert doc["vllm_speculative_config"]["num_speculative_tokens"] >= 1  # the key scripts read stays


def test_sglang_is_told_how_the_best_k_changes_with_the_batch_since_it_runs_one():
    summary = summarize(Scenario.from_names(**{**SEED, "method": "eagle3", "draft": None, "alpha": 0.5}, engine="sglang"))
    ranges = [r for r in summary.schedule if r[2] > 0]
    assert len({k for _, _, k in ranges}) > 1  # the best k falls with the batch here
    expected = ", ".join(f"{k} up to batch {hi}" for _, hi, k in ranges[:-1]) + f" and {ranges[-1][2]} above that"
    assert deploy_advice(summary).note == (f"SGLang runs one k at every batch size: the best k here is {expected}: "
                                           "pick the k of your usual batch.")


def test_vllm_above_its_default_running_limit_gets_max_num_seqs_on_both_servers():
    """vLLM runs at most 256 sequences at once on an A100 (1024 on a GPU of 70 GiB or more that is not an
    A100: EngineArgs defaults, vllm/engine/arg_utils.py) unless --max-num-seqs is given; the model predicts
    the batch asked for, so the flags and the plan's servers set it and a note says why."""
    base = ("--target", "Llama 3.1 8B", "--method", "eagle", "--k", "3", "--alpha", "0.7", "--concurrency", "512")
    a100 = json.loads(run_cli("predict", "--gpu", "A100 80GB", *base, "--json").stdout)
    running = a100["plain"]["running"]
    assert 256 < running <= 512
    assert f"--max-num-seqs {running}" in a100["deploy_by_engine"]["vllm"]["command"]
    assert f"--max-num-seqs {running}" in a100["deploy"]["note"]
    assert any("runs at most 256 sequences at once on A100 80GB" in n for n in a100["notes"])
    h100 = json.loads(run_cli("predict", "--gpu", "H100 SXM", *base, "--json").stdout)  # 1024 there
    assert "--max-num-seqs" not in h100["deploy_by_engine"]["vllm"]["command"]
    assert not any("sequences at once" in n for n in h100["notes"])
    l40s = json.loads(run_cli("predict", "--gpu", "L40S", *base, "--json").stdout)  # the KV cache binds first
    assert l40s["plain"]["running"] < 256 and "--max-num-seqs" not in l40s["deploy_by_engine"]["vllm"]["command"]
    plan = json.loads(run_cli("plan", "--gpu", "A100 80GB", *base[:-2], "--alpha", "0.9", "--json").stdout)
    largest = max(r["concurrency"] for r in plan["runs"])
    assert largest > 256
    assert all(f"--max-num-seqs {largest}" in server for server in plan["servers"].values())
