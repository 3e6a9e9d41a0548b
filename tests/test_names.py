"""Names as people write them: hardware, model and method strings from papers, blogs and engine
threads (every distinct one in the development set) map to the intended preset, or say why not."""

import csv

import pytest

from specmodel import SpecModelError
from specmodel.model.presets import (find_gpu, find_method, find_model, match_model, parse_engine,
                                     parse_hardware, parse_method, parse_model)
from specmodel.words.names import hardware_note, method_note, model_note
from tests.conftest import ROOT

DEV = ROOT / "tests" / "fixtures" / "published_dev.csv"

# text -> (GPU preset, count, tp, ep)
HARDWARE = {
    "8x B200 (TP=8)": ("B200", 8, 8, None),
    "4x H100 80GB (TP=4)": ("H100 SXM", 4, 4, None),
    "1x A100 40GB": ("A100 40GB", 1, 1, None),
    "GB200, TP=4": ("GB200", None, 4, None),
    "8x A100 (TP=8)": ("A100 80GB", 8, 8, None),
    "4x AMD Instinct MI355X (TP=4, EP)": ("MI355X", 4, 4, 4),
    "4x AMD Instinct MI355X (TP=4)": ("MI355X", 4, 4, None),
    "8x B200 (MLA TP=8, MoE EP=2)": ("B200", 8, 8, 2),
    "1x A100 80GB (PyTorch 2.0.1, CUDA 11.4)": ("A100 80GB", 1, 1, None),
    "RTX 3090 24GB (PyTorch 2.0.1, CUDA 11.8)": ("RTX 3090", None, None, None),
    "single TPU-v4": ("TPU v4", 1, 1, None),
    "8x H100 SXM (TP=8)": ("H100 SXM", 8, 8, None),
    "GPU not stated; TP=4": (None, None, 4, None),
    "GPU not stated; TP=1": (None, None, 1, None),
    "single GPU (model not stated)": (None, 1, 1, None),
    "NVIDIA H100 80GB HBM3": ("H100 SXM", None, None, None),
    "2xH200": ("H200", 2, 2, None),
    "1x H100 80GB": ("H100 SXM", 1, 1, None),
    "1x H100": ("H100 SXM", 1, 1, None),
    "4x H100 (TP=4)": ("H100 SXM", 4, 4, None),
    "1x A100": ("A100 80GB", 1, 1, None),
    "H100 80GB PCIe": ("H100 PCIe", None, None, None),
    "8×H100 NVL": ("H100 NVL", 8, 8, None),
    "2x MI300X, tensor parallel 2": ("MI300X", 2, 2, None),
    "L40S x4": ("L40S", 4, 4, None),
    "RTX 4090": ("RTX 4090", None, None, None),
    "4x RTX A6000 48GB": ("RTX A6000", 4, 4, None),
    "NVIDIA RTX 6000 Ada Generation": ("RTX 6000 Ada", None, None, None),
    "RTX A6000 Ada": ("RTX 6000 Ada", None, None, None),
    "NVIDIA A40": ("A40", None, None, None),
    "2x L40 (TP=2)": ("L40", 2, 2, None),
    "8x Tesla V100-SXM2-32GB": ("V100", 8, 8, None),
    "Tesla V100-SXM2-16GB": ("V100 16GB", None, None, None),
    "TPU v5e-8": ("TPU v5e", None, None, None),
    "Cloud TPU v5p": ("TPU v5p", None, None, None),
    "TPU v6e (Trillium)": ("TPU v6e", None, None, None),
    "v6e-8": ("TPU v6e", None, None, None),
    "8x H20": ("H20", 8, 8, None),
    "8×H20 96GB (TP8)": ("H20", 8, 8, None),
    "NVIDIA H20": ("H20", None, None, None),
    "H20 141GB": (None, None, None, None),  # the 141 GB H20 is no preset: not the 96 GB one
    "8x H200 (TP=8)": ("H200", 8, 8, None),
    "1x GH200": ("GH200", 1, 1, None),  # not the H200: a Grace Hopper superchip's 144 GB HBM3e version
    "NVIDIA GH200 Grace Hopper Superchip": ("GH200", None, None, None),
    "GH200 96GB HBM3": ("GH200 96GB", None, None, None),
    "2x GH200 144GB (TP=2)": ("GH200", 2, 2, None),
}


@pytest.mark.parametrize("text, expected", HARDWARE.items())
def test_hardware_strings(text, expected):
    m = parse_hardware(text)
    assert ((m.gpu.name if m.gpu else None), m.count, m.tp, m.ep) == expected
    assert text in hardware_note(m)  # the reading names what it read


def test_hardware_says_what_it_assumed():
    assert "TP not stated: taken as the GPU count (2)" in hardware_note(parse_hardware("2xH200"))
    assert "GPU not stated" in hardware_note(parse_hardware("GPU not stated; TP=4"))
    assert "no variant named: read as A100 80GB (not A100 40GB)" in hardware_note(parse_hardware("8x A100 (TP=8)"))
    assert "no variant named" not in hardware_note(parse_hardware("8x H100 SXM (TP=8)"))
    assert "141 GB stated, but the H20 preset has 96 GB: no preset for that variant" in hardware_note(parse_hardware("H20 141GB"))
    assert "no variant named" not in hardware_note(parse_hardware("H100 96GB")) and parse_hardware("H100 96GB").gpu is None
    assert "taken as 4" in hardware_note(parse_hardware("4x AMD Instinct MI355X (TP=4, EP)"))
    assert hardware_note(parse_hardware("")) == "no hardware named"
    assert parse_hardware("a toaster").gpu is None and "no GPU preset recognised" in hardware_note(parse_hardware("a toaster"))


# text -> (model preset, how, weight dtype)
MODELS = {
    "Qwen3-8B": ("Qwen3 8B", "preset", "bf16"),
    "Llama-3-70B-Instruct": ("Llama 3 70B", "preset", "bf16"),
    "Llama-3.1-8B-Instruct": ("Llama 3.1 8B", "preset", "bf16"),
    "Qwen3-8B (thinking mode)": ("Qwen3 8B", "preset", "bf16"),
    "Vicuna-7B-v1.3": ("Vicuna 7B", "alias", "bf16"),
    "Vicuna-13B-v1.3": ("Vicuna 13B", "alias", "bf16"),
    "Vicuna-33B-v1.3": ("Vicuna 33B", "alias", "bf16"),
    "Llama-2-7B(-32K)": ("Llama 2 7B", "derivative", "bf16"),
    "Llama-2-7B-32K": ("Llama 2 7B", "derivative", "bf16"),
    "T5-XXL 11B (T5 v1.1, enc-dec)": ("T5 v1.1 XXL", "alias", "bf16"),
    "GLM-4.5-Air (106B MoE)": ("GLM-4.5-Air", "preset", "bf16"),
    "Kimi-K2.5 (MXFP4, MoE)": ("Kimi-K2", "derivative", "fp4"),
    "Llama-3-70B": ("Llama 3 70B", "preset", "bf16"),
    "Llama-3.1-8B": ("Llama 3.1 8B", "preset", "bf16"),
    "MiniMax-M2.5 (MoE)": ("MiniMax-M2", "derivative", "fp8"),
    "Chinchilla 70B": ("Chinchilla 70B", "preset", "bf16"),
    "DeepSeek-R1-FP4 671B MoE": ("DeepSeek-R1", "preset", "fp4"),
    "Llama-2-7b-chat": ("Llama 2 7B", "preset", "bf16"),
    "QwQ-32B (Qwen2 arch)": ("QwQ-32B", "preset", "bf16"),
    "Qwen2-7B-Instruct": ("Qwen2 7B", "preset", "bf16"),
    "meta-llama/Llama-3.1-8B-Instruct": ("Llama 3.1 8B", "preset", "bf16"),
    "meta-llama/Meta-Llama-3.1-70B-Instruct": ("Llama 3.1 70B", "preset", "bf16"),
    "Qwen/Qwen2.5-7B-Instruct-AWQ": ("Qwen2.5 7B", "preset", "int4"),
    "Qwen/Qwen3-30B-A3B-FP8": ("Qwen3-30B-A3B", "preset", "fp8"),
    "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic": ("Llama 3.3 70B", "derivative", "fp8"),
    "hugging-quants/Meta-Llama-3.1-8B-Instruct-GPTQ-INT4": ("Llama 3.1 8B", "preset", "int4"),
    "nvidia/Llama-3.3-70B-Instruct-NVFP4": ("Llama 3.3 70B", "preset", "fp4"),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": ("DeepSeek-R1-Distill-Llama-8B", "preset", "bf16"),
    "DeepSeek-R1-Distill-Qwen-7B": ("Qwen2.5 7B", "derivative", "bf16"),
    "NousResearch/Hermes-3-Llama-3.1-70B": ("Llama 3.1 70B", "derivative", "bf16"),
    "openai/gpt-oss-120b (MXFP4, MoE)": ("gpt-oss-120b", "preset", "fp4"),
    "TinyLlama-1.1B": ("TinyLlama 1.1B", "preset", "bf16"),
    "turboderp/Qwama-0.5B-Instruct": ("Qwama 0.5B", "preset", "bf16"),
    "T5-small": ("T5 v1.1 small", "alias", "bf16"),
    "Qwen3-0.6B": ("Qwen3 0.6B", "preset", "bf16"),
    "mistralai/Mistral-7B-Instruct-v0.2": ("Mistral 7B", "alias", "bf16"),
    "Qwen/Qwen2.5-72B-Instruct-AWQ": ("Qwen2.5 72B", "preset", "int4"),
    "google/gemma-2-9b-it": ("Gemma 2 9B", "preset", "bf16"),
    "Gemma-2-27B-it": ("Gemma 2 27B", "preset", "bf16"),
    "Mixtral-8x22B-Instruct (MoE)": ("Mixtral 8x22B", "preset", "bf16"),
    "mistralai/Mixtral-8x7B-Instruct-v0.1": ("Mixtral 8x7B", "alias", "bf16"),
    "moonshotai/Kimi-K2-Instruct": ("Kimi-K2", "preset", "fp8"),
    "Llama-4-Scout-17B-16E-Instruct": ("Llama-4-Scout", "alias", "bf16"),
    "Qwen/Qwen3-Next-80B-A3B-Instruct": ("Qwen3-Next-80B-A3B", "preset", "bf16"),
    "Qwen3-Next-80B-A3B-Thinking-FP8": ("Qwen3-Next-80B-A3B", "preset", "fp8"),
    "Qwen3-Coder-Next": ("Qwen3-Next-80B-A3B", "derivative", "bf16"),
    "Qwen3.5-397B-A17B": ("Qwen3.5-397B-A17B", "preset", "bf16"),
    "Qwen/Qwen3.5-397B-A17B-FP8": ("Qwen3.5-397B-A17B", "preset", "fp8"),
    "Qwen3.5-122B-A10B": ("Qwen3.5-122B-A10B", "preset", "bf16"),
    "Qwen/Qwen3.5-35B-A3B": ("Qwen3.5-35B-A3B", "preset", "bf16"),
    "Qwen/Qwen3.6-35B-A3B-FP8": ("Qwen3.5-35B-A3B", "derivative", "fp8"),
    "DeepSeek-V3.2": ("DeepSeek-V3.2", "preset", "fp8"),
    "deepseek-ai/DeepSeek-V3.2-Exp": ("DeepSeek-V3.2", "alias", "fp8"),
    "DeepSeek-V3.2-Exp (DSA)": ("DeepSeek-V3.2", "alias", "fp8"),
    "deepseek-ai/DeepSeek-V3.2-Speciale": ("DeepSeek-V3.2", "derivative", "fp8"),
    "XiaomiMiMo/MiMo-V2-Flash": ("MiMo-V2-Flash", "preset", "fp8"),
    "MiMo-V2-Flash (309B MoE)": ("MiMo-V2-Flash", "preset", "fp8"),
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8": ("Llama-4-Maverick", "alias", "fp8"),
    "Llama 4 Maverick": ("Llama-4-Maverick", "preset", "bf16"),
    "meta-llama/Llama-3.1-405B-Instruct-FP8": ("Llama 3.1 405B", "preset", "fp8"),
    "Llama-3.1-405B": ("Llama 3.1 405B", "preset", "bf16"),
    "Meta-Llama-3.1-405B-Instruct": ("Llama 3.1 405B", "preset", "bf16"),
    "mistralai/Mistral-Large-Instruct-2411": ("Mistral Large 2", "alias", "bf16"),
    "Mistral-Large-Instruct-2407": ("Mistral Large 2", "alias", "bf16"),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": ("Qwen3-30B-A3B", "derivative", "bf16"),
    "nvidia/Llama-3.1-Nemotron-70B-Instruct-HF": ("Llama 3.1 70B", "derivative", "bf16"),
}


@pytest.mark.parametrize("text, expected", MODELS.items())
def test_model_strings(text, expected):
    m = parse_model(text)
    assert ((m.model.name if m.model else None), m.how, m.weight_dtype) == expected
    assert model_note(m).startswith(f"'{text}' -> {expected[0]}")


@pytest.mark.parametrize("text, why", [
    ("7.8B-parameter code model (per abstract)", "a size but no model name"),
    ("gemma-2-2b-it", "not a preset"),  # same family, another size: not silently Gemma 2 9B
    ("Llama-3.2-90B-Vision-Instruct", "not a preset"),  # another Llama size: not silently 3.1 70B or 405B
    ("Qwen3.5-9B", "not a preset"),  # another Qwen3.5 size: not silently one of the MoE presets
    ("", "no model named"),
])
def test_models_that_are_not_presets_say_why(text, why):
    m = parse_model(text)
    assert m.model is None and m.how == "unknown" and why in model_note(m)


def test_model_notes_say_what_was_dropped_or_assumed():
    assert "not used: (thinking mode)" in model_note(parse_model("Qwen3-8B (thinking mode)"))
    assert "context-extended variant (32K)" in model_note(parse_model("Llama-2-7B(-32K)"))
    assert "fp4 weights (from the name; the released checkpoint is fp8)" in model_note(parse_model("Kimi-K2.5 (MXFP4, MoE)"))
    assert "'671B' read as the model's size" in model_note(parse_model("DeepSeek-R1-FP4 671B MoE"))
    assert "'hermes 3' is not part of the preset's name" in model_note(parse_model("Hermes-3-Llama-3.1-70B"))


# text -> (method, draft model, k, depth, branching)
METHODS = {
    "draft model: T5-small (77M)": ("draft_model", "T5-small", None, None, None),
    "draft model: T5-base (250M)": ("draft_model", "T5-base", None, None, None),
    "draft model: T5-large (800M)": ("draft_model", "T5-large", None, None, None),
    "speculative sampling (SpS) with small draft model (see paper)": ("draft_model", None, None, None, None),
    "draft model: turboderp/Qwama-0.5B-Instruct": ("draft_model", "turboderp/Qwama-0.5B-Instruct", None, None, None),
    "n-gram / prompt lookup": ("ngram", None, None, None, None),
    "Self-speculation (StreamingLLM sparse-KV draft)": ("self_spec", None, None, None, None),
    "draft model: TinyLlama-1.1B with StreamingLLM KV": ("draft_model", "TinyLlama-1.1B", None, None, None),
    "n-gram (prompt lookup), fixed k=3": ("ngram", None, 3, None, None),
    "EAGLE-3, chain": ("eagle3", None, None, None, None),
    "EAGLE (EAGLE-1 head), chain": ("eagle", None, None, None, None),
    "n-gram (prompt lookup), fixed k=5": ("ngram", None, 5, None, None),
    "draft model (pairing per paper Table 5; not restated in blog)": ("draft_model", None, None, None, None),
    "draft model (pairing per paper Table 5; Qwen3-0.6B for Qwen3-8B)": ("draft_model", "Qwen3-0.6B", None, None, None),
    "EAGLE-3, chain (depth 3)": ("eagle3", None, None, 3, None),
    "EAGLE-3, tree depth 3, branching 2 (k=6 verified tokens)": ("eagle3", None, 6, 3, 2),
    "EAGLE-3, tree depth 3, branching 4 (k=21 verified tokens)": ("eagle3", None, 21, 3, 4),
    "EAGLE, chain (depth 3)": ("eagle", None, None, 3, None),
    "EAGLE, tree depth 3, branching 2 (k=6 verified tokens)": ("eagle", None, 6, 3, 2),
    "EAGLE, tree depth 3, branching 4 (k=21 verified tokens)": ("eagle", None, 21, 3, 4),
    "n-gram (prompt lookup)": ("ngram", None, None, None, None),
    "EAGLE-3": ("eagle3", None, None, None, None),
    "MTP (single released MTP head, applied for 3 draft tokens)": ("mtp", None, 3, None, None),
    "EAGLE-2": ("eagle", None, None, None, None),
    "EAGLE": ("eagle", None, None, None, None),
    "SpS (draft model)": ("draft_model", None, None, None, None),
    "Hydra": ("medusa", None, None, None, None),
    "PLD (prompt lookup)": ("ngram", None, None, None, None),
    "Medusa": ("medusa", None, None, None, None),
    "REST (retrieval)": ("ngram", None, None, None, None),
    "Lookahead": ("ngram", None, None, None, None),
    "MTP (MTP-Eagle chain, nextn=3)": ("mtp", None, 3, None, None),
    "MTP nextn=3 + relaxed acceptance (top-10, delta 0.6) in thinking phase": ("mtp", None, 3, None, None),
    "EAGLE-1 (yuhuili/EAGLE-LLaMA3.1-Instruct-8B)": ("eagle", None, None, None, None),
    "EAGLE-3 (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B)": ("eagle3", None, None, None, None),
    "EAGLE head (labelled 'Eagle-2' in PR), vLLM V1": ("eagle", None, None, None, None),
    "n-gram (prompt lookup max 4), vLLM v0": ("ngram", None, None, None, None),
    "EAGLE-2 in SGLang (num_steps 5, topk 8, num_draft_tokens 64)": ("eagle", None, 64, 5, 8),
    "EAGLE-2 in SGLang + torch.compile (same tree)": ("eagle", None, None, None, None),
    "EAGLE (user-trained draft)": ("eagle", None, None, None, None),
    "BASS batched speculative sampling with draft model + dynamic draft length": ("draft_model", None, None, None, None),
    "EAGLE-3 BF16 draft (lightseekorg/kimi-k2.5-eagle3)": ("eagle3", None, None, None, None),
    "EAGLE-3 FP8 draft (amd/kimi-k2.5-eagle3-fp8)": ("eagle3", None, None, None, None),
    "EAGLE-3 BF16 draft (thoughtworks/MiniMax-M2.5-Eagle3)": ("eagle3", None, None, None, None),
    "MTP nextn=3": ("mtp", None, 3, None, None),
    "eagle3": ("eagle3", None, None, None, None),
    "draft_model": ("draft_model", None, None, None, None),
}


@pytest.mark.parametrize("text, expected", METHODS.items())
def test_method_strings(text, expected):
    m = parse_method(text)
    assert (m.method, m.draft_model, m.k, m.draft_depth, m.branching) == expected
    assert method_note(m).startswith(f"'{text}' -> {expected[0]}")


def test_method_notes_say_how_it_is_costed():
    assert "costed as n-gram" in method_note(parse_method("REST (retrieval)"))
    assert "no draft model" in method_note(parse_method("Lookahead"))
    assert "costed as Medusa" in method_note(parse_method("Hydra"))
    assert "StreamingLLM KV budget" in method_note(parse_method("draft model: TinyLlama-1.1B with StreamingLLM KV"))
    assert "draft head lightseekorg/kimi-k2.5-eagle3 in BF16" in \
        method_note(parse_method("EAGLE-3 BF16 draft (lightseekorg/kimi-k2.5-eagle3)"))
    assert "relaxed (lossy) acceptance" in method_note(parse_method("MTP nextn=3 + relaxed acceptance"))
    nothing = parse_method("beam search")
    assert nothing.method is None and "no known speculation method" in method_note(nothing)


@pytest.mark.parametrize("text, engine", [
    ("EAGLE-2 in SGLang (num_steps 5)", "sglang"), ("EAGLE head, vLLM V1", "vllm"),
    ("NVIDIA TensorRT-LLM tech blog 2", "trtllm"), ("TRT-LLM", "trtllm"), ("Spec-Bench leaderboard", None),
    ("vLLM v0.10.1 (tree rows: Engine SGLang v0.5.9)", "vllm"),
])
def test_engine_from_text(text, engine):
    assert parse_engine(text) == engine


def test_find_and_match_keep_working_and_read_free_text():
    assert find_gpu("h100").name == "H100 SXM" and find_gpu("8x B200 (TP=8)").name == "B200"
    assert find_model("llama-3.1-8b").name == "Llama 3.1 8B"
    assert find_model("meta-llama/Llama-3.1-8B-Instruct").name == "Llama 3.1 8B"
    assert find_model("Qwen3-8B (thinking mode)").name == "Qwen3 8B"
    assert find_gpu("4x H100 80GB (TP=4)").name == "H100 SXM"
    assert match_model("Llama-3-70B-Instruct").name == "Llama 3 70B" and match_model("GPT-4") is None
    with pytest.raises(SpecModelError, match="unknown model 'Kimi-K2.5'"):
        find_model("Kimi-K2.5")  # a derivative is for the run reader to accept, with a remark
    for text, name in (("draft", "draft_model"), ("prompt_lookup", "ngram"), ("n-gram", "ngram"),
                       ("eagle", "eagle"), ("EAGLE-3", "eagle3"), ("eagle_3", "eagle3"), ("medusa", "medusa"),
                       ("mtp", "mtp"), ("self_spec", "self_spec"), ("EAGLE-3, chain", "eagle3")):
        assert find_method(text).name == name
    with pytest.raises(SpecModelError, match="unknown method"):
        find_method("beam search")



@pytest.mark.parametrize("text", ["TinyLlama", "tinyllama", "TINYLLAMA", "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
                                  "TinyLlama_v1.1", "tinyllama-1.1b", "TinyLlama 1.1B"])
def test_a_model_is_found_by_its_name_hf_id_or_alias_in_any_case_and_separators(text):
    assert find_model(text).name == "TinyLlama 1.1B" and match_model(text).name == "TinyLlama 1.1B"


@pytest.mark.parametrize("text", ["tiny-llama", "tiny llama", "Tiny_Llama", "tiny-llama-3m", "llama"])
def test_a_served_name_that_only_spells_a_presets_letters_names_no_preset(text):
    """The real-engine lab serves its 3 M-parameter model as 'tiny-llama': two words, where the TinyLlama
    1.1B preset's names are one ('TinyLlama', 'tinyllama'). Dropping the separator took one for the other
    (scrape said "the server serves TinyLlama 1.1B … give --target TinyLlama 1.1B"); the run reader never did."""
    assert match_model(text) is None and parse_model(text).model is None
    with pytest.raises(SpecModelError, match="unknown model"):
        find_model(text)


def _dev_column(name):
    with DEV.open(newline="", encoding="utf-8") as f:
        return sorted({row[name] for row in csv.DictReader(f)})


def test_every_string_in_the_development_set_is_covered_here():
    """A new string in the fixture must be added to the tables above (with its intended preset)."""
    unread_models = {"7.8B-parameter code model (per abstract)"}
    assert set(_dev_column("hardware")) - {""} <= set(HARDWARE)
    assert set(_dev_column("target_model")) - {""} <= set(MODELS) | unread_models
    assert set(_dev_column("draft_model_or_method")) - {""} <= set(METHODS)


def test_a_gpu_count_in_the_gpu_text_is_no_warning_where_the_row_has_its_own_tp_column():
    from specmodel.runs import read_runs

    head = "workload,gpu,target_model,method,k,concurrency,tokens_per_step,baseline_tok_s,spec_tok_s"
    row = "chat,4x H100 80GB,Llama-3-70B-Instruct,EAGLE-3,3,64,2.4,2400,2600"
    without = read_runs([("a.csv", f"{head}\n{row}\n".encode())])
    with_tp = read_runs([("b.csv", f"{head},tp\n{row},4\n".encode())])
    assert any("TP not stated" in p.message for p in without.problems)  # the count is taken as TP: said
    assert not any("TP not stated" in p.message for p in with_tp.problems)  # the tp column says it
    assert int(with_tp.rows["tp"].iloc[0]) == int(without.rows["tp"].iloc[0]) == 4
