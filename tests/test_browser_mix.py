"""The Traffic mix page in a real browser: Debian's Chromium driven by Playwright against `streamlit run`."""

import pytest

from tests.browser import wait_for_app, wait_for_charts

pytestmark = pytest.mark.browser


def advice(page) -> str:
    return page.locator("[data-testid='stAlertContainer']").filter(has_text="Best:").first.inner_text()


def test_mix_page_compares_and_more_gpus_change_the_advice_and_url(streamlit_server, browser_page):
    page = browser_page
    page.goto(streamlit_server + "/mix?mix_conc=48&mix_gpus=1")
    wait_for_app(page)
    wait_for_charts(page)  # a cold server on busy cores: wait_for_charts waits long
    assert "Traffic mix" in page.locator("h1").first.inner_text()
    # the workload editor, the comparison and its per-workload numbers (the grids mount after the charts can)
    page.wait_for_function("() => document.querySelectorAll(\"[data-testid='stDataFrame']\").length === 3")
    assert page.get_by_text("One pool vs split", exact=False).count() >= 1
    before = advice(page)
    assert "no split of these GPUs does better" in before

    # Three GPUs typed into the number input, as a user would: now a split is possible.
    gpus = page.get_by_test_id("stNumberInput").filter(has_text="GPUs in total").locator("input")
    gpus.fill("3")
    gpus.press("Enter")
    page.wait_for_function("() => location.search.includes('mix_gpus=3')")
    wait_for_app(page)
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=\"stAlertContainer\"]')]"
                           ".some(e => e.innerText.includes('Best: split'))")
    after = advice(page)
    assert after != before and "extraction on 2 GPUs" in after
    assert "mix_conc=48" in page.url
