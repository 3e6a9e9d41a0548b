"""Plotly figures of the What-if page: plain functions from a Scenario to a go.Figure."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .scenario import K_MAX, Scenario, best_k, crossover_concurrency, predict

ALPHAS = np.linspace(0.0, 1.0, 101)
BATCHES = np.unique(np.round(np.geomspace(1, 1024, 160)).astype(int))
KS = np.arange(1, K_MAX + 1)
BREAK_EVEN_STYLE = dict(color="#444", dash="dash", width=1.5)


def _layout(fig: go.Figure, title: str, x: str, y: str, **kwargs) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0.0, xanchor="left"), xaxis_title=x, yaxis_title=y,
                      template="plotly_white", height=380, margin=dict(l=60, r=20, t=60, b=50),
                      legend=dict(orientation="v"), **kwargs)
    return fig


def speedup_vs_alpha(s: Scenario) -> go.Figure:
    """Speedup against α for every k at the scenario's concurrency, with the break-even line."""
    grid = np.asarray(predict(s, alpha=ALPHAS[None, :], k=KS[:, None]).speedup, dtype=float)
    fig = go.Figure()
    for i, k in enumerate(KS):
        current = k == s.k
        fig.add_trace(go.Scatter(
            x=ALPHAS, y=grid[i], mode="lines", name=f"k = {k}" + (" (chosen)" if current else ""),
            line=dict(width=3.5 if current else 1.5), opacity=1.0 if current else 0.55,
            hovertemplate=f"k = {k}<br>α = %{{x:.2f}}<br>speedup = %{{y:.2f}}x<extra></extra>"))
    fig.add_hline(y=1.0, line=BREAK_EVEN_STYLE, annotation_text="break-even (1.0x)",
                  annotation_position="bottom right")
    if s.k > 0 and s.survival is None:
        p = predict(s)
        fig.add_trace(go.Scatter(x=[s.alpha], y=[p.speedup], mode="markers", name="this scenario",
                                 marker=dict(size=12, symbol="diamond", color="black"),
                                 hovertemplate="α = %{x:.2f}<br>speedup = %{y:.2f}x<extra>this scenario</extra>"))
        if np.isfinite(p.break_even_alpha):
            fig.add_vline(x=p.break_even_alpha, line=dict(color="#c0392b", dash="dot", width=1.5),
                          annotation_text=f"break-even α = {p.break_even_alpha:.2f} (k = {s.k})",
                          annotation_position="top left")
    return _layout(fig, f"Speedup vs acceptance α at concurrency {s.concurrency}",
                   "per-token acceptance α (probability)", "speedup over plain decoding (×)")


def speedup_vs_concurrency(s: Scenario) -> go.Figure:
    """Speedup against concurrent sequences for the chosen k and for the best k; crossover marked."""
    fig = go.Figure()
    if s.k > 0:
        chosen = np.asarray(predict(s, concurrency=BATCHES).speedup, dtype=float)
        fig.add_trace(go.Scatter(x=BATCHES, y=chosen, mode="lines", name=f"k = {s.k} (chosen)",
                                 line=dict(width=3.5),
                                 hovertemplate="batch %{x}<br>speedup = %{y:.2f}x<extra>k = " + str(s.k) + "</extra>"))
    ks, speeds = best_k(s, K_MAX, concurrency=BATCHES)
    fig.add_trace(go.Scatter(x=BATCHES, y=speeds, mode="lines", name="best k at each batch",
                             line=dict(width=2, dash="dot", color="#2ca02c"), customdata=ks,
                             hovertemplate="batch %{x}<br>best k = %{customdata}<br>speedup = %{y:.2f}x<extra></extra>"))
    fig.add_hline(y=1.0, line=BREAK_EVEN_STYLE, annotation_text="break-even (1.0x)",
                  annotation_position="bottom left")
    cross = crossover_concurrency(s)
    if s.k > 0 and cross is not None and cross >= 1:
        top = max(1.2, float(np.nanmax(speeds)) * 1.05)
        fig.add_trace(go.Scatter(x=[cross, cross], y=[0, top], mode="lines", name=f"crossover: batch {cross}",
                                 line=dict(color="#c0392b", dash="dot", width=2),
                                 hovertemplate=f"k = {s.k} loses above batch {cross}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[s.concurrency], y=[predict(s).speedup], mode="markers", name="this scenario",
                             marker=dict(size=12, symbol="diamond", color="black"),
                             hovertemplate="batch %{x}<br>speedup = %{y:.2f}x<extra>this scenario</extra>"))
    fig.update_xaxes(type="log")
    return _layout(fig, "Speedup vs concurrency", "concurrent sequences (batch size, log scale)",
                   "speedup over plain decoding (×)")


def alpha_k_heatmap(s: Scenario) -> go.Figure:
    """Speedup over α × k at the scenario's concurrency; red loses, blue wins, white is break-even."""
    ks = np.arange(0, K_MAX + 1)
    grid = np.asarray(predict(s, alpha=ALPHAS[None, :], k=ks[:, None]).speedup, dtype=float)
    # Colour by log2(speedup) so 0.5x and 2x are equally strong; the colour bar is labelled in ×.
    log_grid = np.log2(np.clip(grid, 1 / 16, 16))
    lim = max(1.0, float(np.ceil(np.nanmax(np.abs(log_grid)))))
    ticks = np.arange(-lim, lim + 1)
    fig = go.Figure(go.Heatmap(
        x=ALPHAS, y=ks, z=log_grid, zmin=-lim, zmax=lim, colorscale="RdBu", customdata=grid,
        colorbar=dict(title="speedup (×)", tickvals=ticks, ticktext=[f"{2.0 ** t:g}x" for t in ticks]),
        hovertemplate="α = %{x:.2f}<br>k = %{y}<br>speedup = %{customdata:.2f}x<extra></extra>"))
    fig.add_trace(go.Contour(x=ALPHAS, y=ks[1:], z=grid[1:], showscale=False, contours=dict(
        start=1.0, end=1.0, size=1.0, coloring="none", showlabels=False), line=dict(color="black", width=2),
        name="break-even (1.0x)", showlegend=True, hoverinfo="skip"))
    if s.survival is None:
        fig.add_trace(go.Scatter(x=[s.alpha], y=[s.k], mode="markers", name="this scenario",
                                 marker=dict(size=12, symbol="diamond", color="black"),
                                 hovertemplate="α = %{x:.2f}<br>k = %{y}<extra>this scenario</extra>"))
    fig.update_yaxes(dtick=1)
    return _layout(fig, f"Speedup over α and k at concurrency {s.concurrency}",
                   "per-token acceptance α (probability)", "draft tokens per step k (0 = off)",
                   legend_y=-0.25, legend_orientation="h")


def best_k_by_batch(s: Scenario) -> go.Figure:
    """The best k at each batch size (the vLLM schedule), with its speedup on hover."""
    ks, speeds = best_k(s, K_MAX, concurrency=BATCHES)
    fig = go.Figure(go.Scatter(
        x=BATCHES, y=ks, mode="lines", line=dict(shape="hv", width=3, color="#1f77b4"), name="best k",
        customdata=speeds, hovertemplate="batch %{x}<br>best k = %{y}<br>speedup = %{customdata:.2f}x<extra></extra>"))
    fig.add_trace(go.Scatter(x=[s.concurrency], y=[s.k], mode="markers", name="chosen k at this batch",
                             marker=dict(size=12, symbol="diamond", color="black"),
                             hovertemplate="batch %{x}<br>k = %{y}<extra>chosen</extra>"))
    fig.update_xaxes(type="log")
    fig.update_yaxes(dtick=1, range=[-0.3, K_MAX + 0.3])
    return _layout(fig, "Best k by batch size (0 = turn speculation off)",
                   "concurrent sequences (batch size, log scale)", "best draft tokens per step k")
