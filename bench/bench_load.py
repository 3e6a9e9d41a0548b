"""Many browser sessions at once against one `streamlit run`: errors, rerun time under load vs alone, memory.

One real `streamlit run app.py`, two metrics replay servers on 127.0.0.1 and one headless Chromium
with a browser context per session. First LOAD_COLD_SESSIONS (default 6) sessions open the fresh
server at once (as after a restart with tabs open) and must each show the app; then ONE session
alone does every action (the baseline); then
LOAD_SESSIONS sessions (default 10) plus one slow-server watcher run at once for LOAD_SECONDS
(default 75 s), each regular session cycling through:

- What-if: move the α and k sliders with the keyboard (there and back, 6 moves) and time each rerun
  from the key press to the moment Streamlit reports the script run finished (the `stApp` element's
  `data-test-script-state`: the state the status widget shows, read without the widget's 200 ms
  fade-out) with the verdict and metrics changed;
- Past runs: upload sample_runs/multi_workload.csv and wait for the break-even table;
- Live: set the scrape interval to 2 s, enter the replay server's URL and wait for the live verdict.

The watcher enters the SLOW server's URL on the Live page and stays there. That server alternates
every LOAD_SLOW_PERIOD_S (default 10 s) between trickling a byte every 0.2 s (each scrape runs into
the page's time limit) and answering at once; it records when each trickling request was in flight,
and the other sessions' reruns and live verdicts are split by whether one was pending when they began.

Errors: Playwright timeouts, Streamlit exception elements, error alerts other than a "loses" verdict
(and, for the watcher, other than its time-limit message), uncaught page errors. The server's RSS
(with any children) is read from /proc before, during and after the load.

Every address is 127.0.0.1 (Chromium resolves no other host); servers and browser always stop.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from tests.browser import CHROMIUM, CHROMIUM_ARGS, streamlit_process
from tests.replay import V1_GAUGES, V1_SPEC, ReplayServer

ROOT = Path(__file__).resolve().parents[1]
RUNS_FILE = ROOT / "sample_runs" / "multi_workload.csv"
FIXTURE = "vllm_v1_specdecode_sample.txt"

SESSIONS = int(os.environ.get("LOAD_SESSIONS", "10"))
SECONDS = float(os.environ.get("LOAD_SECONDS", "75"))
ALONE_MOVES = int(os.environ.get("LOAD_ALONE_MOVES", "24"))
SLOW_PERIOD_S = float(os.environ.get("LOAD_SLOW_PERIOD_S", "10"))
WAIT_MS = int(os.environ.get("LOAD_WAIT_MS", "60000"))  # longest wait for any one step under load
COLD_SESSIONS = int(os.environ.get("LOAD_COLD_SESSIONS", "6"))  # opened at once on the fresh server
CPU_SECONDS = float(os.environ.get("LOAD_CPU_SECONDS", "20"))  # every session moving What-if sliders only
MEMORY_EVERY_S = max(5.0, SECONDS / 8)

# Chromium may look up no host but 127.0.0.1 (the page icon, for one, points at fonts.gstatic.com).
# Every session is a page a user is looking at: no timer throttling for pages Chromium deems hidden.
LOAD_CHROMIUM_ARGS = CHROMIUM_ARGS + ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                                      "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                                      "--disable-backgrounding-occluded-windows"]

ALPHA = "Acceptance α (per draft token)"
K = "Draft tokens per step k (0 = off)"
# Six moves that come back to where they started, so every session stays in the same region.
MOVES = [(ALPHA, "ArrowRight"), (ALPHA, "ArrowRight"), (K, "ArrowRight"),
         (ALPHA, "ArrowLeft"), (ALPHA, "ArrowLeft"), (K, "ArrowLeft")]

IDLE_JS = "() => document.querySelector(\"[data-testid='stApp']\")?.dataset.testScriptState === 'notRunning'"
# The verdict box and the metric values: every α or k move changes E, so this text always changes.
VIEW_JS = ("() => [document.querySelector(\"[data-testid='stAlertContainer']\")?.innerText || '',"
           " ...[...document.querySelectorAll(\"[data-testid='stMetricValue']\")].map(e => e.innerText)].join('|')")
ARM_JS = ("() => { window.__keyAt = null; document.addEventListener('keydown', "
          "() => { window.__keyAt = performance.now(); }, {once: true, capture: true}); }")
RERUN_DONE_JS = ("(before) => { const app = document.querySelector(\"[data-testid='stApp']\");"
                 " if (!app || app.dataset.testScriptState !== 'notRunning' || window.__keyAt === null) return false;"
                 f" const now = ({VIEW_JS})(); return now !== before ? performance.now() - window.__keyAt : false; }}")
# Two data frames on Past runs: the break-even table, then the runs as read.
RUNS_DONE_JS = ("() => { const app = document.querySelector(\"[data-testid='stApp']\");"
                " return app?.dataset.testScriptState === 'notRunning' && "
                "document.querySelectorAll(\"[data-testid='stDataFrame']\").length >= 2 && "
                "[...document.querySelectorAll('h3')].some(h => h.innerText.startsWith('Verdicts per workload')); }")
SETTLED_JS = ("() => document.querySelector('h1')?.innerText.startsWith('What-if:') || "
              "!!document.querySelector(\"[data-testid='stException']\")")
PROBLEMS_JS = ("() => ({exceptions: [...document.querySelectorAll(\"[data-testid='stException']\")].map(e => e.innerText),"
               " errors: [...document.querySelectorAll(\"[data-testid='stAlertContentError']\")].map(e => e.innerText)})")


class TimedReplay(ReplayServer):
    """A ReplayServer that records when each request served in "trickle" mode was in flight."""

    def __init__(self, *args, **kwargs):
        self.in_flight: list[list[float]] = []  # [monotonic start, end] of each trickling request
        self._spans_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def _handler(self):
        base, server = super()._handler(), self

        class Timed(base):
            def do_GET(self):  # noqa: N802
                if server.mode != "trickle":
                    return super().do_GET()
                span = [time.monotonic(), float("inf")]
                with server._spans_lock:
                    server.in_flight.append(span)
                try:
                    super().do_GET()
                finally:
                    span[1] = time.monotonic()

        return Timed

    def pending_at(self, t: float) -> bool:
        """Was a trickling request in flight at monotonic time t? (A point, not an overlap with the
        action's span: long actions would overlap more often and bias the comparison.)"""
        with self._spans_lock:
            return any(s <= t < e for s, e in self.in_flight)

    def busy_s(self) -> float:
        with self._spans_lock:
            now = time.monotonic()
            return sum(min(e, now) - s for s, e in self.in_flight)


def rss_kib(pid: int) -> int:
    """Resident memory of a process and all its descendants, in KiB (0 once it has gone)."""
    total = 0
    for p in descendants(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def descendants(pid: int) -> list[int]:
    """The process and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


@contextmanager
def measured_page(browser, pid: int):
    """A fresh 1280×900 page of `browser` and a function giving what was spent since the page was made: wall
    seconds, the server's (`pid`) CPU seconds and the renderer main thread's busy seconds (Chrome's TaskDuration)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")

        def main_thread_s() -> float:
            return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")

        server0, main0, start = cpu_s([pid]), main_thread_s(), time.perf_counter()
        yield page, lambda: {"wall": time.perf_counter() - start, "server": cpu_s([pid]) - server0,
                             "main": main_thread_s() - main0}
    finally:
        context.close()


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds used so far by these processes (those still running)."""
    total = 0
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    i = q * (len(s) - 1)
    lo = int(i)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (i - lo)


class CpuTracker:
    """CPU seconds used by a changing set of processes (renderers come and go): the last value seen
    for each process, summed; call sample() often enough and once more before they exit."""

    def __init__(self, pids):
        self.pids, self.start, self.last = pids, {}, {}
        for p in self.pids():
            self.start[p] = self.last[p] = cpu_s([p])

    def sample(self) -> None:
        for p in self.pids():
            self.last[p] = cpu_s([p]) or self.last.get(p, 0.0)

    def used(self) -> float:
        return sum(v - self.start.get(p, 0.0) for p, v in self.last.items())


class Load:
    """What the sessions record (one asyncio loop: no locking needed)."""

    def __init__(self):
        self.reruns: list[tuple[int, float, float, float]] = []  # (session, start, end, ms in the page)
        self.timed: dict[str, list[tuple[int, float, float]]] = {"runs upload": [], "live verdict": []}
        self.errors: list[str] = []
        self.watch = {"checks": 0, "time-limit message": 0, "verdict": 0}
        self.outside_requests: set[str] = set()
        self.server_cpu: tuple[float, tuple[float, float]] | None = None  # (CPU s, wall-clock span) of slider moves

    def error(self, session: int, what: str, detail: str) -> None:
        self.errors.append(f"session {session}, {what}: {' '.join(detail.split())[:220]}")


async def check_page(page, load: Load, session: int, what: str, allowed: tuple[str, ...] = ()) -> dict:
    found = await page.evaluate(PROBLEMS_JS)
    for text in found["exceptions"]:
        load.error(session, what, "exception shown: " + text)
    for text in found["errors"]:
        if text.startswith(("Loses", "Right now:")) or any(a in text for a in allowed):
            continue
        load.error(session, what, "error alert: " + text)
    return found


async def go(page, label: str) -> None:
    """Follow the sidebar link, as a user would, and wait for that page's run to finish."""
    await page.locator("[data-testid='stSidebarNav']").get_by_text(label, exact=True).click()
    await page.wait_for_function(
        "(title) => document.querySelector(\"[data-testid='stApp']\")?.dataset.testScriptState === 'notRunning'"
        " && document.querySelector('h1')?.innerText.startsWith(title)", arg=label + ":", timeout=WAIT_MS)


async def slider_moves(page, load: Load, session: int, moves=MOVES, record: bool = True) -> None:
    for label, key in moves:
        slider = page.get_by_role("slider", name=label)
        await slider.focus()
        await page.wait_for_function(IDLE_JS, timeout=WAIT_MS)
        before = await page.evaluate(VIEW_JS)
        await page.evaluate(ARM_JS)
        start = time.monotonic()
        await slider.press(key)
        handle = await page.wait_for_function(RERUN_DONE_JS, arg=before, timeout=WAIT_MS)
        ms = await handle.json_value()
        if record:
            load.reruns.append((session, start, time.monotonic(), ms))


async def whatif(page, load: Load, session: int) -> None:
    await go(page, "What-if")
    await slider_moves(page, load, session)
    await check_page(page, load, session, "What-if")


async def runs_upload(page, load: Load, session: int) -> None:
    await go(page, "Past runs")
    start = time.monotonic()
    # The run files' uploader (once runs are loaded, the page also offers a calibration file uploader).
    uploader = page.locator("[data-testid='stFileUploader']").filter(has_text="Run files")
    await uploader.locator("input[type='file']").set_input_files(str(RUNS_FILE))
    await page.wait_for_function(RUNS_DONE_JS, timeout=WAIT_MS)
    load.timed["runs upload"].append((session, start, time.monotonic()))
    await check_page(page, load, session, "Past runs")


async def enter_live_url(page, url: str) -> float:
    """On the Live page: scrape every 2 s, enter the URL; returns when it was entered."""
    await go(page, "Live")
    interval = page.get_by_role("slider", name="Scrape every (seconds)")
    await interval.focus()
    await interval.press("ArrowLeft")  # 5 s -> 2 s
    await page.wait_for_url("**live_every=2*", timeout=WAIT_MS)
    await page.wait_for_function(IDLE_JS, timeout=WAIT_MS)
    field = page.get_by_role("textbox", name="Metrics URL")
    start = time.monotonic()
    await field.fill(url)
    await field.press("Enter")
    return start


async def live(page, load: Load, session: int, url: str) -> None:
    # A new query string on each visit: a new server for the page, so a fresh history and verdict.
    start = await enter_live_url(page, f"{url}?session={session}&visit={len(load.timed['live verdict'])}")
    await page.get_by_text("Right now:").first.wait_for(timeout=WAIT_MS)
    load.timed["live verdict"].append((session, start, time.monotonic()))
    await check_page(page, load, session, "Live")


async def watch_slow(page, load: Load, session: int, url: str, deadline: float) -> None:
    """The watcher: the slow server's URL on the Live page until the deadline, checked every second."""
    await enter_live_url(page, url)
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        found = await check_page(page, load, session, "Live, slow server", allowed=("is too slow",))
        load.watch["checks"] += 1
        load.watch["time-limit message"] += any("is too slow" in t for t in found["errors"])
        load.watch["verdict"] += await page.get_by_text("Right now:").count() > 0


async def open_session(browser, base: str, load: Load, session: int):
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = await context.new_page()
    page.on("pageerror", lambda exc: load.error(session, "page", f"uncaught page error: {exc}"))
    page.on("requestfailed", lambda r: load.outside_requests.add(r.url.split("?")[0])
            if not r.url.startswith("http://127.0.0.1") else None)
    await page.goto(base + "/", timeout=WAIT_MS)
    await page.wait_for_function(IDLE_JS, timeout=WAIT_MS)
    return context, page


async def session_loop(page, base: str, load: Load, session: int, deadline: float, replay_url: str) -> None:
    steps = ["whatif", "runs", "live"]
    step = session % 3  # not every session on the same page at once
    while time.monotonic() < deadline:
        name = steps[step % 3]
        step += 1
        try:
            if name == "whatif":
                await whatif(page, load, session)
            elif name == "runs":
                await runs_upload(page, load, session)
            else:
                await live(page, load, session, replay_url)
        except Exception as exc:  # noqa: BLE001 (counted and reported; the session starts over)
            load.error(session, name, f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            try:
                await page.goto(base + "/", timeout=WAIT_MS)
                await page.wait_for_function(IDLE_JS, timeout=WAIT_MS)
            except Exception as again:  # noqa: BLE001
                load.error(session, "starting over", f"{type(again).__name__}: {again}")
                return


async def toggle_slow(slow: TimedReplay, stop: asyncio.Event) -> None:
    while not stop.is_set():
        slow.mode = "ok" if slow.mode == "trickle" else "trickle"
        try:
            await asyncio.wait_for(stop.wait(), SLOW_PERIOD_S)
        except asyncio.TimeoutError:
            pass


async def health_ms(client, base: str) -> float:
    """Round trip of the server's /_stcore/health, in ms: is its event loop answering promptly?"""
    start = time.perf_counter()
    try:
        await client.get(base + "/_stcore/health", timeout=30)
    except Exception:  # noqa: BLE001 (a failed probe counts as its full wait)
        pass
    return (time.perf_counter() - start) * 1e3


async def sample(pid: int, samples: list[tuple[float, int]], cpus: list[CpuTracker], t0: float,
                 stop: asyncio.Event, base: str, health: list[float]) -> None:
    """Every second: CPU of the server and browser processes, the server's health round trip; every
    MEMORY_EVERY_S: the server's RSS."""
    import httpx

    last_memory = -1e9
    async with httpx.AsyncClient(trust_env=False) as client:
        while not stop.is_set():
            for c in cpus:
                c.sample()
            health.append(await health_ms(client, base))
            if time.monotonic() - last_memory >= MEMORY_EVERY_S:
                last_memory = time.monotonic()
                samples.append((last_memory - t0, rss_kib(pid)))
            try:
                await asyncio.wait_for(stop.wait(), 1.0)
            except asyncio.TimeoutError:
                pass


async def cold_start(browser, base: str, n: int) -> tuple[int, list[str]]:
    """Open n sessions at once on the fresh server (as after a restart with tabs open): how many show
    the app (the What-if title, no exception) and the problems the others showed."""
    load = Load()

    async def one(i: int) -> bool:
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = await context.new_page()
            await page.goto(base + "/", timeout=WAIT_MS)
            await page.wait_for_function(IDLE_JS, timeout=WAIT_MS)
            try:  # the first run may rerun once (pages/parts/streamlit_mode.py): wait for the title or an exception
                await page.wait_for_function(SETTLED_JS, timeout=WAIT_MS // 2)
            except Exception:  # noqa: BLE001 (judged below from what the page shows)
                pass
            found = await check_page(page, load, i, "cold start")
            title = await page.evaluate("() => document.querySelector('h1')?.innerText || ''")
            if not title.startswith("What-if:"):
                load.error(i, "cold start", f"no What-if title (found {title!r})")
            return title.startswith("What-if:") and not found["exceptions"]
        except Exception as exc:  # noqa: BLE001 (counted and reported)
            load.error(i, "cold start", f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            return False
        finally:
            await context.close()

    ok = await asyncio.gather(*(one(i) for i in range(n)))
    return sum(ok), load.errors


async def baseline(browser, base: str, replay: ReplayServer, pid: int) -> Load:
    """One session alone: two warm-up moves (not counted), the slider moves (the server's CPU seconds
    read from /proc before and after them), one upload, two live verdicts."""
    alone = Load()
    context, page = await open_session(browser, base, alone, -1)
    try:
        await slider_moves(page, alone, -1, MOVES[:2], record=False)
        cpu, since = cpu_s(descendants(pid)), time.time()
        while len(alone.reruns) < ALONE_MOVES:
            await slider_moves(page, alone, -1)
        alone.server_cpu = (cpu_s(descendants(pid)) - cpu, (since, time.time()))
        await check_page(page, alone, -1, "What-if alone")
        await runs_upload(page, alone, -1)
        for _ in range(2):
            await live(page, alone, -1, replay.url)
    finally:
        await context.close()
    return alone


async def sliders_only(pages, load: Load, pid: int) -> tuple[float, tuple[float, float]]:
    """Every session on What-if moving sliders for CPU_SECONDS: the server's CPU seconds (from /proc,
    before and after) and the wall-clock span, so the server's CPU per script run can be set beside
    the same moves made by one session alone."""
    await asyncio.gather(*(go(page, "What-if") for _, page in pages))
    await asyncio.sleep(1.0)
    cpu, since, deadline = cpu_s(descendants(pid)), time.time(), time.monotonic() + CPU_SECONDS

    async def one(session, page):
        while time.monotonic() < deadline:
            try:
                await slider_moves(page, load, session, record=False)
            except Exception as exc:  # noqa: BLE001 (counted and reported)
                load.error(session, "What-if sliders only", f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
                return

    await asyncio.gather(*(one(i, page) for i, page in pages))
    return cpu_s(descendants(pid)) - cpu, (since, time.time())


async def drive(base: str, pid: int, replay: ReplayServer, slow: TimedReplay) -> dict:
    from playwright.async_api import async_playwright

    out: dict = {"memory": {"server started": rss_kib(pid)}, "loadavg": [os.getloadavg()[0]]}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=LOAD_CHROMIUM_ARGS, headless=True)
        contexts = []
        try:
            out["cold"] = await cold_start(browser, base, COLD_SESSIONS)
            alone_from = time.time()
            out["alone"] = await baseline(browser, base, replay, pid)
            out["alone span"] = (alone_from, time.time())
            import httpx

            async with httpx.AsyncClient(trust_env=False) as client:
                out["health alone"] = [await health_ms(client, base) for _ in range(20)]
            await asyncio.sleep(2)
            out["memory"]["before the load"] = rss_kib(pid)

            # Open every session first, one after the other (ten pages loading at once would only
            # measure Chromium), then run them all at once for LOAD_SECONDS.
            load = Load()
            pages = []
            for i in range(SESSIONS + 1):
                try:
                    context, page = await open_session(browser, base, load, i)
                except Exception as exc:  # noqa: BLE001 (counted and reported)
                    load.error(i, "opening the app", f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
                    continue
                contexts.append(context)
                pages.append((i, page))
            out["memory"]["sessions open"], out["opened"] = rss_kib(pid), len(pages)

            server_pids = lambda: descendants(pid)  # noqa: E731
            browser_pids = lambda: [q for q in descendants(os.getpid()) if q not in set(server_pids())]  # noqa: E731
            cpus = [CpuTracker(server_pids), CpuTracker(browser_pids)]
            samples: list[tuple[float, int]] = []
            health: list[float] = []
            stop = asyncio.Event()
            t0 = time.monotonic()
            load_from = time.time()
            deadline = t0 + SECONDS
            background = [asyncio.create_task(sample(pid, samples, cpus, t0, stop, base, health)),
                          asyncio.create_task(toggle_slow(slow, stop))]
            jobs = [watch_slow(page, load, i, slow.url, deadline) if i == 0 else
                    session_loop(page, base, load, i, deadline, replay.url) for i, page in pages]
            await asyncio.gather(*jobs)
            out["elapsed"] = time.monotonic() - t0
            out["load span"] = (load_from, time.time())
            stop.set()
            await asyncio.gather(*background)
            for c in cpus:
                c.sample()
            out["cpu"] = [c.used() for c in cpus]
            out["loadavg"].append(os.getloadavg()[0])
            out["during"], out["health"] = samples, health
            out["load"] = load
            out["sliders only"] = await sliders_only(pages, load, pid)
        finally:
            for context in contexts:
                await context.close()
            await browser.close()
    await asyncio.sleep(5)
    out["memory"]["5 s after the sessions closed"] = rss_kib(pid)
    await asyncio.sleep(10)
    out["memory"]["15 s after"] = rss_kib(pid)
    return out


def _ms(values: list[float]) -> str:
    if not values:
        return "no samples"
    return f"median {statistics.median(values):.0f} ms, p95 {pct(values, 0.95):.0f} ms (n={len(values)})"


def _s(spans: list[tuple[int, float, float]]) -> str:
    values = [b - a for _, a, b in spans]
    if not values:
        return "none"
    return f"median {statistics.median(values):.1f} s, p95 {pct(values, 0.95):.1f} s (n={len(values)})"


def server_runs(path: Path, span: tuple[float, float], page: str | None) -> list[float]:
    """Script run times (ms) the server logged (app.py, SPECMODEL_RUN_TIMES) for one page (None: every
    page and outcome), for runs that ended within `span` (wall clock) and, for one page, ran to the end
    (st.stop() counts: the page chose to end)."""
    times = []
    for line in path.read_text().splitlines() if path.exists() else []:
        ended, title, outcome, ms = line.split("\t")
        if page is None or (title == page and outcome in ("ok", "StopException")):
            if span[0] <= float(ended) <= span[1]:
                times.append(float(ms))
    return times


def cpu_per_run_lines(out: dict, run_times: Path) -> list[str]:
    """The server's CPU seconds per script run: one session alone moving What-if sliders against
    every session doing the same at once (the browsers' CPU is not in it)."""
    from bench import against_goal

    alone_cpu, alone_span = out["alone"].server_cpu
    loaded_cpu, loaded_span = out["sliders only"]
    n_alone, n_loaded = len(server_runs(run_times, alone_span, None)), len(server_runs(run_times, loaded_span, None))
    if not n_alone or not n_loaded:
        return [f"server CPU per rerun: no script runs logged (alone {n_alone}, under load {n_loaded})"]
    per_alone, per_loaded = alone_cpu / n_alone * 1e3, loaded_cpu / n_loaded * 1e3
    return [f"server CPU per What-if rerun (from /proc, every script run the server logged), alone: {per_alone:.0f} ms "
            f"({alone_cpu:.1f} s / {n_alone} runs); {out['opened']} sessions moving sliders at once for "
            f"{CPU_SECONDS:g} s: {per_loaded:.0f} ms ({loaded_cpu:.1f} s / {n_loaded} runs); "
            f"ratio {against_goal(per_loaded / per_alone, 1.5)}"]


def report(out: dict, slow: TimedReplay, replay: ReplayServer, run_times: Path | None = None) -> list[str]:
    load: Load = out["load"]
    alone: Load = out["alone"]
    alone_ms = [ms for _, _, _, ms in alone.reruns]
    loaded = [ms for _, _, _, ms in load.reruns]
    with_slow = [ms for _, a, _, ms in load.reruns if slow.pending_at(a)]
    without_slow = [ms for _, a, _, ms in load.reruns if not slow.pending_at(a)]
    lives = load.timed["live verdict"]
    errors = alone.errors + load.errors
    lines = [
        f"sessions: {SESSIONS} cycling What-if / Past runs / Live + 1 watching the slow server on Live, at once "
        f"({out['opened']} opened; one Chromium, a context each) for {out['elapsed']:.0f} s "
        f"(LOAD_SECONDS={SECONDS:g}); before that 1 session alone for the baseline",
        f"actions under load: {len(load.reruns)} slider reruns, {len(load.timed['runs upload'])} runs uploads, "
        f"{len(lives)} live verdicts; replay server scraped {replay.scrapes} times, slow server {slow.scrapes} times",
        f"fresh server, {COLD_SESSIONS} sessions opened at once: {out['cold'][0]} show the app"
        + ("" if not out["cold"][1] else "; first problems: " + " | ".join(out["cold"][1][:3])),
        f"errors: {len(errors)} (goal 0)" + ("" if not errors else "; first: " + " | ".join(errors[:4])),
        f"What-if rerun (key press -> run finished, verdict changed), alone: {_ms(alone_ms)}",
        f"What-if rerun under load: {_ms(loaded)}",
    ]
    if alone_ms and loaded:
        lines.append(f"ratio under load / alone: median {statistics.median(loaded) / statistics.median(alone_ms):.1f}x,"
                     f" p95 {pct(loaded, 0.95) / pct(alone_ms, 0.95):.1f}x")
    if run_times is not None:  # the server's own clock: the script run alone, without the browsers' share
        server_alone = server_runs(run_times, out["alone span"], "What-if")
        server_loaded = server_runs(run_times, out["load span"], "What-if")
        lines.append(f"What-if script run on the server (app.py's timer, every rerun of the page), alone: "
                     f"{_ms(server_alone)}; under {SESSIONS} sessions: {_ms(server_loaded)}"
                     + (f"; ratio {statistics.median(server_loaded) / statistics.median(server_alone):.1f}x"
                        if server_alone and server_loaded else ""))
        lines += cpu_per_run_lines(out, run_times)
    lines += [
        f"runs upload -> break-even table: alone {_s(alone.timed['runs upload'])}; "
        f"under load {_s(load.timed['runs upload'])}",
        f"live URL entered -> live verdict (scrape every 2 s): alone {_s(alone.timed['live verdict'])}; "
        f"under load {_s(lives)}",
        f"slow server: trickling scrapes in flight {slow.busy_s():.0f} s of the {out['elapsed']:.0f} s "
        f"(trickles {SLOW_PERIOD_S:g} s, answers {SLOW_PERIOD_S:g} s, in turn); the watcher showed its "
        f"time-limit message in {load.watch['time-limit message']} and a live verdict in {load.watch['verdict']} "
        f"of {load.watch['checks']} checks",
        f"others' reruns started while a slow scrape was pending: {_ms(with_slow)}",
        f"others' reruns started with none pending: {_ms(without_slow)}"
        + (f"; ratio {statistics.median(with_slow) / statistics.median(without_slow):.2f}x"
           if with_slow and without_slow else ""),
        f"others' live verdicts, URL entered while a slow scrape was pending: "
        f"{_s([x for x in lives if slow.pending_at(x[1])])}; with none pending: "
        f"{_s([x for x in lives if not slow.pending_at(x[1])])}",
    ]
    lines.append(f"server's /_stcore/health round trip (its event loop), idle: {_ms(out['health alone'])}; "
                 f"under load, every second: {_ms(out['health'])}, longest {max(out['health']):.0f} ms")
    server_cpu, browser_cpu = out["cpu"]
    lines.append(f"CPU during the load ({os.cpu_count()} cores, shared with other work; 1-min load average "
                 f"{out['loadavg'][0]:.1f} before, {out['loadavg'][1]:.1f} after): streamlit server "
                 f"{server_cpu:.0f} s, Chromium + Playwright {browser_cpu:.0f} s, in {out['elapsed']:.0f} s")
    mem = out["memory"]
    during = ", ".join(f"{t:.0f} s: {kib / 1024:.0f}" for t, kib in out["during"])
    lines += [
        f"server memory (RSS, MiB): started {mem['server started'] / 1024:.0f}, after the baseline "
        f"{mem['before the load'] / 1024:.0f}, {out['opened']} sessions open and idle {mem['sessions open'] / 1024:.0f}",
        f"  during the load: {during}",
        f"  after: 5 s after the sessions closed {mem['5 s after the sessions closed'] / 1024:.0f}, "
        f"15 s after {mem['15 s after'] / 1024:.0f}",
    ]
    if load.outside_requests | alone.outside_requests:
        lines.append("requests the browser tried outside 127.0.0.1 (refused): "
                     + ", ".join(sorted(load.outside_requests | alone.outside_requests)[:3]))
    return lines


def run() -> list[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        run_times = Path(tmp) / "run_times.tsv"
        with streamlit_process({"SPECMODEL_RUN_TIMES": str(run_times)}) as (base, proc), \
                ReplayServer(FIXTURE, increments=V1_SPEC, gauges=V1_GAUGES) as replay, \
                TimedReplay(FIXTURE, increments=V1_SPEC, gauges=V1_GAUGES, mode="ok") as slow:
            out = asyncio.run(drive(base, proc.pid, replay, slow))
            return report(out, slow, replay, run_times)
