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


def test_an_instance_whose_band_straddles_one_is_shown_uncertain_with_its_band_as_a_bar():
    """The recorded fleet's SGLang instance: the model predicts 1.25x at its concurrency with an 80% band of
    0.93-1.89x. The page's table, its count line and the chart call it "uncertain", not "pays off"; the
    JSON keeps the model's label and `uncertain`."""
    from specmodel import Scenario
    from specmodel.metrics import fleet, promapi, samples
    from specmodel.show import readouts

    server = promapi.PromServer(samples.FLEET_SAMPLE_URL, promapi.PromAuth(None, None, None))
    with samples.recorded_prometheus_client() as client:
        report = fleet.fleet(client, server, Scenario(), window=samples.FLEET_SAMPLE_WINDOW,
                             at_s=samples.fleet_sample_time())
    raw = report.table()
    shown = readouts.fleet_shown(raw)
    sglang = shown.index[shown["instance"] == "sglang:8000"][0]
    assert raw.at[sglang, "verdict"] == "pays off" and raw.at[sglang, "uncertain"] == True  # noqa: E712  # the JSON's words
    assert shown.at[sglang, "verdict"] == "uncertain"
    assert raw.at[sglang, "speedup_low"] < 1.0 < raw.at[sglang, "speedup_high"]
    clear = shown.index[(shown["verdict"] == "pays off")]
    assert len(clear) and (shown.loc[clear, "speedup_low"] > 1.0).all()  # the others' bands are clear of 1.0
    assert shown.at[shown.index[shown["instance"] == "v1-off:8000"][0], "verdict"] == "off"  # off stays off
    assert readouts.fleet_counts(shown["verdict"]) == "3 pays off, 1 uncertain, 1 loses, 1 off"
    assert [who for who, _ in readouts.fleet_uncertain(shown)] == ["sglang:8000"]
    # the text reads in order: the speedup, what was measured, then why it is uncertain and where to measure
    text = raw.at[sglang, "verdict_text"]
    assert text.startswith("uncertain (pays off by the estimate): 1.25x at batch 31, measured E = 2.74")
    assert ("— 0.93x to 1.89x across the model's 80% band; the batch above which it stops paying lies between 45 "
            "and 512") in text  # against the schedule's off band, not free on SGLang (model.off_state): 24 if it were
    fig = figures_fleet.operating_points(shown)
    trace = next(t for t in fig.data if t.name == "uncertain")
    assert trace.marker.color == figures_fleet.VERDICT_COLOURS["uncertain"]
    y = trace.y[0]
    assert abs(y - trace.error_y.arrayminus[0] - raw.at[sglang, "speedup_low"]) < 1e-9
    assert abs(y + trace.error_y.array[0] - raw.at[sglang, "speedup_high"]) < 1e-9
    assert "0.93–1.89" in trace.customdata[0][2] and "80% band" in fig.layout.legend.title.text
