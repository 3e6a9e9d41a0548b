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
    log = open(os.devnull, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script or ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
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


def wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until the page has rendered and no script run is in progress."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && "
        "document.querySelectorAll('[data-testid=\"stSkeleton\"]').length === 0", timeout=timeout_ms)
    page.wait_for_timeout(300)


def open_from_sidebar(page, label: str, path: str, timeout_ms: int = 60_000) -> None:
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


def wait_for_charts(page, timeout_ms: int = 30_000) -> None:
    """Plotly draws after the script run ends: wait until every chart has its SVG."""
    page.wait_for_function(
        "() => { const c = document.querySelectorAll('[data-testid=\"stPlotlyChart\"]');"
        " return c.length > 0 && [...c].every(e => e.querySelector('.main-svg')); }", timeout=timeout_ms)
    page.wait_for_timeout(500)


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
