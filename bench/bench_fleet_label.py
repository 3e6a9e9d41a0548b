"""Fleet page with a 200,000-character instance label in Chromium, beside the same page with a short label.

Issue 41's target: "the Fleet page with a 200,000-character label renders within 10 s" (before the fix the
instance table did not cut the label and the viewer's tab hung). A real `streamlit run app.py` and Debian's
Chromium (tests/browser.py) open /fleet with a Prometheus URL; the Prometheus is tests/fuzz_fleet.py's
server on 127.0.0.1, answering for one vLLM V1 instance (every series of the reference sample) whose
`instance` label is either "gpu-0:8000" or 200,000 characters (fuzz_fleet.one_instance_answers). Each load
is a fresh browser context and a fresh Prometheus path prefix (so the page's 30 s query cache never answers),
the two labels in turn, the order alternating between rounds. Timed from `page.goto` until the page has
rendered: Streamlit idle (tests/browser.py's wait_for_app), every table drawn and every chart drawn
(wait_for_charts). Beside the wall time, the renderer main thread's busy time (Chromium's TaskDuration) and the
Streamlit server's CPU over the same span, which other work on a shared machine stretches less.

Measured 2026-12-07 10:35 UTC on the shared 2-core development machine (load average 11-15 from other
engineers' test suites, which stretch every wall time), commit after 6e57349, 3 rounds: the 200,000-character
label rendered in a median 8.7 s (8.7, 8.0, 11.3 s; goal <= 10 s: met), the short label in 10.3 s (10.3, 11.2,
6.0 s): 0.85x, no cost from the label beyond the machine's noise; server CPU 0.6 s against 0.5 s, renderer main
thread busy 5.9 s against 9.1 s; the longest run of the label anywhere on the page: 199 characters (cut).
Again at 11:00 UTC, commit 7252735, load average 6.7: the long label 4.6 s (4.7, 4.6, 4.2 s; met), the short
4.1 s (3.7, 4.4, 4.1 s): 1.12x; server CPU 0.5 s against 0.4 s, renderer main thread 3.2 s against 3.3 s.
"""

from __future__ import annotations

import os
import statistics
from urllib.parse import quote

from bench import against_goal
from bench.bench_load import measured_page
from tests.browser import (CHROMIUM, CHROMIUM_ARGS, PATIENCE_MS, streamlit_process, wait_for_app, wait_for_charts,
                           wait_for_tables)

ROUNDS = int(os.environ.get("FLEET_LABEL_ROUNDS", "3"))
GOAL_S = 10  # issue 41: the Fleet page with a 200,000-character label renders within 10 s
LABELS = {"short": "gpu-0:8000", "200,000 characters": "i" * 200_000}


def _load(browser, url: str, pid: int) -> dict:
    with measured_page(browser, pid) as (page, spent):
        page.goto(url, timeout=PATIENCE_MS)
        wait_for_app(page)
        wait_for_tables(page)
        wait_for_charts(page)
        out = spent()
        longest = page.evaluate("() => Math.max(0, ...(document.body.innerText.match(/i{50,}/g) || []).map(s => s.length))")
        return out | {"longest_run": longest}


def run():
    from playwright.sync_api import sync_playwright

    from tests.fuzz_fleet import _Routes, one_instance_answers, server_url

    times: dict[str, list[dict]] = {name: [] for name in LABELS}
    prometheus = server_url()
    with sync_playwright() as p, streamlit_process() as (base, proc):
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for r in range(ROUNDS):
                for name in (list(LABELS) if r % 2 else list(LABELS)[::-1]):
                    prefix = f"/round-{r}-{len(LABELS[name])}"  # a Prometheus behind a path of its own: no cache hit
                    with _Routes.lock:
                        _Routes.answers = one_instance_answers(LABELS[name], prefix=prefix)
                        times[name].append(_load(browser, f"{base}/fleet?prom_url={quote(prometheus + prefix)}", proc.pid))
        finally:
            browser.close()

    def median(name: str, key: str) -> float:
        return statistics.median(t[key] for t in times[name])

    lines = [f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {ROUNDS} rounds, one "
             "`streamlit run`, a fresh browser context and Prometheus path per load"]
    for name in LABELS:
        walls = ", ".join(f"{t['wall']:.1f}" for t in times[name])
        lines.append(f"instance label of {name}: goto -> rendered (tables and charts drawn): median "
                     f"{median(name, 'wall'):.1f} s ({walls}); server CPU {median(name, 'server'):.1f} s, renderer "
                     f"main thread busy {median(name, 'main'):.1f} s; longest run of the label on the page "
                     f"{max(t['longest_run'] for t in times[name]):,} characters")
    long_name, short_name = list(LABELS)[1], list(LABELS)[0]
    lines.append(f"200,000-character label, rendered in: {against_goal(median(long_name, 'wall'), GOAL_S, unit=' s')}")
    lines.append(f"ratio to the short label: {median(long_name, 'wall') / median(short_name, 'wall'):.2f}x")
    return lines
