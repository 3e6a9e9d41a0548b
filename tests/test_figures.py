"""Every What-if figure is a valid plotly figure with a title, axis titles with units and a legend."""

import plotly.graph_objects as go
import pytest

from specmodel import Scenario
from specmodel.show.figures import whatif as figures

BUILDERS = [figures.speedup_vs_alpha, figures.speedup_vs_concurrency, figures.alpha_k_heatmap,
            figures.best_k_by_batch]
SCENARIOS = [Scenario(), Scenario(gpu="H100 SXM", concurrency=200, alpha=0.5, k=6),
             Scenario(method="ngram", draft=None, survival=(0.8, 0.5, 0.3), k=3), Scenario(k=0)]


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
    fig = figures.speedup_vs_concurrency(Scenario(gpu="H100 SXM", alpha=0.7, k=4))
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
    # the upper bound is the best of the four at every batch (within K_TIE, its tie rule) ...
    best_other = np.maximum.reduce([rows["off"], rows["fixed"], rows["schedule"]])
    assert np.all(rows["upper"] >= best_other * (1 - K_TIE) - 1e-9)
    # ... the schedule never falls more than the noise below plain decoding ...
    assert np.all(rows["schedule"] >= rows["off"] / (1 + SWITCH_GAIN) - 1e-9)
    # ... and at the scenario's batch the fixed k is the one the schedule runs (one decision)
    at = list(rows["batch"]).index(scenario.concurrency) if scenario.concurrency in rows["batch"] else None
    if at is not None and summary.best_k:
        assert rows["schedule_k"][at] == rows["fixed_k"] == summary.best_k
