"""Several people open a freshly started server at the same moment (a restart with tabs open)."""

import pytest

from tests import browser
from tests.browser import wait_for_app

pytestmark = pytest.mark.browser

SESSIONS = 5


def test_sessions_opening_a_fresh_server_at_once_all_get_the_app(_chromium):
    with browser.streamlit_server() as url:  # its own server: the shared one is no longer fresh
        contexts = [_chromium.new_context(viewport={"width": 1280, "height": 900}) for _ in range(SESSIONS)]
        try:
            pages = [c.new_page() for c in contexts]
            for page in pages:  # start every session before any has finished importing the app
                page.goto(url + "/", wait_until="commit")
            for page in pages:
                page.set_default_timeout(browser.PATIENCE_MS)
                wait_for_app(page)
                # The first run may rerun once (pages/parts/streamlit_mode.py): the title, or an exception, comes then.
                page.wait_for_function("() => document.querySelector('h1')?.innerText.startsWith('What-if:')"
                                       " || !!document.querySelector(\"[data-testid='stException']\")")
            for page in pages:
                assert page.locator("[data-testid='stException']").count() == 0
                assert page.locator("h1").first.inner_text().startswith("What-if:")
                nav = page.locator("[data-testid='stSidebarNav']").inner_text()
                assert "Past runs" in nav and "common" not in nav  # the app's pages, not the pages/ folder
        finally:
            for c in contexts:
                c.close()
