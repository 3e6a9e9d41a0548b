"""Figures of the Runs page: predicted against measured speedup; measured vs break-even tokens per step."""

from __future__ import annotations

import html
import math

import pandas as pd
import plotly.graph_objects as go

from .breakeven import BORDERLINE_LABEL, CLEARS, FAILS

VERDICT_COLOURS = {CLEARS: "#1a7f37", BORDERLINE_LABEL: "#b08800", FAILS: "#cf222e"}


def _fmt(x, digits=2, suffix=""):
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(x) else f"{x:.{digits}f}{suffix}"


def _hover(r) -> str:
    """Hover text of one run; user strings escaped (plotly renders a subset of HTML in hover text)."""
    where = html.escape(str(r["file"])) + (f", row {int(r['row'])}" if pd.notna(r.get("row")) else "")
    return (f"<b>{html.escape(str(r['workload']))}</b><br>{where}<br>concurrency {r['concurrency']}, k = {r['k']}, "
            f"{r['method']}, "
            f"{r['gpu_preset']}<br>α {_fmt(r['alpha'])}, tokens/step {_fmt(r['tokens_per_step'])} "
            f"(break-even {_fmt(r.get('break_even_tokens_per_step'))})<br>measured {_fmt(r['measured_speedup'])}x, "
            f"predicted {_fmt(r.get('predicted_speedup'))}x<br>verdict: {r.get('verdict') or '–'}")


def predicted_vs_measured(evaluated: pd.DataFrame, title: str = "Predicted vs measured speedup") -> go.Figure:
    """Scatter of predicted against measured speedup, one colour per workload, with y = x."""
    fig = go.Figure()
    data = evaluated.dropna(subset=["measured_speedup", "predicted_speedup"]) if not evaluated.empty else evaluated
    values = [1.0]
    for workload, group in (data.groupby("workload", sort=True) if not data.empty else []):
        fig.add_trace(go.Scatter(
            x=group["measured_speedup"].astype(float), y=group["predicted_speedup"].astype(float), mode="markers",
            name=html.escape(str(workload)), marker={"size": 11, "line": {"width": 1, "color": "white"}},
            hovertext=[_hover(r) for r in group.to_dict("records")], hoverinfo="text"))
        values += group["measured_speedup"].astype(float).tolist() + group["predicted_speedup"].astype(float).tolist()
    lo, hi = min(values) * 0.9, max(values) * 1.1
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="prediction = measurement (y = x)",
                             line={"color": "grey", "dash": "dash"}, hoverinfo="skip"))
    fig.add_hline(y=1.0, line={"color": "#cf222e", "width": 1, "dash": "dot"})
    fig.add_vline(x=1.0, line={"color": "#cf222e", "width": 1, "dash": "dot"})
    fig.update_layout(title=title, xaxis_title="measured speedup (spec / baseline throughput, ×)",
                      yaxis_title="predicted speedup (×)", legend_title="workload", template="plotly_white",
                      xaxis={"range": [lo, hi]}, yaxis={"range": [lo, hi]}, height=480)
    if data.empty:
        fig.add_annotation(text="no run has both a measured and a predicted speedup", showarrow=False,
                           x=0.5, y=0.5, xref="paper", yref="paper")
    return fig


def break_even_chart(evaluated: pd.DataFrame, title: str = "Tokens per step: measured vs break-even") -> go.Figure:
    """Per run: measured tokens per step (coloured by verdict) against the break-even at its concurrency."""
    fig = go.Figure()
    data = evaluated.dropna(subset=["break_even_tokens_per_step"]) if not evaluated.empty else evaluated
    labels = [f"{html.escape(str(r['workload']))} @ {r['concurrency']}" for r in data.to_dict("records")]
    if not data.empty:
        fig.add_trace(go.Bar(x=labels, y=data["break_even_tokens_per_step"].astype(float), name="break-even",
                             marker={"color": "rgba(120,120,120,0.35)"},
                             hovertemplate="%{x}<br>break-even %{y:.2f} tokens/step<extra></extra>"))
        for verdict, colour in VERDICT_COLOURS.items():
            sel = data["verdict"] == verdict
            if sel.any():
                fig.add_trace(go.Scatter(
                    x=[lab for lab, s in zip(labels, sel) if s], y=data.loc[sel, "tokens_per_step"].astype(float),
                    mode="markers", name=f"measured ({verdict})", marker={"color": colour, "size": 13, "symbol": "diamond"},
                    hovertext=[_hover(r) for r in data[sel].to_dict("records")], hoverinfo="text"))
    fig.update_layout(title=title, xaxis_title="workload @ concurrency (requests)",
                      yaxis_title="tokens per verify step (E, bonus token included)", template="plotly_white",
                      legend_title="", barmode="overlay", height=420)
    return fig
