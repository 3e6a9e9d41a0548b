"""The runs a calibration fits (specmodel.runs.calibrate) and their errors under an Efficiency: each run's
predicted against measured speedup (relative) and throughputs (log ratio), and each sweep's fall of speedup
with batch (log ratio, predicted at α = SHAPE_ALPHA)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from specmodel.errors import SpecModelError
from specmodel.model.roofline import Efficiency
from specmodel.model.scenario import Scenario, predict, with_changes
from specmodel.runs.unpredicted import unpredicted
from specmodel.runs.review import scenario_for_row
from specmodel.runs.row_scenario import is_rate_driven, left_out_of_fits

SHAPE_ALPHA = 0.7  # acceptance a sweep without one is predicted at (its shape, not its level, is fitted)


def usable_runs(rows: pd.DataFrame) -> list[dict]:
    """The runs with an acceptance and a measurement, then the runs without an acceptance that measured
    plain throughput (PLAIN_ONLY): plain decoding does not depend on acceptance, so such a run pins
    the plain arm's costs (the engine's step and per-sequence overheads, bandwidth) on its own."""
    out, plain = [], []
    for r in rows.to_dict("records"):
        if is_rate_driven(r) or unpredicted(r) or r.get("measured_plausible") is False:
            continue  # no preset to predict it with, or a measurement the two runs do not support
        if r.get("alpha") is None or (isinstance(r["alpha"], float) and math.isnan(r["alpha"])) or left_out_of_fits(r):
            # a row predicted across a spread (k or draft not stated) still measured its plain arm
            if _positive_or_none(r.get("baseline_tok_s")) is not None:
                plain.append({**r, "alpha": SHAPE_ALPHA, PLAIN_ONLY: True})
            continue
        measured = [_positive_or_none(r.get(c)) for c in ("measured_speedup", "baseline_tok_s", "spec_tok_s")]
        if any(m is not None for m in measured):
            out.append(r)
    return out + plain


PLAIN_ONLY = "_plain_only"  # a run in the fit for its plain throughput only (no acceptance to predict the rest)


def sweeps_of(rows: pd.DataFrame) -> list[list[dict]]:
    """Runs without an acceptance but with a measured speedup, grouped by setup (file, workload and
    everything the scenario reads but the batch), where a setup ran at two or more batch sizes; each
    group sorted by batch, its lowest first, at α = SHAPE_ALPHA."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows.to_dict("records"):
        a = r.get("alpha")
        if not (a is None or (isinstance(a, float) and math.isnan(a))) or _positive_or_none(r.get("measured_speedup")) is None \
                or left_out_of_fits(r) or unpredicted(r) or r.get("measured_plausible") is False:
            continue
        r = {**r, "alpha": SHAPE_ALPHA}
        try:
            key = with_changes(scenario_for_row(r), concurrency=1)
        except SpecModelError:
            continue
        groups.setdefault((key, str(r.get("file")), str(r.get("workload")), str(r.get("source"))), []).append(r)
    out = []
    for g in groups.values():
        g = sorted(g, key=lambda r: float(r.get("concurrency") or 1))
        if len({float(r.get("concurrency") or 1) for r in g}) >= 2:
            lowest = float(g[0].get("concurrency") or 1)
            out.append([r for i, r in enumerate(g) if i == 0 or float(r.get("concurrency") or 1) > lowest])
    return out


def shape_errors(sweeps: list[list[dict]], eff: Efficiency, groups: RowGroups | None = None) -> np.ndarray:
    """log(predicted ÷ measured fall of speedup from each sweep's lowest batch), per row above it (`groups`: the
    RowGroups of the sweeps' rows, flattened)."""
    out = []
    flat = _predict_rows([r for g in sweeps for r in g], eff, groups)  # one call: sweeps of one setup share predict()
    starts = np.cumsum([0] + [len(g) for g in sweeps])
    for g, start in zip(sweeps, starts):
        pred = flat[start:start + len(g)]
        if pred[0] is None:
            out.extend([np.nan] * (len(g) - 1))
            continue
        m0 = float(g[0]["measured_speedup"])
        for r, p in zip(g[1:], pred[1:]):
            out.append(np.nan if p is None else math.log((p[0] / pred[0][0]) / (float(r["measured_speedup"]) / m0)))
    return np.array(out, dtype=float)


def _squared(*residuals) -> float:
    return float(sum(np.nansum(np.square(np.asarray(r, dtype=float))) for r in residuals))


def batch_sizes(usable: list[dict], sweeps: list[list[dict]]) -> int:
    """Batch sizes of speculative measurements (a plain throughput alone cannot pin a speculative cost)."""
    return len({float(r.get("concurrency") or 1) for r in [r for r in usable if not r.get(PLAIN_ONLY)]
                + [r for g in sweeps for r in g]})


def _positive_or_none(x):
    """A measured figure as a positive finite number; None when it is anything else."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


@dataclass(frozen=True)
class RowGroups:
    """Rows as _predict_rows predicts them, built once: each row's scenario read from its names, grouped where
    rows differ only in α, k and concurrency (one vectorised predict() a group). Least squares asks for the
    errors of dozens of Efficiencies on the same rows; with the groups built once, each asks only for a copy of
    each group's scenario with that Efficiency (reading every row's names again was ~a quarter of a
    calibration's time)."""

    n: int
    groups: tuple  # (scenario at the default Efficiency, row positions, α, k, concurrency arrays)

    @classmethod
    def of(cls, rows: list[dict]) -> "RowGroups":
        groups: dict[Scenario, list[tuple[int, Scenario]]] = {}
        for i, r in enumerate(rows):
            try:
                s = scenario_for_row(r)
            except SpecModelError:
                continue
            key = s if s.survival is not None else with_changes(s, alpha=0.5, k=0, concurrency=1)  # k=0: any tree depth
            groups.setdefault(key, []).append((i, s))
        return cls(len(rows), tuple((key, tuple(i for i, _ in items), np.array([s.alpha for _, s in items]),
                                     np.array([s.k for _, s in items]), np.array([s.concurrency for _, s in items]))
                                    for key, items in groups.items()))


def _predict_rows(rows: list[dict], eff: Efficiency, groups: RowGroups | None = None
                  ) -> list[tuple[float, float, float] | None]:
    """(speedup, plain tok/s, spec tok/s) per row, None where the model refuses the row. `groups`: the rows'
    RowGroups where the caller keeps them (a fit asks for many Efficiencies' errors on the same rows)."""
    groups = groups or RowGroups.of(rows)
    out: list[tuple[float, float, float] | None] = [None] * groups.n
    for key, positions, alpha, k, concurrency in groups.groups:
        try:
            key = replace(key, efficiency=eff)
            p = predict(key, alpha=alpha, k=k, concurrency=concurrency) if key.survival is None else predict(key)
        except SpecModelError:
            continue
        values = [np.atleast_1d(np.asarray(v, dtype=float))
                  for v in (p.speedup, p.plain.throughput_tok_s, p.spec.throughput_tok_s)]
        for j, i in enumerate(positions):
            out[i] = tuple(float(v[j if v.size > 1 else 0]) for v in values)
    return out


def run_errors(rows: list[dict], eff: Efficiency, use_throughput: bool, groups: RowGroups | None = None):
    """(speedup relative errors, throughput log ratios) for the rows under eff (`groups`: the rows' RowGroups)."""
    speed, thr = [], []
    for r, pred in zip(rows, _predict_rows(rows, eff, groups)):
        if r.get(PLAIN_ONLY):
            m = _positive_or_none(r.get("baseline_tok_s"))
            if use_throughput and pred is not None and pred[1] > 0:
                thr.append(math.log(pred[1] / m))
            continue
        meas = _positive_or_none(r.get("measured_speedup"))
        if pred is None:
            if meas is not None:
                speed.append(np.nan)
            continue
        if meas is not None:
            speed.append(pred[0] / meas - 1.0)
        if use_throughput:
            for col, predicted in (("baseline_tok_s", pred[1]), ("spec_tok_s", pred[2])):
                m = _positive_or_none(r.get(col))
                if m is not None and predicted > 0:
                    thr.append(math.log(predicted / m))
    return np.array(speed, dtype=float), np.array(thr, dtype=float)


def mape(rel) -> float | None:
    rel = np.asarray(rel, dtype=float)
    rel = rel[np.isfinite(rel)]
    return float(np.mean(np.abs(rel)) * 100) if rel.size else None


def throughput_mape(log_ratios) -> float | None:
    return mape(np.expm1(np.asarray(log_ratios, dtype=float)))


@dataclass(frozen=True)
class FitErrors:
    """One Efficiency's errors on the runs: speedups (relative), throughputs and sweeps' shape (log ratios)."""

    speed: np.ndarray
    thr: np.ndarray
    shape: np.ndarray

    @classmethod
    def of(cls, usable: list[dict], sweeps: list[list[dict]], eff: Efficiency, use_throughput: bool) -> "FitErrors":
        speed, thr = run_errors(usable, eff, use_throughput)
        return cls(speed, thr, shape_errors(sweeps, eff))

    def squared(self) -> float:
        return _squared(self.speed, self.thr, self.shape)

    def speed_mape(self) -> float | None:
        return mape(self.speed)

    def shape_mape(self) -> float | None:
        return mape(np.expm1(self.shape))
