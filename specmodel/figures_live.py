"""Plotly figures of the Live page: plain functions from measurements and verdicts to go.Figure."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .figures import BREAK_EVEN_STYLE
from .live import LiveVerdict
from .prom import LiveStats
from .scenario import predict


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0.0, xanchor="left"), xaxis_title=x, yaxis_title=y,
                      template="plotly_white", height=380, margin=dict(l=60, r=20, t=60, b=50), showlegend=True)
    return fig


def _times(history: list[dict]) -> list[datetime]:
    return [datetime.fromtimestamp(p["at"], tz=timezone.utc) for p in history]


def rolling_figure(history: list[dict]) -> go.Figure:
    """Tokens per step (with its 95% interval) and running requests over the session."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    t = _times(history)
    e = [p.get("tokens_per_step") for p in history]
    lo = [p.get("tokens_per_step_lo") for p in history]
    hi = [p.get("tokens_per_step_hi") for p in history]
    if any(v is not None for v in hi):
        fig.add_trace(go.Scatter(x=t, y=hi, mode="lines", line=dict(width=0), showlegend=False,
                                 hoverinfo="skip", connectgaps=False), secondary_y=False)
        fig.add_trace(go.Scatter(x=t, y=lo, mode="lines", line=dict(width=0), fill="tonexty",
                                 fillcolor="rgba(31,119,180,0.18)", name="E, 95% interval",
                                 hoverinfo="skip", connectgaps=False), secondary_y=False)
    fig.add_trace(go.Scatter(x=t, y=e, mode="lines+markers", name="tokens per step E", line=dict(color="#1f77b4"),
                             hovertemplate="%{x|%H:%M:%S} UTC<br>E = %{y:.2f} tokens/step<extra></extra>"),
                  secondary_y=False)
    running = [p.get("running") for p in history]
    fig.add_trace(go.Scatter(x=t, y=running, mode="lines+markers", name="running requests",
                             line=dict(color="#ff7f0e", dash="dot"),
                             hovertemplate="%{x|%H:%M:%S} UTC<br>%{y:.1f} running requests<extra></extra>"),
                  secondary_y=True)
    fig.update_yaxes(title_text="tokens per verify step E (tokens)", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="running requests (count)", secondary_y=True, rangemode="tozero",
                     showgrid=False)
    _layout(fig, "Tokens per step and load over this session", "time (UTC)", "tokens per verify step E (tokens)")
    fig.update_xaxes(tickformat="%H:%M:%S")
    return fig.update_layout(legend=dict(orientation="h", y=-0.25))


def operating_point_figure(verdict: LiveVerdict) -> go.Figure:
    """The model's speedup against concurrency for the measured acceptance, with today's point."""
    s = verdict.scenario
    b = verdict.concurrency
    batches = np.unique(np.round(np.geomspace(1, max(256, 4 * b), 140)).astype(int))
    fig = go.Figure()
    k_now = s.k
    label = "measured" if verdict.measured else "predicted (What-if α)"
    curve = np.asarray(predict(s, concurrency=batches).speedup, dtype=float)
    fig.add_trace(go.Scatter(x=batches, y=curve, mode="lines", name=f"k = {k_now}, {label} acceptance",
                             line=dict(width=3),
                             hovertemplate="batch %{x}<br>speedup %{y:.2f}x<extra>k = " + str(k_now) + "</extra>"))
    if verdict.best_k not in (None, 0, k_now):
        alt = np.asarray(predict(s, k=verdict.best_k, concurrency=batches).speedup, dtype=float)
        fig.add_trace(go.Scatter(x=batches, y=alt, mode="lines", name=f"k' = {verdict.best_k} (best at this load)",
                                 line=dict(width=2, dash="dot", color="#2ca02c"),
                                 hovertemplate="batch %{x}<br>speedup %{y:.2f}x<extra>k' = "
                                               + str(verdict.best_k) + "</extra>"))
    fig.add_hline(y=1.0, line=BREAK_EVEN_STYLE, annotation_text="break-even (1.0x)",
                  annotation_position="bottom left")
    cross = verdict.crossover_concurrency
    if cross is not None and cross >= 1:
        fig.add_vline(x=cross, line=dict(color="#c0392b", dash="dot", width=1.5),
                      annotation_text=f"crossover: batch {cross}", annotation_position="top right")
    if verdict.speedup is not None:
        err = None
        if verdict.speedup_range is not None:
            lo, hi = verdict.speedup_range
            err = dict(type="data", symmetric=False, array=[max(0.0, hi - verdict.speedup)],
                       arrayminus=[max(0.0, verdict.speedup - lo)], color="black")
        fig.add_trace(go.Scatter(x=[b], y=[verdict.speedup], mode="markers", error_y=err,
                                 name="right now" if verdict.measured else "right now (if it were on)",
                                 marker=dict(size=14, symbol="diamond", color="black"),
                                 hovertemplate="batch %{x} (running requests)<br>speedup %{y:.2f}x"
                                               "<extra>right now</extra>"))
    fig.update_xaxes(type="log")
    return _layout(fig, f"Operating point on the model: {s.target} on {s.gpu}",
                   "concurrent requests (running, log scale)", "speedup over plain decoding (×)")


def survival_figure(stats: LiveStats) -> go.Figure:
    """Measured per-position survival p_i with 95% intervals, against a constant α's α^i."""
    fig = go.Figure()
    if stats.survival:
        pos = list(range(1, len(stats.survival) + 1))
        p = list(stats.survival)
        err = None
        if stats.survival_ci:
            err = dict(type="data", symmetric=False, array=[hi - v for v, (_, hi) in zip(p, stats.survival_ci)],
                       arrayminus=[v - lo for v, (lo, _) in zip(p, stats.survival_ci)])
        fig.add_trace(go.Bar(x=pos, y=p, error_y=err, name="measured p_i (95% interval)",
                             hovertemplate="position %{x}<br>P(at least %{x} accepted) = %{y:.3f}<extra></extra>"))
        if stats.alpha is not None:
            fig.add_trace(go.Scatter(x=pos, y=[stats.alpha ** i for i in pos], mode="lines+markers",
                                     name=f"constant α = {stats.alpha:.2f}: α^i",
                                     hovertemplate="position %{x}<br>α^i = %{y:.3f}<extra></extra>"))
    fig.update_yaxes(range=[0, 1.05])
    fig.update_xaxes(dtick=1)
    return _layout(fig, "Acceptance by draft position in this window", "draft position i",
                   "P(at least i drafts accepted) (probability)")
