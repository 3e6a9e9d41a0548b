"""The Capacity page in a real browser: Debian's Chromium driven by Playwright against `streamlit run`."""

import pytest

from specmodel import Scenario
from specmodel.plan.capacity import Load, Target, plan
from tests.browser import wait_for_app, wait_for_charts

pytestmark = pytest.mark.browser


def metric(page, label: str) -> str:
    box = page.get_by_test_id("stMetric").filter(has_text=label).first
    return box.get_by_test_id("stMetricValue").inner_text().strip()


def type_number(page, label: str, value: str) -> None:
    box = page.get_by_test_id("stNumberInput").filter(has_text=label).locator("input")
    box.fill(value)
    box.press("Enter")


def test_set_a_load_and_a_target_and_see_both_gpu_counts_and_the_frontier(streamlit_server, browser_page):
    page = browser_page
    page.goto(streamlit_server + "/capacity")
    wait_for_app(page)
    wait_for_charts(page)
    assert "Capacity" in page.locator("h1").first.inner_text()

    type_number(page, "Concurrent users", "300")
    page.wait_for_function("() => location.search.includes('cap_users=300')")
    wait_for_app(page)
    type_number(page, "Every user sees at least", "38")
    page.wait_for_function("() => location.search.includes('cap_tok_s=38')")
    wait_for_app(page)
    wait_for_charts(page)

    expected = plan(Scenario(), Load(users=300), Target(min_user_tok_s=38.0))
    assert expected.plain.gpus and expected.spec.gpus  # precondition: both arms meet this target
    page.wait_for_function(
        "(n) => [...document.querySelectorAll('[data-testid=\"stMetric\"]')]"
        ".some(e => e.innerText.includes('without speculation') && e.innerText.includes(n))",
        arg=str(expected.plain.gpus))
    assert metric(page, "GPUs without speculation") == str(expected.plain.gpus)
    assert metric(page, "GPUs with speculation") == str(expected.spec.gpus)
    assert metric(page, "Verdict") == expected.verdict
    chart = page.get_by_test_id("stPlotlyChart").first
    assert "Per-user speed vs throughput per GPU" in chart.inner_text()
    legend = chart.locator(".legendtext").all_text_contents()  # SVG text: no innerText
    assert "without speculation" in legend and "target: ≥ 38 tok/s per user" in legend
    assert any(t.startswith(f"plain: {expected.plain.gpus} GPU") for t in legend)
