"""The HTML report of 170 published runs, opened in Chromium: its tables fit the window (no sideways
scrolling), and its break-even chart gives every run a readable row."""

import pytest

from specmodel import cli
from tests.conftest import FIXTURES

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    assert cli.main(["runs", str(FIXTURES / "published_dev.csv"), "--html", str(path)]) == 0
    return path


def test_report_tables_fit_the_window_and_the_chart_has_a_row_per_run(report, browser_page, capsys):
    capsys.readouterr()
    page = browser_page
    for width in (1000, 1400):  # one report, read at two window widths
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(report.as_uri())
        page.wait_for_selector(".plotly-graph-div .main-svg")
        # the page never scrolls sideways
        assert page.evaluate("document.documentElement.scrollWidth") <= width, width
        body_right = page.evaluate("document.body.getBoundingClientRect().right")
        tables = page.evaluate("[...document.querySelectorAll('table')].map(t => t.getBoundingClientRect().right)")
        # the setup (target, draft, GPU, engine, calibration), the break-even table and the runs as read
        assert len(tables) == 3 and all(right <= body_right + 1 for right in tables), (width, tables)
        # Every cell's text stays inside its cell (wrapped, not spilling into the next column).
        spilled = page.evaluate("[...document.querySelectorAll('td')].filter(td => td.scrollWidth > td.clientWidth + 1)"
                                ".map(td => td.innerText).slice(0, 5)")
        assert spilled == [], width
        rows = page.evaluate("document.querySelectorAll('.plotly-graph-div')[1].querySelectorAll('.ytick').length")
        height = page.evaluate("document.querySelectorAll('.plotly-graph-div')[1].getBoundingClientRect().height")
        assert rows >= 150 and height >= 22 * rows, (width, rows, height)
