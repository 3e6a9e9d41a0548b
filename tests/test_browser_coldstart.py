"""Several people open a freshly started server at the same moment (a restart with tabs open), each on a
page of their own: four shared links and the app's front page. The links are asked for first, so the server's
first session is a shared link opened before anyone loaded the root page (Streamlit's folder mode: that
session must still run through the app, with its sidebar and navigation, not Streamlit's raw `pages/`
folder listing; pages/parts/streamlit_mode.py 1), and the others start while it is still importing."""

import pytest

from tests import browser
from tests.browser import wait_for_app

pytestmark = pytest.mark.browser

# the path each session opens and how its page's title starts. Opened together on a fresh server they crashed ("This
# app has encountered an error": a half-imported pandas, a half-imported specmodel.runs) before app_run's first-run
# lock and plotly_waits_for_imports, and all but the first drew Streamlit's pages/ folder list with no sidebar before
# through_app (pages/parts/streamlit_mode.py)
LINKS = {"/mix": "Traffic mix:", "/past-runs": "Past runs:", "/live": "Live:", "/fleet": "Fleet:", "/": "What-if:"}
PAGES = ("What-if", "Past runs", "Live", "Fleet", "Traffic mix", "Capacity")  # the sidebar's navigation


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
            for page, (path, title) in zip(pages, LINKS.items()):
                errors = page.locator("[data-testid='stException']")
                assert errors.count() == 0, errors.all_inner_texts()
                assert page.locator("h1").first.inner_text().startswith(title)
                assert page.get_by_text("Page not found").count() == 0, title
                assert page.url.split("?")[0].rstrip("/").endswith(path.rstrip("/")), (path, page.url)  # still the link
                nav = page.locator("[data-testid='stSidebarNav']").inner_text()
                assert all(p in nav for p in PAGES), (title, nav)  # the app's pages, not the pages/ folder's files
                assert "past-runs" not in nav and "common" not in nav, (title, nav)
                assert page.get_by_text("Hardware and models").count() == 1, title  # the app's sidebar
        finally:
            for c in contexts:
                c.close()
