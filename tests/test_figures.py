"""Every What-if figure is a valid plotly figure with a title, axis titles with units and a legend."""

from pathlib import Path

import plotly.graph_objects as go
import pytest

from specmodel import Scenario
from specmodel.show.figures import whatif as figures

ROOT = Path(__file__).resolve().parent.parent
BUILDERS = [figures.speedup_vs_alpha, figures.speedup_vs_concurrency, figures.alpha_k_heatmap,
            figures.best_k_by_batch]
SCENARIOS = [Scenario(), Scenario.from_names(gpu="H100 SXM", concurrency=200, alpha=0.5, k=6),
             Scenario.from_names(method="ngram", draft=None, survival=(0.8, 0.5, 0.3), k=3), Scenario.from_names(k=0)]


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=["default", "h100-busy", "ngram-profile", "off"])
def test_figures_validate_and_are_labelled(build, scenario):
    fig = build(scenario)
    checked = go.Figure(fig.to_dict())  # the validating constructor: a wrong property raises here
    layout = checked.layout
    assert layout.title.text
    assert "(" in layout.xaxis.title.text and "(" in layout.yaxis.title.text  # units or scale named
    named = [t.name for t in checked.data if t.showlegend is not False and t.name]
    assert named, "a legend needs named traces"
    assert any(getattr(t, "hovertemplate", None) for t in checked.data)


def test_crossover_is_marked_when_speculation_loses_under_load():
    fig = figures.speedup_vs_concurrency(Scenario.from_names(gpu="H100 SXM", alpha=0.7, k=4))
    names = [t.name for t in fig.data]
    assert any(n.startswith("crossover: batch") for n in names)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=["default", "h100-busy", "ngram-profile", "off"])
def test_the_deploy_options_chart_is_labelled_and_orders_off_fixed_schedule_and_upper_bound(scenario):
    import numpy as np

    from specmodel import summarize
    from specmodel.model.decide import SWITCH_GAIN, K_TIE

    summary = summarize(scenario)
    checked = go.Figure(figures.deploy_options(summary).to_dict())
    assert checked.layout.title.text and "tokens/s" in checked.layout.yaxis.title.text
    assert "batch size" in checked.layout.xaxis.title.text
    names = [t.name for t in checked.data]
    assert names[0].startswith("off") and names[1].startswith("fixed k =") and names[2].startswith("schedule")
    assert names[3] == "per-batch best k (upper bound)"
    rows = figures.deploy_option_rows(summary)
    # the upper bound is the best of one server's options at every batch (within K_TIE, its tie rule) ...
    best_other = np.maximum.reduce([rows["fixed"], rows["schedule"]])
    assert np.all(rows["upper"] >= best_other * (1 - K_TIE) - 1e-9)
    # ... the schedule never falls more than the noise below its own off band (speculation configured, k = 0),
    # and below a server without speculation by no more than separate pools gain (what the advice says) ...
    band = rows["off"] * summary.grid[0][rows["batch"] - 1]
    assert np.all(rows["schedule"] >= band / (1 + SWITCH_GAIN) - 1e-9)
    below = rows["schedule"] < rows["off"] / (1 + SWITCH_GAIN)
    if below.any():
        assert summary.pools_gain is not None
        assert np.all(rows["off"][below] / rows["schedule"][below] <= summary.pools_gain + 1e-9)
        assert np.all(rows["batch"][below] > summary.pools_above)
    # ... and at the scenario's batch the fixed k is the one the schedule runs (one decision)
    at = list(rows["batch"]).index(scenario.concurrency) if scenario.concurrency in rows["batch"] else None
    if at is not None and summary.best_k:
        assert rows["schedule_k"][at] == rows["fixed_k"] == summary.best_k


def test_the_best_k_chart_draws_the_k_to_deploy_that_the_verdict_names():
    """At batch 32 on an MI300X, k = 3 beats k = 4 by 1%: the schedule keeps k = 4 (it switches only for
    more than SWITCH_GAIN) and the verdict says "keep k = 4"; the chart's main line is that schedule, the
    per-batch best (3 there) a dotted line beside it."""
    from specmodel import summarize

    s = Scenario.from_names(gpu="MI300X", target="Llama 3.1 8B", method="eagle3", alpha=0.7, k=4, concurrency=32,
                 engine="vllm 0.18.0")
    summary = summarize(s)
    fig = figures.best_k_by_batch(s, summary.schedule)  # read as a figure (its arrays as numpy)
    deploy, alone = (next(t for t in fig.data if t.name == n) for n in ("k to deploy (schedule)",
                                                                       "best k at each batch alone"))
    at = [int(x) for x in deploy.x].index(31)  # the batches are log-spaced: 31 and 33 beside the scenario's 32
    assert deploy.y[at] == summary.best_k == 4 and alone.y[at] == 3
    assert "keep k = 4" in summary.verdict.text + " " + summary.verdict.advice
