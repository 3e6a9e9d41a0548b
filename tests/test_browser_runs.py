"""The Past runs page in a real browser: upload a CSV, see the flags and the scatter, calibrate."""

import re

import pytest

from tests.browser import wait_for_app, wait_for_charts
from tests.conftest import ROOT

pytestmark = pytest.mark.browser


def test_upload_csv_shows_flags_and_scatter_and_calibration_reaches_the_sidebar(streamlit_server, browser_page):
    page = browser_page
    # Start where a user starts and follow the navigation to the page.
    page.goto(streamlit_server + "/")
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNav']").get_by_text("Past runs").click()
    page.wait_for_url("**/past-runs")
    wait_for_app(page)
    assert "Past runs" in page.locator("h1").first.inner_text()
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(
        str(ROOT / "sample_runs" / "multi_workload.csv"))
    page.get_by_text("code completion pays off at concurrency 1, 8, 32, 64").wait_for()
    wait_for_app(page)
    wait_for_charts(page)
    assert page.get_by_text("open-ended chat loses at concurrency 1, 8, 32, 64").is_visible()
    scatter = page.locator("[data-testid='stPlotlyChart']").filter(has_text="Predicted vs measured speedup")
    assert scatter.count() == 1
    assert scatter.locator(".scatterlayer .trace .point").count() >= 8  # one marker per run
    assert scatter.get_by_text("prediction = measurement (y = x)").count() == 1
    assert page.locator("[data-testid='stExpander']").get_by_text("Input: every row was read").is_visible()

    page.get_by_role("button", name="Calibrate on these runs").click()
    page.get_by_text("after calibration.").wait_for()
    wait_for_app(page)
    assert page.locator("[data-testid='stSidebar']").get_by_text(re.compile(r"^Calibrated: ")).is_visible()
    assert "cal=" in page.url
