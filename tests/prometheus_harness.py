"""Start Debian's real Prometheus (/usr/bin/prometheus) on 127.0.0.1 for the fleet tests.

`running_prometheus(workdir, jobs)` writes a temporary config (JSON is valid YAML) with a 1 s
scrape interval, starts Prometheus on a free port with its own storage directory, waits until it
is ready, yields its base URL and always stops it. `wait_for_samples` polls the HTTP API until
every listed target has been scraped successfully enough times.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from specmodel import Scenario
from tests.browser import free_port
from tests.replay import ReplayServer

# The rules the shared fleet's Prometheus evaluates (conftest.py prom_fleet; tests/test_rules.py checks them)
RULES_WINDOW = "10s"  # the fleet is scraped every second: ten samples per rate
RULES_SCENARIO = Scenario.from_names(k=3)  # the sidebar's defaults (L40S, Llama 3.1 8B, Llama 3.2 1B draft) at the fleet's k

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def _die_with_parent() -> None:
    """In the child: ask Linux to stop Prometheus if the test process dies without cleaning up."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _config(jobs: dict[str, list[str]], rule_files=()) -> dict:
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}
                           for job, targets in jobs.items()],
    }
    if rule_files:
        config["rule_files"] = [str(f) for f in rule_files]
    return config


def _log_tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def running_prometheus(workdir: Path, jobs: dict[str, list[str]], startup_s: float = 30.0,
                       rule_files=()) -> Iterator[str]:
    """Run Prometheus scraping `jobs` ({job_name: ["127.0.0.1:port", ...]}) and evaluating `rule_files`
    every second; yield its base URL."""
    if not os.access(PROMETHEUS, os.X_OK):
        raise RuntimeError(f"{PROMETHEUS} is missing: `make test` installs Debian's prometheus package")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(json.dumps(_config(jobs, rule_files), indent=2))
    log = workdir / "prometheus.log"
    for _attempt in range(3):  # a free port can be taken between probing and binding: retry
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        storage = workdir / f"data-{port}"
        with open(log, "ab") as log_file:
            proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={storage}",
                 f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1h",
                 "--log.level=warn"],
                stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=workdir, env={**os.environ, "HOME": str(workdir)}, preexec_fn=_die_with_parent)
        try:
            if _wait_ready(proc, url, startup_s):
                yield url
                return
        finally:
            _stop(proc)
    raise RuntimeError(f"Prometheus did not start; log:\n{_log_tail(log)}")


def _wait_ready(proc: subprocess.Popen, url: str, startup_s: float) -> bool:
    deadline = time.monotonic() + startup_s
    with httpx.Client(timeout=1.0) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                if client.get(f"{url}/-/ready").status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    return False


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def wait_for_samples(url: str, targets: list[str], samples: int, timeout_s: float = 30.0) -> None:
    """Block until each target ("127.0.0.1:port") has `samples` successful scrapes stored."""
    query = "sum by (instance) (sum_over_time(up[5m]))"
    deadline = time.monotonic() + timeout_s
    seen: dict[str, float] = {}
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            body = client.get(f"{url}/api/v1/query", params={"query": query}).json()
            seen = {r["metric"].get("instance"): float(r["value"][1]) for r in body["data"]["result"]}
            if all(seen.get(t, 0) >= samples for t in targets):
                return
            time.sleep(0.25)
    raise RuntimeError(f"Prometheus at {url} scraped too few samples in {timeout_s:g} s: {seen}")


# --- the test fleet: replays with counters advancing at known rates per scrape (1 s) -------------

@dataclass(frozen=True)
class Replica:
    """One replayed inference server: its job, sample and what advances per scrape."""

    job: str
    fixture: str
    increments: dict
    gauges: dict
    mode: str = "ok"  # a tests.replay mode: "reset" restarts the counters after the first scrape


# The servers' own step timing (issue 44), per scrape. v1-good: 990 request steps of 25 ms over 248 engine steps
# (batch 3.99) and 20 first tokens, so (2900 − 20) decode tokens: 24.75 s / 2880 = 8.59 ms a token. v1-off: a plain
# step of 15 ms, 4950 request steps over 78 engine steps (batch 63.5), 50 first tokens.
V1_GOOD_TIMING = {"vllm:inter_token_latency_seconds_sum": 24.75, "vllm:inter_token_latency_seconds_count": 990,
                  "vllm:time_to_first_token_seconds_count": 20, "vllm:iteration_tokens_total_count": 248}
V1_OFF_TIMING = {"vllm:inter_token_latency_seconds_sum": 74.25, "vllm:inter_token_latency_seconds_count": 4950,
                 "vllm:time_to_first_token_seconds_count": 50, "vllm:iteration_tokens_total_count": 78}

FLEET = {
    # vLLM V1 with good acceptance at low load: E = 1 + 1900/1000 = 2.9, k = 3.
    "v1-good": Replica("vllm-pool-a", "vllm_v1_specdecode_sample.txt", {
        "vllm:spec_decode_num_drafts_total": 1000, "vllm:spec_decode_num_draft_tokens_total": 3000,
        "vllm:spec_decode_num_accepted_tokens_total": 1900,
        "vllm:spec_decode_num_accepted_tokens_per_pos_total": [850, 650, 400],
        "vllm:generation_tokens_total": 2900, **V1_GOOD_TIMING}, {"vllm:num_requests_running": 4}),
    # vLLM V1 with poor acceptance under heavy load: E = 1 + 417/1000 = 1.417, k = 3; loses.
    "v1-losing": Replica("vllm-pool-a", "vllm_v1_specdecode_sample.txt", {
        "vllm:spec_decode_num_drafts_total": 400, "vllm:spec_decode_num_draft_tokens_total": 1200,
        "vllm:spec_decode_num_accepted_tokens_total": 166.8,
        "vllm:spec_decode_num_accepted_tokens_per_pos_total": [120, 36, 10.8],
        "vllm:generation_tokens_total": 566.8}, {"vllm:num_requests_running": 160}),
    # vLLM V1 restarted after its first scrape (counters back to zero): increase() handles the reset.
    "v1-restarted": Replica("vllm-pool-b", "vllm_v1_specdecode_sample.txt", {
        "vllm:spec_decode_num_drafts_total": 500, "vllm:spec_decode_num_draft_tokens_total": 1500,
        "vllm:spec_decode_num_accepted_tokens_total": 1000,
        "vllm:spec_decode_num_accepted_tokens_per_pos_total": [450, 330, 220],
        "vllm:generation_tokens_total": 1500}, {"vllm:num_requests_running": 8}, mode="reset"),
    # vLLM V1 with speculation off.
    "v1-off": Replica("vllm-pool-b", "vllm_v1_nospec_sample.txt",
                      {"vllm:generation_tokens_total": 5000, **V1_OFF_TIMING}, {"vllm:num_requests_running": 64}),
    # vLLM V0: E = spec_decode_efficiency · (k + 1) = 0.68267 · 5; k = 4 from emitted / draft tokens.
    "v0": Replica("vllm-legacy", "vllm_v0_specdecode_sample.txt", {
        "vllm:spec_decode_num_draft_tokens_total": 4000, "vllm:spec_decode_num_emitted_tokens_total": 3413.3333,
        "vllm:spec_decode_num_accepted_tokens_total": 2440, "vllm:generation_tokens_total": 1500}, {}),
    # SGLang counters: E = (Δgeneration − Δrequests) / Δverify calls = (2750 − 10) / 1000 = 2.74.
    "sglang": Replica("sglang", "sglang_specdecode_sample.txt", {
        "sglang:spec_verify_calls_total": 1000, "sglang:generation_tokens_total": 2750,
        "sglang:num_requests_total": 10}, {}),
}
DEAD_JOB = "vllm-legacy"  # a target in this job that nothing listens on: Prometheus reports it down


@dataclass(frozen=True)
class RunningFleet:
    url: str  # Prometheus base URL
    servers: dict  # FLEET key -> ReplayServer
    targets: dict  # FLEET key -> "127.0.0.1:port" (Prometheus' instance label)
    dead: str  # instance label of the down target


@contextlib.contextmanager
def running_fleet(workdir: Path, samples: int = 6, rule_files=()) -> Iterator[RunningFleet]:
    """The FLEET replays plus a dead target, scraped every second by a real Prometheus (which also
    evaluates `rule_files`, if given, every second)."""
    with contextlib.ExitStack() as stack:
        servers = {key: stack.enter_context(ReplayServer(r.fixture, increments=r.increments, gauges=r.gauges,
                                                                  mode=r.mode))
                   for key, r in FLEET.items()}
        targets = {key: s.base_url.removeprefix("http://") for key, s in servers.items()}
        dead = f"127.0.0.1:{free_port()}"
        jobs: dict[str, list[str]] = {}
        for key, r in FLEET.items():
            jobs.setdefault(r.job, []).append(targets[key])
        jobs[DEAD_JOB].append(dead)
        url = stack.enter_context(running_prometheus(workdir, jobs, rule_files=rule_files))
        wait_for_samples(url, list(targets.values()), samples)
        yield RunningFleet(url, servers, targets, dead)


if __name__ == "__main__":  # `python -m tests.prometheus_harness`: a demo fleet until Ctrl-C
    with running_fleet(Path(tempfile.mkdtemp(prefix="fleet-demo-")), samples=2) as f:
        print(f.url, flush=True)
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            sys.exit(0)
