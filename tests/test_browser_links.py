"""A shared link opened on a freshly started server (before anyone loaded the root page) must show the
page with the app's sidebar and navigation, not Streamlit's raw `pages/` folder listing."""

import pytest
from playwright.sync_api import expect

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


APP_ERROR = "This app has encountered an error"


def no_app_error(page) -> None:
    """Neither Streamlit's error box nor an exception element anywhere on the page."""
    assert page.get_by_text(APP_ERROR).count() == 0
    assert page.locator("[data-testid='stException']").count() == 0


def move_alpha_and_batch(page, alpha: float, steps_left: int, batch: int) -> float:
    """On What-if at `alpha`, as a user would: α down by `steps_left` hundredths with the keyboard, the batch
    typed; returns the new α."""
    import re

    slider = page.get_by_role("slider", name="Acceptance α (per draft token)")
    slider.focus()
    for _ in range(steps_left):
        slider.press("ArrowLeft")
    alpha = round(alpha - steps_left / 100, 2)
    page.wait_for_url(re.compile(rf"[?&]alpha={re.escape(str(alpha))}(&|$)"))
    browser.wait_for_app(page)
    box = page.get_by_role("spinbutton", name="Concurrent sequences (batch size)")
    box.fill(str(batch))
    box.press("Enter")
    page.wait_for_url(re.compile(rf"[?&]conc={batch}(&|$)"))
    browser.wait_for_app(page)
    return alpha


# Every page the sidebar links to, with its heading; What-if is reached again before each.
SIDEBAR_PAGES = [("Past runs", "/past-runs", "Past runs"), ("Live", "/live", "Live"), ("Fleet", "/fleet", "Fleet"),
                 ("Traffic mix", "/mix", "Traffic mix"), ("Capacity", "/capacity", "Capacity")]


def test_every_page_link_works_after_alpha_and_the_batch_were_changed(streamlit_server, browser_page):
    """Issue 40: What-if's "Open in Traffic mix" crashed ("Cannot clear query parameters ... bound to widgets:
    'alpha', 'conc'") once α or the batch had moved, the first thing a reviewer does."""
    from urllib.parse import parse_qs, urlsplit

    page = browser_page
    page.goto(streamlit_server + "/?gpu=" + "H100+SXM")
    browser.wait_for_app(page)
    alpha = move_alpha_and_batch(page, 0.70, 5, 24)
    page.get_by_role("link", name="Open in Traffic mix").click()
    page.wait_for_url("**/mix**")
    browser.wait_for_app(page)
    page.get_by_text("Opened from What-if with its k and concurrency").wait_for()
    no_app_error(page)
    # the mix's batch is What-if's (it fills in on the page's run after the note; on a loaded machine a moment later)
    expect(page.get_by_role("spinbutton", name="Concurrent sequences, whole mix")).to_have_value(
        "24", timeout=browser.PATIENCE_MS)
    browser.wait_for_charts(page)
    text = page.locator("[data-testid='stMain']").inner_text()
    assert "this traffic (What-if α)" in text and "draft_model k=4" in text  # What-if's α and k came along
    params = parse_qs(urlsplit(page.url).query)
    assert params.get("gpu") == ["H100 SXM"] and params.get("mix_conc") == ["24"]  # the sidebar came along
    assert not {"alpha", "conc", "whatif_alpha"} & params.keys()  # What-if's own values stayed behind

    for n, (label, path, heading) in enumerate(SIDEBAR_PAGES, start=1):
        page.locator("[data-testid='stSidebarNavLink']", has_text="What-if").click()
        page.wait_for_url(lambda url: urlsplit(url).path.rstrip("/") == "")
        browser.wait_for_app(page)
        no_app_error(page)
        assert f"alpha={alpha}" in page.url  # What-if's α kept by the session, back in its address
        alpha = move_alpha_and_batch(page, alpha, 1, 24 + 8 * n)
        browser.open_from_sidebar(page, label, path)
        page.get_by_role("heading", name=heading).first.wait_for()
        no_app_error(page)
        assert "H100 SXM" in page.get_by_role("combobox", name="GPU", exact=True).input_value()
