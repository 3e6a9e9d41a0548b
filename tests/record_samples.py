"""Write the bundled samples behind "Try it with a recorded server" on the Live and Fleet pages.

    python -m tests.record_samples

- sample_runs/live_vllm_v1/scrape_NNNs.txt: a vLLM V1 server's /metrics text (the format of
  tests/fixtures/vllm_v1_specdecode_sample.txt, written by vLLM's own Prometheus logger) at 10 s
  intervals, its spec-decode counters advancing as a k = 3 server with per-position acceptance
  0.80 / 0.56 / 0.35 does, and its running requests rising from 8 to 256: the verdict turns as
  the load grows. NNN is the scrape's second in the recording.
- sample_runs/fleet_prometheus_answer.json: the answers a real Prometheus (Debian's, as in the
  Fleet tests) gave to the Fleet page's queries while scraping the test fleet of
  tests/prometheus_harness.py (vLLM V1 at light and heavy load, one restarted, one with speculation
  off, vLLM V0, SGLang, and a target that is down). Instance addresses are renamed from
  127.0.0.1:port to the fleet's names.

Every address is 127.0.0.1; nothing leaves the machine.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import httpx

from specmodel import Scenario
from specmodel.metrics import fleet, promapi
from specmodel.metrics.samples import FLEET_SAMPLE, FLEET_SAMPLE_SPAN, FLEET_SAMPLE_WINDOW, LIVE_SAMPLE_DIR
from tests.prometheus_harness import FLEET, running_fleet
from tests.replay import ReplayServer

LIVE_INTERVAL_S = 10
LIVE_RUNNING = [8, 32, 96, 160, 224, 256, 256, 256]
LIVE_INCREMENTS = {  # per 10 s scrape interval
    "vllm:spec_decode_num_drafts_total": 1000, "vllm:spec_decode_num_draft_tokens_total": 3000,
    "vllm:spec_decode_num_accepted_tokens_total": 1710,
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": [800, 560, 350],
    "vllm:generation_tokens_total": 2710}


def record_live() -> list[Path]:
    LIVE_SAMPLE_DIR.mkdir(exist_ok=True)
    for old in LIVE_SAMPLE_DIR.glob("scrape_*.txt"):
        old.unlink()
    written = []
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=LIVE_INCREMENTS) as server:
        for i, running in enumerate(LIVE_RUNNING):
            server.gauges = {"vllm:num_requests_running": running, "vllm:num_requests_waiting": 0}
            path = LIVE_SAMPLE_DIR / f"scrape_{i * LIVE_INTERVAL_S:03d}s.txt"
            path.write_text(server.body(i))
            written.append(path)
    return written


class _Recorder(httpx.BaseTransport):
    def __init__(self):
        self.inner = httpx.HTTPTransport()
        self.answers = []

    def handle_request(self, request):
        response = self.inner.handle_request(request)
        response.read()
        self.answers.append({"path": request.url.path, "params": dict(request.url.params),
                             "status": response.status_code, "body": json.loads(response.content)})
        return response


def record_fleet() -> Path:
    with tempfile.TemporaryDirectory() as tmp, running_fleet(Path(tmp), samples=20) as f:
        time.sleep(15)  # a history longer than the span, one scrape a second
        recorder = _Recorder()
        server = promapi.PromServer(f.url)
        at_s = time.time()
        with httpx.Client(transport=recorder) as client:
            fleet.fleet(client, server, Scenario(), window=FLEET_SAMPLE_WINDOW, at_s=at_s)
            fleet.history(client, server, window=FLEET_SAMPLE_WINDOW, span=FLEET_SAMPLE_SPAN, end_s=at_s)
        names = {address: f"{key}:8000" for key, address in f.targets.items()}
        names[f.dead] = "v0-down:8000"
        text = json.dumps({
            "about": "Answers of a real Prometheus (Debian's prometheus package) to the Fleet page's queries, "
                     "recorded by tests/record_samples.py while it scraped the replayed test fleet of "
                     "tests/prometheus_harness.py every second; instance addresses renamed. A sample, not a fleet.",
            "recorded_at": at_s, "window": FLEET_SAMPLE_WINDOW, "span": FLEET_SAMPLE_SPAN,
            "jobs": sorted({r.job for r in FLEET.values()}), "answers": recorder.answers}, indent=1)
        for address, name in names.items():
            text = text.replace(address, name)
    FLEET_SAMPLE.write_text(text + "\n")
    return FLEET_SAMPLE


if __name__ == "__main__":
    for path in record_live() + [record_fleet()]:
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
