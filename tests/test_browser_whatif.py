"""The What-if page in a real browser: Debian's Chromium driven by Playwright against `streamlit run`."""

import re

import pytest

from tests.browser import wait_for_app, wait_for_charts

pytestmark = pytest.mark.browser


def verdict_text(page) -> str:
    return page.locator("[data-testid='stAlertContainer']").first.inner_text()


def test_page_loads_shows_verdict_and_charts_and_k_changes_verdict_and_url(streamlit_server, browser_page):
    page = browser_page
    requested = []

    def note(request):
        requested.append(request.url)
    page.on("request", note)
    try:
        _walk(page, streamlit_server)
    finally:
        page.remove_listener("request", note)  # the page goes on to the worker's next browser test
    # Everything the page loads (scripts, fonts, icons, favicon) comes from the app's own server.
    outside = [u for u in requested if not u.startswith((streamlit_server, "data:", "blob:"))]
    assert outside == []


def _walk(page, streamlit_server: str) -> None:
    page.goto(streamlit_server + "/?alpha=0.6&conc=8")
    wait_for_app(page)
    wait_for_charts(page)  # five charts; on a loaded 2-core machine the first draw takes a while
    assert "What-if" in page.locator("h1").first.inner_text()
    before = verdict_text(page)
    assert before.startswith("Uncertain (pays off by the estimate)")  # 1.18x, its band 0.88-1.78x
    charts = page.locator("[data-testid='stPlotlyChart']")
    assert charts.count() == 5
    for title in ("Speedup vs acceptance", "Speedup vs concurrency", "Speedup over α and k", "k to deploy by batch",
                  "Off, fixed k, schedule or per-batch best"):
        assert page.get_by_text(title, exact=False).count() >= 1

    # Move the k slider to 8 with the keyboard, as a user would.
    k_slider = page.get_by_role("slider", name="Draft tokens per step k (0 = off)")
    k_slider.focus()
    for _ in range(4):
        k_slider.press("ArrowRight")
    page.wait_for_url(re.compile(r"[?&]k=8"))
    wait_for_app(page)
    # The slider passes through k = 5..7 on its way; wait for the k = 8 verdict.
    page.wait_for_function("() => document.querySelector('[data-testid=\"stAlertContainer\"]')"
                           ".innerText.startsWith('Uncertain (loses')")
    after = verdict_text(page)
    assert after != before
    assert after.startswith("Uncertain (loses by the estimate)")  # 0.91x, its band 0.68-1.37x
    assert "k=8" in page.url and "alpha=0.6" in page.url and "conc=8" in page.url
