"""Runs figures: valid plotly, titled, axes with units, a legend, hover text naming the run."""

import plotly.graph_objects as go
import pytest

from specmodel.breakeven import evaluate_runs
from specmodel.figures_runs import break_even_chart, predicted_vs_measured
from specmodel.runs import read_runs, sample_files


@pytest.fixture(scope="module")
def evaluated():
    return evaluate_runs(read_runs(sample_files("Seed runs") + sample_files("vllm bench serve pair")).rows)


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


def test_workload_names_are_escaped_in_figures(evaluated):
    hostile = evaluated.assign(workload="<img src=x onerror=alert(1)>")
    fig = predicted_vs_measured(hostile)
    assert fig.data[0].name == "&lt;img src=x onerror=alert(1)&gt;"
    assert "<img" not in fig.data[0].hovertext[0]


def test_empty_table_still_gives_a_labelled_figure(evaluated):
    fig = predicted_vs_measured(evaluated.iloc[0:0])
    assert fig.layout.annotations[0].text.startswith("no run has both")
