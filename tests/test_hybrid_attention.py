"""Attention that is not one KV cache over the whole context: hybrid linear attention (Qwen3-Next,
Qwen3.5: a recurrent state per sequence, one snapshot per draft position), sparse attention
(DeepSeek-V3.2: reads capped at the indexer's top 2,048 tokens) and sliding windows (MiMo-V2-Flash,
Llama 4), each against the figure its config.json or issue thread gives."""

import numpy as np
import pytest

from specmodel import Scenario, predict
from specmodel.model import memory
from specmodel.model.presets import find_gpu, find_model
from specmodel.model.roofline import PassShape, memory_and_compute

MiB = 2 ** 20


def test_qwen35_397b_keeps_90_mib_of_recurrent_state_per_sequence_per_snapshot():
    """vLLM issue #54080: 90 MiB per sequence per snapshot on Qwen3.5-397B (45 Gated DeltaNet layers ×
    64 value heads × 128 × 128 in BF16; the convolution window adds 3%)."""
    m = find_model("Qwen3.5-397B-A17B")
    assert (m.layers, m.full_attention_layers, m.linear_attention_layers) == (60, 15, 45)
    assert memory.linear_state_bytes(m) / MiB == pytest.approx(90, rel=0.05)
    # only the 15 full-attention layers cache per token: 2 KV heads of 256, K and V, BF16
    assert memory.kv_bytes_per_token(m) == 15 * 2 * 2 * 256 * 2


def test_qwen3_next_matches_its_config():
    m = find_model("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim) == (48, 2048, 16, 2, 256)
    assert (m.linear_attention_layers, m.linear_key_heads, m.linear_value_heads) == (36, 16, 32)
    assert (m.experts, m.experts_per_token, m.shared_experts, m.moe_intermediate, m.mtp_layers) == (512, 10, 1, 512, 1)
    assert memory.kv_bytes_per_token(m) == 12 * 2 * 2 * 256 * 2  # 12 of 48 layers keep a KV cache


def test_speculation_on_a_hybrid_model_holds_one_state_snapshot_per_draft_position():
    s = Scenario.from_names(gpu="8x H200", target="Qwen3.5-397B-A17B", method="mtp", k=3, alpha=0.8, context_len=4096,
                 concurrency=4096)
    p = predict(s)
    m = find_model("Qwen3.5-397B-A17B")
    state = memory.linear_state_bytes(m)
    plain_seq = float(memory.kv_layout(m).resident_bytes(4096))
    spec_seq = float(memory.kv_layout(m).resident_bytes(4096 + 3, 4))
    assert spec_seq - plain_seq == pytest.approx(3 * state + 3 * memory.kv_bytes_per_token(m))
    # a sequence's 126 MB of KV and 93 MiB of state become 4 snapshots with k = 3: fewer than 60% as many fit
    ratio = p.spec.max_concurrency / p.plain.max_concurrency
    assert 0.3 < ratio < 0.6
    head = memory.draft_memory(m, "mtp").kv_bytes_per_token
    budget = memory.kv_budget_bytes(find_gpu("H200").memory_GB * 1e9 * 8, memory.resident_weight_bytes(m))
    weights = memory.draft_memory(m, "mtp").weights_bytes
    assert p.spec.max_concurrency == np.floor((budget - weights) / (spec_seq + head * 4099))


def test_a_hybrid_model_reads_its_state_each_step_not_a_kv_cache_that_grows():
    """A decode pass reads the 15 full layers' KV for the whole context and reads and writes the
    45 linear layers' state once; a verify pass of k + 1 tokens writes one snapshot per position."""
    m = find_model("Qwen3.5-397B-A17B")
    shape = PassShape.of_model(m)
    state = memory.linear_state_bytes(m)
    _, _, kv_short, _ = memory_and_compute(shape, 1, 1, 1_000)
    _, _, kv_long, _ = memory_and_compute(shape, 1, 1, 101_000)
    assert kv_long - kv_short == pytest.approx(100_000 * memory.kv_bytes_per_token(m))
    assert kv_short == pytest.approx(1_001 * memory.kv_bytes_per_token(m) + 2 * state)
    _, _, kv_verify, _ = memory_and_compute(shape, 1, 4, 1_000)
    assert kv_verify == pytest.approx(1_004 * memory.kv_bytes_per_token(m) + 5 * state)


def test_deepseek_v32_sparse_attention_reads_at_most_2048_tokens_of_latent_beyond_that_context():
    """DeepSeek-V3.2-Exp config.json: index_topk 2048, index_n_heads 64, index_head_dim 128. The
    indexer reads every token's FP8 key (132 bytes with its scale, per layer); the MLA attention
    only the top 2,048 latents. Everything stays cached."""
    v32, v3 = find_model("deepseek-ai/DeepSeek-V3.2-Exp"), find_model("DeepSeek-V3")
    assert (v32.index_topk, v32.index_heads, v32.index_head_dim) == (2048, 64, 128)
    latent = memory.kv_bytes_per_token(v3)  # 61 × (512 + 64) × 2
    index = 61 * (128 + 4)
    assert memory.kv_bytes_per_token(v32) == latent + index
    assert float(memory.kv_layout(v32).resident_bytes(100_000)) == (latent + index) * 100_000
    _, _, kv32, flops32 = memory_and_compute(PassShape.of_model(v32), 1, 1, 100_000)
    _, _, kv3, flops3 = memory_and_compute(PassShape.of_model(v3), 1, 1, 100_000)
    assert kv32 == pytest.approx(latent * 2048 + index * 100_001)
    # at 100K tokens the sparse model reads a seventh of the dense one: mostly the indexer's keys
    assert 6 < kv3 / kv32 < 9
    assert flops3 / flops32 > 10
    _, _, kv_short, _ = memory_and_compute(PassShape.of_model(v32), 1, 1, 1_000)  # below top-k: all of it
    assert kv_short == pytest.approx((latent + index) * 1_001)


def test_mimo_v2_flash_keeps_a_128_token_window_on_39_of_48_layers():
    m = find_model("XiaomiMiMo/MiMo-V2-Flash")
    assert (m.full_attention_layers, m.sliding_window_layers, m.sliding_window, m.mtp_layers) == (9, 39, 128, 3)
    full = 9 * 4 * (192 + 128) * 2  # 4 KV heads, keys 192 wide and values 128, BF16
    window = 39 * 8 * (192 + 128) * 2  # 8 KV heads on the windowed layers
    assert memory.kv_bytes_per_token(m) == full
    assert float(memory.kv_layout(m).resident_bytes(65_536)) == full * 65_536 + window * 128
    _, _, kv, _ = memory_and_compute(PassShape.of_model(m), 1, 1, 65_536)
    assert kv == pytest.approx(full * 65_537 + window * 128)


def test_llama_4_maverick_matches_its_config_and_reads_its_chunked_layers_up_to_8192_tokens():
    m = find_model("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8")
    assert (m.experts, m.experts_per_token, m.shared_experts, m.moe_layers, m.moe_intermediate) == (128, 1, 1, 24, 8192)
    assert (m.sliding_window, m.sliding_window_layers, m.max_context, m.active_params_B) == (8192, 36, 1048576, 17.0)
    per_layer = 2 * 8 * 128 * 2
    _, _, kv, _ = memory_and_compute(PassShape.of_model(m), 1, 1, 131_072)
    assert kv == pytest.approx(12 * per_layer * 131_073 + 36 * per_layer * 8192)


def test_h20_matches_its_datasheet():
    g = find_gpu("8x H20")  # 96 GB HBM3 at 4.0 TB/s, 148 TFLOPS dense FP16/BF16
    assert (g.memory_GB, g.bandwidth_GBps, g.dense_bf16_TFLOPS, g.dense_fp8_TFLOPS) == (96, 4000, 148, 296)


def test_speculation_pays_less_on_the_h20_than_on_the_h200():
    """The LMSYS MiMo-V2-Flash blog: on the H20, with its limited FLOPs, aggressive MTP can turn decoding
    compute-bound. Same model, same k: the H20's speedup at a large batch is below the H200's."""
    common = dict(tp=8, target="Llama 3.1 70B", method="eagle3", k=4, alpha=0.8, context_len=2048, concurrency=128)
    h20 = predict(Scenario.from_names(gpu="H20", **common)).speedup
    h200 = predict(Scenario.from_names(gpu="H200", **common)).speedup
    assert h20 < h200
