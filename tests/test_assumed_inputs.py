"""Issue 21: every published run predicted on what it names. Names as sources write them; a name that
matches nothing or two things is refused with the nearest presets; a missing k or acceptance is taken
from a documented default and marked assumed; a request rate becomes concurrency by Little's law; a
speedup of something the model does not predict is refused naming the metric."""

import json
import subprocess
import sys

import pytest

from specmodel.model.presets import parse_method
from specmodel.model.rate import at_request_rate
from specmodel.model.scenario import Scenario, predict
from specmodel.runs import RunDefaults, read_runs
from specmodel.runs.review import evaluate_runs
from tests.conftest import ROOT

HEAD = "workload,hardware,target_model,draft_model_or_method,k,concurrency_or_batch,qps,mean_accept_len,speedup,notes\n"


def read(body: str, **defaults):
    return read_runs([("runs.csv", (HEAD + body).encode())], RunDefaults(**defaults))


def refusal(table, row=2):
    found = [p for p in table.errors if p.row == row]
    assert found, [str(p) for p in table.problems]
    return found[0]


@pytest.mark.parametrize("target, near", [
    ("DeepSeek-V4-Pro-0813", "DeepSeek-V3"), ("Kimi-K2.6", "Kimi-K2"), ("GLM-5.1-FP8", "GLM-4.5")])
def test_a_model_no_preset_names_is_refused_with_the_nearest_presets(target, near):
    t = read(f"chat,8x H200,{target},MTP,3,1,,2.5,1.8,\n")
    err = refusal(t)
    assert t.rows.empty and err.reason == "target_unknown"
    assert f"target '{target}' is no preset" in err.message and near in err.message.split("nearest presets:")[1]
    chosen = read(f"chat,8x H200,{target},MTP,3,1,,2.5,1.8,\n", target="DeepSeek-V3", explicit=frozenset({"target"}))
    assert chosen.rows["target_preset"].tolist() == ["DeepSeek-V3"]  # predicted only on the user's own choice


def test_a_gpu_text_naming_two_gpus_is_refused_not_read_as_the_first():
    t = read("chat,RTX 3090 per one version; A100 per another,Vicuna-7B-v1.3,EAGLE,3,1,,3.0,2.1,\n")
    err = refusal(t)
    assert err.reason == "gpu_ambiguous" and "names RTX 3090 and A100 80GB" in err.message


def test_todays_hardware_as_people_write_it_is_its_own_preset():
    t = read("chat,8×B300 TP8 + EP,DeepSeek-R1,MTP,3,4,,2.6,1.9,\n")
    r = t.rows.iloc[0]
    assert (r["gpu_preset"], int(r["tp"]), int(r["ep"])) == ("B300", 8, 8)


def test_a_draft_named_after_sglang_does_not_make_a_vllm_run_an_sglang_one():
    t = read("chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3 (lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B),3,1,,"
             "2.4,1.7,vLLM v0.11 serve\n"
             "chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3 (lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B),3,1,,2.4,1.7,\n")
    assert t.rows["engine"].tolist()[0] == "vllm 0.11" and t.rows["engine"].tolist()[1] != "sglang"


def test_parallel_drafting_runs_one_draft_pass_for_all_k_tokens():
    m = parse_method("P-EAGLE (parallel drafting), k=7")
    assert (m.method, m.k, m.parallel) == ("eagle3", 7, True)
    assert parse_method("MTP (MTP-Eagle chain, nextn=3)").method == "mtp"  # not P-EAGLE
    assert parse_method("DFlash (block diffusion), k=15").parallel and parse_method("PARD, k=8").parallel
    chain = Scenario(gpu="H100 SXM", target="Llama 3.1 8B", method="eagle3", draft=None, alpha=0.7, k=7)
    parallel = Scenario(gpu="H100 SXM", target="Llama 3.1 8B", method="eagle3", draft=None, alpha=0.7, k=7,
                        parallel_draft=True)
    # the vLLM P-EAGLE blog's point: seven sequential head passes cost more than the one that drafts all seven
    assert predict(parallel).speedup > 1.3 * predict(chain).speedup


def test_missing_k_is_the_engines_documented_default_and_marked_assumed():
    t = read("reasoning,8x H200 (TP=8),DeepSeek-R1,MTP,,1,,1.85,1.6,vLLM v0.11\n"
             "chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,,1,,3.1,1.9,SGLang v0.5.9\n")
    mtp, eagle = t.rows.iloc[0], t.rows.iloc[1]
    assert int(mtp["k"]) == 1 and "k" in mtp["assumed"]  # vLLM: the checkpoint's one MTP layer
    assert "num_nextn_predict_layers" in mtp["remarks"]
    assert (int(eagle["k"]), int(eagle["draft_depth"]), int(eagle["branching"])) == (7, 5, 4)  # SGLang's auto tree
    t = read("chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,,1,,3.1,1.9,vLLM v0.11\n")
    assert refusal(t).reason == "no_k"  # vLLM has no default num_speculative_tokens for EAGLE: refused


def test_missing_acceptance_never_comes_from_another_source_and_widens_the_band():
    body = ("gsm8k,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,3,1,,2.6,1.8,\n"
            "gsm8k,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,3,8,,,1.5,\n")
    head = "source_id," + HEAD
    t = read_runs([("r.csv", (head + "A," + body.split("\n")[0] + "\nB," + body.split("\n")[1] + "\n").encode())])
    other = t.rows.iloc[1]  # source B: source A's row is not borrowed; the published EAGLE-3 figure is
    assert other["acceptance_from"].startswith("filled from a published figure") and "acceptance" in other["assumed"]
    ev = evaluate_runs(t.rows)
    own = read("gsm8k,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,3,8,,2.6,1.5,\n")
    own_ev = evaluate_runs(own.rows)
    width = lambda e: float(e["speedup_high"].iloc[-1] / e["speedup_low"].iloc[-1])  # noqa: E731
    assert width(ev) > width(own_ev) * 1.2


def test_context_from_isl_osl_and_input_output_texts():
    t = read("ISL 3200 / OSL 800,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,3,8,,2.6,1.5,\n"
             "16K input / 1K output,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,3,8,,2.6,1.5,\n")
    assert t.rows["context_len"].tolist() == [3600, 16384 + 512]
    assert t.rows["output_len"].tolist() == [800, 1024] and "context" not in "".join(t.rows["assumed"])


def test_a_request_rate_sweep_is_predicted_by_littles_law_and_says_when_an_arm_saturates():
    body = "".join(f"ShareGPT ISL 300 / OSL 200,4x H100 (TP=4),Llama-3-70B,draft model: turboderp/Qwama-0.5B-Instruct,"
                   f"4,,{q},2.8,,avg end-to-end request latency\n" for q in (1, 4, 10, 40))
    t = read(body)
    ev = evaluate_runs(t.rows)
    assert ev["predicted_speedup"].notna().all() and ev["rate_driven"].all()
    assert "by Little's law the plain arm runs at concurrency" in ev["remarks"].iloc[0]
    ratios = ev["predicted_speedup"].tolist()
    assert ratios[0] > 1.3 and ratios[-1] < 1  # helps at QPS 1, loses once the speculative arm saturates
    assert "the speculative arm saturates" in ev["remarks"].iloc[-1]
    s = Scenario(gpu="H100 SXM", tp=4, target="Llama 3 70B", method="draft_model", draft="Qwama 0.5B",
                 alpha=0.6, k=4)
    low = at_request_rate(s, 1, 200, 300)
    assert low.spec.concurrency < low.plain.concurrency and not low.plain.saturated  # faster requests: fewer in flight


@pytest.mark.parametrize("note, reason", [
    ("total throughput (prefill + decode) tok/s", "metric"), ("request throughput (req/s)", "metric"),
    ("TTFT p50", "metric")])
def test_a_speedup_of_another_quantity_is_refused_naming_it(note, reason):
    t = read(f"chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,3,8,,2.6,1.5,{note}\n")
    err = refusal(t)
    assert err.reason == reason and "which the model does not predict" in err.message


def test_runs_json_counts_predicted_refused_by_reason_and_assumed(tmp_path):
    f = tmp_path / "runs.csv"
    f.write_text(HEAD + "chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,3,8,,2.6,1.5,\n"
                 "chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,,1,,3.1,1.9,SGLang v0.5.9\n"
                 "chat,GPU not stated,Llama-3.1-8B-Instruct,EAGLE-3,3,1,,3.1,1.9,\n"
                 "chat,1x H100 80GB,DeepSeek-V4-Pro-0813,MTP,3,1,,3.1,1.9,\n")
    r = subprocess.run([sys.executable, "-m", "specmodel", "runs", str(f), "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    s = json.loads(r.stdout)["summary"]
    assert (s["rows_in_files"], s["rows_predicted"], s["rows_refused"]) == (4, 2, 2)
    assert s["refused_by_reason"] == {"gpu_unknown": 1, "target_unknown": 1}
    assert s["assumed"] == {"k": 1, "acceptance": 0, "context": 2}


def test_a_published_figure_from_another_model_family_widens_the_band_and_the_row_says_so():
    row = "random 1K in / 1K out,4x AMD Instinct MI355X (TP=4),Kimi-K2.5 (MXFP4 MoE),EAGLE-3,3,16,,{al},1.8,\n"
    borrowed = read(row.format(al=""))
    r = borrowed.rows.iloc[0]
    assert "acceptance" in r["assumed"] and "the figure is for another model family" in r["remarks"]
    assert "the band spans α" in r["remarks"] and "as for any assumed acceptance" in r["remarks"]
    own = read(row.format(al="2.6"))
    width = lambda e: float(e["speedup_high"].iloc[0] / e["speedup_low"].iloc[0])  # noqa: E731
    assert width(evaluate_runs(borrowed.rows)) > width(evaluate_runs(own.rows)) * 1.2


@pytest.mark.parametrize("method, k, depth", [("Medusa", 63, 4), ("Hydra", 63, 4)])
def test_spec_bench_rows_without_k_take_the_benchmark_scripts_default_tree(method, k, depth):
    """Spec-Bench's scripts (commit fd2c1cd7): Medusa and Hydra default to the 63-node tree mc_sim_7b_63."""
    t = read(f"Spec-Bench (6 tasks) - overall,RTX 3090 24GB,Vicuna-7B-v1.3,{method},,1,,2.3,1.8,\n")
    r = t.rows.iloc[0]
    assert (int(r["k"]), int(r["draft_depth"])) == (k, depth) and "k" in r["assumed"]
    assert "Spec-Bench" in r["remarks"] and "fd2c1cd7" in r["remarks"]
    assert evaluate_runs(t.rows)["predicted_speedup"].notna().all()


def test_a_medusa_tree_holds_one_head_per_level_not_per_tree_token():
    """63 Medusa heads of Vicuna 7B would be 17 GB and not fit beside it on a 24 GB RTX 3090; the
    tree mc_sim_7b_63 is 4 levels deep: 4 heads."""
    s = Scenario(gpu="RTX 3090", target="Vicuna 7B", method="medusa", k=63, draft_depth=4, branching=10, alpha=0.6)
    p = predict(s)
    assert p.spec.max_concurrency >= 1
    four = predict(Scenario(gpu="RTX 3090", target="Vicuna 7B", method="medusa", k=4, alpha=0.6))
    assert p.spec.step_ms > four.spec.step_ms  # the verify pass carries 64 tokens, the heads are the same 4
