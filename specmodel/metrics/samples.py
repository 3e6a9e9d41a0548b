"""Recorded servers a newcomer can try the Live and Fleet pages on, without a server or a network.

The files live in sample_runs/ (tests/record_samples.py writes them; sample_runs/README.md says what
they are): Live replays a vLLM server's /metrics snapshots one scrape at a time, Fleet reads a real
Prometheus' recorded answers through an in-process transport. Every result made from them is a
sample, and the pages say so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

import httpx

from specmodel.errors import SpecModelError
from specmodel.metrics.prom import Snapshot, parse_snapshot
from specmodel.paths import SAMPLE_DIR

LIVE_SAMPLE_DIR = SAMPLE_DIR / "live_vllm_v1"
FLEET_SAMPLE = SAMPLE_DIR / "fleet_prometheus_answer.json"
FLEET_SAMPLE_WINDOW = "10s"
FLEET_SAMPLE_SPAN = "30s"
FLEET_SAMPLE_URL = "http://127.0.0.1:9090"  # an address needing no DNS; never contacted (every answer is recorded)

LIVE_SAMPLE_LABEL = ("Sample: a recorded vLLM V1 server (Llama 3.1 8B, k = 3), replayed from "
                     "sample_runs/live_vllm_v1/ one scrape at a time, 10 s apart, while its load rises from "
                     "8 to 256 running requests. Not your server: nothing is fetched.")
LIVE_SAMPLE_SHORT = "Sample: a recorded server, replayed; not yours."  # the page's line; the label is its tooltip
FLEET_SAMPLE_SHORT = "Sample: a recorded test fleet; not yours."
FLEET_SAMPLE_LABEL = ("Sample: answers a real Prometheus gave while scraping a test fleet (vLLM V1 at light and "
                      "heavy load, one restarted, one with speculation off, vLLM V0, SGLang and one target down), "
                      "from sample_runs/fleet_prometheus_answer.json. Not your fleet: nothing is fetched.")
FLEET_SAMPLE_HELP = (f"{FLEET_SAMPLE_LABEL} Recorded over a {FLEET_SAMPLE_WINDOW} window; the window and label "
                     "filter boxes apply to your own Prometheus.")

_OFFSET = re.compile(r"scrape_(\d+)s\.txt$")


@lru_cache(maxsize=1)
def _live_texts() -> tuple[tuple[float, str], ...]:
    files = sorted(LIVE_SAMPLE_DIR.glob("scrape_*.txt"), key=lambda p: int(_OFFSET.search(p.name).group(1)))
    if len(files) < 2:
        raise SpecModelError(f"the recorded server's snapshots are missing from {LIVE_SAMPLE_DIR}")
    return tuple((float(_OFFSET.search(p.name).group(1)), p.read_text()) for p in files)


def live_sample_length() -> int:
    """How many scrapes the recording holds."""
    return len(_live_texts())


def live_sample_snapshot(index: int, started_at: float) -> Snapshot:
    """The recording's scrape number `index` (0-based), timed as if the recording began at `started_at`
    (unix seconds), so windows and rates come out as they were recorded."""
    texts = _live_texts()
    if not 0 <= index < len(texts):
        raise SpecModelError(f"the recording has {len(texts)} scrapes; there is no scrape {index + 1}")
    offset, text = texts[index]
    return parse_snapshot(text, at=started_at + offset)


LIVE_SAMPLE_END = ("End of the recording ({scrapes} scrapes). Press 'Stop the sample' and enter your server's URL, "
                   "or start the sample again from an empty URL.")


@dataclass
class LiveReplay:
    """The recording replayed one scrape per call of next_snapshot(), timed as if it began at
    `started_at` (unix seconds): a cursor a page keeps for its session."""

    started_at: float
    next_index: int = 0

    def next_snapshot(self) -> Snapshot | None:
        """The next scrape, or None once all of them were replayed."""
        if self.next_index >= live_sample_length():
            return None
        self.next_index += 1
        return live_sample_snapshot(self.next_index - 1, self.started_at)


@lru_cache(maxsize=1)
def _fleet_answers() -> dict:
    try:
        return json.loads(FLEET_SAMPLE.read_text())
    except (OSError, ValueError):
        raise SpecModelError(f"the recorded Prometheus answers are missing from {FLEET_SAMPLE}") from None


def fleet_sample_time() -> float:
    """When the Prometheus answers were recorded (unix seconds): query the sample at this time."""
    return float(_fleet_answers()["recorded_at"])


def _answer(request: httpx.Request) -> httpx.Response:
    query = request.url.params.get("query")
    for answer in _fleet_answers()["answers"]:
        if answer["path"] == request.url.path and answer["params"].get("query") == query:
            return httpx.Response(answer["status"], json=answer["body"])
    # A query the recording did not make (another window or label filter): an empty answer, as a
    # Prometheus without such series gives.
    kind = "matrix" if request.url.path.endswith("query_range") else "vector"
    body = {"status": "success", "data": {"activeTargets": []}} if request.url.path.endswith("targets") else \
        {"status": "success", "data": {"resultType": kind, "result": []}}
    return httpx.Response(200, json=body)


def recorded_prometheus_client() -> httpx.Client:
    """An httpx client whose every request is answered from the recording, in process."""
    return httpx.Client(transport=httpx.MockTransport(_answer))
