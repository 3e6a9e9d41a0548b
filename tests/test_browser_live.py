"""The Live page in a real browser: type a metrics URL, see the live verdict appear and refresh."""

import re

import pytest
from playwright.sync_api import expect

from tests import replay
from tests.browser import PATIENCE_MS, until, wait_for_app, wait_for_charts
from tests.replay import ReplayServer

pytestmark = pytest.mark.browser


def test_entering_a_url_shows_the_live_verdict_and_puts_the_url_in_the_link(streamlit_server, browser_page):
    page = browser_page
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        page.goto(streamlit_server + "/?live_every=2")
        wait_for_app(page)
        page.get_by_role("link", name=re.compile("Live")).click()  # from the What-if page, as a user would
        page.wait_for_url(re.compile(r"/live"))
        wait_for_app(page)
        field = page.get_by_role("textbox", name="Metrics URL")
        field.fill(srv.url)
        field.press("Enter")
        # The fragment refreshes every 2 s on its own: the verdict appears without any click.
        verdict = page.get_by_text(re.compile(r"Right now: pays off: \d\.\d\dx at batch \d+"))  # under the decision
        verdict.wait_for()
        wait_for_charts(page)
        page.get_by_text(re.compile(r"^Why")).first.click()  # the whole verdict, led by what it rests on
        text = page.get_by_text(re.compile(r"Right now: rests on presets \(.*\): pays off")).first.inner_text()
        assert "measured E = 2.50 tokens per step with k = 3" in text
        assert page.get_by_text("Operating point on the model", exact=False).count() >= 1
        assert "live_url=" in page.url and "127.0.0.1" in page.url
        # auto-refresh keeps scraping while the page is open (every 2 s), untouched by the user
        scrapes = srv.scrapes
        until(page, lambda: srv.scrapes > scrapes, "a scrape by the page's own refresh")
        wait_for_app(page)  # that refresh's run has ended and its elements are drawn
        assert page.get_by_text("Hardware and models").is_visible()  # the shared sidebar survives refreshes
        assert page.get_by_text(re.compile(r"Right now: pays off: \d\.\d\dx at batch \d+")).is_visible()


def test_credentials_typed_or_linked_leave_the_address_bar(streamlit_server, browser_page):
    """Issue 12, defect 5: user:password in the metrics URL stayed in the page link (browser history,
    shared links). Now it moves to the unlinked fields and the address bar shows the URL without it."""
    page = browser_page
    page.goto(streamlit_server + "/live?live_url=http%3A%2F%2Fadmin%3Apw-SECRET%40127.0.0.1%3A9%2Fmetrics")
    page.get_by_text("were moved to the credential fields").wait_for()
    field = page.get_by_role("textbox", name="Metrics URL")
    # Streamlit rewrites the field and the address bar after the rerun
    expect(field).to_have_value("http://127.0.0.1:9/metrics", timeout=PATIENCE_MS)
    expect(page).not_to_have_url(re.compile("SECRET"), timeout=PATIENCE_MS)
    assert "SECRET" not in page.url and "admin" not in page.url and "live_url=" in page.url
    assert field.input_value() == "http://127.0.0.1:9/metrics"
    field.fill("http://bob:typed-SECRET@127.0.0.1:9/metrics")
    field.press("Enter")
    expect(field).to_have_value("http://127.0.0.1:9/metrics", timeout=PATIENCE_MS)
    expect(page).not_to_have_url(re.compile("SECRET"), timeout=PATIENCE_MS)
    assert "SECRET" not in page.url and "bob" not in page.url
    assert field.input_value() == "http://127.0.0.1:9/metrics"
