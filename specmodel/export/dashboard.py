"""A Grafana dashboard (JSON model) over the recording rules of `specmodel.export.rules`.

    doc = dashboard(scenario, window="5m")     # a dict; json.dumps(doc) is the file Grafana imports

Panels: E with its break-even line, E ÷ break-even, α (with each instance's k and longest draft), draft
acceptance rate, per-position acceptance, running requests, generated tokens/s, the state of the
SpeculativeDecodingBelowBreakEven alert and the instances whose k is unknown (measured, not judged),
templated on the Prometheus data source, job, instance and model. Every query reads the series the
rules file records for the same window, so load that rules file into Prometheus first.
Format: https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from specmodel.export import rules
from specmodel.model.scenario import Scenario

SCHEMA_VERSION = 39  # documented: the dashboard JSON schemaVersion Grafana 10.x writes (Grafana's dashboard model)
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
SELECTOR = '{job=~"$job", instance=~"$instance", model_name=~"$model"}'


def _target(ref: str, expr: str, legend: str) -> dict:
    return {"refId": ref, "datasource": DATASOURCE, "expr": expr, "legendFormat": legend, "range": True}


def _panel(pid: int, title: str, kind: str, grid: tuple[int, int, int, int], targets: list[dict],
           unit: str = "none", description: str = "", extra: dict | None = None) -> dict:
    x, y, w, h = grid
    panel = {"id": pid, "type": kind, "title": title, "description": description, "datasource": DATASOURCE,
             "gridPos": {"x": x, "y": y, "w": w, "h": h}, "targets": targets,
             "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}, "options": {}}
    return _merged(panel, extra or {})


def _merged(base: dict, extra: dict) -> dict:
    """base with extra laid over it, nested dicts merged key by key (a unit survives added thresholds)."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _variable(name: str, label: str, query: str) -> dict:
    return {"name": name, "label": label, "type": "query", "datasource": DATASOURCE,
            "query": {"query": query, "refId": f"{name}-query"}, "refresh": 2,
            "includeAll": True, "multi": True, "allValue": ".*", "current": {"text": "All", "value": "$__all"},
            "sort": 1, "hide": 0}


# chosen (break-even itself): E ÷ break-even red below 100% (speculation loses at this load), green from 100%.
RATIO_THRESHOLDS = {"mode": "absolute", "steps": [{"color": "red", "value": None}, {"color": "green", "value": 1}]}


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
    model = (f"{scenario.target} on {scenario.tp}x {scenario.gpu}, {scenario.method}, each instance at its own k "
             f"(its mean draft length; {unknown}){given}")
    below = (f'ALERTS{{alertname="{rules.ALERT}", alertstate=~"firing|pending", job=~"$job", instance=~"$instance"}}')
    panels = [
        _panel(1, "Tokens per verify step E vs break-even", "timeseries", (0, 0, 16, 9), [
            _target("A", f"{n['tokens_per_step']}{sel}", "{{instance}} {{model_name}} E"),
            _target("B", f"{n['break_even']}{sel}", "{{instance}} {{model_name}} break-even"),
        ], description=f"E = 1 + accepted / drafts over {window}; break-even is the E at which speculation ties "
                       f"plain decoding at the instance's running requests ({model}). Below the line speculation "
                       "slows the server down.",
            extra={"fieldConfig": {"overrides": [{
                "matcher": {"id": "byRegexp", "options": ".*break-even"},
                "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
                               {"id": "color", "value": {"mode": "fixed", "fixedColor": "red"}}]}]}}),
        _panel(2, "E ÷ break-even", "bargauge", (16, 0, 8, 9), [
            _target("A", f"{n['tokens_per_step']}{sel} / on (job, instance, model_name) {n['break_even']}{sel}",
                    "{{instance}} {{model_name}}"),
        ], unit="percentunit", description="Above 100% (green): speculation pays at this load; below (red): it loses.",
            extra={"options": {"orientation": "horizontal", "displayMode": "gradient",
                               "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
                   "fieldConfig": {"defaults": {"thresholds": RATIO_THRESHOLDS, "color": {"mode": "thresholds"},
                                                "min": 0, "max": 2}}}),
        _panel(3, "Per-token acceptance α (at each instance's k)", "timeseries", (0, 9, 8, 8), [
            _target("A", f"{n['alpha']}{sel}", "{{instance}} {{model_name}} α"),
            _target("B", f"{n['k']}{sel}", "{{instance}} {{model_name}} k"),
            _target("C", f"{n['max_draft_length']}{sel}", "{{instance}} {{model_name}} longest draft k"),
        ], description="The constant per-token acceptance giving the measured E at the instance's own k (bisection, "
                       "±0.001); k is the one the rules judge it on (--instance, else its mean draft length, draft "
                       f"tokens ÷ drafts, rounded, beside the longest draft; {unknown}).",
            extra={"fieldConfig": {"defaults": {"min": 0, "max": 1}, "overrides": [{
                "matcher": {"id": "byRegexp", "options": ".* k"},
                "properties": [{"id": "custom.axisPlacement", "value": "right"}, {"id": "min", "value": 0},
                               {"id": "unit", "value": "none"}]}]}}),
        _panel(4, "Draft acceptance rate (accepted ÷ drafted, not α)", "timeseries", (8, 9, 8, 8), [
            _target("A", f"{n['draft_acceptance_rate']}{sel}", "{{instance}} {{model_name}}"),
        ], unit="percentunit", extra={"fieldConfig": {"defaults": {"min": 0, "max": 1}}}),
        _panel(5, "Acceptance by draft position", "timeseries", (16, 9, 8, 8), [
            _target("A", f"{n['per_position']}{sel}", "{{instance}} position {{position}}"),
        ], unit="percentunit", description="Share of drafts whose token at this position (0 = first) was accepted.",
            extra={"fieldConfig": {"defaults": {"min": 0, "max": 1}}}),
        _panel(6, "Running requests", "timeseries", (0, 17, 8, 8), [
            _target("A", f"{n['running']}{sel}", "{{instance}} {{model_name}}"),
        ], description=f"Averaged over {window}: the batch the break-even line is evaluated at."),
        _panel(7, "Generated tokens/s", "timeseries", (8, 17, 8, 8), [
            _target("A", f"{n['generation']}{sel}", "{{instance}} {{model_name}}"),
        ], unit="short"),
        _panel(8, f"Alert {rules.ALERT}", "state-timeline", (16, 17, 8, 8), [
            _target("A", below, "{{instance}} {{model_name}} {{alertstate}}"),
        ], description="Pending while E is below break-even, firing once it has stayed there for the rule's `for:` "
                       "duration.",
            extra={"fieldConfig": {"defaults": {"mappings": [{"type": "value", "options": {
                "1": {"text": "below break-even", "color": "red"}}}]}}}),
        _k_unknown_panel(n),
    ]
    return {
        "title": title or f"Speculative decoding vs break-even ({window})",
        "uid": uid_for(scenario, window, title, instances),
        "description": f"Generated by `python -m specmodel dashboard` for {model}. Needs the rules of "
                       f"`python -m specmodel rules --window {window}` loaded into Prometheus.",
        "tags": ["speculative-decoding", "specmodel"],
        "schemaVersion": SCHEMA_VERSION, "version": 1, "editable": True, "graphTooltip": 1,
        "time": {"from": "now-6h", "to": "now"}, "refresh": "30s", "timezone": "browser",
        "annotations": {"list": []}, "links": [],
        "templating": {"list": _templating(n)},
        "panels": panels,
    }


def _k_unknown_panel(n: dict[str, str]) -> dict:
    """The instances whose E is measured but whose k is unknown: listed, never judged at an assumed k."""
    return _panel(9, "k unknown: E measured, not judged", "table", (0, 25, 24, 5), [
        _target("A", f"{n['k_unknown']}{SELECTOR}", "{{instance}} {{model_name}}"),
    ], description="Instances whose E is measured but whose k (draft tokens per step) the server does not "
                   "expose and no --instance gives (TGI's --speculate, SGLang without spec_num_steps): no "
                   "break-even is looked up and no alert fires for them. Give `--instance INSTANCE=K` to "
                   "`python -m specmodel rules` to judge them.",
        extra={"options": {"showHeader": True}})


def _templating(n: dict[str, str]) -> list[dict]:
    """The data source, job, instance and model variables."""
    return [
        {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
         "hide": 0, "refresh": 1},
        _variable("job", "Job", f"label_values({n['tokens_per_step']}, job)"),
        _variable("instance", "Instance", f'label_values({n["tokens_per_step"]}{{job=~"$job"}}, instance)'),
        _variable("model", "Model",
                  f'label_values({n["tokens_per_step"]}{{job=~"$job", instance=~"$instance"}}, model_name)'),
    ]


def dashboard_json(scenario: Scenario, window: str = "5m", title: str | None = None, instances=(),
                   default_k: int | None = None) -> str:
    return json.dumps(dashboard(scenario, window, title, instances, default_k), indent=2, ensure_ascii=False) + "\n"
