"""A review in a real browser: a measured loss the model calls a gain is a loss, with the model's
disagreement shown (and the command line agrees); uploaded runs with a sample added are flagged and drawn on the
scatter, survive a visit to another page and calibrate;
calibration follows the sidebar into What-if's URL and badge; a file just past the table's, the chart's and the
progress bar's caps loads with progress (bench runs_large measures the time of 200,000)."""

import json
import re

import pytest
from playwright.sync_api import expect

from bench.bench_runs_large import large_csv
from specmodel.cli import main
from specmodel.runs.load import PROGRESS_EVERY
from specmodel.show.runs_view import CHART_RUNS_SHOWN, PROGRESS_FROM_ROWS, TABLE_ROWS_SHOWN
from tests.browser import APP_IDLE_JS, PATIENCE_MS, wait_for_app, wait_for_charts, wait_settled
from tests.conftest import FIXTURES

pytestmark = pytest.mark.browser

MEASURED_VS_MODEL = FIXTURES / "measured_vs_model.csv"  # MT-Bench at 24: measured 0.71x, the model predicts ~1.5x


def open_past_runs(page, base_url: str) -> None:
    """Start where a user starts (What-if) and follow the sidebar to Past runs."""
    page.goto(base_url + "/")
    wait_for_app(page)
    sidebar_link(page, "Past runs")
    page.wait_for_url("**/past-runs**")
    wait_for_app(page)


def go_to_past_runs(page, base_url: str) -> None:
    """Past runs opened from its address (a bookmark): no What-if run first."""
    page.goto(base_url + "/past-runs")
    wait_for_app(page)
    page.get_by_role("heading", name="Past runs").first.wait_for()


def sidebar_link(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav']").get_by_text(title).click()


def visible(locator) -> bool:
    return any(element.is_visible() for element in locator.all())


def upload(page, path) -> None:
    page.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(str(path))


def test_a_measured_loss_is_flagged_with_the_models_disagreement_and_the_cli_agrees(streamlit_server, browser_page,
                                                                                     capsys):
    page = browser_page
    go_to_past_runs(page, streamlit_server)
    upload(page, MEASURED_VS_MODEL)
    line = page.get_by_text("MT-Bench loses at concurrency 24, 64 (measured) — the model said pays off at 24, 64")
    line.wait_for()
    wait_for_app(page)
    headline = page.get_by_text("The model's verdict differs from the measured one on 3 of 5 runs")
    assert headline.is_visible() and "measured 0.71×" in headline.inner_text()
    assert "model: pays off" in headline.inner_text()
    # the problems are one collapsed block: its label is on the page, its lines are not shown until opened
    problems = page.locator("[data-testid='stExpander']").filter(has_text="Problems in the input").first
    assert problems.is_visible() and not page.get_by_text("no variant named").first.is_visible()

    assert main(["runs", str(MEASURED_VS_MODEL), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = next(r for r in doc["rows"] if r["workload"] == "MT-Bench" and r["concurrency"] == 24)
    assert (row["verdict"], row["predicted_verdict"], row["model_agrees"]) == ("fails", "clears", False)
    assert doc["summary"]["model_disagreements"] == 3


def test_runs_survive_another_page_and_calibration_follows_the_sidebar(streamlit_server, browser_page):
    page = browser_page
    open_past_runs(page, streamlit_server)
    page.locator("[data-testid='stButtonGroup']").get_by_text("Two workloads (illustrative)").click()
    page.get_by_text("code completion pays off at concurrency 1, 8, 32, 64 (measured)").wait_for()
    wait_for_app(page)
    # the sample's runs: each workload flagged, one marker per run on the scatter with the y = x line, every row read
    wait_for_charts(page)
    assert page.get_by_text("open-ended chat loses at concurrency 1, 8, 32, 64").is_visible()
    scatter = page.locator("[data-testid='stPlotlyChart']").filter(has_text="Predicted vs measured speedup")
    assert scatter.count() == 1
    assert scatter.locator(".scatterlayer .trace .point").count() >= 8  # one marker per run
    assert scatter.get_by_text("prediction = measurement (y = x)").count() == 1
    assert page.locator("[data-testid='stExpander']").get_by_text("Input: every row was read").is_visible()
    upload(page, FIXTURES / "seed_runs.csv")  # and a file of one's own beside it
    page.get_by_text("extraction pays off at concurrency 1 (measured)").wait_for()
    wait_for_app(page)

    sidebar_link(page, "What-if")
    page.wait_for_url(lambda url: "past-runs" not in url)
    wait_for_app(page)
    sidebar_link(page, "Past runs")
    page.wait_for_url("**/past-runs**")
    wait_for_app(page)
    # wait_for: visible within the timeout (the page may still be drawing its flags after the rerun)
    page.get_by_text("Using the files uploaded earlier in this session: seed_runs.csv").wait_for()
    page.get_by_text("extraction pays off at concurrency 1 (measured)").wait_for()  # the upload
    page.get_by_text("code completion pays off at concurrency 1, 8, 32, 64 (measured)").wait_for()  # the sample
    main_area = page.locator("[data-testid='stMain']")
    assert visible(main_area.get_by_text("uncalibrated", exact=True))

    page.get_by_role("button", name="Calibrate on these runs").click()
    page.get_by_text("after calibration.").wait_for()
    wait_for_app(page)
    assert "cal=" in page.url
    sidebar_link(page, "What-if")
    page.wait_for_url(lambda url: "past-runs" not in url and "cal=" in url)
    wait_for_app(page)
    main_area.get_by_text("calibrated", exact=True).first.wait_for()  # the What-if verdict's badge, once drawn
    assert not visible(main_area.get_by_text("uncalibrated", exact=True))
    assert page.locator("[data-testid='stSidebar']").get_by_text(re.compile(r"^Calibrated: ")).is_visible()
    # the copy-link box holds the full link with the calibration
    page.get_by_text("Copy link to this view").click()
    code = page.locator("[data-testid='stCode']").filter(has_text="cal=").first
    code.wait_for()
    assert code.inner_text().startswith(streamlit_server) and "cal=" in code.inner_text()


# Just past every cap a large file meets on the page: the progress bar (from PROGRESS_FROM_ROWS runs, a report
# every PROGRESS_EVERY rows read), the table (TABLE_ROWS_SHOWN rows) and the chart (CHART_RUNS_SHOWN runs). Each
# row is valid, so all of them load. A bigger file takes the same paths, only longer (bench runs_large times 200,000).
PAST_THE_CAPS = max(PROGRESS_FROM_ROWS, PROGRESS_EVERY, TABLE_ROWS_SHOWN, CHART_RUNS_SHOWN) + 1_000

# Every progress bar text the page shows, recorded as it appears: the bar lives only while the file loads.
RECORD_PROGRESS_JS = """() => { window.__progress = []; new MutationObserver(() => {
    for (const e of document.querySelectorAll("[data-testid='stProgress']")) {
        const t = e.innerText; if (t && window.__progress.at(-1) !== t) window.__progress.push(t); } })
    .observe(document.body, {childList: true, subtree: true, characterData: true}); }"""


def test_a_file_past_the_caps_loads_with_progress(streamlit_server, browser_page, tmp_path):
    page = browser_page
    rows = PAST_THE_CAPS
    big = tmp_path / "sweep_large.csv"
    big.write_bytes(large_csv(rows))
    go_to_past_runs(page, streamlit_server)
    page.evaluate(RECORD_PROGRESS_JS)
    upload(page, big)
    page.get_by_text(f"The table shows the first {TABLE_ROWS_SHOWN:,} of {rows:,} rows").first.wait_for()
    wait_for_app(page)
    seen = page.evaluate("window.__progress")
    # the bar said how far it was while the file loaded (each report's text: tests/test_runs_view.py). Reading
    # reports once at this size (at 5,000 rows, PROGRESS_EVERY) and takes a fraction of a second, so the browser
    # may draw only the predicting stage's reports that follow it at once: either stage's count says how far
    assert any(t.startswith(("Reading: ", "Predicting: ")) and t.endswith(f" of {rows:,} runs") for t in seen), seen
    assert page.locator("[data-testid='stProgress']").count() == 0  # gone once loaded
    loaded = page.locator("[data-testid='stMetric']").filter(has_text="Runs loaded")
    assert f"{rows:,}" in loaded.inner_text()
    wait_for_charts(page)
    assert page.get_by_text(f"The chart shows {CHART_RUNS_SHOWN:,} of the {rows:,} runs, evenly spread").is_visible()


def test_a_traffic_mix_edit_survives_a_visit_to_another_page(streamlit_server, browser_page):
    page = browser_page
    page.goto(streamlit_server + "/mix")
    wait_for_app(page)
    edit_first_label("my edited workload", page)
    wait_for_app(page)
    sidebar_link(page, "What-if")
    page.wait_for_url(lambda url: "/mix" not in url)
    wait_for_app(page)
    sidebar_link(page, "Traffic mix")
    page.wait_for_url("**/mix**")
    wait_for_app(page)
    first_label_is("my edited workload", page)


def edit_first_label(text: str, page, attempts: int = 3) -> None:
    """Type `text` into the workload editor's first label as a user does: click the cell, Enter, type, Enter. A
    click that lands while the page is still rerunning (a loaded machine) is taken by the grid being replaced, and
    the user sees the old label and types again: so does this, up to `attempts` times; each try waits for the page
    to be idle first, and the last one waits for the label itself."""
    for attempt in range(attempts):
        wait_for_app(page)
        editor = page.locator("[data-testid='stDataFrame']").first
        editor.scroll_into_view_if_needed()
        box = editor.bounding_box()
        page.mouse.click(box["x"] + 60, box["y"] + 52)  # the first row's label (the header row is ~35 px)
        editor.locator("td[aria-selected='true']").first.wait_for(state="attached")  # the grid took the click
        page.keyboard.press("Enter")  # opens the cell's editor
        cell_editor = page.locator("textarea.gdg-input")
        cell_editor.wait_for()
        page.keyboard.press("Control+A")
        page.keyboard.type(text)
        expect(cell_editor).to_have_value(text, timeout=PATIENCE_MS)
        page.keyboard.press("Enter")
        if attempt == attempts - 1:
            first_label_is(text, page)
            return
        # the cell reads `text`, or the page has stayed idle without it, its cell editor closed, for EDIT_LOST_FRAMES
        # frames (the edit's rerun starts within a few): the grid was replaced and the edit lost. Type it again
        # then, rather than wait out a limit (typing the same label twice is harmless if it was only slow).
        wait_settled(page, f"(text) => ({FIRST_LABEL_JS})(text) || (({APP_IDLE_JS})()"
                     " && !document.querySelector('textarea.gdg-input'))", arg=text, frames=EDIT_LOST_FRAMES)
        if page.evaluate(FIRST_LABEL_JS, text):
            return


EDIT_LOST_FRAMES = 60  # chosen: about a second of animation frames (more under load)
FIRST_LABEL_JS = "(text) => document.querySelector(\"[data-testid='stDataFrame'] td\")?.innerText === text"


def first_label_is(text: str, page, timeout: float = PATIENCE_MS) -> None:
    """The workload editor's first cell (its accessible table mirrors the canvas) reads `text`."""
    page.wait_for_function(FIRST_LABEL_JS, arg=text, timeout=timeout)
