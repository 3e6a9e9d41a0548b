"""Runs figures: valid plotly, titled, axes with units, a legend, hover text naming the run."""

import pandas as pd
import plotly.graph_objects as go
import pytest

from specmodel.runs import RunDefaults, read_runs, sample_files
from specmodel.runs.review import evaluate_runs
from specmodel.show.figures.runs import break_even_chart, predicted_vs_measured


@pytest.fixture(scope="module")
def evaluated():
    # the vLLM sample says "gpu": "simulated": run with a GPU chosen (--gpu; the Past runs page with its box ticked)
    return evaluate_runs(read_runs(sample_files("Seed runs") + sample_files("vllm bench serve pair"),
                                   RunDefaults(explicit=frozenset({"gpu"}))).rows)


@pytest.mark.parametrize("build", [predicted_vs_measured, break_even_chart], ids=lambda b: b.__name__)
def test_figures_validate_and_are_labelled(build, evaluated):
    fig = go.Figure(build(evaluated).to_dict())
    assert fig.layout.title.text
    assert "(" in fig.layout.xaxis.title.text and "(" in fig.layout.yaxis.title.text
    assert len([t for t in fig.data if t.name]) >= 2
    hovers = " ".join(" ".join(t.hovertext) for t in fig.data if t.hovertext)
    assert "seed_runs.csv, row 2" in hovers and "vllm_bench_eagle_k3.json" in hovers


def test_scatter_has_one_trace_per_workload_and_the_identity_line(evaluated):
    fig = predicted_vs_measured(evaluated)
    names = [t.name for t in fig.data]
    assert names == ["1280 in / 256 out tokens", "chat", "extraction", "mixed extraction+chat",
                     "prediction = measurement (y = x)"]
    identity = fig.data[-1]
    assert list(identity.x) == list(identity.y)


def test_scatter_draws_each_runs_band_as_a_bar_and_keeps_it_inside_the_axes(evaluated):
    fig = predicted_vs_measured(evaluated)
    extraction = next(t for t in fig.data if t.name == "extraction")
    run = evaluated[evaluated["workload"] == "extraction"].iloc[0]
    low, pred, high = run["speedup_low"], run["predicted_speedup"], run["speedup_high"]
    assert low < pred < high  # the seed's extraction run: 1.55x predicted, its band around it
    assert extraction.error_y.array[0] == pytest.approx(high - pred)
    assert extraction.error_y.arrayminus[0] == pytest.approx(pred - low)
    assert f"80% band {low:.2f}–{high:.2f}x" in extraction.hovertext[0]
    assert fig.layout.yaxis.range[0] <= low and fig.layout.yaxis.range[1] >= high
    assert "80% band" in fig.layout.yaxis.title.text


def test_workload_names_are_escaped_in_figures(evaluated):
    hostile = evaluated.assign(workload="<img src=x onerror=alert(1)>")
    fig = predicted_vs_measured(hostile)
    assert fig.data[0].name == "&lt;img src=x onerror=alert(1)&gt;"
    assert "<img" not in fig.data[0].hovertext[0]


def test_empty_table_still_gives_a_labelled_figure(evaluated):
    fig = predicted_vs_measured(evaluated.iloc[0:0])
    assert fig.layout.annotations[0].text.startswith("no run has both")


def _runs(names: list[str], per_name: int = 2):
    """A table of evaluated runs with these workload names, two concurrencies each."""
    rows = []
    for i, name in enumerate(names):
        for j in range(per_name):
            rows.append({"file": "runs.csv", "row": 2 + len(rows), "workload": name, "concurrency": 2 ** (j + 2 * (i % 3)),
                         "k": 3, "method": "draft_model", "gpu_preset": "H100 SXM", "alpha": 0.7,
                         "tokens_per_step": 2.0 + 0.1 * j, "break_even_tokens_per_step": 1.5 + 0.2 * j,
                         "measured_speedup": 1.2, "predicted_speedup": 1.3,
                         "verdict": ["clears", "fails", "borderline"][(i + j) % 3]})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("workloads", [2, 10, 35])
def test_break_even_chart_grows_with_its_rows(workloads):
    """At least 22 px a row: 70 runs get a chart about 1,800 px tall, not 420 px with rows on top of each other."""
    names = [f"workload {i}" for i in range(workloads)]
    fig = break_even_chart(_runs(names))
    rows = 2 * workloads
    assert fig.layout.height >= 22 * rows + 100
    bars = fig.data[0]
    assert len(bars.y) == rows and len(set(bars.y)) == rows  # one row each: none drawn over another
    markers = [t for t in fig.data if t.name and t.name.startswith("measured")]
    assert sum(len(t.y) for t in markers) == rows
    assert {t.name for t in markers} == {"measured (pays off)", "measured (loses)", "measured (borderline)"}
    assert list(fig.layout.yaxis.categoryarray) == list(bars.y)
    assert fig.layout.yaxis.range[0] - fig.layout.yaxis.range[1] == pytest.approx(rows)  # every row in view
    be = max(bars.x)
    assert fig.layout.xaxis.range[0] == 0 and fig.layout.xaxis.range[1] >= max(be, 2.1)


def test_break_even_chart_groups_rows_by_workload_and_shades_the_groups():
    fig = break_even_chart(_runs(["zeta", "alpha", "mid"]).sample(frac=1.0, random_state=3))
    labels = list(fig.data[0].y)
    workloads = [lab.split(" @ ")[0] for lab in labels]
    assert workloads == ["alpha", "alpha", "mid", "mid", "zeta", "zeta"]  # grouped, in order
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # the first row at the top
    bands = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [(b.y0, b.y1) for b in bands] == [(-0.5, 1.5), (3.5, 5.5)]  # every other workload shaded


def test_long_workload_names_are_cut_on_the_axis_and_whole_on_hover():
    long_name = "A very long benchmark name from a published table (MT-Bench, multi-turn, 80 questions, T=0)"
    fig = break_even_chart(_runs([long_name, "chat"]))
    labels = list(fig.data[0].y)
    assert all(len(lab.split(" @ ")[0]) <= 34 for lab in labels)
    assert any(lab.split(" @ ")[0].endswith("…") for lab in labels)
    hovers = " ".join(" ".join(t.hovertext) for t in fig.data if t.hovertext)
    assert long_name in hovers


def test_runs_that_share_a_workload_and_concurrency_get_distinct_rows():
    runs = pd.concat([_runs(["chat"], per_name=1)] * 3, ignore_index=True)
    runs.loc[1, "k"] = 5
    labels = list(break_even_chart(runs).data[0].y)
    assert len(set(labels)) == 3
    assert labels == ["chat @ 1, k=3 #1", "chat @ 1, k=3 #2", "chat @ 1, k=5"]


@pytest.mark.parametrize("workloads", [1, 40])
def test_break_even_chart_title_legend_and_plot_are_stacked_without_overlap(workloads):
    fig = break_even_chart(_runs([f"w{i}" for i in range(workloads)]))
    height = fig.layout.height
    # Pixels from the top: the title's line, then the legend's line, then the plot area.
    assert fig.layout.title.yref == "container" and fig.layout.title.y == 1.0 and fig.layout.title.yanchor == "top"
    legend_top_px = (1 - fig.layout.legend.y) * height
    assert fig.layout.legend.yref == "container" and fig.layout.legend.yanchor == "top"
    assert 30 <= legend_top_px <= fig.layout.margin.t - 45  # below a 20 px title, above the plot's top scale
    assert fig.layout.legend.orientation == "h"
    assert fig.layout.xaxis.side == "bottom"  # the axis title at the bottom, far from the title
    assert fig.layout.yaxis.automargin  # long labels push the plot right instead of being clipped
    top_scale = [t for t in fig.data if t.xaxis == "x2"]
    assert bool(top_scale) == (2 * workloads > 15)  # a tall chart repeats its scale at the top


def test_a_scatter_of_many_workloads_keeps_a_short_legend_and_every_run():
    """40 workloads would be a 40-entry legend squeezing the plot: above 10 the colours are verdicts."""
    from specmodel.show.figures.runs import LEGEND_WORKLOADS, VERDICT_COLOURS

    runs = _runs([f"workload {i}" for i in range(40)]).assign(measured_speedup=lambda d: 0.8 + 0.01 * d.index)
    runs.loc[0, "verdict"] = None
    fig = predicted_vs_measured(runs)
    names = [t.name for t in fig.data]
    assert names == ["measured: pays off", "measured: borderline", "measured: loses", "measured: –",
                     "prediction = measurement (y = x)"]
    assert sum(len(t.x) for t in fig.data[:-1]) == len(runs) == 80  # no run dropped
    assert fig.data[0].marker.color == VERDICT_COLOURS["clears"]
    assert "40 workloads" in fig.layout.legend.title.text
    assert "<b>workload 5</b>" in " ".join(" ".join(t.hovertext) for t in fig.data[:-1])
    lo, hi = fig.layout.xaxis.range
    assert lo == pytest.approx(0.8 * 0.9) and hi == pytest.approx(1.59 * 1.1)
    few = predicted_vs_measured(_runs([f"w{i}" for i in range(LEGEND_WORKLOADS)]))
    assert len(few.data) == LEGEND_WORKLOADS + 1  # up to 10 workloads: one legend entry each
