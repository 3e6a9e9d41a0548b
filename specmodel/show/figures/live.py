"""Plotly figures of the Live page: plain functions from measurements and verdicts to go.Figure."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specmodel.metrics.live import LiveVerdict
from specmodel.metrics.prom import LiveStats
from specmodel.model.decide import band_text
from specmodel.model.scenario import predict
from specmodel.show.figures.whatif import LOG_BATCH_AXIS, break_even_line

MAX_BATCH = 4096  # chosen: the model's crossover search reaches this far; the x axis never goes further
# chosen: tick spacings a clock axis may use (round clock units), in seconds:
# the smallest that keeps at most MAX_TIME_TICKS labels.
TIME_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
MAX_TIME_TICKS = 6  # chosen: clock labels that fit the chart's width without overlapping


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    # No template of its own: the page's theme (light or dark, the viewer's choice) styles it.
    fig.update_layout(title=dict(text=title, x=0.0, xanchor="left"), xaxis_title=x, yaxis_title=y,
                      height=380, margin=dict(l=60, r=20, t=60, b=50), showlegend=True)
    return fig


def _times(history: list[dict]) -> list[datetime]:
    return [datetime.fromtimestamp(p["at"], tz=timezone.utc) for p in history]


def nice_axis_top(value: float, ticks: int = 5) -> tuple[float, float]:
    """(top, dtick): an axis from 0 to `top` whose top tick is at or above `value`, in steps of
    1, 2 or 5 × 10^n, so the largest point never sits above the last labelled tick.

    >>> nice_axis_top(16), nice_axis_top(2.37), nice_axis_top(0)
    ((20.0, 5.0), (2.5, 0.5), (1.0, 0.2))
    """
    value = float(value) if value is not None and np.isfinite(value) and value > 0 else 1.0
    raw = value / ticks
    mag = 10.0 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1.0, 2.0, 5.0, 10.0) if m * mag >= raw)
    top = float(np.ceil(value / step - 1e-9) * step)
    return top, float(step)


def time_ticks(at_s: list[float]) -> tuple[list[datetime], list[str], list[datetime]]:
    """Tick positions, their distinct labels and the axis range for a clock axis over these times.
    A single point (or points a second apart) still gets a range around it and one label per tick."""
    lo, hi = min(at_s), max(at_s)
    span = hi - lo
    step = next((st for st in TIME_STEPS_S if span / st <= MAX_TIME_TICKS - 1), TIME_STEPS_S[-1])
    pad = max(step / 2, span * 0.04)
    first = np.ceil((lo - pad) / step) * step
    ticks = [t for t in np.arange(first, hi + pad + 1e-9, step)]
    fmt = "%H:%M" if step >= 60 else "%H:%M:%S"
    if hi - lo > 86400 or step >= 86400:
        fmt = "%m-%d %H:%M"
    to_dt = [datetime.fromtimestamp(t, tz=timezone.utc) for t in ticks]
    labels = [d.strftime(fmt) for d in to_dt]
    window = [datetime.fromtimestamp(lo - pad, tz=timezone.utc), datetime.fromtimestamp(hi + pad, tz=timezone.utc)]
    return to_dt, labels, window


def _finite_values(values) -> list[float]:
    return [float(v) for v in values if v is not None and np.isfinite(v)]


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
    e_top, e_step = nice_axis_top(1.05 * max(_finite_values(e + hi), default=1.0))  # headroom for the marker
    r_top, r_step = nice_axis_top(1.05 * max(_finite_values(running), default=1.0))
    fig.update_yaxes(title_text="tokens per verify step E (tokens)", secondary_y=False, range=[0, e_top],
                     dtick=e_step, tick0=0)
    fig.update_yaxes(title_text="running requests (count)", secondary_y=True, range=[0, r_top], dtick=r_step,
                     tick0=0, showgrid=False)
    _layout(fig, "Tokens per step and load over this session", "time (UTC)", "tokens per verify step E (tokens)")
    if history:
        ticks, labels, window = time_ticks([p["at"] for p in history])
        fig.update_xaxes(range=window, tickvals=ticks, ticktext=labels, tickmode="array")
    return fig.update_layout(legend=dict(orientation="h", y=-0.25))


def _vertical(x: float, y0: float, y1: float, name: str, **line) -> go.Scatter:
    """A vertical line as a trace in data coordinates: right on a log axis (add_vline is not) and
    with a legend entry."""
    return go.Scatter(x=[x, x], y=[y0, y1], mode="lines", name=name, line=line, hoverinfo="skip")


def table_best_k(verdict: LiveVerdict) -> int | None:
    """The k' the page's k' ≤ k table ranks first (the fastest; of equal speedups, the smaller k'), which the
    legend names as best at this load; the verdict's best k where there is no table."""
    if not verdict.k_options:
        return verdict.best_k
    return max(verdict.k_options, key=lambda o: (o.speedup, -o.k)).k


def operating_point_figure(verdict: LiveVerdict) -> go.Figure:
    """The model's speedup against concurrency for the measured acceptance, with today's point."""
    s = verdict.scenario
    b = verdict.concurrency
    top_batch = int(min(MAX_BATCH, max(256, 4 * b)))
    batches = np.unique(np.round(np.geomspace(1, top_batch, 140)).astype(int))
    fig = go.Figure()
    k_now = s.k
    label = "measured" if verdict.measured else "predicted (What-if α)"
    curve = np.asarray(predict(s, concurrency=batches).speedup, dtype=float)
    ys = list(curve) + [1.0]
    fig.add_trace(go.Scatter(x=batches, y=curve, mode="lines", name=f"k = {k_now}, {label} acceptance",
                             line=dict(width=3),
                             hovertemplate="batch %{x}<br>speedup %{y:.2f}x<extra>k = " + str(k_now) + "</extra>"))
    best = table_best_k(verdict)
    if best not in (None, 0, k_now):
        alt = np.asarray(predict(s, k=best, concurrency=batches).speedup, dtype=float)
        ys += list(alt)
        fig.add_trace(go.Scatter(x=batches, y=alt, mode="lines", name=f"k' = {best} (best at this load)",
                                 line=dict(width=2, dash="dot", color="#2ca02c"),
                                 hovertemplate="batch %{x}<br>speedup %{y:.2f}x<extra>k' = "
                                               + str(best) + "</extra>"))
    if verdict.speedup is not None:
        ys.append(verdict.speedup)
        for interval in (verdict.speedup_range, verdict.band):
            if interval is not None:
                ys += list(interval)
    y_top = float(np.nanmax(_finite_values(ys))) * 1.08
    y_bottom = min(0.0, float(np.nanmin(_finite_values(ys))))
    fig.add_trace(break_even_line(1, top_batch))
    cross = verdict.crossover_concurrency
    if cross is not None and 1 <= cross <= top_batch:
        fig.add_trace(_vertical(cross, y_bottom, y_top, f"crossover: batch {cross}",
                                color="#c0392b", dash="dot", width=1.5))
    if verdict.speedup is not None:
        err, band_words = None, ""
        if verdict.band is not None:  # the model's 80% band, the acceptance interval folded in
            lo, hi = verdict.band
            err = dict(type="data", symmetric=False, array=[max(0.0, hi - verdict.speedup)],
                       arrayminus=[max(0.0, verdict.speedup - lo)], color="#8c8c8c")
            band_words = f"<br>the model's 80% band {band_text(lo, hi)}x"
        name = "right now" if verdict.measured else "right now (if it were on)"
        fig.add_trace(go.Scatter(x=[b], y=[verdict.speedup], mode="markers", error_y=err,
                                 name=name + (" (bar: 80% band)" if err else ""),
                                 marker=dict(size=14, symbol="diamond", color="#222222",
                                             line=dict(width=1.5, color="#ffffff")),
                                 hovertemplate="batch %{x} (running requests)<br>speedup %{y:.2f}x" + band_words
                                               + "<extra>right now</extra>"))
    # A log axis's range is given in log10 units: batch 1 to the curve's last batch.
    fig.update_xaxes(**LOG_BATCH_AXIS, range=[0.0, float(np.log10(top_batch))])
    fig.update_yaxes(range=[y_bottom, y_top])
    return _layout(fig, f"Operating point on the model: {s.target} on {s.gpu}",
                   "concurrent requests (running, log scale)",
                   "speedup over plain decoding (×)")


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
