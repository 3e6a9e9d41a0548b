"""Plotly figures of the Fleet page: plain functions from fleet tables to go.Figure."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specmodel.runs.review import with_band_text
from specmodel.show.figures.runs import band_bars, shown_in_chart
from specmodel.show.figures.whatif import BREAK_EVEN_STYLE, LOG_BATCH_AXIS
from specmodel.show.readouts import UNCERTAIN

VERDICT_COLOURS = {"pays off": "#2ca02c", "borderline": "#ff7f0e", "loses": "#d62728", "off": "#7f7f7f",
                   "unknown": "#bcbd22", UNCERTAIN: "#9467bd"}


def _style(fig: go.Figure, title: str, **layout) -> go.Figure:
    fig.update_layout(**{"title": dict(text=title, x=0.0, xanchor="left"), "height": 400,
                         "margin": dict(l=60, r=20, t=60, b=50), **layout})
    return fig


def _label(row) -> str:
    model = row.get("model_name") or "?"
    return shown_in_chart(f"{row['instance']} · {model.rsplit('/', 1)[-1]}")


def history(frame: pd.DataFrame, window: str) -> go.Figure:
    """Tokens per verify step E (top) and running requests (bottom) over time, one line per instance."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=(f"tokens per step E (each point: the {window} before it)",
                                        "running requests (average over the window)"))
    if frame.empty:
        fig.add_annotation(text="no history in this span", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    for key, g in frame.groupby(["job", "instance", "model_name"], sort=True, dropna=False):
        name = _label({"instance": key[1], "model_name": key[2]})
        g = g.sort_values("time")
        hover = f"{shown_in_chart(key[1])} ({shown_in_chart(key[0])})<br>%{{x|%H:%M:%S}}<br>"
        fig.add_trace(go.Scatter(x=g["time"], y=g["tokens_per_step"], mode="lines+markers", name=name,
                                 legendgroup=name, marker=dict(size=4),
                                 hovertemplate=hover + "E = %{y:.2f} tokens/step<extra></extra>"), row=1, col=1)
        fig.add_trace(go.Scatter(x=g["time"], y=g["running"], mode="lines", name=name, legendgroup=name,
                                 showlegend=False, line=dict(dash="dot", width=2),
                                 hovertemplate=hover + "%{y:.1f} running requests<extra></extra>"), row=2, col=1)
    fig.update_yaxes(title_text="E (tokens / verify step)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="running requests (sequences)", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="time (UTC)", row=2, col=1)
    return _style(fig, "Acceptance and load over time, per instance", height=620,
                  legend=dict(orientation="h", yanchor="top", y=-0.16, x=0))


def operating_points(table: pd.DataFrame) -> go.Figure:
    """Each instance at (its concurrency, the model's predicted speedup there) with the model's 80% band as a
    bar, coloured by verdict as the table shows it (readouts.fleet_shown: "uncertain" where the band straddles 1.0)."""
    fig = go.Figure()
    shown = table.dropna(subset=["predicted_speedup"]) if not table.empty else table
    for verdict, g in shown.groupby("verdict", sort=False) if not shown.empty else []:
        labels = [_label(r) for r in g.to_dict("records")]
        e = g["tokens_per_step"].map(lambda v: "-" if pd.isna(v) else f"{v:.2f}")
        band = with_band_text(g)["speedup_band"] if "speedup_low" in g else pd.Series("", index=g.index)
        fig.add_trace(go.Scatter(
            x=g["concurrency"], y=g["predicted_speedup"], mode="markers", name=verdict, error_y=band_bars(g),
            marker=dict(size=13, color=VERDICT_COLOURS.get(verdict, "#1f77b4"), line=dict(width=1, color="white")),
            text=labels, customdata=list(zip(g["job"].map(shown_in_chart), e, band.map(lambda b: b or "-"))),
            hovertemplate="%{text}<br>job %{customdata[0]}<br>running %{x}<br>E = %{customdata[1]}"
                          "<br>predicted %{y:.2f}x (80% band %{customdata[2]}x)<extra>%{fullData.name}</extra>"))
    fig.add_hline(y=1.0, line=BREAK_EVEN_STYLE, annotation_text="break-even (1.0x)", annotation_position="bottom right")
    fig.update_xaxes(**LOG_BATCH_AXIS, title_text="running requests (sequences, log scale)")
    fig.update_yaxes(title_text="predicted speedup over plain decoding (×)")
    return _style(fig, "Where each instance runs: predicted speedup at its own concurrency",
                  legend_title_text="verdict (bars: the model's 80% band)")
