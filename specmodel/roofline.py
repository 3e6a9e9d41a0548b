"""Time of one forward pass: B sequences, q query tokens each, context L, on a GPU (two rooflines).

T = smax(W / BW_eff, F_lin / FLOPS_eff) + smax(KV_read / BW_eff, F_attn / FLOPS_eff) + t_fixed

The weight term and the KV term are kept apart: at long context the KV read keeps a verify pass
memory-bound even at large batch. smax is a smooth maximum (a^p + b^p)^(1/p): real kernels leave
the memory floor gradually and run 15-30% above the hard maximum near the ridge (DESIGN.md, from
GEMM timings of Llama-shaped layers on an H200), which p = 3 reproduces (+26% at the ridge).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .presets import GPU, KV_BYTES_PER_VALUE, Model


@dataclass(frozen=True)
class Efficiency:
    """The model's free parameters: what presets cannot know and calibration fits."""

    eta_bw: float = 0.8  # achieved fraction of peak memory bandwidth, for a large model
    eta_flops: float = 0.6  # achieved fraction of dense peak FLOPS
    smooth_p: float = 3.0  # sharpness of the memory/compute transition
    t_fixed_ms: float = 0.0  # per forward pass: launch, scheduling, sampling
    t_spec_overhead_ms: float = 0.0  # per speculative step: rejection sampling, bookkeeping
    # A small model reaches a smaller fraction of peak bandwidth (H200 GEMM timings in DESIGN.md:
    # ~56% for a 1B model's weights where an 8B model's ran at ~79%): bandwidth efficiency falls as
    # (weight_GB / small_model_ref_GB) ** small_model_exponent below the reference size.
    small_model_ref_GB: float = 14.0
    small_model_exponent: float = 0.18

    def bandwidth_efficiency(self, weight_bytes: float) -> float:
        size = weight_bytes / 1e9 / self.small_model_ref_GB
        return self.eta_bw * min(1.0, size ** self.small_model_exponent) if size > 0 else self.eta_bw


@dataclass(frozen=True)
class Hardware:
    """What one model replica runs on: a GPU preset times the tensor-parallel degree."""

    gpu: GPU
    tp: int = 1

    @property
    def flops(self) -> float:
        return self.gpu.dense_bf16_TFLOPS * 1e12 * self.tp

    @property
    def bandwidth_Bps(self) -> float:
        return self.gpu.bandwidth_GBps * 1e9 * self.tp

    @property
    def memory_bytes(self) -> float:
        return self.gpu.memory_GB * 1e9 * self.tp


@dataclass(frozen=True)
class PassShape:
    """What one forward pass reads and computes, per query token and per context token."""

    weight_bytes: float  # weights read once per pass
    matmul_params: float  # linear-layer FLOPs per query token = 2 × this
    kv_bytes_per_token: float  # KV cache bytes read per context token per sequence
    attn_width: float  # Σ over layers of heads × head_dim: attention FLOPs = 4 × this × q × L

    @classmethod
    def of_model(cls, m: Model) -> "PassShape":
        return cls(m.weight_bytes, m.matmul_params, m.kv_bytes_per_token,
                   float(m.layers * m.heads * m.head_dim))

    @classmethod
    def draft_head(cls, target: Model, layers: int, extra_params: float) -> "PassShape":
        """A head that runs `layers` decoder layers of the target's shape plus the LM head
        (EAGLE, MTP): weights read = layers + extra + vocab × hidden."""
        params = layers * target.layer_params + extra_params + target.vocab * target.hidden
        kv = 2.0 * layers * target.kv_heads * target.head_dim * KV_BYTES_PER_VALUE
        return cls(params * 2.0, params, kv, float(layers * target.heads * target.head_dim))


def smooth_max(a, b, p: float):
    """(a^p + b^p)^(1/p): a maximum that rounds the corner where a ≈ b."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    hi = np.maximum(a, b)
    safe = np.where(hi > 0, hi, 1.0)
    return np.where(hi > 0, hi * ((a / safe) ** p + (b / safe) ** p) ** (1.0 / p), 0.0)


def memory_and_compute(shape: PassShape, batch, query_tokens, context_len):
    """Bytes and FLOPs of one pass, as four arrays: weight bytes, linear FLOPs, KV bytes, attention FLOPs."""
    b = np.asarray(batch, dtype=float)
    q = np.asarray(query_tokens, dtype=float)
    ctx = np.asarray(context_len, dtype=float)
    tokens = b * q
    weight_bytes = np.full(np.broadcast(b, q).shape, shape.weight_bytes)
    linear_flops = 2.0 * shape.matmul_params * tokens
    kv_bytes = b * (ctx + q) * shape.kv_bytes_per_token
    attn_flops = 4.0 * shape.attn_width * tokens * (ctx + 0.5 * q)
    return weight_bytes, linear_flops, kv_bytes, attn_flops


def pass_time_ms(shape: PassShape, hw: Hardware, eff: Efficiency, batch, query_tokens, context_len,
                 bandwidth_scale: float = 1.0, include_fixed: bool = True):
    """Milliseconds for one forward pass.

    Weights are read at the size-dependent efficiency (small GEMMs do not saturate memory); the KV
    cache, read by attention kernels over many sequences, at the large-model efficiency.
    `bandwidth_scale` multiplies both: measured mode pins it from a measured step time.
    """
    bw_weights = hw.bandwidth_Bps * eff.bandwidth_efficiency(shape.weight_bytes) * bandwidth_scale
    bw_kv = hw.bandwidth_Bps * eff.eta_bw * bandwidth_scale
    flops = hw.flops * eff.eta_flops
    w, f_lin, kv, f_attn = memory_and_compute(shape, batch, query_tokens, context_len)
    p = eff.smooth_p
    seconds = smooth_max(w / bw_weights, f_lin / flops, p) + smooth_max(kv / bw_kv, f_attn / flops, p)
    return seconds * 1e3 + (eff.t_fixed_ms if include_fixed else 0.0)


def bandwidth_scale_for_measured_time(shape: PassShape, hw: Hardware, eff: Efficiency, t_ms: float,
                                      context_len: float, include_fixed: bool = True) -> float | None:
    """Factor on the achieved bandwidth that makes a one-sequence, one-token pass take t_ms.

    Returns None when t_ms is faster than the GPU's compute floor plus fixed overhead allows.
    """
    def time_at(scale: float) -> float:
        return float(pass_time_ms(shape, hw, eff, 1, 1, context_len, scale, include_fixed))

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
