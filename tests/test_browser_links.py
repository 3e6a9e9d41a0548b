"""A shared link opened on a freshly started server (before anyone loaded the root page) must show the
page with the app's sidebar and navigation, not Streamlit's raw `pages/` folder listing."""

import pytest

from tests import browser

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("path", "heading"), [("/mix", "Traffic mix"), ("/past-runs", "Past runs")])
def test_deep_link_on_a_fresh_server_runs_through_the_app(_chromium, path, heading):
    with browser.streamlit_server() as url:  # its own server: nobody has opened "/" on it yet
        context = _chromium.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            page.goto(url + path)
            page.get_by_text("Hardware and models").wait_for(timeout=60_000)
            page.get_by_role("heading", name=heading).first.wait_for()
            assert page.get_by_text("Page not found").count() == 0
            assert page.url.split("?")[0].endswith(path)
            nav = page.locator("[data-testid='stSidebarNav']").inner_text()
            for title in ("What-if", "Past runs", "Live", "Fleet", "Traffic mix", "Capacity"):
                assert title in nav
            assert "common" not in nav
        finally:
            context.close()
