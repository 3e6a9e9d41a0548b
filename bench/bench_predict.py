"""predict() over 101 α × k 0..8 × concurrency 1..512 in one vectorised call, against a Python loop
calling predict() once per point (the same model either way: the difference must be ~0)."""

from __future__ import annotations

import time

import numpy as np

from specmodel import Scenario, predict

ALPHAS = np.linspace(0, 1, 101)
KS = np.arange(0, 9)
BATCHES = np.arange(1, 513)


def run():
    s = Scenario()
    predict(s, alpha=0.5, k=2, concurrency=2)  # compile once, outside the timing
    repeats = 5
    start = time.perf_counter()
    for _ in range(repeats):
        grid = predict(s, alpha=ALPHAS[:, None, None], k=KS[None, :, None], concurrency=BATCHES[None, None, :])
    vector_s = (time.perf_counter() - start) / repeats
    points = grid.speedup.size

    # One call per point over the full grid takes minutes; time every 7th α and every 4th batch.
    sub, batches = ALPHAS[::7], BATCHES[::4]
    start = time.perf_counter()
    worst = 0.0
    for i, a in enumerate(sub):
        for j, k in enumerate(KS):
            for m, b in enumerate(batches):
                v = float(predict(s, alpha=float(a), k=int(k), concurrency=int(b)).speedup)
                worst = max(worst, abs(v - grid.speedup[i * 7, j, m * 4]))
    scalar_per_point = (time.perf_counter() - start) / (len(sub) * len(KS) * len(batches))
    scalar_s = scalar_per_point * points
    return [
        f"grid: {points:,} points (101 α × 9 k × 512 concurrency)",
        f"vectorised predict: {vector_s * 1e3:.1f} ms per grid (mean of {repeats})",
        f"one predict() call per point: {scalar_per_point * 1e6:.1f} µs per point -> {scalar_s:.1f} s per grid "
        f"(timed on {len(sub) * len(KS) * len(batches):,} points)",
        f"ratio: vectorised is {scalar_s / vector_s:,.0f}x faster (goal ≥ 200x); goal < 50 ms: "
        f"{'met' if vector_s < 0.05 else 'NOT met'}",
        f"largest difference between the two (same model): {worst:.2e}",
    ]
