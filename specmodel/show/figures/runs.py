"""Figures of the Runs page: predicted against measured speedup; measured vs break-even tokens per step."""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd
import plotly.graph_objects as go

from specmodel.text import safe_text
from specmodel.words import BORDERLINE_LABEL, CLEARS, FAILS, UNCERTAIN, verdict_words
from specmodel.runs.draft_length import k_words
from specmodel.runs.setups import setups_of

VERDICT_COLOURS = {CLEARS: "#1a7f37", BORDERLINE_LABEL: "#b08800", FAILS: "#cf222e", UNCERTAIN: "#8250df"}


def _fmt(x, digits=2, suffix=""):
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(x) else f"{x:.{digits}f}{suffix}"


def shown_in_chart(text) -> str:
    """A name from a user or a server in a chart (a legend, an axis label, a hover): cleaned, cut to 200
    characters, its < > & written as entities (Plotly renders <a href>, <b> and <br> in them)."""
    return safe_text(text, markdown="figure")


def _k(r) -> str:
    """The run's k as its row has it, and what it means where the run is judged at its mean draft length."""
    k = pd.to_numeric(r.get("k"), errors="coerce")
    return k_words(k, pd.to_numeric(r.get("max_draft_length"), errors="coerce")) if pd.notna(k) else f"k = {r.get('k')}"


def _hover(r) -> str:
    """Hover text of one run; user strings escaped (plotly renders a subset of HTML in hover text)."""
    where = shown_in_chart(r["file"]) + (f", row {int(r['row'])}" if pd.notna(r.get("row")) else "")
    setup = f" ({shown_in_chart(r['setup'])})" if isinstance(r.get("setup"), str) and r["setup"] else ""
    return (f"<b>{shown_in_chart(r['workload'])}</b>{setup}<br>{where}<br>concurrency {r['concurrency']}, {_k(r)}, "
            f"{r['method']}, "
            f"{r['gpu_preset']}<br>α {_fmt(r['alpha'])}, tokens/step {_fmt(r['tokens_per_step'])} "
            f"(break-even {_fmt(r.get('break_even_tokens_per_step'))})<br>measured {_fmt(r['measured_speedup'])}x, "
            f"predicted {_fmt(r.get('predicted_speedup'))}x (80% band {_fmt(r.get('speedup_low'))}–"
            f"{_fmt(r.get('speedup_high'))}x)<br>verdict: {r.get('verdict') or '–'}")


# the columns _hover reads: records of these only (a chart of 2,000 runs made records of all 88 columns of each)
HOVER_COLUMNS = ("file", "row", "setup", "workload", "concurrency", "k", "max_draft_length", "method", "gpu_preset",
                 "alpha", "tokens_per_step", "break_even_tokens_per_step", "measured_speedup", "predicted_speedup",
                 "speedup_low", "speedup_high", "verdict")


def _records(data: pd.DataFrame, columns=HOVER_COLUMNS) -> list[dict]:
    """data.to_dict("records") of the given columns that data has (each cell as the whole table's records
    give it: a column's cells are made alike whatever the other columns)."""
    return data[[c for c in columns if c in data]].to_dict("records")


def band_bars(group: pd.DataFrame) -> dict | None:
    """Vertical bars from each run's speedup_low to speedup_high (the model's 80% band; none where a run has none)."""
    if "speedup_low" not in group or "speedup_high" not in group:
        return None
    pred = group["predicted_speedup"].astype(float)
    up = pd.to_numeric(group["speedup_high"], errors="coerce") - pred
    down = pred - pd.to_numeric(group["speedup_low"], errors="coerce")
    return {"type": "data", "symmetric": False, "array": up.tolist(), "arrayminus": down.tolist(),
            "thickness": 1, "width": 0}


LEGEND_WORKLOADS = 10  # chosen: above this many workloads the scatter colours runs by verdict, not by workload


def predicted_vs_measured(evaluated: pd.DataFrame) -> go.Figure:
    """Scatter of predicted against measured speedup with y = x: one colour per workload, or, above
    LEGEND_WORKLOADS workloads (a legend that long would crowd out the plot), one per measured verdict
    with the workload in each point's hover text."""
    fig = go.Figure()
    data = evaluated.dropna(subset=["measured_speedup", "predicted_speedup"]) if not evaluated.empty else evaluated
    by_verdict = not data.empty and data["workload"].nunique() > LEGEND_WORKLOADS
    if by_verdict:  # every run keeps a group: a run without a verdict shows as "–"
        data = data.assign(verdict=data.get("verdict", pd.Series("–", index=data.index)).fillna("–"))
    groups = [] if data.empty else data.groupby("verdict" if by_verdict else "workload", sort=True)
    if by_verdict:
        order = list(VERDICT_COLOURS)
        groups = sorted(groups, key=lambda g: order.index(g[0]) if g[0] in order else len(order))
    values = [1.0]
    for name, group in groups:
        marker = {"size": 11 if not by_verdict else 8, "line": {"width": 1, "color": "white"}}
        if by_verdict:
            marker["color"] = VERDICT_COLOURS.get(name, "#57606a")
        fig.add_trace(go.Scatter(
            x=group["measured_speedup"].astype(float), y=group["predicted_speedup"].astype(float), mode="markers",
            name=f"measured: {shown_in_chart(verdict_words(name))}" if by_verdict else shown_in_chart(name), marker=marker,
            error_y=band_bars(group), hovertext=[_hover(r) for r in _records(group)], hoverinfo="text"))
        values += group["measured_speedup"].astype(float).tolist() + group["predicted_speedup"].astype(float).tolist()
        for end in ("speedup_low", "speedup_high"):  # the bars stay inside the axes
            if end in group:
                values += [v for v in pd.to_numeric(group[end], errors="coerce").tolist() if v == v]
    lo, hi = min(values) * 0.9, max(values) * 1.1
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="prediction = measurement (y = x)",
                             line={"color": "grey", "dash": "dash"}, hoverinfo="skip"))
    fig.add_hline(y=1.0, line={"color": "#cf222e", "width": 1, "dash": "dot"})
    fig.add_vline(x=1.0, line={"color": "#cf222e", "width": 1, "dash": "dot"})
    fig.update_layout(title="Predicted vs measured speedup", xaxis_title="measured speedup (spec / baseline throughput, ×)",
                      yaxis_title="predicted speedup (×; bars: the model's 80% band)",
                      legend_title=f"measured verdict ({data['workload'].nunique()} workloads)" if by_verdict else "workload",
                      xaxis={"range": [lo, hi]}, yaxis={"range": [lo, hi]}, height=480)
    if data.empty:
        fig.add_annotation(text="no run has both a measured and a predicted speedup", showarrow=False,
                           x=0.5, y=0.5, xref="paper", yref="paper")
    return fig


ROW_PX = 24  # chosen: height of one run's row in the break-even chart (≥ 22 px: labels never overlap)
TOP_AXIS_ROWS = 15  # chosen: above this many rows the tokens-per-step scale shows at the top as well
LABEL_CHARS = 34  # chosen: longer workload names are cut with "…"; the full name is in the hover text
_CHART_CHROME_PX = 190  # chosen: title, legend and the x axis (top and bottom) with its title
_LEGEND_TOP_PX, _PLOT_TOP_PX = 38, 110


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _row_labels(data: pd.DataFrame) -> list[str]:
    """One distinct label per run, "workload @ concurrency", with what tells its setup apart from the
    workload's other setups (setups.setup_names: "Qwen3-8B, EAGLE-3, k=6"), and a counter where two runs
    of one setup would still share a row (on a category axis they would sit on top of each other)."""
    setups = setups_of(data).tolist()
    base = [f"{_short(r['workload'])} @ {r['concurrency']}" + (f", {setup}" if setup else "")
            for r, setup in zip(_records(data, ("workload", "concurrency")), setups)]
    counts = Counter(base)
    seen: dict[str, int] = {}
    out = []
    for label in base:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if counts[label] == 1 else f"{label} #{seen[label]}")
    return [shown_in_chart(label) for label in out]


def break_even_chart(evaluated: pd.DataFrame) -> go.Figure:
    """Per run: measured tokens per step (coloured by verdict) against the break-even at its
    concurrency. One row per run, grouped by workload (shaded bands), the chart as tall as its rows."""
    data = evaluated.dropna(subset=["break_even_tokens_per_step"]) if not evaluated.empty else evaluated
    if not data.empty:
        data = data.sort_values(["workload", "concurrency", "k"], kind="stable", key=lambda c: c.astype(str)
                                if c.name == "workload" else pd.to_numeric(c, errors="coerce"))
    labels = _row_labels(data) if not data.empty else []
    records = _records(data) if not data.empty else []
    fig = go.Figure()
    shapes = []
    if records:
        hover = [_hover(r) for r in records]
        fig.add_trace(go.Bar(y=labels, x=data["break_even_tokens_per_step"].astype(float), orientation="h",
                             name="break-even at the run's concurrency", marker={"color": "rgba(128,128,128,0.45)"},
                             hovertext=hover, hoverinfo="text"))
        verdicts = list(dict.fromkeys(str(v) for v in data["verdict"].fillna("–")))
        for verdict in sorted(verdicts, key=lambda v: list(VERDICT_COLOURS).index(v) if v in VERDICT_COLOURS else 9):
            sel = [str(v) == verdict for v in data["verdict"].fillna("–")]
            fig.add_trace(go.Scatter(
                y=[lab for lab, on in zip(labels, sel) if on],
                x=[float(r["tokens_per_step"]) for r, on in zip(records, sel) if on], mode="markers",
                name=f"measured ({verdict_words(verdict)})",
                marker={"color": VERDICT_COLOURS.get(verdict, "#888888"), "size": 12, "symbol": "diamond",
                        "line": {"width": 1, "color": "#ffffff"}},
                hovertext=[h for h, on in zip(hover, sel) if on], hoverinfo="text"))
        # Alternate shading marks each workload's rows as one group.
        groups = data["workload"].astype(str).tolist()
        start = 0
        shade = True
        for i in range(1, len(groups) + 1):
            if i == len(groups) or groups[i] != groups[start]:
                if shade:
                    shapes.append(dict(type="rect", xref="paper", x0=0, x1=1, yref="y", y0=start - 0.5, y1=i - 0.5,
                                       fillcolor="rgba(128,128,128,0.10)", line={"width": 0}, layer="between"))
                shade = not shade
                start = i
        values = [float(v) for v in data["break_even_tokens_per_step"]] + [
            float(v) for v in data["tokens_per_step"] if pd.notna(v)]
        x_max = max(values) * 1.1
    else:
        x_max = 1.0
        fig.add_annotation(text="no run has a break-even to show", showarrow=False, x=0.5, y=0.5,
                           xref="paper", yref="paper")
    rows = max(1, len(labels))
    height = _CHART_CHROME_PX + ROW_PX * rows
    if rows > TOP_AXIS_ROWS:  # a tall chart repeats the scale at its top, where the reader starts
        fig.add_trace(go.Scatter(x=[0.0], y=[labels[0]], xaxis="x2", mode="markers", marker={"opacity": 0},
                                 showlegend=False, hoverinfo="skip"))
        fig.update_layout(xaxis2={"overlaying": "x", "matches": "x", "side": "top", "showgrid": False})
    fig.update_layout(
        title=dict(text="Tokens per step: measured vs break-even", x=0.0, xanchor="left", yref="container", y=1.0,
                   yanchor="top", pad={"t": 12}),
        xaxis={"title": {"text": "tokens per verify step (E, bonus token included)"}, "range": [0, x_max],
               "side": "bottom"},
        yaxis={"title": {"text": "workload @ concurrency (requests)"}, "type": "category",
               "categoryorder": "array", "categoryarray": labels, "automargin": True,
               "range": [rows - 0.5, -0.5] if labels else None, "tickfont": {"size": 12}},
        # Title, then the legend on its own line, then the plot (with the scale on top when tall):
        # placed in pixels from the top, so they never overlap at any height.
        legend={"orientation": "h", "x": 0.0, "xanchor": "left", "yref": "container", "y": 1 - _LEGEND_TOP_PX / height,
                "yanchor": "top", "title": None},
        barmode="overlay", height=height, margin={"t": _PLOT_TOP_PX, "b": 60, "l": 10, "r": 20},
        shapes=shapes, hoverlabel={"namelength": -1})
    return fig
