"""Several people open a freshly started server at the same moment (a restart with tabs open), each on a
page of their own: the app's front page and four shared links."""

import pytest

from tests import browser
from tests.browser import wait_for_app

pytestmark = pytest.mark.browser

# the path each session opens and how its page's title starts. Opened together on a fresh server they crashed ("This
# app has encountered an error": a half-imported pandas, a half-imported specmodel.runs) before app_run's first-run
# lock and plotly_waits_for_imports, and all but the first drew Streamlit's pages/ folder list with no sidebar before
# through_app (pages/parts/streamlit_mode.py)
LINKS = {"/": "What-if:", "/mix": "Traffic mix:", "/past-runs": "Past runs:", "/live": "Live:", "/fleet": "Fleet:"}


def test_sessions_opening_a_fresh_server_at_once_all_get_the_app(_chromium):
    with browser.streamlit_server() as url:  # its own server: the shared one is no longer fresh
        contexts = [_chromium.new_context(viewport={"width": 1280, "height": 900}) for _ in LINKS]
        try:
            pages = [c.new_page() for c in contexts]
            for page, path in zip(pages, LINKS):  # start every session before any has finished importing the app
                page.goto(url + path, wait_until="commit")
            for page, title in zip(pages, LINKS.values()):
                page.set_default_timeout(browser.PATIENCE_MS)
                wait_for_app(page)
                # The first run may rerun once (pages/parts/streamlit_mode.py): the title, or an exception, comes then.
                page.wait_for_function("(t) => document.querySelector('h1')?.innerText.startsWith(t)"
                                       " || !!document.querySelector(\"[data-testid='stException']\")", arg=title)
                wait_for_app(page)
            for page, title in zip(pages, LINKS.values()):
                errors = page.locator("[data-testid='stException']")
                assert errors.count() == 0, errors.all_inner_texts()
                assert page.locator("h1").first.inner_text().startswith(title)
                nav = page.locator("[data-testid='stSidebarNav']").inner_text()
                assert "Past runs" in nav and "past-runs" not in nav, title  # the app's pages, not the pages/ folder
                assert page.get_by_text("Hardware and models").count() == 1, title  # the app's sidebar
        finally:
            for c in contexts:
                c.close()
