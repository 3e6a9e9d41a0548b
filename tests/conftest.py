"""Shared fixtures: paths, a real `streamlit run` server and a Playwright page in Debian's Chromium."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tests import browser

# No per-example deadline: the suite runs on 2 busy cores, where a slow example is load, not a bug
# (tests never assert timings; performance lives in bench/).
settings.register_profile("project", deadline=None)
settings.load_profile("project")

# The quick loop's share of property-test examples: `make test-fast` sets SPECMODEL_QUICK_FUZZ_EXAMPLES=40 of
# make test's 150 (tests/test_fuzz.py scales its fuzz targets by the same share). A property test asks for
# examples(n): n in make test, about a quarter of n (at least 10) in make test-fast: the same property, fewer
# random inputs.
QUICK_SHARE = min(1.0, int(os.environ.get("SPECMODEL_QUICK_FUZZ_EXAMPLES", "150")) / 150)


def examples(n: int) -> int:
    return max(10, round(n * QUICK_SHARE))

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def streamlit_server():
    """Base URL of `streamlit run app.py` on 127.0.0.1 (one server for the whole test session)."""
    with browser.streamlit_server() as url:
        yield url


@pytest.fixture(scope="session")
def prom_fleet(tmp_path_factory):
    """The FLEET replays and a dead target scraped every second by one real Prometheus that also evaluates
    the rules of tests/test_rules.py (RULES_SCENARIO over RULES_WINDOW): test_fleet.py and test_rules.py read
    the same fleet, so a worker starts it and waits for its samples once (LONGEST_FIRST keeps their tests
    together)."""
    from specmodel.export import rules
    from tests.prometheus_harness import RULES_SCENARIO, RULES_WINDOW, running_fleet

    work = tmp_path_factory.mktemp("prometheus")
    rule_file = work / "specmodel-rules.yml"
    rule_file.write_text(rules.rules_yaml(RULES_SCENARIO, window=RULES_WINDOW, for_="0s"))
    with running_fleet(work, samples=6, rule_files=[rule_file]) as fleet:
        yield fleet


@pytest.fixture(scope="session")
def _chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = browser.launch(p)
        yield b
        b.close()


class ReusedPage:
    """One Playwright page a worker's browser tests take in turn. A fresh page is a fresh renderer process, which
    compiles Streamlit's and Plotly's scripts again: measured 2026-12-07 on this 2-core machine, What-if opened in
    a new page cost 3.9-4.0 s of renderer CPU, in a page that had shown the app before 1.6-1.9 s (also after a
    visit to about:blank, or at another viewport and colour scheme), and a new browser context did not help. So
    the tests share one page per worker and each gets it as a new visitor would: about:blank, no cookies,
    storage or permissions left (a test that listens to the page removes its listener), the viewport and
    colour scheme it asks for."""

    def __init__(self, chromium):
        self.chromium, self.page = chromium, None

    def take(self, width: int, height: int, scheme: str = "light"):
        if self.page is None or self.page.is_closed():
            self.page = self.chromium.new_context().new_page()
        page = self.page
        page.set_viewport_size({"width": width, "height": height})
        page.emulate_media(color_scheme=scheme)
        page.set_default_timeout(browser.PATIENCE_MS)  # every wait is for a condition: a generous limit
        return page

    def give_back(self) -> None:
        page, self.page = self.page, None
        try:
            if page.url.startswith("http"):
                page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
            page.goto("about:blank")
            page.context.clear_cookies()
            page.context.clear_permissions()
            self.page = page
        except Exception:  # noqa: BLE001 - a page the test left broken: the next test gets a new one
            page.context.close()


@pytest.fixture(scope="session")
def _reused_page(_chromium):
    reused = ReusedPage(_chromium)
    yield reused
    if reused.page is not None:
        reused.page.context.close()


@pytest.fixture
def browser_page(_reused_page):
    """A Playwright page in Debian's headless Chromium at 1400×900 (a laptop's window), light, as a new visitor opens
    it. It was 1400×1800 (chosen in the first browser test, for no stated reason): measured 2026-12-07 on this 2-core
    machine, test_browser_links, _whatif and _state took 95.2 -> 87.5 and 86.0 -> 79.3 s of the machine's CPU in two
    pairs one after the other (Chromium paints half the area), every browser test passing at either size."""
    yield _reused_page.take(1400, 900)
    _reused_page.give_back()


# The tests that take longest on 2 busy cores (pytest --durations), longest first. They run before
# the rest: pytest.ini's `--dist worksteal` gives each worker half of the tests in this order and an
# idle worker takes the back half of the other's queue, so the last tests to run are short ones and
# neither worker waits alone on a minute-long test at the end. A name is a node id or its start; a
# module with a module-scoped fixture (test_fidelity's) or a shared Prometheus (prom_fleet) is named whole so that
# its tests stay together and the fixture is set up once.
LONGEST_FIRST = (
    "tests/test_fidelity.py::test_leave_one_source_out",
    "tests/test_fidelity.py",
    "tests/test_fleet.py",  # its Prometheus: before a worker that has run out of tests takes part of the queue
    "tests/test_rules.py::test_the_alert_fires",  # the same Prometheus (prom_fleet): right after test_fleet's tests
    "tests/test_rules.py::test_recorded_series",
    "tests/test_rules.py::test_every_dashboard_query",
    "tests/test_engines_prometheus.py",  # its Prometheus over seven engines' replays (~25 s)
    "tests/test_browser_coldstart.py",
    "tests/test_browser_state.py",
    "tests/test_published_dev.py::test_cli_json_and_text",
    "tests/test_browser_live.py",
    "tests/test_runs_json_columns.py::test_runs_json_is_the_row_by_row_document",
    "tests/test_mix_many.py::test_a_mix_past_the_cap",
    "tests/test_browser_incident.py",
    "tests/test_browser_layout.py",
    "tests/test_browser_whatif.py",
    "tests/test_browser_mix.py",
    "tests/test_browser_links.py",
    "tests/test_plan.py::test_uploading_the_plans_results",
    "tests/test_page_plan.py::test_past_runs_calibrates",  # the quick loop's longest (a calibration each)
    "tests/test_runs_review_whole.py",
    "tests/test_browser_capacity.py",
    "tests/test_browser_theme.py",
    "tests/test_browser_report.py",
    "tests/test_docs_commands.py",
)


def _cost_rank(item) -> int:
    return next((i for i, start in enumerate(LONGEST_FIRST) if item.nodeid.startswith(start)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(config, items):
    """Mark tests that start a real Prometheus (fixtures prom_*) or run promtool: `make test-fast`
    leaves them and the browser tests out. Then put the longest tests first (LONGEST_FIRST; the sort
    is stable, so the others keep their order and every xdist worker collects the same list)."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if any(n.startswith("prom_") for n in names) or "promtool" in item.name:
            item.add_marker(pytest.mark.prometheus)
    items.sort(key=_cost_rank)
    if "streamlit.testing.v1" in sys.modules:  # a collected test module drives a page in AppTest
        _scan_streamlit_components_once()


def _scan_streamlit_components_once() -> None:
    """Every AppTest looks for installed Streamlit components (the metadata of every installed package):
    ~0.1 s of CPU an AppTest, a tenth of a page test's CPU (measured 2026-12-07; `make test-fast` has ~300
    of them). The installed packages do not change during a run, so a worker looks once; a real
    `streamlit run` (the browser tests) still scans at its start."""
    from streamlit.components.v2 import manifest_scanner

    if not hasattr(manifest_scanner.scan_component_manifests, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)
