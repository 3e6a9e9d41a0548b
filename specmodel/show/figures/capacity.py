"""Plotly figure of the Capacity page: the frontier of per-user speed against throughput per GPU.

Like specmodel.show.figures.whatif, assembled as plain dicts and wrapped without plotly's per-property
validation; tests/test_planning.py re-validates it through the validating constructor.
Numbers go in as plain lists so the figure's JSON carries them readably.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from specmodel.plan.capacity import MAX_BATCH, ArmPlan, CapacityPlan, Frontier
from specmodel.show.figures.whatif import figure

POINTS = 90  # chosen: batches sampled per curve (geometric), plus every curve's KV limit and the operating points
# Curves readable in the light and the dark theme alike: blue to purple at mid luminance, each at least 3:1
# against white and against Streamlit's dark background (#171614) from k = 2 on (k = 1: 2.5:1 on white);
# the plain arm in mid grey (3.4:1 and 5.4:1). A dark curve (#222, #08306b) vanished in the dark theme.
SPEC_COLORS = ("#5aa9e6", "#3d95dd", "#2f80d0", "#2a6fc0", "#4f63c8", "#6a58c6", "#8450c0", "#9a48b8")
PLAIN_STYLE = dict(color="#8c8c8c", width=3.5)  # chosen, as above
# chosen: the target line in red, dashed, thinner than the curves
TARGET_STYLE = dict(color="#c0392b", dash="dash", width=2)


def _columns(f: Frontier, result: CapacityPlan) -> np.ndarray:
    """Batch indices to draw: geometric up to the largest KV limit, each limit, the operating points."""
    limits = f.max_batch[np.isfinite(f.max_batch) & (f.max_batch >= 1)]
    top = int(min(MAX_BATCH, limits.max())) if limits.size else 1
    ops = [a.batch_per_replica for a in (result.plain, result.spec) if a.batch_per_replica]
    top = max(top, *ops) if ops else top
    batches = np.unique(np.concatenate([np.round(np.geomspace(1, top, POINTS)), limits[limits <= top], ops]))
    return batches.astype(int) - 1


def frontier_chart(f: Frontier, result: CapacityPlan) -> go.Figure:
    """One curve per arm and per k (plain decoding, speculation at each k), the latency target as a
    line, and each arm's operating point (or, where it misses the target, its best reachable point)."""
    itl = result.target.is_itl
    cols = _columns(f, result)
    y_all = f.itl_ms if itl else f.user_tok_s
    x_all = f.throughput_tok_s_per_gpu
    unit = "ms" if itl else "tok/s per user"
    traces = []
    x_max = 0.0
    for i, k in enumerate(f.ks.tolist()):
        live = x_all[i, cols] > 0
        c = cols[live]
        x, y = x_all[i, c], y_all[i, c]
        x_max = max(x_max, float(x.max()) if x.size else 0.0)
        running = np.minimum(f.batches[c], f.max_batch[i])
        custom = np.stack([f.batches[c], running], axis=1)
        hover = ("%{customdata[0]} users per replica (%{customdata[1]} running)<br>%{x:,.0f} tok/s per GPU<br>"
                 + ("ITL %{y:.1f} ms" if itl else "%{y:.1f} tok/s per user"))
        if k == 0:
            name, style, opacity = "without speculation", PLAIN_STYLE, 1.0
        else:
            chosen = result.spec.k == k
            name = f"speculation k = {k}" + (" (plan)" if chosen else "")
            style = dict(color=SPEC_COLORS[(k - 1) % len(SPEC_COLORS)], width=3.5 if chosen else 1.5)
            opacity = 1.0 if chosen else 0.55
        # Plain lists, not arrays: the figure's JSON then reads as numbers (tests and the page check it).
        traces.append(dict(type="scatter", mode="lines", x=x.tolist(), y=y.tolist(), name=name,
                           customdata=custom.astype(int).tolist(), line=style,
                           opacity=opacity, hovertemplate=hover + f"<extra>{'plain' if k == 0 else f'k = {k}'}</extra>"))
    target_y = 1e3 / result.target.user_tok_s if itl else result.target.user_tok_s
    traces.append(dict(type="scatter", mode="lines", x=[0.0, max(x_max, 1.0) * 1.05], y=[target_y, target_y],
                       name=f"target: {result.target.describe()}", line=TARGET_STYLE, hoverinfo="skip"))
    for arm, symbol, color in ((result.plain, "diamond", "#222"), (result.spec, "star", "#2a6fc0")):
        traces.append(_operating_point(arm, symbol, color, itl))
    s = f.scenario
    where = f"{s.tp}× {s.gpu} per replica" if s.tp > 1 else s.gpu
    better = "lower is better" if itl else "higher is better"
    return figure(traces, f"Per-user speed vs throughput per GPU: {s.target} on {where}, {result.load.describe()}",
                  "aggregate throughput per GPU (tok/s per GPU)",
                  f"{'inter-token latency (ms' if itl else 'per-user speed (tok/s per user'}, {better})",
                  height=480, xaxis=dict(rangemode="tozero"), yaxis=dict(rangemode="tozero"),
                  legend=dict(title=dict(text=f"arm (y in {unit})")))


def _operating_point(arm: ArmPlan, symbol: str, color: str, itl: bool) -> dict:
    who = "plain" if arm.k == 0 else f"speculation k = {arm.k}"
    y = arm.itl_ms if itl else arm.user_tok_s
    if arm.meets_target:
        name = f"{who}: {arm.gpus} GPU{'s' if arm.gpus != 1 else ''}, {arm.batch_per_replica} users per replica"
        marker = dict(size=15, symbol=symbol, color=color, line=dict(color="white", width=1.5))
    else:
        name = f"{who}: misses the target (best reachable)"
        marker = dict(size=15, symbol=symbol + "-open", color=color, line=dict(width=2.5))
    fine = np.isfinite(y) and arm.throughput_tok_s_per_gpu > 0
    return dict(type="scatter", mode="markers", x=[arm.throughput_tok_s_per_gpu] if fine else [],
                y=[y] if fine else [], name=name, marker=marker,
                hovertemplate=f"{name}<br>%{{x:,.0f}} tok/s per GPU<br>"
                              + ("ITL %{y:.1f} ms" if itl else "%{y:.1f} tok/s per user") + "<extra></extra>")
