"""Plotly figures of the What-if page: plain functions from a Scenario to a go.Figure.

Figures are assembled as plain dicts and wrapped once without plotly's per-property validation,
which costs more than the model itself on every rerun; tests/test_figures.py re-validates every
figure through the validating constructor, so a wrong property still fails a test.

plotly's to_dict (what st.plotly_chart sends) asks narwhals whether each array is a dataframe, and
narwhals reads the entry points of every installed package the first time it is asked in a process
(~0.1 s): one tiny figure's to_dict at import asks it once, so the first chart a page draws does not.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import plotly.graph_objects as go

from specmodel.bounds import bounded_cache
from specmodel.model.decide import (K_MAX, best_k, best_k_per_batch, crossover_concurrency, k_at, schedule_grid,
                                    smallest_best)
from specmodel.model.scenario import Prediction, Scenario, plain_throughput, predict, speedup_grid
from specmodel.words import Summary, summarize

ALPHAS = np.linspace(0.0, 1.0, 101)  # chosen: α in steps of 0.01
# chosen: 1 … 1024, log-spaced, each batch once. Not np.unique: without return_index/inverse/counts it asks
# np.ma whether the array is masked, which imports numpy.ma (~80 ms of the first page) for this one line.
BATCHES = np.array(sorted(set(np.round(np.geomspace(1, 1024, 160)).astype(int).tolist())))
KS = np.arange(1, K_MAX + 1)  # chosen: every k the advice may name
# chosen: colours readable on the light and the dark theme alike (the page follows the viewer's preference):
# mid grey lines, and a dark marker with a white rim.
BREAK_EVEN_STYLE = dict(color="#8c8c8c", dash="dash", width=1.5)
# A batch-size log axis labelled at the powers of two a reader sets (1, 4, 16 … 4096), never plotly's
# minor "2 5" labels between decades ("10 2 5 100" read as numbers of their own).
# Chosen: every other power of two: all thirteen crowd a half-width chart at 1280 wide into slanted labels.
_POWERS_OF_TWO = [4 ** i for i in range(7)]  # 1, 4, 16 … 4096
LOG_BATCH_AXIS = dict(type="log", tickvals=_POWERS_OF_TWO, ticktext=[f"{v:,}" for v in _POWERS_OF_TWO],
                      minor=dict(showgrid=False, ticks=""))
SCENARIO_MARKER = dict(size=12, symbol="diamond", color="#222222", line=dict(width=2, color="#ffffff"))  # chosen, as above
# Chosen, diverging: red where speculation loses, light grey at break-even (white read as a blank row on the dark
# theme: k = 0 is break-even everywhere), blue where it wins.
LOSS_WIN_SCALE = [[0.0, "#67001f"], [0.25, "#d6604d"], [0.5, "#c9c9c9"], [0.75, "#4393c3"], [1.0, "#053061"]]

go.Figure(dict(data=[dict(type="scatter", y=np.zeros(1))]), _validate=False).to_dict()  # narwhals asked once


def figure(traces: list[dict], title: str, x: str, y: str, **layout) -> go.Figure:
    """A go.Figure from trace dicts with a title, axis titles (with units) and a legend."""
    base = dict(title=dict(text=title, x=0.0, xanchor="left"), xaxis=dict(title=dict(text=x)),
                yaxis=dict(title=dict(text=y)), height=380, margin=dict(l=60, r=20, t=60, b=50),
                showlegend=True)
    for key, value in layout.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return go.Figure(dict(data=traces, layout=base), _validate=False)


def line(x, y, name: str, hover: str, **style) -> dict:
    return dict(type="scatter", mode="lines", x=np.asarray(x), y=np.asarray(y, dtype=float),
                name=name, hovertemplate=hover, **style)


def marker(x: float, y: float, name: str, hover: str) -> dict:
    return dict(type="scatter", mode="markers", x=[x], y=[y], name=name, marker=SCENARIO_MARKER,
                hovertemplate=hover)


def break_even_line(x0: float, x1: float) -> dict:
    """Horizontal line at speedup 1.0, drawn as a trace so it has a legend entry."""
    return dict(type="scatter", mode="lines", x=[x0, x1], y=[1.0, 1.0], name="break-even (1.0x)",
                line=BREAK_EVEN_STYLE, hoverinfo="skip")


def vertical_line(x: float, top: float, name: str, hover: str | None = None) -> dict:
    return dict(type="scatter", mode="lines", x=[x, x], y=[0.0, top], name=name,
                line=dict(color="#c0392b", dash="dot", width=2),
                **({"hovertemplate": hover} if hover else {"hoverinfo": "skip"}))


@bounded_cache(32)
def _best_k_by_batch(s: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """Best k and its speedup at every batch in BATCHES (two figures use it; computed once). Its callers pass
    the scenario with k and concurrency fixed (_batch_free): neither changes it, so moving either reuses it."""
    return best_k(s, K_MAX, concurrency=BATCHES)


def _batch_free(s: Scenario) -> Scenario:
    return replace(s, k=0, concurrency=1)


def _alpha_k_grid(s: Scenario) -> np.ndarray:
    """Speedup over ALPHAS × k = 0..K_MAX at the scenario's concurrency. It depends on neither the
    scenario's α, k nor profile (all overridden), so moving the α or k slider reuses it."""
    return _alpha_k_grid_for(replace(s, alpha=0.0, k=0, survival=None))


@bounded_cache(32)
def _alpha_k_grid_for(s: Scenario) -> np.ndarray:
    grid = np.asarray(predict(s, alpha=ALPHAS[None, :], k=np.arange(0, K_MAX + 1)[:, None]).speedup, dtype=float)
    grid.flags.writeable = False  # shared between figures and reruns
    return grid


@bounded_cache(64, key_args=1)
def whatif_view(s: Scenario) -> tuple[Summary, tuple[go.Figure, ...]]:
    """The What-if page's summary and five figures (α, α × k, concurrency, best k, deploy options) of one
    scenario, once per process: a rerun that changes none of the model's inputs, or comes back to a
    setting seen before (by this or another session), reuses them. Keyed by the frozen Scenario's own
    hash (microseconds; Streamlit's cache hashed it field by field in ~9 ms on every rerun)."""
    summary = summarize(s)
    return summary, (speedup_vs_alpha(s, summary.prediction), alpha_k_heatmap(s),
                     speedup_vs_concurrency(s, summary.crossover_concurrency, summary.prediction),
                     best_k_by_batch(s, summary.schedule), deploy_options(summary))


def speedup_vs_alpha(s: Scenario, prediction: Prediction | None = None) -> go.Figure:
    """Speedup against α for every k at the scenario's concurrency, with the break-even line.
    Pass the scenario's own prediction when already known (summarize has it) to save predicting it."""
    grid = _alpha_k_grid(s)[1:]
    traces = []
    for i, k in enumerate(KS):
        chosen = k == s.k
        traces.append(line(ALPHAS, grid[i], f"k = {k}" + (" (chosen)" if chosen else ""),
                           f"k = {k}<br>α = %{{x:.2f}}<br>speedup = %{{y:.2f}}x<extra></extra>",
                           line=dict(width=3.5 if chosen else 1.5), opacity=1.0 if chosen else 0.55))
    traces.append(break_even_line(0.0, 1.0))
    if s.k > 0 and s.survival is None:
        p = prediction if prediction is not None else predict(s)
        traces.append(marker(s.alpha, p.speedup, "this scenario",
                             "α = %{x:.2f}<br>speedup = %{y:.2f}x<extra>this scenario</extra>"))
        if np.isfinite(p.break_even_alpha):
            traces.append(vertical_line(p.break_even_alpha, float(np.nanmax(grid)),
                                        f"break-even α = {p.break_even_alpha:.2f} (k = {s.k})"))
    return figure(traces, f"Speedup vs acceptance α at concurrency {s.concurrency}",
                  "per-token acceptance α (probability)", "speedup over plain decoding (×)")


def speedup_vs_concurrency(s: Scenario, crossover: int | None = None,
                           prediction: Prediction | None = None) -> go.Figure:
    """Speedup against concurrent sequences for the chosen k and for the best k; crossover marked.
    Pass the crossover and the scenario's prediction when already known (summarize computes both)
    to save recomputing them."""
    traces = []
    if s.k > 0:
        chosen = speedup_grid(s, np.arange(0, max(K_MAX, s.k) + 1), BATCHES)[s.k]  # the grid best k reads
        traces.append(line(BATCHES, chosen, f"k = {s.k} (chosen)",
                           f"batch %{{x}}<br>speedup = %{{y:.2f}}x<extra>k = {s.k}</extra>", line=dict(width=3.5)))
    ks, speeds = _best_k_by_batch(_batch_free(s))
    traces.append(line(BATCHES, speeds, "best k at each batch",
                       "batch %{x}<br>best k = %{customdata}<br>speedup = %{y:.2f}x<extra></extra>",
                       line=dict(width=2, dash="dot", color="#2ca02c"), customdata=ks))
    traces.append(break_even_line(1, int(BATCHES[-1])))
    cross = crossover_concurrency(s) if crossover is None and s.k > 0 else crossover
    if s.k > 0 and cross is not None and cross >= 1:
        traces.append(vertical_line(cross, max(1.2, float(np.nanmax(speeds)) * 1.05), f"crossover: batch {cross}",
                                    f"k = {s.k} loses above batch {cross}<extra></extra>"))
    here = prediction if prediction is not None else predict(s)
    traces.append(marker(s.concurrency, here.speedup, "this scenario",
                         "batch %{x}<br>speedup = %{y:.2f}x<extra>this scenario</extra>"))
    return figure(traces, "Speedup vs concurrency", "concurrent sequences (batch size, log scale)",
                  "speedup over plain decoding (×)", xaxis=LOG_BATCH_AXIS)


def alpha_k_heatmap(s: Scenario) -> go.Figure:
    """Speedup over α × k at the scenario's concurrency; red loses, blue wins, grey is break-even."""
    ks = np.arange(0, K_MAX + 1)
    grid = _alpha_k_grid(s)
    # Colour by log2(speedup) so 0.5x and 2x are equally strong; the colour bar is labelled in ×.
    log_grid = np.log2(np.clip(grid, 1 / 16, 16))
    lim = max(1.0, float(np.ceil(np.nanmax(np.abs(log_grid)))))
    ticks = np.arange(-lim, lim + 1)
    traces = [
        dict(type="heatmap", x=ALPHAS, y=ks, z=log_grid, zmin=-lim, zmax=lim, colorscale=LOSS_WIN_SCALE, customdata=grid,
             colorbar=dict(title=dict(text="speedup (×)"), tickvals=ticks.tolist(),
                           ticktext=[f"{2.0 ** t:g}x" for t in ticks]),
             hovertemplate="α = %{x:.2f}<br>k = %{y}<br>speedup = %{customdata:.2f}x<extra></extra>",
             showlegend=False),
        dict(type="contour", x=ALPHAS, y=ks[1:], z=grid[1:], showscale=False,
             contours=dict(start=1.0, end=1.0, size=1.0, coloring="none"), line=dict(color="#8c8c8c", width=2),
             name="break-even (1.0x)", showlegend=True, hoverinfo="skip"),
    ]
    if s.survival is None:
        traces.append(marker(s.alpha, s.k, "this scenario", "α = %{x:.2f}<br>k = %{y}<extra>this scenario</extra>"))
    return figure(traces, f"Speedup over α and k at concurrency {s.concurrency}",
                  "per-token acceptance α (probability)", "draft tokens per step k (0 = off)",
                  yaxis=dict(dtick=1), legend=dict(orientation="h", y=-0.25))


def best_k_by_batch(s: Scenario, schedule: list[list[int]] | None = None) -> go.Figure:
    """The k to deploy at each batch size (the schedule the advice and vLLM's config name: it switches k only
    for more than SWITCH_GAIN; past its last range, the best k) beside the best k of each batch alone (what
    switching for free would run), with speedups on hover."""
    ks, speeds = _best_k_by_batch(_batch_free(s))
    if schedule is None:
        schedule = summarize(s).schedule
    deployed = np.array([k if (k := k_at(schedule, int(b))) is not None else best
                         for b, best in zip(BATCHES.tolist(), ks.tolist())])
    traces = [
        line(BATCHES, deployed, "k to deploy (schedule)", "batch %{x}<br>k to deploy = %{y}<extra></extra>",
             line=dict(shape="hv", width=3, color="#1f77b4")),
        line(BATCHES, ks, "best k at each batch alone",
             "batch %{x}<br>best k = %{y}<br>speedup = %{customdata:.2f}x<extra>switching for free</extra>",
             line=dict(shape="hv", width=1.5, dash="dot", color="#2ca02c"), customdata=speeds),
        marker(s.concurrency, s.k, "chosen k at this batch", "batch %{x}<br>k = %{y}<extra>chosen</extra>"),
    ]
    return figure(traces, "k to deploy by batch size (0 = turn speculation off)",
                  "concurrent sequences (batch size, log scale)", "k (draft tokens per step)",
                  xaxis=LOG_BATCH_AXIS, yaxis=dict(dtick=1, range=[-0.3, K_MAX + 0.3]))


def deploy_options(summary: Summary) -> go.Figure:
    """Throughput at each batch for the four ways to deploy: speculation off, the best fixed k (one k
    at every batch: SGLang without adaptive steps, vLLM before 0.24), the schedule (vLLM's per-batch
    table, TensorRT-LLM's draft_len_schedule) and the per-batch best k (an upper bound that an
    adaptive engine could reach if switching cost nothing), from the summary's own grid."""
    rows = deploy_option_rows(summary)
    b = rows["batch"]
    traces = [
        line(b, rows["off"], "off (plain decoding)", "batch %{x}<br>%{y:,.0f} tok/s<extra>off</extra>",
             line=dict(color="#8c8c8c", width=2, dash="dash")),
        line(b, rows["fixed"], f"fixed k = {rows['fixed_k']} at every batch",
             f"batch %{{x}}<br>%{{y:,.0f}} tok/s<extra>k = {rows['fixed_k']}</extra>", line=dict(color="#d62728", width=2)),
        line(b, rows["schedule"], "schedule (k per batch range, 0 = off)",
             "batch %{x}<br>k = %{customdata}<br>%{y:,.0f} tok/s<extra>schedule</extra>",
             line=dict(color="#1f77b4", width=3.5), customdata=rows["schedule_k"]),
        line(b, rows["upper"], "per-batch best k (upper bound)",
             "batch %{x}<br>k = %{customdata}<br>%{y:,.0f} tok/s<extra>upper bound</extra>",
             line=dict(color="#2ca02c", width=2, dash="dot"), customdata=rows["upper_k"]),
    ]
    return figure(traces, "Off, fixed k, schedule or per-batch best: throughput by batch",
                  "concurrent sequences (batch size, log scale)", "output throughput (tokens/s, all sequences)",
                  xaxis=LOG_BATCH_AXIS, legend=dict(orientation="h", y=-0.25), height=420)


def deploy_option_rows(summary: Summary) -> dict:
    """The numbers deploy_options draws, at batches 1..512 (log-spaced): throughput of each option in
    tokens/s, the k each runs, and the fixed k (the decision's k at the scenario's concurrency, or the
    best k > 0 there where the decision is off). "off" is a server without speculation; the schedule's and
    the upper bound's k = 0 is the off band of a server with speculation configured (the grid's row 0)."""
    s = summary.scenario
    grid = summary.grid if summary.grid is not None else schedule_grid(s)
    batches = BATCHES[BATCHES <= grid.shape[1]]
    plain = plain_throughput(s, batches)  # the same at every α and k: kept per scenario apart from those
    # speculative throughput = speedup × plain throughput (the plain arm has no k): the speedups are the
    # schedule's grid's own (rows 1..k_max, NaN as 0), so moving α predicts nothing here
    spec = grid[1:, batches - 1] * plain[None, :]
    band = plain * grid[0][batches - 1]  # the off band: speculation configured, k = 0 (off_state.off_row)
    through = np.vstack([band[None, :], spec])  # row k: throughput with k (k = 0: the off band)
    conc = min(int(s.concurrency), grid.shape[1]) - 1
    # the decision's k here (the schedule's k at this batch); where that is 0, the best k > 0 here
    fixed_k = int(summary.best_k) or int(smallest_best(grid[1:, conc], axis=0)) + 1
    # the summary's own schedule (its ranges cover batches 1..512, the grid's columns), not walked again
    in_use = np.repeat([k for _, _, k in summary.schedule], [hi - lo + 1 for lo, hi, _ in summary.schedule])[batches - 1]
    upper = best_k_per_batch(grid)[batches - 1]
    cols = np.arange(len(batches))
    return {"batch": batches, "off": plain, "fixed_k": fixed_k, "fixed": through[fixed_k],
            "schedule_k": in_use, "schedule": through[in_use, cols], "upper_k": upper, "upper": through[upper, cols]}
