"""The Live page's charts read right: axis ranges from the data, lines where the numbers are, labels
that differ. Each test reads the figure's JSON as the browser receives it."""

import json
import math
from datetime import datetime

import pytest

from specmodel import Scenario
from specmodel.metrics import live
from specmodel.show.figures import live as figures_live
from tests.test_live import window_stats


def decoded(fig) -> dict:
    """The figure as the browser gets it (its JSON), with every trace's points as plain lists."""
    spec = json.loads(fig.to_json())
    for trace, source in zip(spec["data"], fig.data):
        for axis in ("x", "y"):
            points = getattr(source, axis)
            trace[axis] = [] if points is None else [v.isoformat() if isinstance(v, datetime) else
                                                     (None if v is None else float(v)) for v in points]
    return spec


@pytest.mark.parametrize("running", [1, 12, 300, 2000])
def test_operating_point_axis_runs_from_batch_1_to_at_most_4096_and_holds_every_point(running):
    verdict = live.live_verdict(window_stats(running=float(running)), Scenario.from_names(gpu="H100 SXM"))
    fig = decoded(figures_live.operating_point_figure(verdict))
    layout = fig["layout"]
    assert layout["xaxis"]["type"] == "log"
    lo, hi = (10 ** v for v in layout["xaxis"]["range"])  # a log axis's range is in log10 units
    assert lo == pytest.approx(1.0) and 256 <= hi <= 4096
    assert hi >= min(4096, 4 * running) * 0.999  # today's load sits well inside, not at the edge
    y0, y1 = layout["yaxis"]["range"]
    for trace in fig["data"]:
        for x in trace["x"]:
            assert lo * 0.999 <= float(x) <= hi * 1.001, (trace["name"], x)
        for y in trace["y"]:
            assert y0 <= float(y) <= y1, (trace["name"], y)
    assert not layout.get("shapes"), "no add_vline/add_hline shapes: on a log axis they land at 10^x"
    now = next(t for t in fig["data"] if t["name"] == "right now (bar: 80% band)")
    assert now["x"] == [float(running)] and now["y"][0] == pytest.approx(verdict.speedup)
    lo, hi = verdict.band  # the bar is the model's 80% band, inside the plot
    assert now["error_y"]["array"][0] == pytest.approx(hi - verdict.speedup)
    assert now["error_y"]["arrayminus"][0] == pytest.approx(verdict.speedup - lo)
    assert y0 <= lo and hi <= y1


def test_operating_point_crossover_is_a_vertical_line_at_the_true_batch():
    verdict = live.live_verdict(window_stats(running=40.0), Scenario.from_names(gpu="H100 SXM"))
    assert verdict.crossover_concurrency and verdict.crossover_concurrency > 1
    fig = decoded(figures_live.operating_point_figure(verdict))
    cross = next(t for t in fig["data"] if t["name"].startswith("crossover: batch"))
    assert cross["x"] == [verdict.crossover_concurrency] * 2  # data coordinates, not log10 of them
    assert cross["y"] == fig["layout"]["yaxis"]["range"]  # spans the plot's height
    names = [t["name"] for t in fig["data"]]
    assert "break-even (1.0x)" in names and len(names) == len(set(names))


def history(seconds: list[float], running: list[float]) -> list[dict]:
    stats = window_stats()
    return [dict(live.history_point(stats, 1.8e9 + s), running=r) for s, r in zip(seconds, running)]


@pytest.mark.parametrize("seconds", [[0.0], [0, 5, 10, 15], [0, 2, 4], [0, 600, 1200, 1800, 2400, 3000, 3600],
                                     [float(s) for s in range(0, 7200, 5)]],
                         ids=["one point", "4 scrapes 5 s apart", "2 s apart", "an hour", "two hours every 5 s"])
def test_rolling_chart_time_labels_are_distinct_and_the_range_holds_every_point(seconds):
    running = [16.0 if i == len(seconds) // 2 else 9.0 for i in range(len(seconds))]
    fig = decoded(figures_live.rolling_figure(history(seconds, running)))
    xaxis = fig["layout"]["xaxis"]
    labels = xaxis["ticktext"]
    assert 1 <= len(labels) <= figures_live.MAX_TIME_TICKS
    assert len(set(labels)) == len(labels), labels  # never one clock label repeated
    start, end = (datetime.fromisoformat(v) for v in xaxis["range"])
    for trace in fig["data"]:
        for x in trace["x"]:
            assert start <= datetime.fromisoformat(x) <= end
    # Both value axes start at 0 and end on a labelled tick at or above their largest point.
    for axis, data_max in (("yaxis", max(p["tokens_per_step_hi"] for p in history(seconds, running))),
                           ("yaxis2", 16.0)):
        y0, y1 = fig["layout"][axis]["range"]
        dtick = fig["layout"][axis]["dtick"]
        assert y0 == 0 and y1 >= data_max
        assert math.isclose(y1 / dtick, round(y1 / dtick)), "the top of the axis is a labelled tick"


def test_rolling_chart_running_16_sits_below_the_top_tick():
    fig = decoded(figures_live.rolling_figure(history([0, 5, 10, 15], [4.0, 16.0, 12.0, 8.0])))
    assert fig["layout"]["yaxis2"]["range"] == [0, 20.0] and fig["layout"]["yaxis2"]["dtick"] == 5.0


def test_live_figures_carry_no_template_of_their_own(monkeypatch):
    """The app's theme (light or dark, as the viewer prefers) styles them; a forced white template
    would leave a bright box on a dark page."""
    import plotly.io as pio

    monkeypatch.setattr(pio.templates, "default", None)
    verdict = live.live_verdict(window_stats(), Scenario())
    for fig in (figures_live.operating_point_figure(verdict), figures_live.rolling_figure(history([0, 5], [1, 2])),
                figures_live.survival_figure(window_stats())):
        assert "template" not in fig.to_plotly_json()["layout"]
