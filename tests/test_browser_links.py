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
            page.get_by_text("Hardware and models").wait_for(timeout=browser.PATIENCE_MS)
            page.get_by_role("heading", name=heading).first.wait_for()
            assert page.get_by_text("Page not found").count() == 0
            assert page.url.split("?")[0].endswith(path)
            nav = page.locator("[data-testid='stSidebarNav']").inner_text()
            for title in ("What-if", "Past runs", "Live", "Fleet", "Traffic mix", "Capacity"):
                assert title in nav
            assert "common" not in nav
        finally:
            context.close()


def test_a_hand_written_link_is_read_and_the_address_bar_then_says_it_as_the_sidebar_does(streamlit_server,
                                                                                          browser_page):
    from urllib.parse import parse_qs, quote, urlsplit

    page = browser_page
    page.goto(streamlit_server + "/capacity?gpu=" + quote("8x h100 (TP=8)") + "&target=llama-3.1-70b&method=eagle"
              "&engine=sglang")
    page.get_by_role("heading", name="Capacity").first.wait_for(timeout=browser.PATIENCE_MS)
    page.wait_for_url(lambda url: "H100" in url)
    params = parse_qs(urlsplit(page.url).query)
    assert params == {"gpu": ["H100 SXM"], "tp": ["8"], "target": ["Llama 3.1 70B"], "method": ["EAGLE / EAGLE-2"],
                      "engine": ["SGLang"]}
    shown = {label: page.get_by_role("combobox", name=label, exact=True).input_value()
             for label in ("GPU", "Target model", "Speculation method", "Serving engine")}
    assert shown == {"GPU": "H100 SXM", "Target model": "Llama 3.1 70B", "Speculation method": "EAGLE / EAGLE-2",
                     "Serving engine": "SGLang"}
    assert page.get_by_text("is not a GPU this tool knows").count() == 0
