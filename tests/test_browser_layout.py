"""The review tables fit the page as a reviewer opens it at 1280×720 and 1440×900, light and dark: no table
scrolls sideways (Past runs' break-even table, Fleet's instances with their "Predicted on", Traffic mix's
workloads and comparison), no cell reads "None", no label is cut, no message is shown twice on a page or in
its sidebar, and a focused input is outlined in the accent colour, not in the red of an error. At 1280×720
light, What-if, Past runs, Fleet, Live and Capacity are checked by test_browser_incident.py's walks of the same
pages; at 1440×900, What-if and Fleet here also get test_browser_decision.py's check (above_the_fold).
Run one file at a time: `pytest -q -n 0 tests/test_browser_layout.py`."""

from __future__ import annotations

import re

import pytest

from tests.browser import wait_for_app, wait_for_charts
from tests.test_browser_decision import above_the_fold
from tests.test_browser_incident import INCIDENT, SIDEBAR, no_cut_labels, open_expanders, tables_fit

pytestmark = pytest.mark.browser

VIEWS = [(1280, 720, "light"), (1440, 900, "dark")]

@pytest.fixture(params=VIEWS, ids=lambda v: f"{v[0]}x{v[1]}-{v[2]}")
def page(request, _reused_page):
    width, height, scheme = request.param
    p = _reused_page.take(width, height, scheme)
    p.width = width
    yield p
    _reused_page.give_back()


def looks_right(page) -> list[dict]:
    return tables_fit(page, page.width)


# At 1280×720 light, Past runs and Fleet are checked the same way by test_browser_incident.py's walks of
# those pages (tables_fit, open_expanders): one upload, one recorded server, serves both.
DARK_ONLY = pytest.mark.parametrize("page", VIEWS[1:], indirect=True, ids=lambda v: f"{v[0]}x{v[1]}-{v[2]}")


@DARK_ONLY
def test_past_runs_break_even_table_fits_with_its_detail(streamlit_server, page):
    page.goto(f"{streamlit_server}/past-runs?{SIDEBAR}")
    wait_for_app(page)
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(str(INCIDENT))
    page.get_by_text("each run with a measurement takes its verdict from it", exact=False).wait_for()
    wait_for_app(page)
    wait_for_charts(page)
    assert len(looks_right(page)) == 2  # the break-even table and the runs as read
    open_expanders(page)
    assert len(looks_right(page)) == 3  # and the advice, basis, file and row of each run
    detail = page.locator("[data-testid='stExpander']", has_text="Advice, how each verdict was reached")
    cells = detail.locator("td").all_inner_texts()
    assert re.fullmatch(r"\d\.\d\d–\d\.\d\d", cells[2])  # the model's 80% band of the run, then its advice
    assert "lower k to 3" in cells[3]  # the advice is in it, in words


@DARK_ONLY
def test_past_runs_names_each_setup_of_a_workload_and_its_detail_table_still_fits(streamlit_server, page):
    page.goto(f"{streamlit_server}/past-runs?{SIDEBAR}")
    wait_for_app(page)
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(
        str(INCIDENT.parent / "methods_compared.csv"))
    page.get_by_text("each run with a measurement takes its verdict from it", exact=False).wait_for()
    wait_for_app(page)
    page.get_by_text("ShareGPT (Llama-3-70B-Instruct, EAGLE-3) pays off at concurrency 64", exact=False).wait_for()
    # the setup in view beside the workload (rows of one workload that differ only by it read alike otherwise)
    main = page.locator("[data-testid='stDataFrame']").filter(has=page.locator("th", has_text="setup")).first
    main.locator("td", has_text="Llama-3.1-8B-Instruct, EAGLE-3").first.wait_for(state="attached")
    assert "verdict" in main.locator("th").all_inner_texts()  # the break-even table itself, not its detail
    open_expanders(page)
    assert len(looks_right(page)) == 3  # both tables fit: the main one with its setup, the detail


@DARK_ONLY
def test_fleet_instances_fit_with_what_each_was_predicted_on(streamlit_server, page):
    page.goto(f"{streamlit_server}/fleet?{SIDEBAR}")
    wait_for_app(page)
    # A focused input is outlined in the accent (blue), not in the red that marks an error.
    page.get_by_role("textbox", name="Prometheus URL").focus()
    page.wait_for_function("""() => { const c = getComputedStyle(document.activeElement.closest(
        "[data-testid='stTextInputRootElement']")).borderTopColor.match(/\\d+/g).map(Number);
        return c[3] === undefined && c[2] > c[0] + 60; }""")  # an opaque blue border (unfocused: 20% grey)
    page.get_by_role("button", name="Try it with a recorded server").click()
    page.get_by_text(re.compile(r"instance\(s\) at the recorded Prometheus")).wait_for()
    wait_for_app(page)
    wait_for_charts(page)
    above_the_fold(page, "fleet")  # test_browser_decision.py's check, on this load of the page
    looks_right(page)
    table = page.locator("[data-testid='stDataFrame']").nth(1)  # after the decision per instance
    # the grid writes its accessible cells after the canvas: wait for the header, then read it
    table.locator("th", has_text="Predicted on").first.wait_for(state="attached")
    assert "Predicted on" in table.locator("th").all_inner_texts()
    assert any("Llama 3.1 70B" in t for t in table.locator("td").all_inner_texts())  # in view, not cut off
    open_expanders(page)
    looks_right(page)


def test_traffic_mix_tables_fit_and_an_empty_cell_reads_empty(streamlit_server, page):
    page.goto(f"{streamlit_server}/mix?{SIDEBAR}&mix_conc=32&mix_k=4&mix_gpus=2")
    wait_for_app(page)
    wait_for_charts(page)
    looks_right(page)  # alpha_ngram is empty in the example: the cell is blank, not "None"
    # Emptying a workload's α, as a user would (select the cell, Delete): the message names the row and column.
    editor = page.locator("[data-testid='stDataFrame']").first
    box = editor.bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 35 + 18)  # row 1, label
    editor.locator("td[aria-selected='true']").first.wait_for(state="attached")  # the grid took the click
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # row 1, alpha
    page.keyboard.press("Delete")
    message = page.locator("[data-testid='stAlertContainer']").filter(has_text="has no acceptance")
    message.wait_for()
    assert "row 1 ('extraction')" in message.inner_text() and "fill 'alpha'" in message.inner_text()
    wait_for_app(page)
    wait_for_charts(page)
    open_expanders(page)
    looks_right(page)


# At 1280×720 light, What-if, Live (before a server is given) and Capacity are the same pages as
# test_browser_incident.py's walks, which make these checks on them (fits_the_window): one load serves both.
OTHER_PAGES = [(VIEWS[1], path) for path in ("/", "/live", "/capacity")]


@pytest.mark.parametrize(("page", "path"), OTHER_PAGES, indirect=["page"],
                         ids=[f"{w}x{h}-{scheme}-{path}" for (w, h, scheme), path in OTHER_PAGES])
def test_the_other_pages_show_no_message_twice_and_no_cut_label(streamlit_server, page, path):
    page.goto(f"{streamlit_server}{path}?{SIDEBAR}")
    wait_for_app(page)
    if path != "/live":  # Live draws its charts once it has a server
        wait_for_charts(page)
    if path == "/":
        above_the_fold(page, "what-if")  # test_browser_decision.py's check, on this load of the page
    assert not no_cut_labels(page), no_cut_labels(page)
    shown = [t.strip() for t in page.locator("[data-testid='stAlertContainer']").all_inner_texts() if t.strip()]
    assert len(shown) == len(set(shown)), shown
    assert page.evaluate("document.documentElement.scrollWidth") <= page.width
