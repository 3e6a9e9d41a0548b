"""Fleet figures: titles, axis labels with units, one legend entry per instance, hover text; empty input."""

import pandas as pd

from specmodel.show.figures import fleet as figures_fleet

HISTORY = pd.DataFrame({
    "time": pd.to_datetime([0, 60, 0, 60], unit="s", utc=True),
    "job": ["a", "a", "b", "b"], "instance": ["h1:8000", "h1:8000", "h2:8000", "h2:8000"],
    "model_name": ["org/M-8B", "org/M-8B", "org/M-70B", "org/M-70B"], "server": ["vllm-v1"] * 4,
    "tokens_per_step": [2.9, 3.0, 1.4, None], "running": [4.0, 5.0, 160.0, 150.0],
    "generation_tok_s": [100.0] * 4})
TABLE = pd.DataFrame({
    "job": ["a", "b", "b"], "instance": ["h1:8000", "h2:8000", "h3:8000"],
    "model_name": ["org/M-8B", "org/M-70B", "org/M-8B"], "concurrency": [4, 160, 64],
    "predicted_speedup": [1.7, 0.64, 1.3], "verdict": ["pays off", "loses", "off"],
    "tokens_per_step": [2.9, 1.4, None]})


def test_history_has_one_legend_entry_per_instance_and_units_on_both_axes():
    fig = figures_fleet.history(HISTORY, "5m")
    assert fig.layout.title.text == "Acceptance and load over time, per instance"
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert legend == ["h1:8000 · M-8B", "h2:8000 · M-70B"]
    assert fig.layout.yaxis.title.text == "E (tokens / verify step)"
    assert fig.layout.yaxis2.title.text == "running requests (sequences)"
    assert fig.layout.xaxis2.title.text == "time (UTC)"
    assert all("%{y" in t.hovertemplate for t in fig.data)


def test_operating_points_colour_instances_by_verdict_with_a_break_even_line():
    fig = figures_fleet.operating_points(TABLE)
    assert [t.name for t in fig.data] == ["pays off", "loses", "off"]
    assert fig.data[1].marker.color == figures_fleet.VERDICT_COLOURS["loses"]
    assert fig.layout.xaxis.type == "log" and "sequences" in fig.layout.xaxis.title.text
    assert "(×)" in fig.layout.yaxis.title.text
    assert any(s.y0 == 1.0 for s in fig.layout.shapes)


def test_empty_inputs_draw_empty_figures():
    assert figures_fleet.history(HISTORY.iloc[0:0], "5m").layout.annotations[-1].text == "no history in this span"
    assert len(figures_fleet.operating_points(TABLE.iloc[0:0]).data) == 0
