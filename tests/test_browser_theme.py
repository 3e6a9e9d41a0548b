"""The page follows the viewer's light or dark preference (no forced theme), and its charts follow it
too; page titles need no emoji font. Chromium emulates `prefers-color-scheme` for each case."""

import ast
import tomllib

import pytest

from tests.browser import wait_for_app, wait_for_charts
from tests.conftest import ROOT

LUMINANCE_JS = """(el) => { const c = getComputedStyle(el).backgroundColor.match(/[\\d.]+/g).map(Number);
  return (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]) / 255; }"""


def test_no_theme_is_forced_and_page_titles_carry_no_icon():
    config = (ROOT / ".streamlit" / "config.toml").read_text()
    assert "[theme]" not in config and "base =" not in config
    # Only the accent is set, for each scheme alike, so neither light nor dark is forced; it is not the red of
    # an error box (a focused input looked like one in error).
    theme = tomllib.loads(config).get("theme", {})
    assert set(theme) <= {"light", "dark"} and (not theme or set(theme) == {"light", "dark"})
    for scheme in theme.values():
        assert set(scheme) <= {"primaryColor", "codeTextColor"}
        r, g, b = (int(scheme["primaryColor"][i:i + 2], 16) for i in (1, 3, 5))
        assert b > r, scheme
    pages = [node for node in ast.walk(ast.parse((ROOT / "app.py").read_text()))
             if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page"]
    assert len(pages) == 6
    assert all(kw.arg != "icon" for page in pages for kw in page.keywords)


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_page_and_its_charts_follow_the_viewers_colour_scheme(scheme, streamlit_server, _reused_page):
    page = _reused_page.take(1400, 1200, scheme)
    try:
        page.goto(streamlit_server + "/?alpha=0.6&conc=8")
        wait_for_app(page)
        wait_for_charts(page)
        app = page.locator("[data-testid='stApp']")
        background = app.evaluate(LUMINANCE_JS)
        assert (background > 0.8) if scheme == "light" else (background < 0.25)
        # The chart's own background follows: Plotly's paper is the page's colour or transparent.
        paper = page.locator("[data-testid='stPlotlyChart'] .main-svg").first.evaluate(
            "(el) => getComputedStyle(el).backgroundColor")
        assert paper in ("rgba(0, 0, 0, 0)", "transparent") or (("255, 255, 255" in paper) == (scheme == "light"))
        # Axis labels are drawn in a colour that contrasts with the background.
        tick = page.locator("[data-testid='stPlotlyChart'] .xtick text").first.evaluate(
            "(el) => getComputedStyle(el).fill")
        rgb = [int(v) for v in tick[tick.index("(") + 1:tick.index(")")].split(",")[:3]]
        text = (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255
        assert abs(text - background) > 0.4, (tick, background)
        nav = page.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
        assert [t.strip() for t in nav] == ["What-if", "Past runs", "Live", "Fleet", "Traffic mix", "Capacity"]
    finally:
        _reused_page.give_back()
