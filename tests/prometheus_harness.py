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
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(jobs: dict[str, list[str]]) -> dict:
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}
                           for job, targets in jobs.items()],
    }


def _log_tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def running_prometheus(workdir: Path, jobs: dict[str, list[str]], startup_s: float = 30.0) -> Iterator[str]:
    """Run Prometheus scraping `jobs` ({job_name: ["127.0.0.1:port", ...]}); yield its base URL."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(json.dumps(_config(jobs), indent=2))
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
                cwd=workdir, env={**os.environ, "HOME": str(workdir)})
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
