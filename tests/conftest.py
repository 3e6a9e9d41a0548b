"""Shared fixtures: paths, a real `streamlit run` server and a Playwright page in Debian's Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests import browser

# No per-example deadline: the suite runs on 2 busy cores, where a slow example is load, not a bug
# (tests never assert timings; performance lives in bench/).
settings.register_profile("project", deadline=None)
settings.load_profile("project")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def streamlit_server():
    """Base URL of `streamlit run app.py` on 127.0.0.1 (one server for the whole test session)."""
    with browser.streamlit_server() as url:
        yield url


@pytest.fixture(scope="session")
def _chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = browser.launch(p)
        yield b
        b.close()


@pytest.fixture
def browser_page(_chromium):
    """A fresh Playwright page (its own browser context) in Debian's headless Chromium."""
    context = _chromium.new_context(viewport={"width": 1400, "height": 1800})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def pytest_collection_modifyitems(config, items):
    """Mark tests that start a real Prometheus (fixtures prom_*) or run promtool: `make test-fast`
    leaves them and the browser tests out."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if any(n.startswith("prom_") for n in names) or "promtool" in item.name:
            item.add_marker(pytest.mark.prometheus)
