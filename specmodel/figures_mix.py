"""Plotly figures of the Traffic-mix page: plain functions from a MixReport to a go.Figure."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .mix import MixReport, Plan

PALETTE = ("#d62728", "#7f7f7f", "#1f77b4", "#2ca02c", "#17becf", "#9467bd", "#bcbd22", "#8c564b")
ALL = "all workloads"


def _plan_label(plan: Plan) -> str:
    return plan.name + ("" if plan.fits else " (does not fit: queues)")


def comparison_bars(report: MixReport) -> go.Figure:
    """Grouped bars, one group per workload and one bar per plan: throughput (left, with the
    aggregate of all workloads) and inter-token latency (right). Plans that queue are hatched."""
    labels = [w.label for w in report.workloads]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("Throughput per workload (higher is better)",
                                        "Inter-token latency per workload (lower is better)"))
    for i, plan in enumerate(report.plans):
        color = PALETTE[i % len(PALETTE)]
        pattern = dict(shape="" if plan.fits else "/")
        thr, itl, hover_thr, hover_itl = [], [], [], []
        for label in labels:
            pool, w = plan.workload(label)
            thr.append(w.throughput_tok_s)
            itl.append(w.itl_ms if math.isfinite(w.itl_ms) else None)
            where = f"{' + '.join(pool.labels)} on {pool.gpus} GPU(s), {pool.setting}"
            hover_thr.append(f"{w.running:.1f} of {w.sequences:.1f} sequences running, "
                             f"{w.per_seq_tok_s:.1f} tok/s each<br>{where}")
            hover_itl.append(f"{w.tokens_per_step:.2f} tokens per step, step {pool.step_ms:.1f} ms<br>{where}")
        thr.append(plan.throughput_tok_s)
        hover_thr.append(plan.describe().replace("; ", "<br>"))
        name = _plan_label(plan)
        fig.add_trace(go.Bar(
            x=labels + [ALL], y=thr, name=name, legendgroup=name, marker=dict(color=color, pattern=pattern),
            customdata=hover_thr,
            hovertemplate="%{x}<br>%{y:,.0f} tok/s<br>%{customdata}<extra>" + plan.name + "</extra>"),
            row=1, col=1)
        fig.add_trace(go.Bar(
            x=labels, y=itl, name=name, legendgroup=name, showlegend=False,
            marker=dict(color=color, pattern=pattern), customdata=hover_itl,
            hovertemplate="%{x}<br>%{y:.1f} ms between tokens<br>%{customdata}<extra>" + plan.name + "</extra>"),
            row=1, col=2)
    s = report.scenario
    fig.update_layout(
        title=dict(text=f"One pool vs split: {s.target} on {report.gpus}× {s.gpu}, "
                        f"{report.concurrency} concurrent sequences", x=0.0, xanchor="left"),
        barmode="group", template="plotly_white", height=460, margin=dict(l=60, r=20, t=90, b=50),
        legend=dict(orientation="h", yanchor="top", y=-0.12, title_text="plan"))
    fig.update_xaxes(title_text="workload", row=1, col=1)
    fig.update_xaxes(title_text="workload", row=1, col=2)
    fig.update_yaxes(title_text="generated tokens per second (tok/s)", row=1, col=1)
    fig.update_yaxes(title_text="inter-token latency (ms)", row=1, col=2)
    return fig
