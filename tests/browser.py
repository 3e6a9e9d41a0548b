"""Real-browser helpers: a `streamlit run` server on a free port and Debian's Chromium via Playwright.

Used by the pytest fixtures in conftest.py and by `python -m tests.browser URL PNG` (screenshots for
the README and for looking at the pages)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx

# How long a test waits for something a user would wait for (a server starting, a page's run, a chart's
# draw, a refresh) before it fails. Every wait is for a condition and returns as soon as it holds, so the
# limit costs nothing when things go well; it is generous because the suite runs on 2 cores shared with
# other work, where a cold server's first page took over a minute. pytest.ini's --timeout=300 bounds a test.
PATIENCE_S = 180
PATIENCE_MS = PATIENCE_S * 1000

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 "--disable-dev-shm-usage"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(env: dict | None = None):
    """Start `streamlit run app.py` on 127.0.0.1 and yield its base URL; always stop it."""
    with streamlit_process(env) as (url, _proc):
        yield url


@contextmanager
def streamlit_process(env: dict | None = None, script: Path | None = None):
    """Like streamlit_server, but yield (base URL, the subprocess.Popen) so callers can read its PID;
    `script` runs another app (the benchmarks' one-line app) instead of app.py."""
    port = free_port()
    log = open(os.environ.get("SPECMODEL_STREAMLIT_LOG", os.devnull), "a")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script or ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + PATIENCE_S
        while True:
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not start on {url} (exit code {proc.poll()})")
            time.sleep(0.2)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


_settled_calls = 0


def wait_settled(page, condition_js: str, timeout_ms: int = PATIENCE_MS, frames: int = 3, arg=None) -> None:
    """Wait until `condition_js` (a JS function of `arg`) holds on `frames` animation frames in a row: the
    page has stopped changing in that respect, not merely passed through it."""
    global _settled_calls
    _settled_calls += 1
    key = f"__specmodel_settled_{_settled_calls}"  # a fresh count per wait
    page.wait_for_function(
        f"(arg) => {{ const ok = !!(({condition_js})(arg));"
        f" window.{key} = ok ? (window.{key} || 0) + 1 : 0; return window.{key} >= {frames}; }}",
        arg=arg, timeout=timeout_ms, polling="raf")


# Streamlit's own state on its root element: connected, no script run in progress, requested or starting
# (`initial` before the first run), no element left stale by a run, no status widget, no skeleton.
APP_IDLE_JS = """() => { const app = document.querySelector("[data-testid='stApp']");
    return !!app && app.getAttribute('data-test-connection-state') === 'CONNECTED'
      && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector("[data-testid='stStatusWidget']")
      && !document.querySelector("[data-testid='stSkeleton']")
      && !document.querySelector("[data-testid='stElementContainer'][data-stale='true']"); }"""


def wait_for_app(page, timeout_ms: int = PATIENCE_MS) -> None:
    """Wait until the page has rendered, no script run is in progress and its elements have settled."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_ms)
    wait_settled(page, APP_IDLE_JS, timeout_ms)


def open_from_sidebar(page, label: str, path: str, timeout_ms: int = PATIENCE_MS) -> None:
    """Click the sidebar link named `label` as a user would and wait until its page (URL ending in
    `path`) has finished its first run. A click that lands while the previous page is still rerunning
    can be dropped by the browser, so it is repeated until the URL changes."""
    link = page.locator("[data-testid='stSidebarNavLink']", has_text=label)
    deadline = time.monotonic() + timeout_ms / 1000
    while not urlsplit(page.url).path.rstrip("/").endswith(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"clicking {label!r} in the sidebar did not open {path} (still at {page.url})")
        link.click(timeout=timeout_ms)
        try:
            page.wait_for_url(f"**{path}*", timeout=5_000)
        except Exception:  # noqa: BLE001 - a Playwright TimeoutError: click again
            pass
    wait_for_app(page, timeout_ms)


def wait_for_charts(page, timeout_ms: int = PATIENCE_MS) -> None:
    """Plotly draws after the script run ends: wait until every chart has its SVG and the charts have stopped
    changing (the same number, sizes and SVG elements on a few frames in a row; a chart in a closed
    expander or another tab has its SVG at size 0 and counts as drawn)."""
    wait_settled(page, """() => { const c = [...document.querySelectorAll("[data-testid='stPlotlyChart']")];
        if (!c.length || !c.every(e => e.querySelector('.main-svg'))) return false;
        const sig = c.map(e => { const r = e.querySelector('.main-svg').getBoundingClientRect();
            return `${r.width}x${r.height}:${e.querySelectorAll('.main-svg *').length}`; }).join('|');
        const same = window.__specmodel_charts === sig; window.__specmodel_charts = sig; return same; }""",
                 timeout_ms)


def wait_for_tables(page, timeout_ms: int = PATIENCE_MS) -> None:
    """Wait until the main area shows at least one table and every table shown has drawn its grid (one in a
    closed expander or with no size is not waited for)."""
    page.wait_for_function("""() => { const d = [...document.querySelectorAll(
        "[data-testid='stMain'] [data-testid='stDataFrame']")].filter(
        e => e.getBoundingClientRect().width > 0 && !e.closest('details:not([open])'));
        return d.length > 0 && d.every(e => e.querySelector('.dvn-scroller')); }""", timeout=timeout_ms)


def until(page, condition, what: str, timeout_s: float = PATIENCE_S) -> None:
    """Poll a condition evaluated in Python (a server's counter, a field's value) until it holds; fail
    saying `what` was awaited if it has not after timeout_s. The page keeps handling its events meanwhile."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s:g} s for {what}")
        page.wait_for_timeout(100)


def screenshot(url: str, path: str, width: int = 1500, height: int = 2200) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(url)
        wait_for_app(page)
        wait_for_charts(page)
        page.screenshot(path=path, full_page=True)
        browser.close()


if __name__ == "__main__":
    screenshot(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:5]))
