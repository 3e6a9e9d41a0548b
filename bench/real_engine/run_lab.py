"""Serve the lab's tiny Llama with vLLM's CPU build as plain / n-gram / draft-model servers and load each
with the real `vllm bench serve` at several concurrencies, recording /metrics before and after each run.

Standard library only; the engine and the bench client come from the lab virtualenv (--venv). Writes:

    OUT/<arm>_c<C>.json                vllm bench serve --save-result output
    OUT/metrics/<arm>_c<C>_before.txt  GET /metrics right before the run
    OUT/metrics/<arm>_c<C>_after.txt   GET /metrics right after it
    OUT/logs/<arm>_server.log          the server log, trimmed to the lines that tell its setup and the
                                       speculative-decoding counters (the whole log stays under WORK/logs)
    OUT/logs/<arm>_c<C>_bench.txt      the bench client's printed summary
    OUT/commands.txt                   every command as run, with its environment
    OUT/models/                        the target's and draft's config.json and the model build's report
    OUT/lab/summary.json               throughput, speedup and acceptance per arm and concurrency

Usage: python bench/real_engine/run_lab.py --venv .venv-real-engine --models WORK/models --work WORK --out OUT
"""

import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ARMS = {
    "plain": None,
    "ngram": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2},
    "draft": {"method": "draft_model", "model": "{draft}", "num_speculative_tokens": 4},
    # speculation configured and switched off at every batch (vLLM's per-batch table, from 0.24.0): what the off band
    # of a schedule costs against the plain server; its bench files carry `speculation=off` for `runs` to read
    "draft_off": {"method": "draft_model", "model": "{draft}", "num_speculative_tokens": 4,
                  "num_speculative_tokens_per_batch_size": [[1, 512, 0]]},
}
LOG_KEEP = re.compile(
    r"non-default args|vLLM API server version|Initializing a V1 LLM engine|SpecDecoding metrics|"
    r"speculative|Speculative|draft|Loading weights took|Model loading took|KV cache|maximum concurrency|"
    r"Avg prompt throughput|Application startup complete|Error|ERROR|Traceback|WARNING.*(cpu|CPU)",
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_ready(port, proc, limit_s):
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode} before it was ready")
        try:
            get(f"http://127.0.0.1:{port}/health", timeout=5)
            return time.time() - t0
        except OSError:  # refused, reset, timed out, HTTP 503 while loading
            time.sleep(3)
    raise SystemExit(f"server not ready after {limit_s} s")


def counters(text):
    """The vllm:spec_decode_* counters (summed over label sets) and a few request totals from a /metrics page."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m:
            continue
        name, labels, value = m.groups()
        if name.startswith("vllm:spec_decode_") and name.endswith("_total"):
            key = name
            pos = re.search(r'position="(\d+)"', labels or "")
            if pos:
                key += f"[{pos.group(1)}]"
            out[key] = out.get(key, 0.0) + float(value)
        elif name in ("vllm:generation_tokens_total", "vllm:prompt_tokens_total"):
            out[name] = out.get(name, 0.0) + float(value)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", default=".venv-real-engine")
    ap.add_argument("--models", default="bench/real_engine/work/models")
    ap.add_argument("--work", default="bench/real_engine/work")
    ap.add_argument("--out", default="tests/fixtures/real_engine")
    ap.add_argument("--arms", default="plain,ngram,draft",
                    help="servers in turn; ARM:K runs a speculative arm at K draft tokens (its files ARM_kK_c*)")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--prompts", default="1:32,4:32,16:64", help="concurrency:num_prompts pairs")
    ap.add_argument("--temperature", default="0", help="sent with every bench request (0: greedy)")
    ap.add_argument("--ready-timeout", type=int, default=1500)
    args = ap.parse_args()

    venv_bin = Path(args.venv).resolve() / "bin"
    models = Path(args.models).resolve()
    work = Path(args.work).resolve()
    out = Path(args.out).resolve()
    for d in (work / "logs", work / "results", out / "metrics", out / "logs"):
        d.mkdir(parents=True, exist_ok=True)
    for name in ("target", "draft"):  # the model configs and the build's report travel with the results
        (out / "models").mkdir(exist_ok=True)
        (out / "models" / f"{name}_config.json").write_text((models / name / "config.json").read_text())
    if (models / "build_report.json").exists():
        (out / "models" / "build_report.json").write_text((models / "build_report.json").read_text())
    prompts = dict(tuple(map(int, p.split(":"))) for p in args.prompts.split(","))
    env = dict(os.environ)
    env.update({
        "VLLM_TARGET_DEVICE": "cpu",
        "VLLM_CPU_KVCACHE_SPACE": env.get("VLLM_CPU_KVCACHE_SPACE", "1"),  # GiB
        "VLLM_CPU_OMP_THREADS_BIND": env.get("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
        "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"),
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
        "PATH": f"{venv_bin}:{env.get('PATH', '')}",
    })
    env_shown = {k: env[k] for k in ("VLLM_TARGET_DEVICE", "VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_OMP_THREADS_BIND",
                                    "OMP_NUM_THREADS", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    commands = [f"# environment: {' '.join(f'{k}={v}' for k, v in env_shown.items())}"]
    timings = {}
    summary = {"runs": []}
    rel = lambda p: os.path.relpath(p, Path.cwd())  # noqa: E731

    for item in args.arms.split(","):
        base_arm, _, k = item.partition(":")
        spec = ARMS[base_arm]
        arm = f"{base_arm}_k{k}" if k and spec else base_arm
        if k and spec:
            spec = {**spec, "num_speculative_tokens": int(k)}
        port = free_port()
        cmd = [str(venv_bin / "vllm"), "serve", str(models / "target"), "--served-model-name", "tiny-llama",
               "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--max-model-len", "512",
               "--max-num-seqs", "16", "--max-num-batched-tokens", "2048", "--enforce-eager", "--seed", "0"]
        if spec:
            spec = json.loads(json.dumps(spec).replace("{draft}", str(models / "draft")))
            cmd += ["--speculative-config", json.dumps(spec)]
        shown = " ".join(shlex.quote(rel(c) if c.startswith(str(Path.cwd())) else c) for c in cmd)
        commands.append(f"\n# {arm} server\n{shown}")
        print(f"== {arm}: {shown}", flush=True)
        log_path = work / "logs" / f"{arm}_server.log"
        t0 = time.time()
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            ready_s = wait_ready(port, proc, args.ready_timeout)
            timings[f"{arm}_startup_s"] = round(ready_s, 1)
            print(f"   ready after {ready_s:.0f} s", flush=True)
            for c in map(int, args.concurrency.split(",")):
                name = f"{arm}_c{c}"
                bench = [str(venv_bin / "vllm"), "bench", "serve", "--backend", "vllm",
                         "--base-url", f"http://127.0.0.1:{port}", "--model", "tiny-llama",
                         "--tokenizer", str(models / "target"), "--dataset-name", "random",
                         "--random-input-len", str(args.input_len), "--random-output-len", str(args.output_len),
                         "--ignore-eos", "--temperature", args.temperature, "--num-prompts", str(prompts[c]),
                         "--max-concurrency", str(c),
                         "--seed", "0", "--save-result", "--result-dir", str(work / "results"),
                         "--result-filename", f"{name}.json",
                         "--metadata", f"arm={arm}", f"spec_config={json.dumps(spec) if spec else 'none'}",
                         *(["speculation=off"] if base_arm.endswith("_off") else [])]
                if c == int(args.concurrency.split(",")[0]):
                    # one short unrecorded request so the first recorded run does not pay first-request costs
                    body = json.dumps({"model": "tiny-llama", "prompt": "def main", "max_tokens": 8}).encode()
                    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                                 headers={"Content-Type": "application/json"})
                    urllib.request.urlopen(req, timeout=600).read()
                before = get(f"http://127.0.0.1:{port}/metrics")
                (out / "metrics" / f"{name}_before.txt").write_text(before)
                t1 = time.time()
                res = subprocess.run(bench, env=env, capture_output=True, text=True)
                bench_s = time.time() - t1
                after = get(f"http://127.0.0.1:{port}/metrics")
                (out / "metrics" / f"{name}_after.txt").write_text(after)
                (out / "logs" / f"{name}_bench.txt").write_text(
                    "\n".join(l for l in (res.stdout + res.stderr).splitlines()
                              if not re.search(r"\d+%\||nanobind|leaked|skipped remainder", l)) + "\n")
                if res.returncode:
                    raise SystemExit(f"bench {name} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
                shown_b = " ".join(shlex.quote(rel(a) if a.startswith(str(Path.cwd())) else a) for a in bench)
                commands.append(f"\n# {name}\n{shown_b.replace(str(port), '$PORT')}")
                result = json.loads((work / "results" / f"{name}.json").read_text())
                (out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
                cb, ca = counters(before), counters(after)
                delta = {k: ca.get(k, 0) - cb.get(k, 0) for k in ca}
                drafts = delta.get("vllm:spec_decode_num_drafts_total", 0)
                accepted = delta.get("vllm:spec_decode_num_accepted_tokens_total", 0)
                drafted = delta.get("vllm:spec_decode_num_draft_tokens_total", 0)
                row = {"arm": arm, "concurrency": c, "num_prompts": prompts[c], "bench_wall_s": round(bench_s, 1),
                       "completed": result.get("completed"),
                       "output_throughput": result.get("output_throughput"),
                       "mean_tpot_ms": result.get("mean_tpot_ms"), "mean_ttft_ms": result.get("mean_ttft_ms"),
                       "metrics_delta": delta,
                       "mean_acceptance_length": (accepted / drafts + 1) if drafts else None,
                       "draft_acceptance_rate": (accepted / drafted) if drafted else None}
                summary["runs"].append(row)
                timings[f"{name}_bench_s"] = round(bench_s, 1)
                print(f"   {name}: {row['output_throughput']:.1f} tok/s out, E={row['mean_acceptance_length']}"
                      f" ({bench_s:.0f} s)", flush=True)
            # what the target writes (at the bench's temperature) after a prose prompt and a prompt of token salad like the random
            # dataset's: the text that the n-gram and draft proposers had to guess
            samples = []
            for prompt in ("The model predicts the speedup of speculative decoding at each concurrency.",
                           " sessions Prometheus 0.9 lookup ]) wrt ACCEPT decoding(k) -> tiny frac"):
                body = json.dumps({"model": "tiny-llama", "prompt": prompt, "max_tokens": 48,
                                   "temperature": float(args.temperature)}).encode()
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                             headers={"Content-Type": "application/json"})
                text = json.loads(urllib.request.urlopen(req, timeout=600).read())["choices"][0]["text"]
                samples.append({"prompt": prompt, "completion": text})
            (out / "logs" / f"{arm}_samples.json").write_text(json.dumps(samples, indent=1) + "\n")
        finally:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            timings[f"{arm}_server_total_s"] = round(time.time() - t0, 1)
        lines = log_path.read_text(errors="replace").splitlines()
        kept = [l[:400] for l in lines if LOG_KEEP.search(l)]
        if len(kept) > 120:  # keep the head (setup) and the tail (last counters)
            kept = kept[:60] + [f"... ({len(kept) - 120} matching lines left out) ..."] + kept[-60:]
        (out / "logs" / f"{arm}_server.log").write_text("\n".join(kept) + "\n")

    plain = {r["concurrency"]: r["output_throughput"] for r in summary["runs"] if r["arm"] == "plain"}
    for r in summary["runs"]:
        base = plain.get(r["concurrency"])
        r["speedup_vs_plain"] = round(r["output_throughput"] / base, 3) if base else None
    summary["timings_s"] = timings
    # not OUT/*.json: `python -m specmodel runs OUT/*.json` should see the bench results only
    (out / "lab").mkdir(exist_ok=True)
    (out / "lab" / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "commands.txt").write_text("\n".join(commands) + "\n")
    print("\n| arm | c | output tok/s | speedup | E (accepted/drafts + 1) |\n|---|---|---|---|---|")
    for r in summary["runs"]:
        e = r["mean_acceptance_length"]
        print(f"| {r['arm']} | {r['concurrency']} | {r['output_throughput']:.1f} | {r['speedup_vs_plain']} | "
              f"{'' if e is None else f'{e:.2f}'} |")


if __name__ == "__main__":
    sys.exit(main())
