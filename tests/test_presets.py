"""Presets as data: every number carries a source, a few checked against their config/datasheet,
and the MoE figures consistent with the architecture they describe."""

import json
import re
import subprocess
import sys

import pytest

from specmodel.model import presets
from specmodel.model.memory import DTYPES, kv_bytes_per_token
from specmodel.model.presets import find_gpu, find_method, find_model, gpu_names, model_names, parse_hardware
from tests.conftest import ROOT

URL = re.compile(r"https?://\S+")


@pytest.mark.parametrize("kind, names, find", [
    ("gpus", gpu_names(), find_gpu), ("models", model_names(), find_model), ("methods", presets.METHODS, find_method)])
def test_every_preset_names_a_source_url(kind, names, find):
    for name in names:
        assert URL.search(find(name).source), f"{kind} '{name}' has no source URL"


def test_the_issue_lists_are_all_presets():
    for gpu in ("GB200", "B200", "H100 PCIe", "H100 SXM", "H100 NVL", "H200", "A100 40GB", "A100 80GB", "L40S", "L4",
                "A10G", "RTX 3090", "RTX 4090", "MI300X", "MI325X", "MI355X", "TPU v4"):
        assert gpu in gpu_names()
    for model in ("Llama 2 7B", "Llama 2 13B", "Llama 2 70B", "Llama 3 8B", "Llama 3 70B", "Llama 3.1 8B",
                  "Llama 3.1 70B", "Llama 3.3 70B", "Llama 3.2 1B", "Llama 3.2 3B", "Vicuna 7B", "Vicuna 13B",
                  "Vicuna 33B", "Qwen2.5 0.5B", "Qwen2.5 1.5B", "Qwen2.5 3B", "Qwen2.5 7B", "Qwen2.5 14B",
                  "Qwen2.5 32B", "Qwen3 0.6B", "Qwen3 1.7B", "Qwen3 4B", "Qwen3 8B", "Qwen3 14B", "Qwen3 32B",
                  "QwQ-32B", "Qwen2 7B", "DeepSeek-R1-Distill-Llama-8B", "DeepSeek-R1-Distill-Llama-70B",
                  "TinyLlama 1.1B", "Qwama 0.5B", "Mixtral 8x7B", "Qwen3-30B-A3B", "Qwen3-235B-A22B", "GLM-4.5-Air",
                  "GLM-4.5", "gpt-oss-20b", "gpt-oss-120b", "Llama-4-Scout", "DeepSeek-V3", "DeepSeek-R1", "Kimi-K2",
                  "MiniMax-M2"):
        assert model in model_names()


def test_llama_3_1_8b_matches_its_config():
    m = find_model("Llama 3.1 8B")
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.intermediate, m.vocab) == \
        (32, 4096, 32, 8, 128, 14336, 128256)
    assert (m.tied_embeddings, m.max_context, m.family, m.weight_dtype, m.is_moe) == \
        (False, 131072, "llama3", "bf16", False)
    # unchanged for a dense bf16 model: 128 KiB of KV per token, weights read = all but the input table
    assert kv_bytes_per_token(m) == 2 * 32 * 8 * 128 * 2 == 131072
    assert m.matmul_params * 2 == pytest.approx((8.03e9 - 128256 * 4096) * 2)
    assert m.layer_params == 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336


def test_qwen3_30b_a3b_matches_its_config_and_card():
    m = find_model("Qwen3-30B-A3B")
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.vocab) == (48, 2048, 32, 4, 128, 151936)
    assert (m.experts, m.experts_per_token, m.shared_experts, m.moe_intermediate, m.moe_layers) == (128, 8, 0, 768, 48)
    assert (m.params_B, m.active_params_B, m.max_context, m.family) == (30.5, 3.3, 40960, "qwen3_moe")
    assert m.expert_params_per_layer == 3 * 2048 * 768


def test_deepseek_v3_matches_its_config_and_card():
    m = find_model("DeepSeek-V3")
    assert (m.layers, m.hidden, m.heads, m.vocab, m.intermediate) == (61, 7168, 128, 129280, 18432)
    assert (m.experts, m.experts_per_token, m.shared_experts, m.moe_intermediate, m.moe_layers) == (256, 8, 1, 2048, 58)
    assert (m.attention, m.q_lora_rank, m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim) == \
        ("mla", 1536, 512, 64, 128, 128)
    assert (m.params_B, m.active_params_B, m.weight_dtype, m.mtp_layers, m.max_context) == \
        (671.0, 37.0, "fp8", 1, 163840)
    # MLA caches one 512-wide latent plus a 64-wide rotary key per layer: 68.6 KiB per token in bf16
    assert kv_bytes_per_token(m) == 61 * (512 + 64) * 2


def test_h100_sxm_matches_its_datasheet():
    g = find_gpu("H100 SXM")
    assert (g.dense_bf16_TFLOPS, g.dense_fp8_TFLOPS, g.dense_fp4_TFLOPS) == (989, 1979, None)
    assert (g.bandwidth_GBps, g.memory_GB, g.interconnect, g.interconnect_GBps, g.vendor) == \
        (3350, 80, "NVLink 4", 450, "NVIDIA")


@pytest.mark.parametrize("text, gpu, tp, ep", [
    ("8×B300 TP8 + EP", "B300", 8, 8), ("GB300 NVL72", "GB300", None, None), ("8x H800 (TP=8)", "H800", 8, None),
    ("Intel Gaudi 3", "Gaudi 3", None, None), ("Gaudi2", "Gaudi 2", None, None), ("1x Tesla T4", "T4", 1, None)])
def test_todays_gpus_read_as_people_write_them(text, gpu, tp, ep):
    m = parse_hardware(text)
    assert (m.gpu.name, m.tp, m.ep) == (gpu, tp, ep)


def test_b300_matches_its_datasheet():
    g = find_gpu("B300")  # HGX B300 per GPU: 288 GB at 8 TB/s, dense FP4 13.5 PFLOPS
    assert (g.memory_GB, g.bandwidth_GBps, g.dense_fp4_TFLOPS, g.dense_bf16_TFLOPS) == (288, 8000, 13500, 2250)


def test_mi355x_matches_its_datasheet():
    g = find_gpu("MI355X")
    assert (g.dense_bf16_TFLOPS, g.dense_fp8_TFLOPS, g.dense_fp4_TFLOPS) == (2516.6, 5033.2, 10066.3)
    assert (g.bandwidth_GBps, g.memory_GB, g.interconnect, g.vendor) == (8000, 288, "Infinity Fabric", "AMD")


# Parts whose datasheets give other ratios (FP8 / BF16, FP4 / FP8): Blackwell Ultra's FP4 units run at
# three times FP8 (HGX B300: 108 PFLOPS dense FP4 vs 36 FP8 per 8 GPUs; GB300 NVL72: 1,080 vs 360);
# Gaudi 3's MME runs FP8 at the BF16 rate (1,835 TFLOPS both).
OTHER_RATIOS = {"B300": (2, 3), "GB300": (2, 3), "Gaudi 3": (1, 2)}


@pytest.mark.parametrize("name", gpu_names())
def test_lower_precision_doubles_dense_throughput(name):
    """Dense, not sparse: FP8 is twice BF16 and FP4 twice FP8 on every part that has them (within the
    datasheets' own rounding: the L40S sheet gives 362.05 BF16 and 733 FP8); a GPU without the units
    says None."""
    g = find_gpu(name)
    fp8, fp4 = OTHER_RATIOS.get(name, (2, 2))
    if g.dense_fp8_TFLOPS is not None:
        assert g.dense_fp8_TFLOPS == pytest.approx(fp8 * g.dense_bf16_TFLOPS, rel=0.015)
    if g.dense_fp4_TFLOPS is not None:
        assert g.dense_fp8_TFLOPS is not None
        assert g.dense_fp4_TFLOPS == pytest.approx(fp4 * g.dense_fp8_TFLOPS, rel=0.01)
    assert g.interconnect and g.interconnect_GBps > 0 and g.vendor


MOE = [n for n in model_names() if find_model(n).is_moe]


def test_the_moe_presets_are_the_ones_the_issue_lists():
    assert set(MOE) == {"Mixtral 8x7B", "Mixtral 8x22B", "Qwen3-30B-A3B", "Qwen3-235B-A22B", "GLM-4.5-Air", "GLM-4.5",
                        "gpt-oss-20b", "gpt-oss-120b", "Llama-4-Scout", "DeepSeek-V3", "DeepSeek-R1", "Kimi-K2", "MiniMax-M2",
                        "DeepSeek-V3.2", "Qwen3-Next-80B-A3B", "Qwen3.5-397B-A17B", "Qwen3.5-35B-A3B", "Qwen3.5-122B-A10B",
                        "MiMo-V2-Flash", "Llama-4-Maverick"}


# Cards whose active-parameter figure is the rounded name: Qwen3-Next-80B-A3B's card says "3B
# activated" where its config gives 3.56B (10 of 512 experts and the shared one in 48 layers, the
# gated attention, the Gated DeltaNet layers and the LM head).
_ROUNDED_ACTIVE = {"Qwen3-Next-80B-A3B": 0.20}


@pytest.mark.parametrize("name", MOE)
def test_moe_architecture_adds_up_to_the_model_card(name):
    """always_read (from the architecture) + the routed experts one token reads ≈ the card's active
    parameters, and + every expert (and the input embedding) ≈ the card's total, within 10%."""
    m = find_model(name)
    routed_per_token = m.moe_layers * m.experts_per_token * m.expert_params_per_layer
    assert m.always_read_params + routed_per_token == pytest.approx(m.active_params,
                                                                    rel=_ROUNDED_ACTIVE.get(name, 0.10))
    embed = 0 if m.tied_embeddings else m.vocab * m.hidden
    assert m.always_read_params + embed + m.routed_expert_params == pytest.approx(m.params_B * 1e9, rel=0.10)
    assert 0 < m.moe_layers <= m.layers and 0 < m.experts_per_token <= m.experts


# Encoder-decoder and paper-only models whose parameter count is not the decoder-layer formula:
# T5's decoder layers carry cross-attention (not in layer_params); Chinchilla's 70B is the paper's
# rounded figure for a non-gated FFN stored as an equal-parameter gated width.
_NOT_THE_FORMULA = {"T5 v1.1 XXL", "T5 v1.1 large", "T5 v1.1 base", "T5 v1.1 small", "Chinchilla 70B"}


@pytest.mark.parametrize("name", [n for n in model_names() if not find_model(n).is_moe])
def test_dense_config_adds_up_to_the_parameter_count(name):
    m = find_model(name)
    tables = m.vocab * m.hidden * (1 if m.tied_embeddings else 2)
    computed = m.layers * m.layer_params + tables
    tolerance = 0.25 if name in _NOT_THE_FORMULA else 0.01
    assert computed == pytest.approx(m.params_B * 1e9, rel=tolerance)
    assert m.always_read_params == pytest.approx(m.layers * m.layer_params + m.vocab * m.hidden)


@pytest.mark.parametrize("name", model_names())
def test_default_drafts_are_smaller_presets_of_the_same_tokenizer_family(name):
    m = find_model(name)
    assert m.family and m.max_context > 0 and m.weight_dtype in DTYPES
    if m.default_draft:
        d = find_model(m.default_draft)
        assert d.params_B < m.active_params / 1e9
        assert abs(d.vocab - m.vocab) <= 256, f"{name}'s draft {d.name} has another vocabulary"


def test_new_methods_are_listed_with_sources():
    assert presets.METHODS == ("draft_model", "ngram", "eagle", "eagle3", "medusa", "mtp", "self_spec")
    assert "2408.11049" in find_method("self_spec").source
    assert find_method("eagle3").label == "EAGLE-3"


def test_presets_json_lists_the_new_fields():
    r = subprocess.run([sys.executable, "-m", "specmodel", "presets", "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    gpu = next(g for g in data["gpus"] if g["name"] == "B200")
    assert (gpu["dense_fp8_TFLOPS"], gpu["dense_fp4_TFLOPS"], gpu["interconnect"], gpu["interconnect_GBps"]) == \
        (4500, 9000, "NVLink 5", 900)
    model = next(m for m in data["models"] if m["name"] == "Kimi-K2")
    assert (model["experts"], model["experts_per_token"], model["attention"], model["kv_lora_rank"]) == \
        (384, 8, "mla", 512)
    assert {m["name"] for m in data["methods"]} >= {"eagle3", "self_spec"}
    text = subprocess.run([sys.executable, "-m", "specmodel", "presets"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60).stdout
    assert "NVLink 5 900" in text and "[37B, 8/256 experts]" in text
