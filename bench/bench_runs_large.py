"""A large run file through `runs --json` (200,000 rows): time and peak memory beside pandas' own read.

The file is what a sweep harness writes: a dozen workloads on four GPUs and two target models,
k 1-8, concurrency 1-256, tokens per step to two decimals, measured throughputs of both arms.
`python -m bench runs_large` prints wall and CPU seconds of each stage in this process (read,
predict) at 10,000 and 200,000 rows, then runs `python -m specmodel runs FILE --json` on the
200,000-row file in a subprocess, its output to a file as a script would, and prints its wall
time, CPU time and peak resident memory (the child's own rusage) beside a subprocess that only
reads the file with pandas.read_csv, against the goals (≤ 8 s, ≤ 600 MB). The machine may be
shared: CPU seconds say what the code costs, wall seconds what a user waits."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _child(argv: list[str], stdout) -> tuple[int, float, float, float]:
    """(exit code, wall s, CPU s, peak resident MB) of one subprocess, from its own rusage."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


ROOT = Path(__file__).resolve().parent.parent
PANDAS_READ = "import sys, pandas; pandas.read_csv(sys.argv[1])"
GOAL_S, GOAL_MB = 8, 600


def run():
    yield f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (other work on it slows the wall time)"
    # the subprocesses first: a child's peak counts what it shares with this process when it starts
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.csv"
        path.write_bytes(large_csv(200_000))
        out_path = Path(tmp) / "runs.json"
        with open(out_path, "wb") as out:
            code, wall, cpu, peak = _child([sys.executable, "-m", "specmodel", "runs", str(path), "--json"], out)
        size = out_path.stat().st_size
        _, p_wall, p_cpu, p_peak = _child([sys.executable, "-c", PANDAS_READ, str(path)], subprocess.DEVNULL)
    yield (f"pandas.read_csv of the file in a subprocess (reference): {p_wall:.2f} s wall ({p_cpu:.2f} s CPU), "
           f"peak {p_peak:.0f} MB")
    yield (f"`runs FILE --json` on 200,000 rows (exit {code}, {size / 1e6:.0f} MB of JSON): {wall:.2f} s wall "
           f"({cpu:.2f} s CPU) = {wall / p_wall:.0f}x pandas' read; peak {peak:.0f} MB = {peak / p_peak:.1f}x pandas'")
    yield f"  time: {against_goal(wall, GOAL_S, unit=' s')}; CPU time alone: {against_goal(cpu, GOAL_S, unit=' s')}"
    yield f"  peak resident memory: {against_goal(peak, GOAL_MB, unit=' MB')}"
    from specmodel.runs import read_runs
    from specmodel.runs.review import review

    for rows in (10_000, 200_000):
        data = large_csv(rows)
        table, read_wall, read_cpu = _timed(lambda data=data: read_runs([("large.csv", data)]))
        result, eval_wall, eval_cpu = _timed(lambda table=table: review(table.rows))
        predicted = int(result.evaluated["predicted_speedup"].notna().sum())
        wall, cpu = read_wall + eval_wall, read_cpu + eval_cpu
        yield (f"{rows:>7,} rows ({len(data) / 1e6:.1f} MB) in this process: read {read_wall:5.2f} s "
               f"({read_cpu:5.2f} s CPU), predict {eval_wall:5.2f} s ({eval_cpu:5.2f} s CPU), "
               f"{rows / wall:8,.0f} rows/s ({len(table.rows):,} loaded, {predicted:,} predicted)")
