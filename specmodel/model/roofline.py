"""Time of one forward pass: B sequences, q query tokens each, context L, on a tensor-parallel group.

    T = smax(W(n)/BW_w, F_lin(n)/FLOPS) + layers · smax(KV/BW_kv, F_attn/FLOPS, floor) + T_allreduce + t_fixed

with n = B·q tokens in the pass.

- Weights. W(n) is what the pass reads: the dense part always; for a mixture-of-experts model the
  routed experts touched by n tokens, E·(1 − (1 − top_k/E)^n) per MoE layer, so a verify pass of
  B·(k+1) tokens reads more expert weights than a decode pass of B tokens. Bytes per parameter
  follow the weight dtype (bf16 2, fp8 1, fp4/int4 ~0.53 with group scales); FP8 and FP4 weights
  run on the GPU's FP8/FP4 tensor cores where it has them, INT4 (weight-only) on BF16.
- Attention, per layer: the KV cache read (at the KV dtype) or the attention FLOPs, with a latency
  floor per layer (~20 µs on an H200 with CUDA graphs: bench/evidence/h200_steptime.csv).
  Verify passes (q > 1) in engines use GQA-packed kernels (FlashInfer, FlashAttention-3) that read
  the cache once whatever q is (bench/evidence/h200_gqa_verify.csv: within ~3% of q = 1 at
  batch ≥ 16), but without split-KV: the KV read then runs on B · kv_heads thread blocks and reaches
  only that fraction of the GPU's multiprocessors (0.3 TB/s at batch 1 on an H200).
- Tensor parallelism: weights, KV heads and FLOPs split over tp GPUs; two all-reduces per layer of
  n · hidden bf16 activations, each costing a latency plus a ring transfer over the interconnect.
- smax is a smooth maximum (a^p + b^p)^(1/p): real GEMMs leave the memory floor gradually and run
  15-30% above the hard maximum near the ridge (p = 3 gives +26% at the ridge).

Engine overheads (scheduling, launches, sampling: per pass, per step and per sequence) are not a
property of a pass; scenario.py adds them from data/engines.json.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.model import memory
from specmodel.model.memory import BYTES_PER_VALUE
from specmodel.model.parameters import PARAMETERS
from specmodel.model.presets import GPU, Model

# One small all-reduce's latency by interconnect kind, µs, matched on the words of the GPU preset's
# `interconnect`. None is measured here. NVLink 8: chosen within the ~5-10 µs published for vLLM's custom
# all-reduce on decode-sized messages (vLLM PR #2192). PCIe 25: chosen within NCCL's ~20-30 µs over PCIe
# (no source recorded). Infinity Fabric / xGMI 12 and TPU ICI 10: chosen near AMD quick-reduce's ~10 µs
# (no source recorded; no measurement found).
ALLREDUCE_LATENCY_US = (("nvlink", 8.0), ("infinity", 12.0), ("xgmi", 12.0), ("ici", 10.0), ("pcie", 25.0))
DEFAULT_ALLREDUCE_LATENCY_US = 25.0  # chosen: the PCIe figure, the slowest, for an interconnect not named
DEFAULT_INTERCONNECT_GBPS = 32.0  # published (PCIe 4.0 spec): PCIe 4.0 x16, one direction: a GPU preset without a figure
# Share of a token's experts that the next token of the same sequence reuses beyond chance. Published
# for production MoE models served with vLLM (Cohere, "Why MoE models get more from speculative
# decoding", 2026-04-21; bench/evidence/moe_routing_locality.csv): verifying 4 consecutive tokens
# loads about 2.5x one token's unique experts rather than 4x, up to 31% fewer than independent routing
# would; one token shares 38% of its experts with the next. 4 tokens as 1 + 3(1 - L) independent
# draws give 2.4-2.5x and 35-37% at L = 0.5 (128-384 experts, top-8); the neighbour's overlap alone
# would give L = 0.38. The H200 probe routes at random, which has none (and there the union of
# independent draws below matches the experts it touched within 3%).
EXPERT_LOCALITY = 0.5
# Fitted to measurements: one routed MoE layer's expert FFNs on an H200 (bench/evidence/h200_moe_layer.csv, 2026-12-01,
# torch._grouped_mm in a CUDA graph, three expert shapes, 1-2048 tokens): time = a fixed 43-75 µs
# per layer (routing groups, the grouped GEMM's launch and tile scheduling, the activation) + the
# touched experts' bytes at 3.15 TB/s, i.e. 0.73 of the bandwidth dense weight reads reach at
# eta_bw 0.9 (mean error 1.6-2.5%). The fixed part is what keeps a verify pass, which touches up to
# k + 1 times more experts, from costing k + 1 times a decode pass at small batch.
MOE_LAYER_US = 55.0
EXPERT_BW_SHARE = 0.73  # fitted: see above (bench/evidence/h200_moe_layer.csv, probe_moe_h200.py)
# Measured: bandwidth one thread block of a verify (q > 1) attention kernel reaches reading its KV head without
# split-KV: bench/evidence/h200_gqa_verify.csv, packed, batch 1, 8 KV heads: 311 GB/s at 4k
# context and 343 GB/s at 16k, i.e. ~40 GB/s per block. Latency-bound, so taken as the same on
# every GPU (capped by the GPU's own bandwidth).
KV_BLOCK_GBPS = 40.0
# Measured (bench/evidence/h200_steptime_probe.py): verify attention (q > 1) in a kernel that does not
# pack a GQA group's query heads (FlashAttention-2, PyTorch SDPA) reads each KV head once per query head:
# bench/evidence/h200_steptime.csv shows 3.2× the one-token time at batch ≥ 16 for Llama 3.1 8B's groups
# of 4 (L2 hits save the rest), i.e. 0.8 × the group size. Packed kernels (FlashAttention-3 on Hopper and Blackwell, FlashInfer,
# TensorRT-LLM's XQA) read it once (h200_gqa_verify.csv).
UNPACKED_REREAD_PER_HEAD = 0.8
# Chosen (no measurement found): the exponent of the smooth maximum between a pass's attention time and
# its per-layer attention floor (layers · attn_floor_us). Sharper than smooth_p's 3 (GEMMs run 15-30% above
# the hard maximum at the ridge, docs/model.md), so the floor acts almost as a hard minimum; the
# value came in with the floor (commit e613524) with no record of a fit. At a tie it adds 2^(1/6) - 1 = 12%.
ATTN_FLOOR_SMOOTH_P = 6.0


@dataclass(frozen=True)
class Efficiency:
    """The model's free parameters: what presets cannot know and calibration fits."""

    eta_bw: float = 0.9  # achieved fraction of peak memory bandwidth streaming weights
    eta_flops: float = 0.65  # achieved fraction of dense peak FLOPS (H200 GEMMs: 0.63-0.69)
    smooth_p: float = 3.0  # sharpness of the memory/compute transition
    t_fixed_ms: float = 0.0  # extra per forward pass, on top of the engine's own
    t_spec_overhead_ms: float = 0.0  # extra per speculative step, on top of the engine's own
    # Optional extra bandwidth penalty of a small model: efficiency × (weight_GB / small_model_ref_GB)
    # ** small_model_exponent below the reference size. 0 by default: the per-kernel latency below
    # already explains why a 1B model's read ran at 56% of peak where an 8B model's ran at 79%.
    small_model_ref_GB: float = 14.0
    small_model_exponent: float = 0.0
    # Latency of one weight GEMM kernel beyond its bytes (ramp-up and tail): 4 per decoder layer plus
    # the LM head. With eta_bw 0.9 it reproduces the H200 linear timings at one token within ~5%
    # (Llama 3.1 8B 3.97 ms, Llama 3.2 1B 0.92 ms: bench/evidence/h200_steptime.csv).
    kernel_us: float = 4.5
    eta_kv: float = 0.9  # achieved fraction of peak bandwidth reading the KV cache (H200: 0.90-0.94)
    attn_floor_us: float = 20.0  # latency floor of one attention layer (H200, CUDA graphs)
    overhead_scale: float = 1.0  # multiplies every engine overhead (data/engines.json)
    # Multiplies, on top, the per-sequence CPU work a speculative step adds (the engine's
    # spec_seq_us, draft_seq_us, ngram_seq_us, tree_token_us and the serial per-sequence CPU of a
    # version without overlap): the term that makes speculation stop paying as the batch grows. Runs
    # at two or more batch sizes pin it; runs at one batch size cannot (calibrate holds it then).
    spec_seq_scale: float = 1.0

    def __post_init__(self):
        for name, bound in PARAMETERS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not bound.lo <= value <= bound.hi:
                raise SpecModelError(f"{name} = {value!r} is outside its allowed range [{bound.lo:g}, {bound.hi:g}] "
                                     f"({bound.words})")
        if not self.small_model_ref_GB > 0:
            raise SpecModelError(f"small_model_ref_GB must be > 0, got {self.small_model_ref_GB!r}")

    def bandwidth_efficiency(self, weight_bytes: float) -> float:
        size = weight_bytes / 1e9 / self.small_model_ref_GB
        return self.eta_bw * min(1.0, size ** self.small_model_exponent) if size > 0 else self.eta_bw

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _gpu_attr(gpu: GPU, name: str, default):
    value = getattr(gpu, name, None)
    return default if value is None else value


@dataclass(frozen=True)
class Hardware:
    """What one model replica runs on: a GPU preset times the tensor-parallel degree."""

    gpu: GPU
    tp: int = 1

    @property
    def flops(self) -> float:
        return self.gpu.dense_bf16_TFLOPS * 1e12 * self.tp

    def flops_for(self, dtype: str) -> float:
        """Dense tensor FLOPS for weights of this dtype: FP8/FP4 run on their own tensor cores where
        the GPU has them; otherwise (and for weight-only INT4) on BF16."""
        per_gpu = {"fp8": _gpu_attr(self.gpu, "dense_fp8_TFLOPS", None),
                   "fp4": _gpu_attr(self.gpu, "dense_fp4_TFLOPS", None)}.get(dtype)
        if per_gpu is None and dtype == "fp4":
            per_gpu = _gpu_attr(self.gpu, "dense_fp8_TFLOPS", None)
        return (per_gpu or self.gpu.dense_bf16_TFLOPS) * 1e12 * self.tp

    @property
    def bandwidth_Bps(self) -> float:
        return self.gpu.bandwidth_GBps * 1e9 * self.tp

    @property
    def memory_bytes(self) -> float:
        return self.gpu.memory_GB * 1e9 * self.tp

    def allreduce_ms(self, n_bytes) -> np.ndarray | float:
        """One all-reduce of n_bytes over the replica's GPUs (0 without tensor parallelism)."""
        if self.tp <= 1:
            return 0.0 * np.asarray(n_bytes, dtype=float)
        kind = str(_gpu_attr(self.gpu, "interconnect", "")).lower()
        latency = next((us for word, us in ALLREDUCE_LATENCY_US if word in kind), DEFAULT_ALLREDUCE_LATENCY_US)
        link = float(_gpu_attr(self.gpu, "interconnect_GBps", DEFAULT_INTERCONNECT_GBPS)) * 1e9
        ring = 2.0 * (self.tp - 1) / self.tp * np.asarray(n_bytes, dtype=float) / link
        return latency * 1e-3 + ring * 1e3


@dataclass(frozen=True)
class PassShape:
    """What one forward pass reads and computes."""

    weight_bytes: float  # weights every pass reads (dense part; all of a dense model)
    matmul_params: float  # linear-layer FLOPs per query token = 2 × this (active parameters)
    kv_bytes_per_token: float  # KV cache bytes read per context token per sequence
    attn_width: float  # Σ over layers of heads × head_dim: attention FLOPs = 4 × this × q × L
    layers: int = 0  # attention layers (latency floor, all-reduces)
    hidden: int = 0  # activation width (all-reduce bytes)
    kv_heads: int = 8  # KV heads (thread blocks of a verify kernel without split-KV)
    expert_bytes: float = 0.0  # bytes of one routed expert summed over the MoE layers
    experts: int = 0  # routed experts per MoE layer (0: dense)
    experts_per_token: int = 0
    weight_dtype: str = "bf16"
    moe_layers: int = 0  # routed MoE layers (each pays MOE_LAYER_US)
    # Windowed, sparse or linear-attention layers (memory.KVLayout): what a pass reads of the cache and
    # attends to by group of layers, and the recurrent state it reads and writes. None: every layer
    # reads the whole context (kv_bytes_per_token and attn_width say all).
    kv_layout: memory.KVLayout | None = None

    @classmethod
    def of_model(cls, m: Model, weight_dtype: str | None = None, kv_dtype: str | None = None) -> "PassShape":
        wd = memory.weight_dtype_of(m, weight_dtype)
        bpp = BYTES_PER_VALUE[wd]
        experts = int(getattr(m, "experts", 0) or 0)
        routed_each = 0.0
        dense_params = m.matmul_params
        active = m.matmul_params
        top_k = int(getattr(m, "experts_per_token", 0) or 0)
        moe_layers = int(getattr(m, "moe_layers", None) or m.layers)
        if experts > 0:
            routed_each = moe_layers * m.expert_params_per_layer
            dense_params = max(m.matmul_params - experts * routed_each, 0.0)
            active = dense_params + top_k * routed_each
        layout = memory.kv_layout(m, kv_dtype or "bf16")
        plain = len(layout.groups) == 1 and not layout.groups[0].reads_at_most and not layout.state_bytes
        return cls(dense_params * bpp, active, layout.bytes_per_token, sum(g.width for g in layout.groups), m.layers,
                   m.hidden, m.kv_heads, routed_each * bpp, experts, top_k, wd, moe_layers if experts > 0 else 0,
                   None if plain else layout)

    @classmethod
    def draft_head(cls, target: Model, method: str, weight_dtype: str | None = None,
                   kv_dtype: str | None = None) -> "PassShape":
        """One draft-head pass (EAGLE, EAGLE-3, MTP): the fusion layer, one decoder layer of the
        target's shape and an LM head (the target's, or EAGLE-3's reduced one), with the layer and
        KV cache that memory.draft_memory counts: an MTP head of an MoE target routes its tokens to
        experts like the target's layers do; its KV is one layer of the target's (MLA's latent
        for DeepSeek-V3 and Kimi-K2)."""
        wd = memory.head_weight_dtype(target, method, weight_dtype)
        bpp = BYTES_PER_VALUE[wd]
        lm_head = (memory.head_vocab(method) or target.vocab) * target.hidden
        fusion = memory.head_fusion_params(target, method)
        head = memory.head_kv_layout(target, kv_dtype or "bf16").groups[0]
        kv, width = head.bytes_per_token, head.width
        if memory.head_is_moe(target, method):
            expert_each = target.expert_params_per_layer
            dense = (target.attention_params_per_layer + target.shared_experts * expert_each
                     + target.hidden * target.experts + fusion + lm_head)
            top_k = int(target.experts_per_token)
            return cls(dense * bpp, dense + top_k * expert_each, kv, width, 1, target.hidden, target.kv_heads,
                       expert_each * bpp, int(target.experts), top_k, wd, 1)
        params = memory.head_layer_params(target, moe=False) + fusion + lm_head
        return cls(params * bpp, params, kv, width, 1, target.hidden, target.kv_heads, weight_dtype=wd)


def smooth_max(a, b, p: float):
    """(a^p + b^p)^(1/p): a maximum that rounds the corner where a ≈ b."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    hi = np.maximum(a, b)
    safe = np.where(hi > 0, hi, 1.0)
    return np.where(hi > 0, hi * ((a / safe) ** p + (b / safe) ** p) ** (1.0 / p), 0.0)


def experts_touched(experts: int, top_k: int, tokens):
    """Expected distinct experts n tokens route to when each picks top_k of E uniformly:
    E · (1 − (1 − top_k/E)^n)."""
    n = np.asarray(tokens, dtype=float)
    if experts <= 0:
        return 0.0 * n
    return experts * (1.0 - (1.0 - top_k / experts) ** n)


def expert_bytes_read(shape: PassShape, batch, query_tokens):
    """Bytes of routed experts one pass reads: one copy of every expert its tokens route to.
    Consecutive tokens of one sequence route alike: a verify pass's q tokens per sequence count as
    1 + (q − 1)(1 − EXPERT_LOCALITY) independent draws; sequences are independent of each other."""
    b = np.asarray(batch, dtype=float)
    q = np.asarray(query_tokens, dtype=float)
    draws = b * (1.0 + (q - 1.0) * (1.0 - EXPERT_LOCALITY))
    return shape.expert_bytes * experts_touched(shape.experts, shape.experts_per_token, draws)


def memory_and_compute(shape: PassShape, batch, query_tokens, context_len):
    """Bytes and FLOPs of one pass, as four arrays: weight bytes, linear FLOPs, KV bytes, attention FLOPs."""
    b = np.asarray(batch, dtype=float)
    q = np.asarray(query_tokens, dtype=float)
    ctx = np.asarray(context_len, dtype=float)
    tokens = b * q
    weight_bytes = shape.weight_bytes + expert_bytes_read(shape, b, q)
    weight_bytes = np.broadcast_to(weight_bytes, np.broadcast(b, q).shape).astype(float)
    linear_flops = 2.0 * shape.matmul_params * tokens
    if shape.kv_layout is None:
        kv_bytes = b * (ctx + q) * shape.kv_bytes_per_token
        attn_flops = 4.0 * shape.attn_width * tokens * (ctx + 0.5 * q)
    else:  # windows and sparse attention cap what a layer reads; a recurrent state is read and written
        kv_bytes = b * shape.kv_layout.read_bytes(ctx + q, q)
        attn_flops = b * shape.kv_layout.attention_flops(ctx + 0.5 * q, q)
    return weight_bytes, linear_flops, kv_bytes, attn_flops


def pass_time_ms(shape: PassShape, hw: Hardware, eff: Efficiency, batch, query_tokens, context_len,
                 bandwidth_scale: float = 1.0, include_fixed: bool = True, verify_kv_reads: float = 1.0,
                 verify_query_tile: int = 0):
    """Milliseconds for one forward pass (kernels and all-reduces; no engine overhead).

    Weights are read at the size-dependent efficiency (small GEMMs do not saturate memory); the KV
    cache at eta_kv. `bandwidth_scale` multiplies both: measured mode pins it from a measured step.
    `verify_kv_reads`: how many times a q > 1 pass reads the KV cache (see unpacked_verify_reads).
    `verify_query_tile`: query rows a q > 1 attention kernel computes per program, masked rows
    included (vLLM's ROCm prefix-prefill kernel: 128); 0 where the work follows the rows there are.
    """
    bw_weights = hw.bandwidth_Bps * eff.bandwidth_efficiency(shape.weight_bytes / hw.tp) * bandwidth_scale
    bw_kv = hw.bandwidth_Bps * eff.eta_kv * bandwidth_scale
    flops = hw.flops_for(shape.weight_dtype) * eff.eta_flops
    attn_flops_peak = hw.flops * eff.eta_flops
    w, f_lin, kv, f_attn = memory_and_compute(shape, batch, query_tokens, context_len)
    b = np.asarray(batch, dtype=float)
    q = np.asarray(query_tokens, dtype=float)
    if verify_query_tile:  # whole tiles of query rows per head: the padded rows cost matrix-core work too
        f_attn = f_attn * np.where(q > 1, np.ceil(q / verify_query_tile) * verify_query_tile / q, 1.0)
    # A verify kernel without split-KV runs B · kv_heads blocks, each reading at most
    # KV_BLOCK_GBPS (decode kernels split the KV and are not limited this way).
    # (an unpacked kernel runs one block per query head, each re-reading its KV head)
    per_kv_head = max(1.0, verify_kv_reads / UNPACKED_REREAD_PER_HEAD)
    blocks = b * max(shape.kv_heads, 1) * per_kv_head * (1 if shape.kv_heads < hw.tp else hw.tp)
    bw_verify = np.minimum(bw_kv, blocks * KV_BLOCK_GBPS * 1e9 * bandwidth_scale)
    bw_attn = np.where(q > 1, bw_verify, bw_kv)
    kv = kv * np.where(q > 1, verify_kv_reads, 1.0)
    p = eff.smooth_p
    kernels_s = (4 * shape.layers + 1) * eff.kernel_us * 1e-6 if shape.layers else eff.kernel_us * 1e-6
    experts_b = w - shape.weight_bytes  # the routed experts' part of the reads (0 for a dense model)
    moe_s = shape.moe_layers * MOE_LAYER_US * 1e-6 if shape.experts else 0.0
    reads_s = shape.weight_bytes / bw_weights + experts_b / (bw_weights * EXPERT_BW_SHARE) + moe_s
    linear_s = smooth_max(reads_s + kernels_s, f_lin / flops, p)
    attn_s = smooth_max(kv / bw_attn, f_attn / attn_flops_peak, p)
    layers = max(shape.layers, 1)
    floor_s = layers * eff.attn_floor_us * 1e-6 if shape.layers else 0.0
    attn_s = smooth_max(attn_s, floor_s, ATTN_FLOOR_SMOOTH_P) if shape.layers else attn_s
    comm_ms = 2 * shape.layers * hw.allreduce_ms(b * q * shape.hidden * 2.0)
    return (linear_s + attn_s) * 1e3 + comm_ms + (eff.t_fixed_ms if include_fixed else 0.0)


def bandwidth_scale_for_measured_time(shape: PassShape, hw: Hardware, eff: Efficiency, t_ms: float,
                                      context_len: float, include_fixed: bool = True,
                                      extra_ms: float = 0.0) -> float | None:
    """Factor on the achieved bandwidth that makes a one-sequence, one-token pass (plus extra_ms of
    engine overhead) take t_ms.

    Returns None when t_ms is faster than the GPU's compute floor plus fixed overheads allow.
    """
    def time_at(scale: float) -> float:
        return float(pass_time_ms(shape, hw, eff, 1, 1, context_len, scale, include_fixed)) + extra_ms

    if t_ms <= time_at(1e12) * (1 + 1e-9):
        return None
    lo, hi = 1e-9, 1e12  # time falls as the scale grows: bisect on a log scale
    for _ in range(200):
        mid = (lo * hi) ** 0.5
        if time_at(mid) > t_ms:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-13:
            break
    return (lo * hi) ** 0.5


def unpacked_verify_reads(heads: int, kv_heads: int) -> float:
    """KV reads of a verify pass whose attention kernel does not pack the GQA group."""
    group = max(heads // max(kv_heads, 1), 1)
    return max(1.0, UNPACKED_REREAD_PER_HEAD * group)
