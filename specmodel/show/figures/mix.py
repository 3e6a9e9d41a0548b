"""Plotly figures of the Traffic-mix page: plain functions from a MixReport to a go.Figure.

Like specmodel.show.figures.whatif, the figure is assembled as plain dicts and wrapped without plotly's
per-property validation (it costs more than the whole comparison on every rerun);
tests/test_mix.py re-validates it through the validating constructor.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from specmodel.plan.mix import MixReport, Plan
from specmodel.show.figures.runs import shown_in_chart

PALETTE = ("#d62728", "#7f7f7f", "#1f77b4", "#2ca02c", "#17becf", "#9467bd", "#bcbd22", "#8c564b")
ALL = "all workloads"
GAP = 0.1  # chosen: horizontal space between the two panels, as a fraction of the width


def _plan_label(plan: Plan) -> str:
    return shown_in_chart(plan.name) + ("" if plan.fits else " (does not fit: queues)")


def _panel_title(text: str, x: float) -> dict:
    return dict(text=text, x=x, y=1.0, xref="paper", yref="paper", xanchor="center", yanchor="bottom",
                showarrow=False, font=dict(size=13))


def comparison_bars(report: MixReport) -> go.Figure:
    """Grouped bars, one group per workload and one bar per plan: throughput (left, with the
    aggregate of all workloads) and inter-token latency (right). Plans that queue are hatched."""
    labels = [w.label for w in report.workloads]
    shown = [shown_in_chart(label) for label in labels]  # the axis's categories: a workload's name as text
    traces = []
    for i, plan in enumerate(report.plans):
        color = PALETTE[i % len(PALETTE)]
        bar_style = dict(color=color, pattern=dict(shape="" if plan.fits else "/"))
        thr, itl, hover_thr, hover_itl = [], [], [], []
        for label in labels:
            pool, w = plan.workload(label)
            thr.append(w.throughput_tok_s)
            itl.append(w.itl_ms if math.isfinite(w.itl_ms) else None)
            where = f"{shown_in_chart(' + '.join(pool.labels))} on {pool.gpus} GPU(s), {pool.setting}"
            hover_thr.append(f"{w.running:.1f} of {w.sequences:.1f} sequences running, "
                             f"{w.per_seq_tok_s:.1f} tok/s each<br>{where}")
            hover_itl.append(f"{w.tokens_per_step:.2f} tokens per step, step {pool.step_ms:.1f} ms<br>{where}")
        thr.append(plan.throughput_tok_s)
        hover_thr.append(plan.describe().replace("; ", "<br>"))
        name = _plan_label(plan)
        traces.append(dict(
            type="bar", x=shown + [ALL], y=thr, name=name, legendgroup=name, marker=bar_style,
            customdata=hover_thr, xaxis="x", yaxis="y",
            hovertemplate="%{x}<br>%{y:,.0f} tok/s<br>%{customdata}<extra>" + shown_in_chart(plan.name) + "</extra>"))
        traces.append(dict(
            type="bar", x=shown, y=itl, name=name, legendgroup=name, showlegend=False, marker=bar_style,
            customdata=hover_itl, xaxis="x2", yaxis="y2",
            hovertemplate="%{x}<br>%{y:.1f} ms between tokens<br>%{customdata}<extra>" + shown_in_chart(plan.name)
            + "</extra>"))
    s = report.scenario
    half = (1.0 - GAP) / 2
    # Each panel's axis reaches 8% past its tallest bar, so no bar ends at the frame (it read as cut off).
    tops = [max([v for t in traces if t["yaxis"] == axis for v in t["y"] if v is not None] or [1.0]) * 1.08
            for axis in ("y", "y2")]
    layout = dict(
        title=dict(text=f"One pool vs split: {s.target} on {report.gpus}× {s.gpu}, "
                        f"{report.concurrency} concurrent sequences", x=0.0, xanchor="left"),
        barmode="group", height=460, margin=dict(l=60, r=20, t=90, b=50), showlegend=True,
        legend=dict(orientation="h", yanchor="top", y=-0.14, title=dict(text="plan")),
        xaxis=dict(domain=[0.0, half], title=dict(text="workload (category)"), anchor="y"),
        yaxis=dict(title=dict(text="generated tokens per second (tok/s)"), anchor="x", range=[0, tops[0]]),
        xaxis2=dict(domain=[1.0 - half, 1.0], title=dict(text="workload (category)"), anchor="y2"),
        yaxis2=dict(title=dict(text="inter-token latency (ms)"), anchor="x2", range=[0, tops[1]]),
        annotations=[_panel_title("Throughput per workload (higher is better)", half / 2),
                     _panel_title("Inter-token latency per workload (lower is better)", 1.0 - half / 2)])
    return go.Figure(dict(data=traces, layout=layout), _validate=False)
