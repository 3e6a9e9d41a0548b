"""predict() over 101 α × k 0..8 × concurrency 1..512 against a pure-Python scalar loop of the same formulas."""

from __future__ import annotations

import time

import numpy as np

from specmodel import Scenario, predict
from specmodel.capacity import max_sequences
from specmodel.scenario import _compile

ALPHAS = np.linspace(0, 1, 101)
KS = np.arange(0, 9)
BATCHES = np.arange(1, 513)


def _smax(a: float, b: float, p: float) -> float:
    hi = max(a, b)
    return hi * ((a / hi) ** p + (b / hi) ** p) ** (1 / p) if hi > 0 else 0.0


def _pass_ms(shape, c, eff, batch, q, ctx, scale, fixed=True) -> float:
    bw_w = c.hw.bandwidth_Bps * eff.bandwidth_efficiency(shape.weight_bytes) * scale
    bw_kv = c.hw.bandwidth_Bps * eff.eta_bw * scale
    flops = c.hw.flops * eff.eta_flops
    t = (_smax(shape.weight_bytes / bw_w, 2 * shape.matmul_params * batch * q / flops, eff.smooth_p)
         + _smax(batch * (ctx + q) * shape.kv_bytes_per_token / bw_kv,
                 4 * shape.attn_width * batch * q * (ctx + 0.5 * q) / flops, eff.smooth_p))
    return t * 1e3 + (eff.t_fixed_ms if fixed else 0.0)


def scalar_speedup(s: Scenario, c, alpha: float, k: int, b: int) -> float:
    """The same model for one point, in plain Python floats (draft-model method); c = _compile(s)."""
    eff, L = s.efficiency, s.context_len
    fits_plain = float(max_sequences(c.budget_bytes, c.target.kv_bytes_per_token, L))
    bp = min(b, fits_plain)
    plain = bp / _pass_ms(c.target, c, eff, bp, 1, L, c.target_bw_scale)
    if k == 0:
        return 1.0
    fits = float(max_sequences(c.budget_bytes - c.draft_resident_base, c.target.kv_bytes_per_token
                               + c.draft_kv_per_token, L + k))
    bs = min(b, fits)
    e = sum(alpha ** i for i in range(k + 1))
    step = (k * _pass_ms(c.draft, c, eff, bs, 1, L, c.draft_bw_scale) + _pass_ms(c.target, c, eff, bs, k + 1, L,
                                                                                c.target_bw_scale)
            + eff.t_spec_overhead_ms)
    return (bs * e / step) / plain if bs > 0 else 0.0


def run():
    s = Scenario()
    predict(s, alpha=0.5, k=2, concurrency=2)  # compile once, outside the timing
    repeats = 5
    start = time.perf_counter()
    for _ in range(repeats):
        grid = predict(s, alpha=ALPHAS[:, None, None], k=KS[None, :, None], concurrency=BATCHES[None, None, :])
    vector_s = (time.perf_counter() - start) / repeats
    points = grid.speedup.size

    # The scalar loop over the full grid takes tens of seconds; time every 7th α (same k and B).
    sub = ALPHAS[::7]
    compiled = _compile(s)
    start = time.perf_counter()
    worst = 0.0
    for i, a in enumerate(sub):
        for j, k in enumerate(KS):
            for m, b in enumerate(BATCHES):
                v = scalar_speedup(s, compiled, float(a), int(k), int(b))
                worst = max(worst, abs(v - grid.speedup[i * 7, j, m]))
    scalar_per_point = (time.perf_counter() - start) / (len(sub) * len(KS) * len(BATCHES))
    scalar_s = scalar_per_point * points
    return [
        f"grid: {points:,} points (101 α × 9 k × 512 concurrency)",
        f"vectorised predict: {vector_s * 1e3:.1f} ms per grid (mean of {repeats})",
        f"pure-Python scalar loop: {scalar_per_point * 1e6:.1f} µs per point -> {scalar_s:.1f} s per grid "
        f"(timed on {len(sub) * len(KS) * len(BATCHES):,} points)",
        f"ratio: vectorised is {scalar_s / vector_s:,.0f}x faster (goal ≥ 200x); goal < 50 ms: "
        f"{'met' if vector_s < 0.05 else 'NOT met'}",
        f"largest difference between the two: {worst:.2e}",
    ]
