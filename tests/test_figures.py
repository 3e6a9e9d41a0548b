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
    # the upper bound is the best of the four at every batch (within K_TIE, its tie rule) ...
    best_other = np.maximum.reduce([rows["off"], rows["fixed"], rows["schedule"]])
    assert np.all(rows["upper"] >= best_other * (1 - K_TIE) - 1e-9)
    # ... the schedule never falls more than the noise below plain decoding ...
    assert np.all(rows["schedule"] >= rows["off"] / (1 + SWITCH_GAIN) - 1e-9)
    # ... and at the scenario's batch the fixed k is the one the schedule runs (one decision)
    at = list(rows["batch"]).index(scenario.concurrency) if scenario.concurrency in rows["batch"] else None
    if at is not None and summary.best_k:
        assert rows["schedule_k"][at] == rows["fixed_k"] == summary.best_k


def test_figures_send_the_same_chart_as_plain_plotly_with_its_default_template():
    """The What-if figures set the default template from one per-process copy instead of plotly's
    per-figure deep copy; what reaches the browser (to_json, and the dict st.plotly_chart sends)
    must be byte-for-byte what go.Figure would send, template included."""
    import json

    import plotly.graph_objects as go
    import plotly.io as pio
    import plotly.tools
    import streamlit.elements.plotly_chart  # noqa: F401  (registers and selects the "streamlit" template)

    from specmodel.show.figures import whatif as figures

    traces = [figures.line([1, 2, 4], [1.0, 1.2, 0.9], "k = 2", "%{y}"), figures.break_even_line(1, 4)]
    ours = figures.figure(traces, "Speedup vs concurrency", "batch", "speedup (×)", xaxis=figures.LOG_BATCH_AXIS)
    base = dict(ours.to_dict()["layout"])
    base.pop("template")
    plain = go.Figure(dict(data=traces, layout=base), _validate=False)
    assert pio.templates.default == "streamlit"
    assert pio.to_json(ours, validate=False) == pio.to_json(plain, validate=False)
    sent = [json.dumps(plotly.tools.return_figure_from_figure_or_data(f, True), default=str) for f in (ours, plain)]
    assert sent[0] == sent[1]
    assert "template" in ours.to_dict()["layout"] and ours.layout.template.layout.font is not None
    # one figure's copy is its own: editing it leaves the next figure's template alone
    ours.to_dict()["layout"]["template"]["layout"]["font"] = {"size": 99}
    assert figures.figure(traces, "t", "x", "y").to_dict()["layout"]["template"] == plain.to_dict()["layout"]["template"]


@pytest.mark.parametrize("scenario", SCENARIOS + [Scenario.from_names(alpha=0.37, k=7, concurrency=300, gpu="H200")],
                         ids=["default", "h100-busy", "ngram-profile", "off", "h200-k7"])
def test_figures_kept_as_specs_send_what_the_constructed_figures_send(scenario):
    """The What-if figures stay dict specs until read (st.plotly_chart only calls to_dict): what reaches
    the browser is byte-for-byte what the figure plotly constructs from the same spec sends, and a
    figure read any other way (fig.data, update_layout) is that constructed figure."""
    import json

    import plotly.io as pio
    import plotly.tools
    import streamlit.elements.plotly_chart  # noqa: F401  (the "streamlit" template, as on a page)

    _, figs = figures.whatif_view.__wrapped__(scenario)
    for fig in figs:
        assert "_spec" in fig.__dict__  # not constructed by the page's own calls
        built = figures._Figure(figures._copy_spec(fig._spec), _validate=False)
        for send in (lambda f: pio.to_json(f, validate=False),
                     lambda f: json.dumps(plotly.tools.return_figure_from_figure_or_data(f, True), default=str)):
            assert send(fig) == send(built)
        assert "_spec" in fig.__dict__
        assert [t.name for t in fig.data] == [t.name for t in built.data]  # constructed on this read
        assert "_spec" not in fig.__dict__ and pio.to_json(fig, validate=False) == pio.to_json(built, validate=False)
        fig.update_layout(height=123)
        assert fig.to_dict()["layout"]["height"] == 123


def test_a_figure_spec_with_its_own_template_is_sent_as_plotly_constructs_it():
    import plotly.io as pio

    traces = [figures.line([1, 2, 4], [1.0, 1.2, 0.9], "k = 2", "%{y}")]
    fig = figures.figure(traces, "t", "x (ms)", "y (×)", template="plotly_white")
    built = figures._Figure(figures._copy_spec(fig._spec), _validate=False)
    assert pio.to_json(fig, validate=False) == pio.to_json(built, validate=False)
    assert fig.to_dict()["layout"]["template"] == built.to_dict()["layout"]["template"]


def test_arrays_are_sent_as_plotly_sends_them_without_asking_narwhals():
    """to_dict() turns numpy arrays into plotly.js typed arrays itself (plotly's own walk first asks
    narwhals whether each array is a dataframe, which reads every installed package's entry points on
    a process's first chart): the same dict as plotly's convert_to_base64, for every dtype and key it
    treats apart, and plotly's walk where an array-like is not a plain numeric array."""
    import copy

    import numpy as np
    from _plotly_utils.utils import convert_to_base64

    spec = {"data": [{"x": np.arange(5), "y": np.array([0.5, np.nan, 2.0]), "z": np.arange(6.0).reshape(2, 3),
                      "big": np.array([0, 40_000]), "huge": np.array([0, 2 ** 40]), "u": np.array([3], dtype=np.uint64),
                      "f4": np.array([1.5], dtype=np.float32), "scalar": np.float64(2.5), "flags": np.array([True]),
                      "empty": np.array([]), "text": ["a", "b"], "nested": {"range": np.array([1.0, 2.0])}}],
            "layout": {"xaxis": {"range": np.array([0, 3])}, "tuple": (np.arange(2),)}}
    for case in (spec, {"data": [{"x": np.arange(3), "y": np.array([1.0, 2.0, 3.0])}]}):
        ours, theirs = copy.deepcopy(case), copy.deepcopy(case)
        done = figures._as_typed_arrays(ours)
        if not done:
            convert_to_base64(ours)
        convert_to_base64(theirs)
        assert repr(ours) == repr(theirs)
    assert not figures._as_typed_arrays(copy.deepcopy(spec))  # booleans, empty: plotly's own walk
    plain = {"data": [{"x": np.arange(3), "y": np.array([1.0, 2.0, 3.0]), "z": np.arange(4).reshape(2, 2)}]}
    assert figures._as_typed_arrays(plain) and plain["data"][0]["z"] == {"dtype": "i1", "bdata": "AAECAw==",
                                                                         "shape": "2, 2"}


def test_the_what_if_charts_never_ask_narwhals_for_plugins():
    """In a fresh process, the What-if page's five figures as st.plotly_chart sends them: narwhals'
    plugin discovery (importlib.metadata over every installed package, ~120 ms) never runs."""
    import subprocess
    import sys

    code = ("import plotly.io, plotly.tools, narwhals.plugins as p; from specmodel import Scenario; "
            "from specmodel.show.figures import whatif as f; _, figs = f.whatif_view(Scenario()); "
            "[plotly.io.to_json(plotly.tools.return_figure_from_figure_or_data(x, True), validate=False) for x in figs]; "
            "print(p._discover_entrypoints.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "0", out.stderr


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
