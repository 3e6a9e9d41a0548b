"""A Grafana dashboard (JSON model) over the recording rules of `specmodel.export.rules`.

    doc = dashboard(scenario, window="5m")     # a dict; json.dumps(doc) is the file Grafana imports

Panels: E with its break-even line, E ÷ break-even, α (with each instance's k and longest draft), draft
acceptance rate, per-position acceptance, running requests, generated tokens/s, the state of the
SpeculativeDecodingBelowBreakEven alert and the instances whose k is unknown (measured, not judged),
templated on the Prometheus data source, job, instance and model. Every query reads the series the
rules file records for the same window, so load that rules file into Prometheus first.
Built with Grafana's own builders (grafana-foundation-sdk, its Grafana 11.6 types), which write the JSON model.
Format: https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from grafana_foundation_sdk.builders import bargauge, statetimeline, table, timeseries
from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.builders import prometheus
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

from specmodel.export import rules
from specmodel.model.scenario import Scenario

DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
SELECTOR = '{job=~"$job", instance=~"$instance", model_name=~"$model"}'

# chosen: Grafana's defaults for a new time series or state timeline panel (a legend list below the chart, one
# series in the tooltip), written out so that each panel's options say what it shows.
LEGEND = common_builders.VizLegendOptions().show_legend(True).display_mode(common.LegendDisplayMode.LIST).placement(
    common.LegendPlacement.BOTTOM)
TOOLTIP = common_builders.VizTooltipOptions().mode(common.TooltipDisplayMode.SINGLE).sort(common.SortOrder.NONE)


def _target(ref: str, expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().ref_id(ref).datasource(DATASOURCE).expr(expr).legend_format(legend).range()


def _panel(panel, pid: int, title: str, grid: tuple[int, int, int, int], targets: list[prometheus.Dataquery],
           unit: str = "none", description: str = ""):
    """panel (a builder of one panel type) with what every panel here has: its id, place and queries."""
    x, y, w, h = grid
    if isinstance(panel, (timeseries.Panel, statetimeline.Panel)):
        panel = panel.legend(LEGEND).tooltip(TOOLTIP)
    return (panel.id(pid).title(title).description(description).datasource(DATASOURCE)
            .grid_pos(model.GridPos(x=x, y=y, w=w, h=h)).targets(targets).unit(unit))


def _variable(name: str, label: str, query: str) -> builders.QueryVariable:
    return (builders.QueryVariable(name).label(label).datasource(DATASOURCE)
            .query({"query": query, "refId": f"{name}-query"}).refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .include_all(True).multi(True).all_value(".*").current(model.VariableOption(text="All", value="$__all"))
            .sort(model.VariableSort.ALPHABETICAL_ASC).hide(model.VariableHide.DONT_HIDE))


# chosen (break-even itself): E ÷ break-even red below 100% (speculation loses at this load), green from 100%.
RATIO_STEPS = (model.Threshold(value=None, color="red"), model.Threshold(value=1, color="green"))


def uid_for(scenario: Scenario, window: str, title: str | None, instances=()) -> str:
    """A uid derived from everything the dashboard is made from: two dashboards for different models,
    windows or instances never overwrite each other in Grafana; the same inputs give the same uid."""
    named = {**asdict(scenario.validated()), **scenario.names(), "engine": str(scenario.engine)}  # as it was keyed
    inputs = {"scenario": named, "window": window, "title": title,
              "instances": [asdict(m) for m in instances]}
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
    return f"specmodel-{digest[:16]}"  # Grafana allows 40 characters


def dashboard(scenario: Scenario, window: str = "5m", title: str | None = None, instances=(),
              default_k: int | None = None) -> dict:
    """The dashboard for the rules of this scenario, window and per-instance k (rules.InstanceModel);
    `default_k` as the rules' (None: an instance that exposes no k is shown as "k unknown", not judged)."""
    n = rules.names(window)
    sel = SELECTOR
    given = "".join(f"; {m.instance} at k = {m.k}{' (' + m.target + ')' if m.target else ''}" for m in instances)
    unknown = f"else k = {default_k}" if default_k is not None else "else k unknown: not judged"
    model_words = (f"{scenario.target} on {scenario.tp}x {scenario.gpu}, {scenario.method}, each instance at its own "
                   f"k (its mean draft length; {unknown}){given}")
    below = (f'ALERTS{{alertname="{rules.ALERT}", alertstate=~"firing|pending", job=~"$job", instance=~"$instance"}}')
    panels = [
        _panel(timeseries.Panel(), 1, "Tokens per verify step E vs break-even", (0, 0, 16, 9), [
            _target("A", f"{n['tokens_per_step']}{sel}", "{{instance}} {{model_name}} E"),
            _target("B", f"{n['break_even']}{sel}", "{{instance}} {{model_name}} break-even"),
        ], description=f"E = 1 + accepted / drafts over {window}; break-even is the E at which speculation ties "
                       f"plain decoding at the instance's running requests ({model_words}). Below the line "
                       "speculation slows the server down.")
        .override_by_regexp(".*break-even", [
            model.DynamicConfigValue("custom.lineStyle", common.LineStyle(fill="dash", dash=[10, 10])),
            model.DynamicConfigValue("color", model.FieldColor(mode=model.FieldColorModeId.FIXED, fixed_color="red"))]),
        _panel(bargauge.Panel(), 2, "E ÷ break-even", (16, 0, 8, 9), [
            _target("A", f"{n['tokens_per_step']}{sel} / on (job, instance, model_name) {n['break_even']}{sel}",
                    "{{instance}} {{model_name}}"),
        ], unit="percentunit", description="Above 100% (green): speculation pays at this load; below (red): it loses.")
        .orientation(common.VizOrientation.HORIZONTAL).display_mode(common.BarGaugeDisplayMode.GRADIENT)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).fields("").values(False))
        .thresholds(builders.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(list(RATIO_STEPS)))
        .color_scheme(builders.FieldColor().mode(model.FieldColorModeId.THRESHOLDS)).min(0).max(2),
        _panel(timeseries.Panel(), 3, "Per-token acceptance α (at each instance's k)", (0, 9, 8, 8), [
            _target("A", f"{n['alpha']}{sel}", "{{instance}} {{model_name}} α"),
            _target("B", f"{n['k']}{sel}", "{{instance}} {{model_name}} k"),
            _target("C", f"{n['max_draft_length']}{sel}", "{{instance}} {{model_name}} longest draft k"),
        ], description="The constant per-token acceptance giving the measured E at the instance's own k (bisection, "
                       "±0.001); k is the one the rules judge it on (--instance, else its mean draft length, draft "
                       f"tokens ÷ drafts, rounded, beside the longest draft; {unknown}).")
        .min(0).max(1).override_by_regexp(".* k", [
            model.DynamicConfigValue("custom.axisPlacement", common.AxisPlacement.RIGHT),
            model.DynamicConfigValue("min", 0), model.DynamicConfigValue("unit", "none")]),
        _panel(timeseries.Panel(), 4, "Draft acceptance rate (accepted ÷ drafted, not α)", (8, 9, 8, 8), [
            _target("A", f"{n['draft_acceptance_rate']}{sel}", "{{instance}} {{model_name}}"),
        ], unit="percentunit").min(0).max(1),
        _panel(timeseries.Panel(), 5, "Acceptance by draft position", (16, 9, 8, 8), [
            _target("A", f"{n['per_position']}{sel}", "{{instance}} position {{position}}"),
        ], unit="percentunit", description="Share of drafts whose token at this position (0 = first) was accepted.")
        .min(0).max(1),
        _panel(timeseries.Panel(), 6, "Running requests", (0, 17, 8, 8), [
            _target("A", f"{n['running']}{sel}", "{{instance}} {{model_name}}"),
        ], description=f"Averaged over {window}: the batch the break-even line is evaluated at."),
        _panel(timeseries.Panel(), 7, "Generated tokens/s", (8, 17, 8, 8), [
            _target("A", f"{n['generation']}{sel}", "{{instance}} {{model_name}}"),
        ], unit="short"),
        _panel(statetimeline.Panel(), 8, f"Alert {rules.ALERT}", (16, 17, 8, 8), [
            _target("A", below, "{{instance}} {{model_name}} {{alertstate}}"),
        ], description="Pending while E is below break-even, firing once it has stayed there for the rule's `for:` "
                       "duration.")
        .mappings([model.ValueMap({"1": model.ValueMappingResult(text="below break-even", color="red")})]),
        _k_unknown_panel(n),
    ]
    board = (builders.Dashboard(title or f"Speculative decoding vs break-even ({window})")
             .uid(uid_for(scenario, window, title, instances))
             .description(f"Generated by `python -m specmodel dashboard` for {model_words}. Needs the rules of "
                          f"`python -m specmodel rules --window {window}` loaded into Prometheus.")
             .tags(["speculative-decoding", "specmodel"]).version(1).editable()
             .tooltip(model.DashboardCursorSync.CROSSHAIR).time("now-6h", "now").refresh("30s").timezone("browser")
             .variables(_templating(n)).annotations([]).links([]))
    for panel in panels:
        board = board.with_panel(panel)
    doc = board.build()
    doc.templating.list_val[0].refresh = model.VariableRefresh.ON_DASHBOARD_LOAD  # DatasourceVariable has no .refresh()
    for variable in doc.templating.list_val:
        # The SDK writes an interval variable's auto, auto_min and auto_count on every variable; Grafana's own
        # schema (@grafana/schema 12.2's VariableModel, tests/test_dashboard_schema.py) has none of them.
        variable.auto = variable.auto_min = variable.auto_count = None
    return json.loads(json.dumps(doc, cls=JSONEncoder))


def _k_unknown_panel(n: dict[str, str]) -> table.Panel:
    """The instances whose E is measured but whose k is unknown: listed, never judged at an assumed k."""
    return _panel(table.Panel(), 9, "k unknown: E measured, not judged", (0, 25, 24, 5), [
        _target("A", f"{n['k_unknown']}{SELECTOR}", "{{instance}} {{model_name}}"),
    ], description="Instances whose E is measured but whose k (draft tokens per step) the server does not "
                   "expose and no --instance gives (TGI's --speculate, SGLang without spec_num_steps): no "
                   "break-even is looked up and no alert fires for them. Give `--instance INSTANCE=K` to "
                   "`python -m specmodel rules` to judge them.").show_header(True)


def _templating(n: dict[str, str]) -> list:
    """The data source, job, instance and model variables."""
    return [
        builders.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
        .hide(model.VariableHide.DONT_HIDE),
        _variable("job", "Job", f"label_values({n['tokens_per_step']}, job)"),
        _variable("instance", "Instance", f'label_values({n["tokens_per_step"]}{{job=~"$job"}}, instance)'),
        _variable("model", "Model",
                  f'label_values({n["tokens_per_step"]}{{job=~"$job", instance=~"$instance"}}, model_name)'),
    ]


def dashboard_json(scenario: Scenario, window: str = "5m", title: str | None = None, instances=(),
                   default_k: int | None = None) -> str:
    return json.dumps(dashboard(scenario, window, title, instances, default_k), indent=2, ensure_ascii=False) + "\n"
