"""Fit the model's free parameters (roofline.Efficiency) to measured runs by bounded least squares.

Residuals: for every run with a measured speedup, the relative error of the predicted speedup;
for every measured throughput (baseline or speculative), the log ratio of predicted to measured
throughput; for runs of one setup at several batch sizes that give no acceptance (a sweep), the log
ratio of predicted to measured fall of speedup from the sweep's lowest batch (its shape, which barely
depends on acceptance: predicted at α = SHAPE_ALPHA). A row given as a request rate is left out: its
speedup is a latency ratio at that rate, each arm at its own concurrency, not a speedup at one batch.
The per-sequence cost of the speculative step
(spec_seq_scale) is fitted only when the runs span two or more batch sizes: runs at one batch size
cannot tell it from the fixed costs, so it is held there and the message says so.

Every fitted parameter is bounded to its physical range (parameters.PARAMETERS: an efficiency is a
fraction of peak reached by real kernels; engine overheads within ×0.3–×3 of the preset), so a fit
never leaves it; one that ends at an edge says so. With fewer runs than parameters only as many
parameters are fitted as there are runs: those the runs are most sensitive to, and the result
says which were held at their starting values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from specmodel.errors import SpecModelError
from specmodel.model.calibration_file import CALIBRATION_FORMAT, CALIBRATION_VERSION, outside_physical
from specmodel.model.parameters import PARAMETERS
from specmodel.model.roofline import Efficiency
from specmodel.runs.unpredicted import unpredicted_rows
from specmodel.runs.fit_errors import (PLAIN_ONLY, FitErrors, RowGroups, batch_sizes, run_errors, shape_errors, sweeps_of,
                                       throughput_mape, usable_runs)

# What `calibrate` fits unless told otherwise: the parameters runs can tell apart.
DEFAULT_FIT = ("eta_bw", "eta_flops", "t_fixed_ms", "t_spec_overhead_ms", "small_model_exponent", "overhead_scale",
               "spec_seq_scale")
PER_SEQUENCE = "spec_seq_scale"  # needs runs at two or more batch sizes to be pinned
# Each fitted parameter is pulled gently towards its starting value, by this much relative error per
# physical range of departure: a fit then explains the runs with the parameters whose plausible
# range is wide (overheads) before dragging an efficiency far from what kernels reach.
PRIOR_WEIGHT = 0.1


MIN_IMPROVEMENT = 0.01  # chosen: a parameter joins a fit on few runs only if it lowers the squared error by 1%


@dataclass(frozen=True)
class Calibration:
    efficiency: Efficiency  # the fitted parameters (held ones keep their starting values)
    start: Efficiency
    fitted: tuple[str, ...]  # names of the parameters that were fitted
    held: tuple[str, ...]  # names held at their starting values
    rows_used: int
    mape_before_pct: float | None  # mean absolute percentage error of speedup, before / after
    mape_after_pct: float | None
    throughput_mape_before_pct: float | None
    throughput_mape_after_pct: float | None
    message: str  # one paragraph for the user
    at_bound: tuple[str, ...] = ()
    outside_physical: tuple[str, ...] = ()  # fitted parameters that ended outside their physical range
    fitted_on: dict | None = None  # the rows, GPUs, models and engines the fit saw

    def parameters(self) -> dict:
        return {name: getattr(self.efficiency, name) for name in PARAMETERS}

    def to_file(self) -> dict:
        """What `--save-calibration` writes: every parameter, what it was fitted on, the errors."""
        out = self.to_dict()
        out = {"format": CALIBRATION_FORMAT, "version": CALIBRATION_VERSION,
               "parameters": {k: float(v) for k, v in self.efficiency.as_dict().items()}, **{
                   k: v for k, v in out.items() if k != "parameters"}}
        out["fitted_on"] = self.fitted_on or {}
        return out

    def to_dict(self) -> dict:
        r = lambda x: None if x is None else round(float(x), 4)  # noqa: E731
        return {"parameters": {k: r(v) for k, v in self.parameters().items()},
                "start": {k: r(getattr(self.start, k)) for k in PARAMETERS},
                "fitted": list(self.fitted), "held": list(self.held), "at_bound": list(self.at_bound),
                "outside_physical_range": list(self.outside_physical),
                "rows_used": self.rows_used,
                "error_before": {"speedup_mape_pct": r(self.mape_before_pct),
                                 "throughput_mape_pct": r(self.throughput_mape_before_pct)},
                "error_after": {"speedup_mape_pct": r(self.mape_after_pct),
                                "throughput_mape_pct": r(self.throughput_mape_after_pct)},
                "message": self.message}


def calibrate(rows: pd.DataFrame, start: Efficiency | None = None, use_throughput: bool = True,
              parameters: tuple[str, ...] | None = None) -> Calibration:
    """Fit Efficiency to the runs' measured speedups (and throughputs when use_throughput)."""
    start = start or Efficiency()
    usable = usable_runs(rows)
    sweeps = sweeps_of(rows)
    if not usable and not sweeps:
        unnamed = int(sum(unpredicted_rows(rows))) if len(rows) else 0
        if unnamed:
            raise SpecModelError(_no_preset_words(unnamed))
        raise SpecModelError("no run has both an acceptance and a measured speedup or throughput, and no setup "
                             "ran at two or more batch sizes, so there is nothing to calibrate on; load runs "
                             "with measurements")
    names, one_batch = _parameters_to_fit(parameters, usable, sweeps)
    n_residuals = len(usable) + sum(len(g) - 1 for g in sweeps)
    space = _Space.of(start, names, usable, sweeps, use_throughput)
    chosen, result = _choose_and_fit(space, n_residuals)
    best, at_bound = space.best(chosen, result)
    before = FitErrors.of(usable, sweeps, start, use_throughput)
    after = FitErrors.of(usable, sweeps, best, use_throughput)
    runs = _runs_phrase(usable, sweeps)
    # Judged by what was fitted (speedups, throughputs and sweeps' fall with batch together), so a fit
    # that brings the throughputs in at an unchanged speedup error is kept.
    if after.squared() > before.squared() * (1 - 1e-6):  # never hand back a worse fit: say so, and that nothing was changed
        parts = [f"kept every parameter at its starting value: fitting {', '.join(chosen)} on {runs} would have made "
                 "the error on them worse"]
        best, after, chosen, at_bound = start, before, [], ()
    else:
        parts = [f"fitted {', '.join(chosen) or 'nothing'} on {runs}"]
    held = tuple(n for n in names if n not in chosen)
    if held and chosen:
        parts.append(_held_note(held, len(chosen) == n_residuals, n_residuals, len(names), bool(sweeps)))
    if one_batch:
        parts.append(f"held {PER_SEQUENCE} (the per-sequence cost of the speculative step, which decides the batch "
                     "above which speculation stops paying) at its starting value: every run is at one batch size, "
                     "which cannot tell it from the fixed costs; runs at a second, larger batch size would pin it")
        held = held + (PER_SEQUENCE,)
    outside = outside_physical(best, [n for n in chosen]) if best is not start else ()
    parts += _caveats(before, after, at_bound, best, outside)
    seen = usable + [r for g in sweeps for r in g]
    return Calibration(best, start, tuple(chosen), held, len(seen), before.speed_mape(), after.speed_mape(),
                       throughput_mape(before.thr), throughput_mape(after.thr), "; ".join(parts), at_bound, outside,
                       _fitted_on(seen))


def _no_preset_words(unnamed: int) -> str:
    return (f"{unnamed} run{'s' if unnamed != 1 else ''} name{'s' if unnamed == 1 else ''} no preset the model can "
            "predict (judged on the measurement alone), so the model has nothing to fit; name the presets to fit it too")


def no_preset_to_fit(rows: pd.DataFrame) -> str | None:
    """calibrate's refusal, said before a fit is asked for, where every run names no preset the model can predict
    (each judged on its measurement alone: a page greys its button out with this beside it); None otherwise. Reads
    only the runs' no_prediction lines, not the runs."""
    flags = unpredicted_rows(rows) if len(rows) else []
    return _no_preset_words(len(flags)) if flags and all(flags) else None


def _parameters_to_fit(parameters: tuple[str, ...] | None, usable: list[dict],
                       sweeps: list[list[dict]]) -> tuple[list[str], bool]:
    """The parameters to fit (the given ones, else DEFAULT_FIT), and whether PER_SEQUENCE was dropped
    from them because every run is at one batch size."""
    names = list(parameters or DEFAULT_FIT)
    one_batch = PER_SEQUENCE in names and batch_sizes(usable, sweeps) < 2
    if one_batch:  # a per-sequence cost cannot be told from the fixed ones at one batch size
        names.remove(PER_SEQUENCE)
    if not names:
        raise SpecModelError(f"every run is at one batch size, which cannot pin {PER_SEQUENCE} (the per-sequence "
                             "cost of the speculative step); add runs at a second batch size")
    return names, one_batch


@dataclass(frozen=True)
class _Space:
    """What least squares searches: each parameter named in `names` mapped onto [0, 1] across its
    bounds, the rest of the Efficiency at `start`; and the runs it is fitted on."""

    start: Efficiency
    names: list[str]
    lo: np.ndarray
    hi: np.ndarray
    x_start: np.ndarray
    usable: list[dict]
    sweeps: list[list[dict]]
    use_throughput: bool
    usable_groups: RowGroups  # the runs' and the sweeps' scenarios, read once for every Efficiency tried
    sweep_groups: RowGroups

    @classmethod
    def of(cls, start: Efficiency, names: list[str], usable: list[dict], sweeps: list[list[dict]],
           use_throughput: bool) -> "_Space":
        # Bounded to the physical range, not only reported outside it: a fit that would leave it ends at
        # its edge and says so (at_bound), instead of e.g. overhead_scale 1e-14 from three runs.
        lo = np.array([max(PARAMETERS[n].lo, PARAMETERS[n].physical_lo) for n in names])
        hi = np.array([min(PARAMETERS[n].hi, PARAMETERS[n].physical_hi) for n in names])
        x_start = np.clip([getattr(start, n) for n in names], lo, hi)
        return cls(start, names, lo, hi, x_start, usable, sweeps, use_throughput, RowGroups.of(usable),
                   RowGroups.of([r for g in sweeps for r in g]))

    def eff_at(self, x_unit, chosen) -> Efficiency:
        """The Efficiency with the `chosen` parameters at x_unit, the others at their (clipped) start."""
        names, lo, hi = self.names, self.lo, self.hi
        values = {n: float(v) for n, v in zip(names, self.x_start)}
        for name, u in zip(chosen, x_unit):
            i = names.index(name)
            values[name] = float(lo[i] + u * (hi[i] - lo[i]))
        return replace(self.start, **values)

    def residuals(self, x_unit, chosen) -> np.ndarray:
        """Every run's error at x_unit (a run the model refuses counts as a large one), then each
        parameter's pull towards its starting value (PRIOR_WEIGHT)."""
        names, lo, hi, x_start = self.names, self.lo, self.hi, self.x_start
        eff = self.eff_at(x_unit, chosen)
        speed, thr = run_errors(self.usable, eff, self.use_throughput, self.usable_groups)
        shape = shape_errors(self.sweeps, eff, self.sweep_groups)
        prior = [PRIOR_WEIGHT * (lo[names.index(n)] + u * (hi[names.index(n)] - lo[names.index(n)])
                                 - x_start[names.index(n)]) / (PARAMETERS[n].physical_hi - PARAMETERS[n].physical_lo)
                 for n, u in zip(chosen, x_unit)]
        res = np.concatenate([np.nan_to_num(speed, nan=10.0), thr, np.nan_to_num(shape, nan=2.0), prior])
        return res if res.size else np.zeros(1)

    def fit(self, chosen):
        """(least squares' result, its squared error) with the `chosen` parameters free."""
        names, lo, hi, x_start = self.names, self.lo, self.hi, self.x_start
        unit_start = np.array([(x_start[names.index(n)] - lo[names.index(n)]) / (hi[names.index(n)] - lo[names.index(n)])
                               for n in chosen])
        result = least_squares(self.residuals, unit_start, args=(chosen,), bounds=(0.0, 1.0), x_scale=1.0,
                               diff_step=1e-3, xtol=1e-10, ftol=1e-10, max_nfev=200)
        return result, float(np.sum(result.fun ** 2))

    def best(self, chosen, result) -> tuple[Efficiency, tuple[str, ...]]:
        """The fitted Efficiency and the parameters that ended at an edge they were pulled to (one that
        starts at its edge, as t_fixed_ms = 0 does, and stays is not)."""
        if not chosen:
            return self.start, ()
        best = self.eff_at(result.x, chosen)
        at_bound = tuple(n for n, u in zip(chosen, result.x) if (u < 1e-4 or u > 1 - 1e-4)
                         and abs(getattr(best, n) - self.x_start[self.names.index(n)])
                         > 1e-6 * (self.hi - self.lo)[self.names.index(n)])
        return best, at_bound


def _choose_and_fit(space: _Space, n_residuals: int):
    """(the parameters fitted, least squares' result). With at least as many runs as parameters, fit
    them all. With fewer, choose greedily: add the parameter whose fit lowers the squared error most,
    until there are as many as runs or nothing more helps (a parameter the runs do not depend on is
    never chosen)."""
    if n_residuals >= len(space.names):
        chosen = list(space.names)
        return chosen, space.fit(chosen)[0]
    chosen, result = [], None
    cost = float(np.sum(space.residuals(np.zeros(0), []) ** 2))
    while len(chosen) < n_residuals:
        trials = {n: space.fit(chosen + [n]) for n in space.names if n not in chosen}
        name = min(trials, key=lambda n: trials[n][1])
        if trials[name][1] > cost * (1 - MIN_IMPROVEMENT):
            break
        chosen.append(name)
        result, cost = trials[name]
    return chosen, result


def _runs_phrase(usable: list[dict], sweeps: list[list[dict]]) -> str:
    """What the fit saw, in words: '3 run(s)', plain throughputs and sweeps added where there are any."""
    n_plain = sum(1 for r in usable if r.get(PLAIN_ONLY))
    return f"{len(usable) - n_plain} run(s)" + (f", {n_plain} plain throughput(s) of runs without an acceptance"
                                                if n_plain else "") \
        + (f" and {len(sweeps)} sweep(s) without acceptance" if sweeps else "")


def _held_note(held: tuple[str, ...], as_many_as_runs: bool, n_residuals: int, n_names: int, sweeps: bool) -> str:
    """Why the parameters in `held` were not fitted."""
    what = "measurement(s)" if sweeps else "run(s)"
    why = (f"only {n_residuals} {what} for {n_names} parameters; these would lower the error least"
           if as_many_as_runs else "fitting them would not lower the error on these runs")
    return f"held {', '.join(held)} at their starting values ({why})"


def _caveats(before: FitErrors, after: FitErrors, at_bound: tuple[str, ...], best: Efficiency,
             outside: tuple[str, ...]) -> list[str]:
    """The message's closing parts: the sweeps' fall with batch, parameters at an edge or outside their
    physical range, the speedup error before and after."""
    parts = []
    shape0 = before.shape_mape()
    if shape0 is not None:
        parts.append(f"fall of speedup with batch off by {shape0:.1f}% → {after.shape_mape():.1f}%")
    if at_bound:
        parts.append(f"{', '.join(at_bound)} ended at the edge of its physical range (the runs pull "
                     "further than real systems reach: a term the model lacks is probably being absorbed): read "
                     "predictions far from these runs with care")
    if outside:
        parts.append("; ".join(f"{n} = {getattr(best, n):.3g} is outside what real systems reach "
                               f"({PARAMETERS[n].physical_lo:g}-{PARAMETERS[n].physical_hi:g}): a term the model lacks "
                               "is probably being absorbed, so predictions away from these runs are less reliable"
                               for n in outside))
    if before.speed_mape() is not None:
        parts.append(f"speedup error {before.speed_mape():.1f}% → {after.speed_mape():.1f}% (mean absolute percentage)")
    return parts


def _fitted_on(rows: list[dict]) -> dict:
    def names(col):
        return sorted({str(r.get(col)) for r in rows if r.get(col) not in (None, "") and r.get(col) == r.get(col)})
    return {"rows": len(rows), "gpus": names("gpu_preset"), "targets": names("target_preset"),
            "drafts": names("draft_preset"), "methods": names("method"), "engines": names("engine"),
            "files": names("file")}
