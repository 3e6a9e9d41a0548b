"""Peak memory of the worst inputs the bounds accept (`python -m bench limits`), each printed with its input.

Every case runs in a fresh Python process (what one upload or one scrape costs the server on top
of an idle process with the same imports) and reports the peak resident memory above that idle
baseline, and the time taken. The inputs are the largest the readers accept: a file at the upload
limit (20 MB) filled with the most rows per file, every run at k = 64 with a 64-position survival
profile; a JSON document at the depth limit; a /metrics page with k = 64 positions for many
engines. What the Past runs page then predicts for every row (`specmodel.runs.review`) is measured on
the file with the most rows, every run predicted. The worst peak and the slowest read are printed
against issue 25's goals, and the most CPU time one read took (the machine may be shared: CPU seconds
say what the code costs, wall seconds what a user waits).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import against_goal

ROOT = Path(__file__).resolve().parents[1]
GOAL_MB, GOAL_S = 600, 5  # issue 25: the worst accepted input ≤ 600 MB above idle and ≤ 5 s

_RUNNER = r'''
import json, resource, sys, time
from pathlib import Path
from specmodel import prom, runs
from specmodel.runs.review import review
import numpy, pandas, scipy.optimize  # the idle server has these loaded too
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kind, path, review_rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = Path(path).read_bytes()
start, cpu = time.perf_counter(), time.process_time()
if kind == "runs":
    table = runs.read_runs([(Path(path).name, data)])
    loaded, problems = len(table.rows), len(table.problems)
    if review_rows:
        review(table.rows.head(review_rows))
elif kind == "mix":
    from specmodel import Scenario
    from specmodel.plan import mix, workloads
    found, problems, _ = workloads.read_workloads(path)
    mix.compare(Scenario(k=4, concurrency=64), found, 64, 2)
    loaded, problems = len(found), len(problems)
elif kind.startswith("fetch:"):  # the file's bytes served by a local server with this Content-Encoding
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from specmodel.metrics import scrape

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Encoding", kind.split(":", 1)[1])
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    start, cpu = time.perf_counter(), time.process_time()
    try:
        with scrape.make_client() as client:
            scrape.fetch_text(client, f"http://127.0.0.1:{httpd.server_address[1]}/metrics")
        loaded, problems = 1, 0
    except Exception:  # refused, as it should be
        loaded, problems = 0, 1
elif kind == "metrics":
    snap = prom.parse_snapshot(data.decode())
    loaded, problems = len(snap.per_position), 0
else:
    raise SystemExit("unknown kind")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"loaded": loaded, "problems": problems, "seconds": time.perf_counter() - start,
                  "cpu_seconds": time.process_time() - cpu,
                  "peak_MB": peak / 1024, "above_idle_MB": (peak - base) / 1024}))
'''


def _measure(kind: str, path: Path, review_rows: int = 0) -> dict:
    r = subprocess.run([sys.executable, "-c", _RUNNER, kind, str(path), str(review_rows)], cwd=ROOT,
                       capture_output=True, text=True, timeout=1800,
                       env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def _csv_most_rows(folder: Path) -> Path:
    """The most rows one file may hold (200,000, under 20 MB), every run at k = 64."""
    from specmodel.bounds import MAX_K, MAX_ROWS_PER_FILE

    path = folder / "most_rows.csv"
    path.write_text("workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\n"
                    + f"w,64,{MAX_K},0.7,100,150\n" * MAX_ROWS_PER_FILE)
    return path


def _csv_longest_profiles(folder: Path) -> Path:
    """A 20 MB file of runs with 64-position survival profiles (the longest the reader accepts)."""
    from specmodel.bounds import MAX_FILE_BYTES, MAX_K

    header = "workload,concurrency,survival,baseline_tok_s,spec_tok_s\n"
    row = "w,64," + ";".join(f"{0.97 ** (i + 1):.3f}" for i in range(MAX_K)) + ",100,150\n"
    path = folder / "longest_profiles.csv"
    path.write_text(header + row * ((MAX_FILE_BYTES - len(header)) // len(row)))
    return path


def _json_at_the_depth_limit(folder: Path) -> Path:
    from specmodel.bounds import MAX_FILE_BYTES, MAX_JSON_DEPTH

    one = {"output_throughput": 150.0, "max_concurrency": 64, "spec_decode_num_drafts": 100,
           "spec_decode_per_position_acceptance_rates": [0.5] * 64, "label": "eagle"}
    nested: object = 1
    for _ in range(MAX_JSON_DEPTH - 3):
        nested = [nested]
    one["padding"] = nested
    text = json.dumps(one)
    count = min(200_000, MAX_FILE_BYTES // (len(text) + 2))
    path = folder / "worst.json"
    path.write_text("[" + ",".join([text] * count) + "]")
    return path


def _metrics_with_64_positions(folder: Path) -> Path:
    from specmodel.bounds import MAX_K, MAX_METRICS_SAMPLES

    lines = ["# TYPE vllm:spec_decode_num_drafts_total counter"]
    for engine in range(MAX_METRICS_SAMPLES // (MAX_K + 1)):  # the most engines a page is read with
        lines.append(f'vllm:spec_decode_num_drafts_total{{engine="{engine}",model_name="m"}} 1000')
        lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{engine}",model_name="m",'
                  f'position="{p}"}} {1000 - p}' for p in range(MAX_K)]
    path = folder / "worst_metrics.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _gzip_bomb(folder: Path, encodings: str, megabytes: int) -> Path:
    """`megabytes` MB of zeros compressed once per listed encoding (the answer that took 4.2 GB)."""
    from tests.replay import bomb

    path = folder / f"bomb-{encodings.replace(', ', '-')}.gz"
    path.write_bytes(bomb(encodings, megabytes))
    return path


def _log_of_long_lines(folder: Path) -> Path:
    """A 20 MB vLLM log of 1 MB 'SpecDecoding metrics:' lines without a field (the 30 s freeze per 100 kB)."""
    from specmodel.bounds import MAX_FILE_BYTES

    line = "SpecDecoding metrics: " + "a" * 1_000_000 + "\n"
    path = folder / "long_lines.log"
    path.write_text(line * (MAX_FILE_BYTES // len(line)))
    return path


def _aiperf_k_of_a_billion(folder: Path) -> Path:
    path = folder / "profile_export_aiperf.json"
    path.write_text('{"pooled_spec_decode_acceptance_histogram": {"0": 1, "1000000000": 1}, '
                    '"total_spec_decode_steps": 2}')
    return path


def _csv_million_columns(folder: Path) -> Path:
    n = 1_000_000
    path = folder / "wide.csv"
    path.write_text("workload,concurrency,alpha,k,baseline_tok_s,spec_tok_s," + ",".join(f"x{i}" for i in range(n))
                    + "\nw,8,0.7,4,100,150" + "," * n + "\n")
    return path


def _csv_long_names(folder: Path) -> Path:
    """A 20 MB CSV whose GPU and workload names are 60 kB each, under the 128 kB cell limit (cut to 200 and
    1,000 characters before any name reader runs)."""
    name = "H100 " + "x" * 60_000
    path = folder / "long_names.csv"
    path.write_text("workload,gpu,concurrency,alpha,k,baseline_tok_s,spec_tok_s\n"
                    + "".join(f"{name}{i},{name},8,0.7,4,100,150\n" for i in range(160)))
    return path


def _csv_unclosed_quotes(folder: Path) -> Path:
    """A 19 MB CSV in which every row opens a quote it never closes: each takes the rows after it in, is
    named, and the reader goes back to the row after it (MAX_BROKEN_ROWS rows, then the file is named)."""
    path = folder / "quotes.csv"
    path.write_text("workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\n" + 'w,8,3,0.7,1000,"1\n' * 1_050_000)
    return path


def _csv_over_long_cells(folder: Path) -> Path:
    """A 20 MB CSV of rows with one cell just past the 131,072-character cell limit: each row is refused alone."""
    path = folder / "long_cells.csv"
    path.write_text("workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\n"
                    + ("x" * 131_100 + ",8,3,0.7,1000,1500\n") * 150)
    return path


def _csv_thousands(folder: Path) -> Path:
    """The most rows one file may hold, every number written with thousands separators (decided per column)."""
    from specmodel.bounds import MAX_ROWS_PER_FILE

    path = folder / "thousands.csv"
    path.write_text("workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\n"
                    + 'w,"1,024",3,0.7,"1,500","2,100.5"\n' * MAX_ROWS_PER_FILE)
    return path


def _csv_blank_lines(folder: Path) -> Path:
    """Issue 41, 1: a 19 MB CSV of blank lines between two runs (was ~185 bytes a line: 3.5 GB on the CLI)."""
    path = folder / "blank_lines.csv"
    path.write_text("workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\nw,8,3,0.7,1000,1500\n"
                    + "\n" * 19_000_000 + "v,8,3,0.7,1000,1500\n")
    return path


def _log_long_pieces(folder: Path) -> Path:
    """Issue 41, 2: a vLLM log line of 0.8 MB of comma-separated pieces without names (was 9 s of CPU) and a
    6 MB per-position list (was still running at 150 s)."""
    path = folder / "long_pieces.log"
    path.write_text("Running: 4 reqs\nSpecDecoding metrics: Mean acceptance length: 2.05, Drafted: "
                    + ", ".join(["x"] * 400_000) + "\nRunning: 4 reqs\nSpecDecoding metrics: Mean acceptance "
                    "length: 2.05, Per-position acceptance rate: " + ", ".join(["0.123456"] * 600_000) + "\n")
    return path


def _mix_at_the_cap(folder: Path) -> Path:
    """A traffic mix one row past MAX_MIX_WORKLOADS, every workload with its own α (no two alike)."""
    from specmodel.bounds import MAX_MIX_WORKLOADS

    path = folder / "mix.csv"
    rows = ["label,share,alpha"] + [f"w{i},1,{0.2 + 0.7 * i / MAX_MIX_WORKLOADS:.6f}"
                                   for i in range(MAX_MIX_WORKLOADS + 1)]
    path.write_text("\n".join(rows) + "\n")
    return path


def run():
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        most_rows = _csv_most_rows(folder)
        cases = [
            ("runs", most_rows, 0, "CSV with the most rows: {size}, {loaded:,} runs at k = 64 (read)"),
            ("runs", most_rows, 200_000, "the same CSV, read and every run predicted (review)"),
            ("runs", _csv_longest_profiles(folder), 0,
             "CSV at the upload limit: {size}, {loaded:,} runs with 64-position survival profiles (read)"),
            ("runs", _json_at_the_depth_limit(folder), 0,
             "vllm bench serve JSON list: {size}, {loaded:,} runs, each nested to the depth limit (64)"),
            ("mix", _mix_at_the_cap(folder), 0,
             "traffic mix: {size}, {loaded:,} workloads (the cap) compared on 2 GPUs with the split search"),
            ("metrics", _metrics_with_64_positions(folder), 0,
             "/metrics page: {size}, 769 engines × 64 positions, at the 50,000-sample bound (parse_snapshot)"),
            ("fetch:gzip, gzip", _gzip_bomb(folder, "gzip, gzip", 2048), 0,
             "/metrics answer of {size} with Content-Encoding: gzip, gzip (2 GiB of zeros; refused: {loaded} read)"),
            ("fetch:gzip", _gzip_bomb(folder, "gzip", 1024), 0,
             "/metrics answer of {size} gzipped once (1 GiB of zeros; stops at the 32 MB cap: {loaded} read)"),
            ("runs", _log_of_long_lines(folder), 0,
             "vLLM log at the upload limit: {size} of 1 MB SpecDecoding lines without a field ({loaded} runs)"),
            ("runs", _aiperf_k_of_a_billion(folder), 0,
             "AIPerf export of {size} with a histogram key of 10^9 (refused before allocating: {loaded} runs)"),
            ("runs", _csv_million_columns(folder), 0,
             "CSV with 1,000,000 unknown columns: {size}, {loaded} run, the first 10,000 columns read, two warnings"),
            ("runs", _csv_long_names(folder), 0,
             "CSV of {size} with 60 kB GPU and workload names: {loaded} runs (names cut)"),
            ("runs", _csv_unclosed_quotes(folder), 0,
             "CSV of {size} whose every row opens a quote it never closes: {loaded} runs, 100 rows named, then the file"),
            ("runs", _csv_over_long_cells(folder), 0,
             "CSV of {size} whose rows each hold a cell past the 131,072-character limit: {loaded} runs, each row named"),
            ("runs", _csv_thousands(folder), 0,
             "CSV with the most rows, every number with thousands separators: {size}, {loaded:,} runs"),
            ("runs", _csv_blank_lines(folder), 0,
             "CSV of {size} of blank lines between two runs (issue 41, 1): {loaded} runs"),
            ("runs", _log_long_pieces(folder), 0,
             "vLLM log of {size}: a 0.8 MB line of unnamed pieces and a 6 MB per-position list (issue 41, 2): "
             "{loaded} runs"),
        ]
        only = os.environ.get("LIMITS_ONLY")  # e.g. LIMITS_ONLY="issue 41": the cases whose line says so
        cases = [c for c in cases if not only or only in c[3]]
        worst = slowest = slowest_cpu = None
        yield f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (other work on it slows the wall time)"
        for kind, path, review_rows, label in cases:
            size = f"{path.stat().st_size / 2**20:.1f} MB"
            try:
                m = _measure(kind, path, review_rows)
            except RuntimeError as exc:  # e.g. a processing limit passed on a machine busy with other work
                yield f"{label.split(':')[0].format(size=size)}: failed: {str(exc).strip().splitlines()[-1]}"
                continue
            text = label.format(size=size, loaded=m["loaded"])
            yield (f"{text}: peak {m['peak_MB']:.0f} MB ({m['above_idle_MB']:.0f} MB above an idle process), "
                   f"{m['seconds']:.1f} s ({m['cpu_seconds']:.1f} s CPU)")
            if worst is None or m["above_idle_MB"] > worst[0]:
                worst = (m["above_idle_MB"], text)
            if review_rows == 0 and (slowest is None or m["seconds"] > slowest[0]):
                slowest = (m["seconds"], text)
            if review_rows == 0 and (slowest_cpu is None or m["cpu_seconds"] > slowest_cpu[0]):
                slowest_cpu = (m["cpu_seconds"], text)
        yield f"worst accepted input: {worst[1]} — {against_goal(worst[0], GOAL_MB, unit=' MB')} above idle"
        yield f"slowest input read: {slowest[1]} — {against_goal(slowest[0], GOAL_S, unit=' s')}"
        yield (f"most CPU to read: {slowest_cpu[1]} — {against_goal(slowest_cpu[0], GOAL_S, unit=' s')} of CPU "
               f"(load average now {os.getloadavg()[0]:.1f})")
