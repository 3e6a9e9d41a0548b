"""Issue 21: every published run predicted on what it names. Names as sources write them; a name that
matches nothing or two things is refused with the nearest presets; a missing k or acceptance is taken
from a documented default and marked assumed; a request rate becomes concurrency by Little's law; a
speedup of something the model does not predict is refused naming the metric."""

import json

import pytest

from specmodel.model.presets import parse_method
from specmodel.model.rate import at_request_rate
from specmodel.model.scenario import Scenario, predict
from specmodel.runs import RunDefaults, read_runs
from specmodel.runs.review import evaluate_runs
from tests.cli_runner import run_cli
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
    t = read(f"chat,8x H200,{target},MTP,3,1,,2.5,,\n")  # no measured speedup: refused
    err = refusal(t)
    assert t.rows.empty and err.reason == "target_unknown"
    assert f"target '{target}' is no preset" in err.message and near in err.message.split("nearest presets:")[1]
    measured = read(f"chat,8x H200,{target},MTP,3,1,,2.5,1.8,\n").rows  # measured first: judged on its 1.8x
    assert measured["target_preset"].tolist() == [None] and near in measured["no_prediction"].iloc[0]
    chosen = read(f"chat,8x H200,{target},MTP,3,1,,2.5,1.8,\n", target="DeepSeek-V3", explicit=frozenset({"target"}))
    assert chosen.rows["target_preset"].tolist() == ["DeepSeek-V3"]  # predicted only on the user's own choice


def test_a_gpu_text_naming_two_gpus_is_refused_not_read_as_the_first():
    t = read("chat,RTX 3090 per one version; A100 per another,Vicuna-7B-v1.3,EAGLE,3,1,,3.0,,\n")
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
    chain = Scenario.from_names(gpu="H100 SXM", target="Llama 3.1 8B", method="eagle3", draft=None, alpha=0.7, k=7)
    parallel = Scenario.from_names(gpu="H100 SXM", target="Llama 3.1 8B", method="eagle3", draft=None, alpha=0.7, k=7,
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


def test_k_not_stated_where_the_engine_has_no_default_spans_the_ks_it_runs_and_widens_the_band():
    """vLLM has no default num_speculative_tokens for EAGLE (its docs' examples use 2 to 5): the row is
    predicted at 3, marked assumed, and its band spans k = 2..5 (the vLLM AMD blog's Kimi-K2.5 rows)."""
    row = ('random prompts 1K in / 1K out,4x AMD Instinct MI355X (TP=4),"Kimi-K2.5 (MXFP4, MoE)",'
           "EAGLE-3 BF16 draft (lightseekorg/kimi-k2.5-eagle3),{k},16,,,1.81,vLLM v0.19.0 ROCm; k not stated for Kimi\n")
    unstated, stated = read(row.format(k="")), read(row.format(k="3"))
    r = unstated.rows.iloc[0]
    assert int(r["k"]) == 3 and tuple(r["k_spread"]) == (2, 3, 4, 5) and "k" in r["assumed"]
    assert "k not stated and no documented default: predicted at k = 3, the band spans k = 2-5" in r["remarks"]
    assert "docs.vllm.ai" in r["remarks"]
    ev, own = evaluate_runs(unstated.rows).iloc[0], evaluate_runs(stated.rows).iloc[0]
    assert ev["predicted_speedup"] == pytest.approx(own["predicted_speedup"])  # same point, k 3
    assert ev["speedup_high"] / ev["speedup_low"] > 1.2 * own["speedup_high"] / own["speedup_low"]
    given = read(row.format(k=""), k=4, explicit=frozenset({"k"})).rows.iloc[0]  # --k 4 (or the k box set)
    assert int(given["k"]) == 4 and _no_spread(given["k_spread"]) and "k = 4 from the settings" in given["remarks"]
    # the page's empty k box still reads guidellm files at k = 4, but that k is no statement about this run
    assert tuple(read(row.format(k=""), k=4).rows.iloc[0]["k_spread"]) == (2, 3, 4, 5)
    t = read("chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,,1,,3.1,1.9,TensorRT-LLM 0.20\n")
    # an engine whose k is neither documented nor spread: no prediction, but its measured verdict needs no k (issue 40)
    assert not t.errors and "k (draft tokens per step) is not in the file" in t.rows.iloc[0]["no_prediction"]


def test_spec_bench_sps_runs_its_documented_draft_and_spans_the_assisted_generation_schedule():
    """Spec-Bench leaderboard, "SpS (draft model)", mean accepted tokens 2.29, 1.83x on an RTX 3090: its
    eval.sh runs vicuna-68m; HF assisted generation starts at 5 draft tokens and moves by +2 / -1."""
    t = read('"Spec-Bench (6 tasks: MT conv, translation, summarization, QA, math, RAG) - overall",'
             '"RTX 3090 24GB (PyTorch 2.0.1, CUDA 11.8)",Vicuna-7B-v1.3,SpS (draft model),,1,,2.29,1.83,\n')
    r = t.rows.iloc[0]
    assert (r["draft_preset"], int(r["k"])) == ("Vicuna 68M", 5) and set(r["assumed"].split(", ")) >= {"k", "draft"}
    ev = evaluate_runs(t.rows).iloc[0]
    assert ev["speedup_low"] < 1.83 < ev["speedup_high"] and ev["speedup_high"] / ev["speedup_low"] > 2
    assert 1.83 * 0.7 < ev["predicted_speedup"] < 1.83 * 1.3


def test_a_draft_the_row_does_not_name_spans_the_target_familys_drafts():
    """SpecDecode-Bench, Llama-3-70B-Instruct on 4x H100: "draft model (pairing per paper Table 5; not
    restated in blog)", k 3, 2.35x at batch 1: predicted with Llama 3.2 1B, the band over 1B, 3B and 8B."""
    row = ("GSM8K,4x H100 80GB (TP=4),Llama-3-70B-Instruct,{draft},3,1,,,2.35,vLLM v0.10.1\n")
    unnamed = read(row.format(draft="draft model (pairing per paper Table 5; not restated in blog)"))
    named = read(row.format(draft="draft model: meta-llama/Llama-3.2-1B-Instruct"))
    assert _no_spread(named.rows.iloc[0]["draft_spread"])
    r = unnamed.rows.iloc[0]
    assert r["draft_preset"] == "Llama 3.2 1B" and "draft" in r["assumed"].split(", ")
    assert "the band spans every draft preset of its family at most 1/6 of its size: Llama 3.2 1B, Llama 3.2 3B, " \
           "Llama 3 8B" in r["remarks"]
    ev, own = evaluate_runs(unnamed.rows).iloc[0], evaluate_runs(named.rows).iloc[0]
    assert ev["speedup_low"] < own["speedup_low"] and ev["speedup_high"] >= own["speedup_high"]
    chinchilla = read("XSum,,Chinchilla 70B,speculative sampling (SpS) with small draft model (see paper),4,1,,,1.92,\n")
    # no Chinchilla-family draft preset: not predicted, judged on its measured 1.92x (measured first, issue 39)
    assert chinchilla.rows["draft_preset"].tolist() == [None] and not chinchilla.errors
    assert "names no draft model" in chinchilla.rows["no_prediction"].iloc[0]


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
    s = Scenario.from_names(gpu="H100 SXM", tp=4, target="Llama 3 70B", method="draft_model", draft="Qwama 0.5B",
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
    r = run_cli("runs", str(f), "--json")  # in-process; tests/test_cli_smoke.py runs `runs` as a subprocess
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["summary"]
    assert (s["rows_in_files"], s["rows_predicted"], s["rows_refused"]) == (4, 2, 2)
    assert s["refused_by_reason"] == {"gpu_unknown": 1, "target_unknown": 1}
    assert s["assumed"] == {"k": 1, "acceptance": 0, "context": 2, "draft": 0, "engine": 1}  # the first names none


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
    s = Scenario.from_names(gpu="RTX 3090", target="Vicuna 7B", method="medusa", k=63, draft_depth=4, branching=10, alpha=0.6)
    p = predict(s)
    assert p.spec.max_concurrency >= 1
    four = predict(Scenario.from_names(gpu="RTX 3090", target="Vicuna 7B", method="medusa", k=4, alpha=0.6))
    assert p.spec.step_ms > four.spec.step_ms  # the verify pass carries 64 tokens, the heads are the same 4


def _no_spread(cell) -> bool:
    return cell is None or (isinstance(cell, float) and cell != cell)


def test_a_sweep_at_a_k_nobody_stated_is_not_calibrated_on():
    """The AMD blog's Kimi-K2.5 EAGLE-3 sweep (1.90x at batch 4 down to 1.69x at 64, "k not stated"):
    predicted across k = 2..5, but its fall with batch says nothing about the engine's costs at a k that
    was guessed, so calibration leaves it out; the same sweep with its k stated is fitted on."""
    from specmodel.errors import SpecModelError
    from specmodel.runs.calibrate import calibrate

    row = ('random prompts 1K in / 1K out,4x AMD Instinct MI355X (TP=4),"Kimi-K2.5 (MXFP4, MoE)",'
           "EAGLE-3 BF16 draft (lightseekorg/kimi-k2.5-eagle3),{k},{c},,,{s},vLLM v0.19.0 ROCm\n")
    sweep = lambda k: "".join(row.format(k=k, c=c, s=s) for c, s in  # noqa: E731
                              ((4, 1.90), (8, 1.89), (16, 1.81), (32, 1.83), (64, 1.69)))
    with pytest.raises(SpecModelError, match="nothing to calibrate on"):
        calibrate(read(sweep("")).rows)
    assert calibrate(read(sweep("3")).rows).rows_used == 5


# MagicDec (S04 of the development set: arXiv:2408.11049, its own PyTorch code, no serving engine named):
# StreamingLLM self-speculation on 8x A100 at 32k context.
MAGICDEC = ('"PG-19, prefill 32000 tokens",8x A100 (TP=8),Llama-3.1-8B,self-speculation (StreamingLLM draft),3,{c},,,'
            '{s},"Exact table values{engine}"\n')


def test_a_run_naming_no_engine_is_marked_assumed_and_says_what_the_engine_decides():
    unnamed = evaluate_runs(read(MAGICDEC.format(c=64, s=1.38, engine="")).rows).iloc[0]
    named = evaluate_runs(read(MAGICDEC.format(c=64, s=1.38, engine="; vLLM v0.10.1")).rows).iloc[0]
    assert "engine" in unnamed["assumed"].split(", ") and "engine" not in named["assumed"].split(", ")
    assert "no engine named: predicted with vLLM (V1)'s overheads and verify kernels" in unnamed["remarks"]
    assert "SGLang and TensorRT-LLM pack the verify pass's GQA group" in unnamed["remarks"]
    # vLLM's FlashAttention-2 verify on an A100 reads the KV cache per query head; SGLang's packs the GQA
    # group: at 32k context that is the difference between a loss and a gain, as the remark says
    sglang = evaluate_runs(read(MAGICDEC.format(c=64, s=1.38, engine="; SGLang v0.5.9")).rows).iloc[0]
    assert unnamed["predicted_speedup"] < 1.0 < sglang["predicted_speedup"]


def test_an_engine_given_for_the_files_replaces_the_assumed_one(tmp_path):
    path = tmp_path / "magicdec.csv"
    path.write_text(HEAD + MAGICDEC.format(c=64, s=1.38, engine=""), encoding="utf-8")

    def runs(*extra):
        r = run_cli("runs", str(path), "--json", *extra)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    unnamed, given = runs(), runs("--engine", "sglang 0.5.9")
    assert unnamed["summary"]["assumed"]["engine"] == 1 and given["summary"]["assumed"]["engine"] == 0
    row = given["rows"][0]
    assert row["engine"] == "sglang 0.5.9" and "no engine named" not in row["remarks"]
    assert row["predicted_speedup"] > 1.0 > unnamed["rows"][0]["predicted_speedup"]


def test_every_refusal_reason_is_in_the_docs_table_and_no_other():
    """runs/records.REFUSAL_REASONS is the vocabulary of `refused_by_reason`; docs/runs-review.md's table lists each
    (but `invalid`, a value out of range or unreadable: the file's problems say which) and no code of its own."""
    import re

    from specmodel.runs.records import REFUSAL_REASONS
    text = (ROOT / "docs" / "runs-review.md").read_text(encoding="utf-8")
    table = text[text.index("| reason | what the row has |"):]
    table = table[:table.index("\n\n")]
    documented = {code for line in table.splitlines()[2:] for code in re.findall(r"`(\w+)`", line.split(" | ")[0])}
    assert documented == set(REFUSAL_REASONS) - {"invalid"}
