"""Reading and predicting a large run file (10,000 and 200,000 rows): rows per second, read and predicted.

The file is what a sweep harness writes: a dozen workloads on four GPUs and two target models,
k 1-8, concurrency 1-256, tokens per step to two decimals, measured throughputs of both arms.
`python -m bench runs_large` prints wall and CPU seconds of each stage (the machine may be shared:
CPU seconds say what the code costs, wall seconds what a user waits)."""

from __future__ import annotations

import io
import os
import resource
import time

import numpy as np

from bench import against_goal

WORKLOADS = [f"workload {i}" for i in range(12)]
GPUS = ["H100", "A100 80GB", "L40S", "H200"]
MODELS = [("Llama 3.1 8B", "Llama 3.2 1B"), ("Qwen2.5 14B", "Qwen2.5 0.5B")]


def large_csv(rows: int, seed: int = 0) -> bytes:
    """A plain run CSV of `rows` runs (about 68 bytes a run)."""
    rng = np.random.default_rng(seed)
    w, g, m = rng.integers(0, len(WORKLOADS), rows), rng.integers(0, len(GPUS), rows), rng.integers(0, len(MODELS), rows)
    k = rng.integers(1, 9, rows)
    conc = 2 ** rng.integers(0, 9, rows)
    alpha = rng.uniform(0.4, 0.9, rows)
    tokens = (1 - alpha ** (k + 1)) / (1 - alpha)
    base = rng.uniform(50, 5000, rows)
    spec = base * rng.uniform(0.5, 2.5, rows)
    out = io.StringIO()
    out.write("workload,gpu,target_model,draft_model,k,concurrency,tokens_per_step,baseline_tok_s,spec_tok_s\n")
    for i in range(rows):
        target, draft = MODELS[m[i]]
        out.write(f"{WORKLOADS[w[i]]},{GPUS[g[i]]},{target},{draft},{k[i]},{conc[i]},{tokens[i]:.2f},"
                  f"{base[i]:.1f},{spec[i]:.1f}\n")
    return out.getvalue().encode()


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def run():
    from specmodel.runs import read_runs
    from specmodel.runs.review import review

    yield f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (other work on it slows the wall time)"
    for rows in (10_000, 200_000):
        data = large_csv(rows)
        table, read_wall, read_cpu = _timed(lambda data=data: read_runs([("large.csv", data)]))
        result, eval_wall, eval_cpu = _timed(lambda table=table: review(table.rows))
        predicted = int(result.evaluated["predicted_speedup"].notna().sum())
        wall, cpu = read_wall + eval_wall, read_cpu + eval_cpu
        yield (f"{rows:>7,} rows ({len(data) / 1e6:.1f} MB): read {read_wall:5.2f} s, predict {eval_wall:5.2f} s, "
               f"total {wall:5.2f} s wall ({cpu:5.2f} s CPU) = {rows / wall:8,.0f} rows/s "
               f"({len(table.rows):,} loaded, {predicted:,} predicted)")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    yield (f"200,000 rows read + predicted: {against_goal(wall, 8, unit=' s')}; peak resident {peak_mb:.0f} MB "
           f"(goal ≤ 600 MB for `runs --json`, which also writes every row: not measured here)")
