"""First page after `streamlit run`: app.py's What-if page against a one-line Streamlit app, side by side in Chromium.

Each round starts a fresh `streamlit run app.py` and a fresh `streamlit run` of a one-line app (both
servers up at once, as the same machine serves them), then opens each in a new Chromium context
(the order alternates between rounds) and times the load from `page.goto` until the page's first
script run has finished: Streamlit reports no script running (`data-test-script-state`) and the
page's title is drawn (for app.py the What-if title, after the rerun a fresh process makes on its
first session, pages/parts/streamlit_mode.py). app.py's own timer (SPECMODEL_RUN_TIMES) gives the
server's share. Every address is 127.0.0.1.

Beside the wall times, which the other work on a shared machine stretches, each side's work over the
same span: the server process's CPU (from /proc) and the time the page's renderer main thread was busy
(Chromium's TaskDuration, which a loaded machine stretches less than the wall time, but stretches),
the two that take turns on the critical path. After the first run, the app's charts
are still being drawn (plotly.js loads and draws after the script run ends): the time until every
chart has its SVG is printed too, outside the goal."""

from __future__ import annotations

import importlib.util
import os
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path

from bench import against_goal
from bench.bench_load import measured_page
from tests.browser import CHROMIUM, CHROMIUM_ARGS, ROOT, streamlit_process

ROUNDS = int(os.environ.get("FIRST_PAGE_ROUNDS", "5"))
ONE_LINE_APP = 'import streamlit as st\nst.title("Hello")\n'
FIRST_RUN_DONE_JS = ("(title) => document.querySelector(\"[data-testid='stApp']\")?.dataset.testScriptState"
                     " === 'notRunning' && (document.querySelector('h1')?.innerText || '').startsWith(title)")
CHARTS_DRAWN_JS = ("() => { const c = document.querySelectorAll('[data-testid=\"stPlotlyChart\"]');"
                   " return c.length > 0 && [...c].every(e => e.querySelector('.main-svg')); }")
TITLES = {"app": "What-if:", "one-line": "Hello"}


def _open(browser, base: str, pid: int, title: str, charts: bool) -> dict:
    """Seconds from goto to the first run finished (and, with `charts`, to every chart drawn), with the
    server's CPU seconds and the renderer main thread's busy seconds over each span."""
    with measured_page(browser, pid) as (page, spent):
        page.goto(base + "/", timeout=120_000)
        page.wait_for_function(FIRST_RUN_DONE_JS, arg=title, timeout=120_000)
        out = spent()
        if charts:
            page.wait_for_function(CHARTS_DRAWN_JS, timeout=120_000)
            drawn = spent()
            out |= {"charts": drawn["wall"], "charts_main": drawn["main"]}
        return out


def bytecode_state(root: Path = ROOT) -> str:
    """How many of the app's own modules have current bytecode (what `make bytecode`, and so `make run`,
    leaves): the first page's server CPU depends on it where Python may not write __pycache__ itself."""
    sources = [root / "app.py", *sorted((root / "pages").rglob("*.py")), *sorted((root / "specmodel").rglob("*.py"))]
    fresh = 0
    for src in sources:
        pyc = Path(importlib.util.cache_from_source(str(src)))
        fresh += pyc.exists() and pyc.stat().st_mtime >= src.stat().st_mtime
    said = "as `make run` leaves them" if fresh == len(sources) else "run `make bytecode` to measure what `make run` leaves"
    return f"the app's modules with current bytecode: {fresh} of {len(sources)} ({said})"


def _server_ms(path: Path) -> float:
    """app.py's script runs logged so far (the first page's run and its rerun), in ms."""
    return sum(float(line.split("\t")[3]) for line in path.read_text().splitlines()) if path.exists() else 0.0


def run():
    from playwright.sync_api import sync_playwright

    times: dict[str, list[dict]] = {"app": [], "one-line": []}
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
                    servers = {"app": stack.enter_context(streamlit_process({"SPECMODEL_RUN_TIMES": str(run_times)})),
                               "one-line": stack.enter_context(streamlit_process(script=one_line))}
                    for name in (["app", "one-line"] if r % 2 else ["one-line", "app"]):
                        base, proc = servers[name]
                        times[name].append(_open(browser, base, proc.pid, TITLES[name], charts=name == "app"))
                    server.append(_server_ms(run_times))
        finally:
            browser.close()
    def ms(name: str, key: str) -> float:
        return statistics.median(t[key] for t in times[name]) * 1e3

    def walls(name: str, key: str = "wall") -> str:
        return ", ".join(f"{t[key] * 1e3:.0f}" for t in times[name])

    a, o = ms("app", "wall"), ms("one-line", "wall")
    return [
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {ROUNDS} rounds, fresh servers each; "
        + bytecode_state(),
        f"one-line Streamlit app, goto -> first run finished: median {o:.0f} ms ({walls('one-line')}); "
        f"server CPU {ms('one-line', 'server'):.0f} ms, renderer main thread busy {ms('one-line', 'main'):.0f} ms",
        f"app.py What-if page, goto -> first run finished: median {a:.0f} ms ({walls('app')}); "
        f"server CPU {ms('app', 'server'):.0f} ms, renderer main thread busy {ms('app', 'main'):.0f} ms; "
        f"app.py's own script runs: median {statistics.median(server):.0f} ms",
        f"app.py What-if page, goto -> every chart drawn (not in the goal): median {ms('app', 'charts'):.0f} ms "
        f"({walls('app', 'charts')}); renderer main thread busy {ms('app', 'charts_main'):.0f} ms",
        f"ratio to the one-line app: {against_goal(a / o, 1.5)}",
    ]
