"""First page after `streamlit run`: app.py's What-if page against a one-line Streamlit app, side by side in Chromium.

Each round starts a fresh `streamlit run app.py` and a fresh `streamlit run` of a one-line app (both
servers up at once, as the same machine serves them), then opens each in a new Chromium context
(the order alternates between rounds) and times the load from `page.goto` until the page's first
script run has finished: Streamlit reports no script running (`data-test-script-state`) and the
page's title is drawn (for app.py the What-if title, after the rerun a fresh process makes on its
first session, pages/parts/streamlit_mode.py). app.py's own timer (SPECMODEL_RUN_TIMES) gives the
server's share. Every address is 127.0.0.1."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench import against_goal
from tests.browser import CHROMIUM, CHROMIUM_ARGS, streamlit_process

ROUNDS = int(os.environ.get("FIRST_PAGE_ROUNDS", "5"))
ONE_LINE_APP = 'import streamlit as st\nst.title("Hello")\n'
FIRST_RUN_DONE_JS = ("(title) => document.querySelector(\"[data-testid='stApp']\")?.dataset.testScriptState"
                     " === 'notRunning' && (document.querySelector('h1')?.innerText || '').startsWith(title)")
TITLES = {"app": "What-if:", "one-line": "Hello"}


def _open(browser, base: str, title: str) -> float:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        start = time.perf_counter()
        page.goto(base + "/", timeout=120_000)
        page.wait_for_function(FIRST_RUN_DONE_JS, arg=title, timeout=120_000)
        return time.perf_counter() - start
    finally:
        context.close()


def _server_ms(path: Path) -> float:
    """app.py's script runs logged so far (the first page's run and its rerun), in ms."""
    return sum(float(line.split("\t")[3]) for line in path.read_text().splitlines()) if path.exists() else 0.0


def run():
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {"app": [], "one-line": []}
    server: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        one_line = Path(tmp) / "one_line.py"
        one_line.write_text(ONE_LINE_APP)
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=CHROMIUM_ARGS + ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"])
        try:
            for r in range(ROUNDS):
                run_times = Path(tmp) / f"run_times_{r}.tsv"
                with ExitStack() as stack:
                    bases = {"app": stack.enter_context(streamlit_process({"SPECMODEL_RUN_TIMES": str(run_times)}))[0],
                             "one-line": stack.enter_context(streamlit_process(script=one_line))[0]}
                    for name in (["app", "one-line"] if r % 2 else ["one-line", "app"]):
                        times[name].append(_open(browser, bases[name], TITLES[name]))
                    server.append(_server_ms(run_times))
        finally:
            browser.close()
    a, o = statistics.median(times["app"]), statistics.median(times["one-line"])
    return [
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {ROUNDS} rounds, fresh servers each",
        f"one-line Streamlit app, goto -> first run finished: median {o * 1e3:.0f} ms "
        f"({', '.join(f'{t * 1e3:.0f}' for t in times['one-line'])})",
        f"app.py What-if page, goto -> first run finished: median {a * 1e3:.0f} ms "
        f"({', '.join(f'{t * 1e3:.0f}' for t in times['app'])}); app.py's own script runs: "
        f"median {statistics.median(server):.0f} ms",
        f"ratio to the one-line app: {against_goal(a / o, 1.5)}",
    ]
