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
