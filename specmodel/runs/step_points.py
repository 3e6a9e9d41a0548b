"""Run rows as the step fit's measured points (specmodel.fit.steps), one group per setup.

A group is one workload under one setup (the table's `workload` and `setup` columns: everything but the
concurrency), so a sweep of one server at several concurrencies is one fit. Each row gives its batch (the
concurrency it ran at), its plain step (1000·b / baseline tok/s), its speculative time per emitted token
(1000·b / speculative tok/s), its measured speedup and E. Where the row's names describe a setup the
model knows, the model's own step times give the fit its shape (fit.steps.Shape); where they do not (a
model or GPU with no preset), the fit is a straight line in the batch and needs two concurrencies.
A row given as a request rate, a row whose measurement its E does not allow, and a row with nothing
measured are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from specmodel.errors import SpecModelError
from specmodel.fit.steps import Shape, StepFit, StepPoint, fit_steps
from specmodel.model.off_state import measured_off_cost
from specmodel.model.roofline import Efficiency
from specmodel.model.scenario import predict
from specmodel.runs.row_scenario import float_or_none, is_rate_driven, scenario_for_row
from specmodel.runs.setups import setups_of
from specmodel.runs.unpredicted import unpredicted


@dataclass(frozen=True)
class SetupFit:
    """One setup's runs and the step fit made of them."""

    workload: str
    setup: str
    rows: tuple[int, ...]  # positions in the table
    points: tuple[StepPoint, ...]
    fit: StepFit
    target: str | None = None  # the target as the runs name it
    method: str | None = None


def points_of(rows: pd.DataFrame) -> list[StepPoint | None]:
    """The measured point each row of a table gives (None where it gives nothing the fit uses: a request rate, an
    implausible measurement, no batch above 0, nothing measured), columns at a time: no record of each row (a
    file of 50,000 runs)."""
    keep, b, base, spec, speedup, e = _point_columns(rows)
    with np.errstate(invalid="ignore"):
        has_base, has_spec, has_speedup = base > 0, spec > 0, speedup > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        plain_ms, spec_ms = (1000 * b / base).tolist(), (1000 * b / spec).tolist()
    b, speedup, e = b.tolist(), speedup.tolist(), e.tolist()
    files, numbers = _cells(rows, "file"), _cells(rows, "row")
    out: list[StepPoint | None] = [None] * len(rows)
    for i in np.flatnonzero(keep).tolist():
        where = str(files[i] or "") + (f" row {int(numbers[i])}" if float_or_none(numbers[i]) else "")
        out[i] = StepPoint(b[i], plain_ms[i] if has_base[i] else None, spec_ms[i] if has_spec[i] else None,
                           speedup[i] if has_speedup[i] else None, None if e[i] != e[i] else e[i],
                           where or f"concurrency {b[i]:g}")
    return out


def _point_columns(rows: pd.DataFrame) -> tuple[np.ndarray, ...]:
    """(whether each row gives a point, and its batch, baseline tok/s, speculative tok/s, measured speedup and
    E as numbers, NaN where none): points_of's tests, a column at a time."""
    b, base, spec, speedup, e = (_numbers(rows, c) for c in ("concurrency", "baseline_tok_s", "spec_tok_s",
                                                             "measured_speedup", "tokens_per_step"))
    rate = np.array([v in (True, 1) for v in _cells(rows, "rate_driven")], bool)
    implausible = np.array([v is False for v in _cells(rows, "measured_plausible")], bool)
    with np.errstate(invalid="ignore"):
        keep = ~rate & ~implausible & (b > 0) & ((base > 0) | (spec > 0) | (speedup > 0))
    return keep, b, base, spec, speedup, e


def _cells(rows: pd.DataFrame, column: str) -> list:
    """A column's cells as rows.to_dict("records") gives them (numpy scalars as Python's); None where the
    table has no such column (a record's get)."""
    if column not in rows:
        return [None] * len(rows)
    return [v.item() if isinstance(v, (np.bool_, np.integer, np.floating)) else v for v in rows[column]]


def _numbers(rows: pd.DataFrame, column: str) -> np.ndarray:
    """float_or_none of each of a column's cells, NaN for None (a cell float() cannot read counts as none)."""
    if column not in rows:
        return np.full(len(rows), np.nan)
    values = rows[column]
    if isinstance(values.dtype, np.dtype) and values.dtype.kind in "fiub":
        return values.to_numpy(dtype=float)
    return np.array([_number(v) for v in _cells(rows, column)], dtype=float)


def _number(x) -> float:
    try:
        v = float_or_none(x)
    except (TypeError, ValueError):
        return np.nan
    return np.nan if v is None else v


def shape_of(row: dict, efficiency: Efficiency | None = None, shapes: dict | None = None) -> Shape:
    """The model's step times for the row's setup; where only its draft is no preset, the target's verify with no
    draft (verify_shaped); a straight line where the GPU or target is none. shapes: the shapes made so far, per
    scenario (a setup whose scenario was tabulated before is not predicted again)."""
    if unpredicted(row):
        return verify_shaped(row, efficiency, shapes)
    return _model_shape(row, efficiency, "{target} on {gpu}", shapes)


# chosen: the acceptance of the verify-only shape; E is the same at every batch, so it scales the speculative arm's
# shape (the fit's scale absorbs it) without moving where it bends
VERIFY_SHAPE_ALPHA = 0.5


def verify_shaped(row: dict, efficiency: Efficiency | None = None, shapes: dict | None = None) -> Shape:
    """A setup whose GPU and target are presets but whose draft is none (a draft the tool cannot describe): the
    model's plain step of the target shapes the plain arm, and its step verifying k + 1 tokens a sequence with no
    draft to run (the model's n-gram step at the row's k) shapes the speculative arm: it grows where the target's
    verify does, and the draft's share is left to the runs' offset and scale. A straight line where the GPU or
    target is no preset either."""
    if not (_named(row.get("gpu_preset")) and _named(row.get("target_preset"))):
        return Shape()
    verify_row = {**row, "method": "ngram", "draft_preset": None, "survival": None, "proposal_rate": 1.0,
                  "alpha": VERIFY_SHAPE_ALPHA, "k": float_or_none(row.get("k")) or 1, "concurrency": 1}
    return _model_shape(verify_row, efficiency, "{target} on {gpu}, its verify of k + 1 tokens standing in for "
                        "the speculative step, whose draft is no preset", shapes)


def _model_shape(row: dict, efficiency: Efficiency | None, described_as: str, shapes: dict | None = None) -> Shape:
    """The model's (plain step, speculative step per emitted token) of the row's scenario tabulated against the
    batch; a straight line where the row names no scenario the model can run at every batch."""
    try:
        s = scenario_for_row(row, efficiency)
    except (SpecModelError, KeyError, TypeError, ValueError):
        return Shape()
    key = (s, described_as)  # a Scenario is a frozen dataclass of values: equal scenarios predict alike
    if shapes is not None and key in shapes:
        return shapes[key]
    shape = _tabulated(s, described_as)
    if shapes is not None:
        shapes[key] = shape
    return shape


def _tabulated(s, described_as: str) -> Shape:
    """The model's shape of one scenario (_model_shape)."""

    def steps(grid):
        p = predict(s, concurrency=grid)
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1000 * grid / np.asarray(p.plain.throughput_tok_s), 1000 * grid / np.asarray(p.spec.throughput_tok_s)
    try:
        shape = Shape.of_model(steps, described_as.format(target=s.target, gpu=s.gpu))
    except SpecModelError:  # the model cannot run this setup (it does not fit): a straight line, as for no preset
        return Shape()
    if not (np.all(np.isfinite(shape.plain_ms)) and np.all(np.isfinite(shape.spec_ms_per_token))):
        return Shape()  # nothing fits at some batch: the model cannot shape this setup
    return shape


def _named(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


@dataclass(frozen=True)
class SetupRows:
    """One setup's runs that a fit reads (setup_points), before their points are made and fitted (fit_setups)."""

    workload: str
    setup: str
    rows: tuple[int, ...]  # positions in the table of every run of the setup, in order
    fitted: tuple[int, ...]  # those that give a point the fit sees (at concurrency ≤ top_batch, if given)


def setup_fits(rows: pd.DataFrame, efficiency: Efficiency | None = None, top_batch: float | None = None
               ) -> list[SetupFit]:
    """A step fit per setup with at least one measured point (only rows at concurrency ≤ top_batch, if given)."""
    return fit_setups(rows, setup_points(rows, top_batch), efficiency)


def setup_points(rows: pd.DataFrame, top_batch: float | None = None) -> list[SetupRows]:
    """The runs of each setup (a workload under one setup) that gives at least one point, in the table's order:
    what setup_fits fits, without making the points or fitting them (a page that draws a few setups of hundreds
    fits those few first). Columns at a time: which rows give a point (_point_columns), never a record a row."""
    if rows.empty:
        return []
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (w, setup) in enumerate(zip(_cells(rows, "workload"), setups_of(rows).tolist())):
        groups.setdefault((str(w or ""), setup), []).append(i)
    batch = _numbers(rows, "concurrency")
    below = np.ones(len(rows), bool) if top_batch is None else np.where(np.isnan(batch), 0, batch) <= top_batch
    seen = (_point_columns(rows)[0] & below).tolist()
    out = []
    for (workload, setup), idx in groups.items():
        fitted = tuple(i for i in idx if seen[i])
        if fitted:
            out.append(SetupRows(workload, setup, tuple(idx), fitted))
    return out


def fit_setups(rows: pd.DataFrame, groups: list[SetupRows], efficiency: Efficiency | None = None
               ) -> list[SetupFit]:
    """The step fit of each setup (setup_points of these rows), over the model's shape of its first fitted run's
    scenario. Points and records are made of these setups' rows only; a whole row of each one's first run."""
    positions = sorted({i for g in groups for i in g.rows})
    mine = rows.iloc[positions]
    point = dict(zip(positions, points_of(mine)))
    plain_runs = dict(zip(positions, _cells(mine, "plain_runs")))
    firsts = rows.iloc[[g.fitted[0] for g in groups]].to_dict("records")
    shapes: dict = {}  # the model's shape per scenario: setups of several workloads may share one
    out = []
    for g, first in zip(groups, firsts):
        points = [(i, point[i]) for i in g.fitted]
        fitted = set(g.fitted)
        # above top_batch only the plain half of a run is used: the plain server's step at that batch is what a
        # reviewer measures anyway (it is the server running today); the speculative arm is what the fit predicts
        above = [point[i] for i in g.rows if i not in fitted and point[i] is not None]
        plain_above = [StepPoint(p.batch, plain_ms=p.plain_ms, where=p.where) for p in above if p.plain_ms]
        plain_above += plain_elsewhere([plain_runs[i] for i in g.rows], [p for _, p in points] + plain_above)
        k = int(first["k"]) if float_or_none(first.get("k")) is not None else None
        fit = fit_steps([p for _, p in points] + plain_above, shape_of(first, efficiency, shapes), k)
        fit = replace(fit, off_measured=off_points(rows.iloc[list(g.rows)]))
        target = first.get("target_model") or first.get("target_preset")
        out.append(SetupFit(g.workload, g.setup, g.fitted, tuple(p for _, p in points), fit,
                            None if target is None or target != target else str(target),
                            None if first.get("method") is None else str(first.get("method"))))
    return out


def off_points(rows: pd.DataFrame) -> tuple[tuple[float, float], ...]:
    """(batch, off ÷ plain throughput) of the rows that carry a run with speculation configured and off (`off_tok_s`,
    runs.pairing) beside their plain run, by batch: model.off_state.measured_off_cost's points, as throughput."""
    if "off_tok_s" not in rows or "baseline_tok_s" not in rows:
        return ()
    cost = measured_off_cost(_numbers(rows, "concurrency"), _numbers(rows, "baseline_tok_s"),
                             _numbers(rows, "off_tok_s"), "the runs")
    return () if cost is None else tuple((float(b), 1.0 / (1.0 + float(c))) for b, c in cost.points)


def plain_elsewhere(plain_runs: list, points: list[StepPoint]) -> list[StepPoint]:
    """The plain step of each baseline run that had no speculative run at its concurrency (the rows' `plain_runs`
    cells, runs.pairing) at a batch none of the points measured the plain step at, once each."""
    seen = {p.batch for p in points if p.plain_ms}
    out = []
    for runs in plain_runs:
        for b, tok_s, where in runs if isinstance(runs, tuple) else ():
            if b not in seen and b > 0 and tok_s > 0:
                seen.add(b)
                out.append(StepPoint(b, plain_ms=1000 * b / tok_s, where=where))
    return out


def fits_by_row(rows: pd.DataFrame, fits: list[SetupFit]) -> list[tuple[StepFit | None, bool | None]]:
    """Per row, the usable fit of its setup (workload and setup) and whether the fit saw the row."""
    by_setup = {(f.workload, f.setup): f for f in fits if f.fit.usable}
    out = []
    for i, (r, setup) in enumerate(zip(rows.to_dict("records"), setups_of(rows).tolist())):
        f = by_setup.get((str(r.get("workload") or ""), setup))
        out.append((f.fit, i in f.rows) if f else (None, None))
    return out


def saved_fits_by_row(rows: pd.DataFrame, saved: list) -> list[tuple[StepFit | None, bool | None]]:
    """Per row, the saved fit (fit.saved.SavedFit) of the same target, method and k, where exactly one is."""
    out = []
    for r in rows.to_dict("records"):
        target = r.get("target_model") or r.get("target_preset")
        k = int(r["k"]) if float_or_none(r.get("k")) is not None else None
        match = [s for s in saved if s.fit.usable and (s.fit.k is None or s.fit.k == k)
                 and (s.method is None or s.method == r.get("method"))
                 and (s.target is None or s.target == (None if target != target else target))]
        b = float_or_none(r.get("concurrency"))
        out.append((match[0].fit, b in match[0].fit.batches) if len(match) == 1 else (None, None))
    return out


def with_fit_columns(rows: pd.DataFrame, fits: list[SetupFit] | list[tuple]) -> pd.DataFrame:
    """The rows with `fit_speedup`, `fit_speedup_low`, `fit_speedup_high` (the step fit of the row's setup at
    the row's concurrency and E; empty where the setup has no usable fit) and `fit_used` (whether the row
    was one the fit saw: False is a prediction the fit did not see, a check of it)."""
    out = {c: np.full(len(rows), np.nan) for c in ("fit_speedup", "fit_speedup_low", "fit_speedup_high")}
    used = np.full(len(rows), None, dtype=object)
    per_row = fits if fits and isinstance(fits[0], tuple) else fits_by_row(rows, fits)
    for i, (r, (fit, seen)) in enumerate(zip(rows.to_dict("records"), per_row)):
        b = float_or_none(r.get("concurrency"))
        if fit is None or b is None or b < 1 or is_rate_driven(r):
            continue
        s, low, high = (float(v) for v in fit.speedup(b, float_or_none(r.get("tokens_per_step"))))
        out["fit_speedup"][i], out["fit_speedup_low"][i], out["fit_speedup_high"][i] = s, low, high
        used[i] = seen
    return rows.assign(**out, fit_used=used)


def rows_by_fit(rows: pd.DataFrame, fits: list[SetupFit]) -> list[list[tuple[int, dict]]]:
    """Per fit, (position in the table, row) of each row of its setup, in order: one pass over the table
    whatever the number of fits (a file of 50,000 runs holds hundreds of setups)."""
    groups: dict[tuple[str, str], list[tuple[int, dict]]] = {(f.workload, f.setup): [] for f in fits}
    keys = [(str(w or ""), setup) for w, setup in zip(rows["workload"].tolist() if "workload" in rows
                                                      else [None] * len(rows), setups_of(rows).tolist())]
    mine = [i for i, key in enumerate(keys) if key in groups]  # only these rows as records: the page draws a few
    for i, r in zip(mine, rows.iloc[mine].to_dict("records")):  # setups of a file of hundreds
        groups[keys[i]].append((i, r))
    return [groups[(f.workload, f.setup)] for f in fits]
