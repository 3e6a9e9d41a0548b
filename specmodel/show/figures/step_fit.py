"""Figure of the Past runs page's step fit: each setup's speedup against the batch, the fit's line and
band beside the runs it saw and the runs it predicts."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from specmodel.runs.step_points import SetupFit

MAX_SETUPS_DRAWN = 8  # chosen: more lines than this are unreadable on one chart; the table lists every setup
COLOURS = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#b08800", "#bc4c00", "#57606a", "#1b7c83")


def _name(f: SetupFit) -> str:
    return html.escape(", ".join(p for p in (f.workload, f.setup) if p) or "the runs")


def step_fit_chart(fits: list[SetupFit], measured: list[list[tuple[float, float, bool]]]) -> go.Figure:
    """Per usable fit: its speedup against the batch (log axis, 1 to 4× its largest run) with the 80% band,
    and the measured speedups ((batch, speedup, the fit saw it) per setup): filled where fitted, open where
    predicted. A dashed line at 1.0, where speculation stops paying."""
    fig = go.Figure()
    top = 4.0
    for i, (f, points) in enumerate(list(zip(fits, measured))[:MAX_SETUPS_DRAWN]):
        if not f.fit.usable:
            continue
        colour = COLOURS[i % len(COLOURS)]
        hi_b = max(max(f.fit.batches) * 4, max((b for b, _, _ in points), default=1.0))
        top = max(top, hi_b)
        grid = np.unique(np.round(np.geomspace(1, hi_b, 60)))
        s, low, high = f.fit.speedup(grid)
        name = _name(f)
        fig.add_trace(go.Scatter(x=np.concatenate([grid, grid[::-1]]), y=np.concatenate([high, low[::-1]]),
                                 fill="toself", fillcolor=colour, opacity=0.15, line={"width": 0}, hoverinfo="skip",
                                 showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=grid, y=s, mode="lines", line={"color": colour}, name=f"{name}: fit",
                                 legendgroup=name,
                                 hovertemplate="batch %{x:.0f}: %{y:.2f}× by the fit<extra>" + name + "</extra>"))
        for seen, symbol, word in ((True, "circle", "fitted"), (False, "circle-open", "predicted, not fitted")):
            xs = [b for b, _, used in points if used is seen]
            ys = [v for _, v, used in points if used is seen]
            if xs:
                fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", marker={"color": colour, "symbol": symbol,
                                                                              "size": 10},
                                         name=f"{name}: measured, {word}", legendgroup=name,
                                         hovertemplate="batch %{x:.0f}: %{y:.2f}× measured<extra>" + name
                                                       + "</extra>"))
    fig.add_hline(y=1.0, line={"dash": "dash", "color": "#57606a"}, annotation_text="break-even",
                  annotation_position="bottom right")
    ticks = [2 ** i for i in range(13) if 2 ** i <= top * 1.25]  # powers of two, never plotly's minor "4 5 6 7 8 9"
    fig.update_layout(title="Speedup against batch: each setup's step fit (line, 80% band) and its runs",
                      xaxis={"title": "batch (concurrent sequences, log scale)", "type": "log", "range":
                             [float(np.log10(0.8)), float(np.log10(top * 1.25))],  # the end points whole
                             "tickvals": ticks, "ticktext": [f"{v:,}" for v in ticks],
                             "minor": {"showgrid": False, "ticks": ""}},
                      yaxis={"title": "speedup over plain decoding (×)", "rangemode": "tozero"},
                      legend={"orientation": "h", "y": -0.25}, margin={"t": 60, "b": 40})
    return fig
