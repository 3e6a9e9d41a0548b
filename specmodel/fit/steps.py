"""Measure → fit: each arm's step time as a function of the batch, from the reviewer's own runs.

What a run measures at batch b (a benchmark's concurrency, a /metrics window's running requests):

- the plain arm's step, T_p(b) = 1000·b / plain tokens per second (ms; a step emits one token a sequence);
- the speculative arm's time per emitted token and sequence, G(b) = T_s(b) / E = 1000·b / speculative
  tokens per second (ms), where T_s is the speculative step (drafts, verify, overheads) and E the tokens
  each step emits; a run that gives its speedup S but no throughput gives G(b) = T_p(b) / S.

The speedup at any batch is then S(b) = T_p(b) / G(b). Each arm is fitted as two terms over a shape:

- **linear** (no GPU and model the tool can describe): T(b) = fixed + per_sequence · b, the fixed cost of
  a step (weights read, launches, scheduling) and what each running sequence adds (its KV reads, its
  share of the verify tokens and of the draft passes). Two concurrencies pin both terms; one pins
  their sum at that batch only, so nothing is predicted elsewhere.
- **model-shaped** (a setup the model describes): T(b) = offset + scale · M(b), M the model's own step
  at b (plain step; speculative step per emitted token), which carries where the step turns
  compute-bound. Without runs, offset = 0 and scale = 1: the model as it stands. Each run pulls the
  terms away from those defaults (a Gaussian prior, PRIOR_*); a term counts as pinned when the runs cut
  its prior spread by PINNED_SHRINK.

The fit is weighted least squares in relative error with a noise floor (NOISE_FLOOR); with more
runs than terms the residuals widen it. The band of S(b) comes from the terms' covariance (and so
widens away from the measured batches), at BAND_Z. A fit whose terms leave their physical range (a
step that shrinks as the batch grows, a negative step time within the range asked about) is refused,
with the terms that left it: nothing is predicted from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable

import numpy as np

# measured: one plain vLLM server's output throughput at one concurrency in two passes of the real-engine lab
# differed by 0.5%, 10.9% and 1.6% at c = 1, 4, 16 (tests/fixtures/real_engine/README.md, passes 2 and 3)
NOISE_FLOOR = 0.05  # chosen from that measurement: 5% sits between a quiet and a busy run
BAND_Z = 1.2816  # chosen: a two-sided 80% band (issue 44 asks 70–90% coverage)
# chosen: the model's growth with batch may be off by half either way before runs say otherwise
PRIOR_SCALE_SD = 0.5
PRIOR_OFFSET_SHARE = 0.5  # chosen: the model's fixed cost may be off by half of its step at the lowest batch
PINNED_SHRINK = 0.5  # chosen: a term is "pinned" when the runs at least halve its prior spread
MAX_SCALE = 10.0  # chosen: a model-shaped term ×10 away from the model means the shape does not describe the runs
MIN_SCALE = 0.1  # chosen: as MAX_SCALE, the other way
MODEL_MISFIT_PCT = 2 * NOISE_FLOOR * 100  # chosen: runs off the model's shape by twice their noise are not its shape
SLOPE_TOLERANCE_SD = 2.0  # chosen: a per-sequence term below zero by more than 2 sd is a step that shrinks with the batch
MAX_LOG_SD = 20.0  # chosen: a band wider than e^±25 says nothing more; capped so that it stays a finite number
OFF_SEARCH_MAX = 4096  # chosen: the largest batch the turn-off search looks at (engines cap running sequences at 256–1024)
# chosen: a measured speedup this far from 1.0 (the noise floor) says on which side of break-even its batch lies;
# nearer, the run is break-even within its noise and brackets nothing
CLEAR_OF_ONE = NOISE_FLOOR
FAR = 4.0  # chosen: a prediction beyond 4× the largest measured batch is an extrapolation (and a claim stops there)

ARMS = ("plain", "spec")
SPEEDUP_ONLY = "speedup_only"  # the speculative arm read off measured speedups through the plain arm
ONE_BATCH = "one_batch"  # every run at one batch
MODEL_SHAPE_MISFIT = "model_shape_misfit"  # the model's shape missed the runs: a straight line was fitted
SPEC_HELD = "spec_held_above_plain"  # the runs put the speculative step below the plain step's level or growth
LINEAR = "linear"
MODEL_SHAPED = "model"
TERMS = {LINEAR: ("fixed_ms", "per_sequence_ms"), MODEL_SHAPED: ("offset_ms", "scale")}
# What the runs pin of each arm, whatever the terms: its level (the step at the measured batches) and its
# growth with the batch. Near-flat model steps make offset and scale trade off; their sum is still pinned.
QUANTITIES = ("level", "growth")


@dataclass(frozen=True)
class StepPoint:
    """One measurement at one batch. Units in the names; None where the run does not give it."""

    batch: float
    plain_ms: float | None = None  # plain step, 1000·b / plain tok/s
    spec_ms_per_token: float | None = None  # speculative time per emitted token and sequence, 1000·b / spec tok/s
    speedup: float | None = None  # measured speedup (used where spec_ms_per_token is missing)
    tokens_per_step: float | None = None  # measured E
    where: str = ""  # the run it came from, for messages (file, row, window)


@dataclass(frozen=True)
class Shape:
    """How each arm's step grows with batch before the runs speak: the model's step times in ms at each
    batch of `batches` (plain step; speculative step per emitted token), or None for a straight line."""

    batches: tuple[float, ...] = ()
    plain_ms: tuple[float, ...] = ()
    spec_ms_per_token: tuple[float, ...] = ()
    described_as: str = ""  # the setup the model described ("Llama 3.1 8B on H100"), for messages

    @property
    def kind(self) -> str:
        return MODEL_SHAPED if self.batches else LINEAR

    def basis(self, arm: str, b) -> np.ndarray:
        """The second column of the fit's design matrix at batches b: b itself, or the model's step."""
        b = np.asarray(b, dtype=float)
        if not self.batches:
            return b
        values = self.plain_ms if arm == "plain" else self.spec_ms_per_token
        return np.exp(np.interp(np.log(b), np.log(self.batches), np.log(values)))

    @classmethod
    def of_model(cls, step_ms: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], described_as: str,
                 top: float = OFF_SEARCH_MAX) -> "Shape":
        """Tabulate a model's (plain step, speculative step per emitted token) on a log grid up to top."""
        grid = _log_grid(1.0, float(top), 49, whole=True)
        plain, spec = step_ms(grid)
        return cls(tuple(grid.tolist()), tuple(np.asarray(plain, float).tolist()),
                   tuple(np.asarray(spec, float).tolist()), described_as)


@dataclass(frozen=True)
class ArmFit:
    """One arm's two terms: mean, covariance and which the runs pinned."""

    kind: str
    mean: tuple[float, float]
    cov: tuple[tuple[float, float], tuple[float, float]]
    pinned: tuple[str, ...]
    defaults: tuple[str, ...]  # terms left at their defaults (the model's value): nothing pinned them
    points: int
    residual_pct: float | None  # root-mean-square relative residual of the runs (None: as many runs as terms)

    def growth_sd(self, shape: Shape, arm: str, b, measured: tuple[float, ...]) -> np.ndarray:
        """Relative standard deviation of T(b) / T(b0), b0 the measured batch nearest b (in log)."""
        b = np.asarray(b, dtype=float)
        ref = np.asarray(measured, dtype=float)
        b0 = ref[np.argmin(np.abs(np.log(b)[..., None] - np.log(ref)), axis=-1)]
        x, x0 = (np.stack([np.ones_like(v), shape.basis(arm, v)], axis=-1) for v in (b, b0))
        mean = np.asarray(self.mean)
        d = x / (x @ mean)[..., None] - x0 / (x0 @ mean)[..., None]  # gradient of log T(b) - log T(b0)
        return np.sqrt(np.maximum(np.einsum("...i,ij,...j->...", d, np.asarray(self.cov), d), 0.0))

    def at(self, shape: Shape, arm: str, b) -> tuple[np.ndarray, np.ndarray]:
        """(step ms, its standard deviation) at batches b."""
        x = np.stack([np.ones_like(np.asarray(b, float)), shape.basis(arm, b)], axis=-1)
        mean = x @ np.asarray(self.mean)
        var = np.einsum("...i,ij,...j->...", x, np.asarray(self.cov), x)
        return mean, np.sqrt(np.maximum(var, 0.0))


@dataclass(frozen=True)
class StepFit:
    """Both arms fitted over one shape, and what the fit could not settle."""

    shape: Shape
    plain: ArmFit | None
    spec: ArmFit | None
    k: int | None
    tokens_per_step: float | None  # the runs' mean E (None: they give none)
    batches: tuple[float, ...]  # the batches the runs measured
    refused: tuple[str, ...] = ()  # "arm.term" that left its physical range
    unpinned: tuple[str, ...] = ()  # "arm.term" nothing pinned and no model supplies
    notes: tuple[str, ...] = field(default=())  # labels for words/: "speedup_only", "one_batch", ...
    plain_batches: tuple[float, ...] = ()  # batches where the plain step was measured (beyond `batches` too)
    measured: tuple[tuple[float, float], ...] = ()  # (batch, speedup) the runs measured, both arms at one batch
    # (batch, off ÷ plain throughput) of the runs' runs with speculation configured and switched off (k = 0), where
    # they measured it: what the off band of a schedule costs on this server (words.off_cost.measured_off_words)
    off_measured: tuple[tuple[float, float], ...] = ()

    @property
    def usable(self) -> bool:
        return self.plain is not None and self.spec is not None and not self.refused and not self.unpinned

    def speedup(self, batch, tokens_per_step: float | None = None):
        """(speedup, low, high) at batches batch; tokens_per_step rescales to another E than the runs'."""
        if not self.usable:
            raise ValueError("this fit predicts nothing: see refused / unpinned")
        tp, tp_sd = self.plain.at(self.shape, "plain", batch)
        g, g_sd = self.spec.at(self.shape, "spec", batch)
        s = tp / g
        if tokens_per_step is not None and self.tokens_per_step:
            s = s * tokens_per_step / self.tokens_per_step
        if SPEEDUP_ONLY in self.notes and self.plain.points == 0:
            # the speculative arm was read off the speedups through this same plain arm: its level cancels,
            # only its growth between the nearest measured batch and this one is uncertain
            tp_sd = tp * self.plain.growth_sd(self.shape, "plain", batch, self.batches)
        sd = np.minimum(np.sqrt((tp_sd / tp) ** 2 + (g_sd / g) ** 2), MAX_LOG_SD)
        low = np.minimum(s * np.exp(-BAND_Z * sd), s / self._beyond_runs(batch, tp, g))
        return s, low, s * np.exp(BAND_Z * sd)

    def _beyond_runs(self, batch, tp, g) -> np.ndarray:
        """How much slower than the fit the speculative step may be where a straight line is taken past the largest
        batch its runs measured (1 within them, or over the model's shape): the line grows the speculative step at
        least as the plain step grows (held), but a verify runs the target over k + 1 tokens a sequence where the
        plain step runs one, so once the plain step grows with the batch the speculative one may grow up to
        (k + 1)× as much (physical, not fitted): the band's low end reaches that, so a run there is what settles it."""
        b = np.asarray(batch, dtype=float)
        if self.shape.kind != LINEAR or not self.k or not self.batches:
            return np.ones_like(b)
        top = max(self.batches)
        tp_top = float(self.plain.at(self.shape, "plain", [top])[0][0])
        e = self.tokens_per_step or 1.0
        ts_top = e * float(self.spec.at(self.shape, "spec", [top])[0][0])
        grown = np.maximum(np.asarray(tp, dtype=float) - tp_top, 0.0)
        slowest = ts_top + (self.k + 1) * grown  # k + 1 tokens verified a sequence for the plain step's one
        return np.where(b > top, np.maximum(slowest / (e * np.asarray(g, dtype=float)), 1.0), 1.0)

    def ms_per_token(self, arm: str, batch, tokens_per_step: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(ms between two tokens of one sequence, its standard deviation) of an arm at batches batch: the plain
        step, or the speculative step per emitted token (at tokens_per_step instead of the runs' E if given)."""
        if not self.usable:
            raise ValueError("this fit predicts nothing: see refused / unpinned")
        mean, sd = getattr(self, arm).at(self.shape, arm, batch)
        if arm == "spec" and tokens_per_step is not None and self.tokens_per_step:
            mean, sd = mean * self.tokens_per_step / tokens_per_step, sd * self.tokens_per_step / tokens_per_step
        return mean, sd

    def largest_batch(self, arm: str, max_ms: float, tokens_per_step: float | None = None) -> tuple[int, int]:
        """(at the fit, at the band's slow edge) the largest batch up to OFF_SEARCH_MAX at which every sequence
        of the arm still gets a token every max_ms; 0 where not even batch 1 does."""
        grid = np.arange(1, OFF_SEARCH_MAX + 1, dtype=float)
        mean, sd = self.ms_per_token(arm, grid, tokens_per_step)
        slow = mean * np.exp(BAND_Z * sd / mean)
        return tuple(int(np.sum(np.cumprod(v <= max_ms))) for v in (mean, slow))

    def off_above(self, tokens_per_step: float | None = None) -> tuple[int | None, int | None, int | None]:
        """The last batch at which speculation still pays (speedup ≥ 1), and the same for the band's low and
        high edge: (at the fit, pessimistic, optimistic). None where it pays at every batch up to
        OFF_SEARCH_MAX; 0 where it pays at none."""
        grid = np.arange(1, OFF_SEARCH_MAX + 1, dtype=float)
        s, low, high = self.speedup(grid, tokens_per_step)
        return self._within_measured(tuple(_last_paying(v) for v in (s, low, high)), tokens_per_step)

    def band_reaches_one(self, tokens_per_step: float | None = None) -> int | None:
        """The first batch up to FAR × the largest measured one at which the band's high end reaches 1.0 (None: it
        stays below). off_above's search takes the speedup to fall with the batch; where it rises (a CPU server's
        per-step overheads shared by more sequences), a fit that loses at every batch may still not be sure of it
        above its runs."""
        grid = np.arange(1, int(FAR * max(self.batches or (1.0,))) + 1, dtype=float)
        at = np.flatnonzero(self.speedup(grid, tokens_per_step)[2] >= 1.0)
        return int(grid[at[0]]) if at.size else None

    def measured_bracket(self, tokens_per_step: float | None = None) -> tuple[float | None, float | None]:
        """(the largest batch the runs measured clearly paying below every clearly losing one, the smallest
        measured clearly losing above every clearly paying one): where the runs themselves place break-even,
        whatever the fit's line. Each end None where no run gives it, both None where the runs' verdicts are not
        in order (a loss below a win: noise or an odd curve, left to the fit). Speedups are taken to
        tokens_per_step as speedup() takes them (the acceptance of another workload or a live window)."""
        scale = tokens_per_step / self.tokens_per_step if tokens_per_step is not None and self.tokens_per_step else 1
        wins = [b for b, s in self.measured if s * scale >= 1 + CLEAR_OF_ONE]
        losses = [b for b, s in self.measured if s * scale <= 1 - CLEAR_OF_ONE]
        if wins and losses and max(wins) >= min(losses):
            return None, None
        return (max(wins) if wins else None), (min(losses) if losses else None)

    def _within_measured(self, off: tuple, tokens_per_step: float | None) -> tuple:
        """off_above's (at the fit, low, high) held inside measured_bracket: the runs are the ground truth, so a
        batch they measured paying is not past the threshold and one they measured losing is."""
        win, loss = self.measured_bracket(tokens_per_step)
        if win is None and loss is None:
            return off
        first = int(math.ceil(win)) if win is not None else 0  # the last paying batch is at least the win's
        last = int(math.ceil(loss)) - 1 if loss is not None else None  # and below the loss's

        def held(v):
            v = max(first, v) if v is not None else None
            if last is not None:
                v = last if v is None else min(last, v)
            return v
        return tuple(held(v) for v in off)

    def to_dict(self) -> dict:
        arm = lambda a: None if a is None else {  # noqa: E731
            "kind": a.kind, "terms": dict(zip(TERMS[a.kind], map(_r, a.mean))),
            "cov": [[float(v) for v in row] for row in a.cov], "pinned": list(a.pinned),
            "defaults": list(a.defaults), "points": a.points,
            "residual_pct": None if a.residual_pct is None else round(a.residual_pct, 2)}
        return {"shape": self.shape.kind, "described_as": self.shape.described_as,
                "shape_batches": list(self.shape.batches), "shape_plain_ms": list(self.shape.plain_ms),
                "shape_spec_ms_per_token": list(self.shape.spec_ms_per_token),
                "plain": arm(self.plain), "spec": arm(self.spec), "k": self.k,
                "tokens_per_step": None if self.tokens_per_step is None else _r(self.tokens_per_step),
                "batches": list(self.batches), "refused": list(self.refused), "unpinned": list(self.unpinned),
                "notes": list(self.notes), "plain_batches": list(self.plain_batches),
                "measured": [[_r(b), _r(v)] for b, v in self.measured],
                "off_measured": [[_r(b), _r(v)] for b, v in self.off_measured]}

    @classmethod
    def from_dict(cls, d: dict) -> "StepFit":
        shape = Shape(tuple(d.get("shape_batches") or ()), tuple(d.get("shape_plain_ms") or ()),
                      tuple(d.get("shape_spec_ms_per_token") or ()), d.get("described_as") or "")

        def arm(a):
            if a is None:
                return None
            return ArmFit(a["kind"], tuple(float(a["terms"][t]) for t in TERMS[a["kind"]]),
                          tuple(tuple(float(v) for v in row) for row in a["cov"]), tuple(a["pinned"]),
                          tuple(a["defaults"]), int(a["points"]), a.get("residual_pct"))
        return cls(shape, arm(d.get("plain")), arm(d.get("spec")), d.get("k"), d.get("tokens_per_step"),
                   tuple(float(b) for b in d.get("batches") or ()), tuple(d.get("refused") or ()),
                   tuple(d.get("unpinned") or ()), tuple(d.get("notes") or ()),
                   tuple(float(b) for b in d.get("plain_batches") or ()),
                   tuple((float(b), float(v)) for b, v in d.get("measured") or ()),
                   tuple((float(b), float(v)) for b, v in d.get("off_measured") or ()))


def schedule_across_k(fits: dict[int, StepFit], top: int, tokens_per_step: dict[int, float] | None = None
                      ) -> list[list[int]]:
    """One server's step fits at several k (the same setup, workload and method) as one schedule over batches 1 to
    top: [[first batch, last batch, k], ...], k = 0 for off. At each batch the k whose fit predicts the highest
    speedup among those still on there by their own off_above (held inside what their runs measured, as each
    k's own decision line says), off where none is; each k at its own runs' E (each k has its own acceptance), or
    at `tokens_per_step[k]` where given (a live window's acceptance)."""
    ks = sorted(k for k, f in fits.items() if f.usable and k)
    if not ks:
        return [[1, top, 0]]
    e = tokens_per_step or {}
    grid = np.arange(1, top + 1, dtype=float)
    speedup = np.stack([np.asarray(fits[k].speedup(grid, e.get(k))[0], dtype=float) for k in ks])
    last_on = [fits[k].off_above(e.get(k))[0] for k in ks]  # None: on at every batch it looks at
    on = np.stack([grid <= (top if b is None else b) for b in last_on])
    best = np.argmax(np.where(on, speedup, -np.inf), axis=0)
    chosen = np.where(on.any(axis=0), np.asarray(ks)[best], 0).tolist()
    out: list[list[int]] = []
    for b, k in enumerate(chosen, start=1):
        if out and out[-1][2] == k:
            out[-1][1] = b
        else:
            out.append([b, b, int(k)])
    return out


def switch_range(fits: dict[int, StepFit], schedule: list[list[int]], tokens_per_step: dict[int, float] | None = None
                 ) -> tuple[int, int, int, int, int | None] | None:
    """The first switch of a schedule across k (schedule_across_k) from one k to another, both on, and how sure the
    runs are of it: (the last batch at the first k, that k, the next k, the last batch up to it at which the first
    k's speculative step per token is faster beyond both fits' bands (0: none), the first batch after it at which the
    next k's is (None: none up to the schedule's end)). The two speculative arms alone decide it: the plain step is
    the same server's at both k. None where the schedule switches k nowhere."""
    e = tokens_per_step or {}
    for here, after in zip(schedule, schedule[1:]):
        ka, kb = here[2], after[2]
        if not (ka and kb):
            continue
        grid = np.arange(1, schedule[-1][1] + 1, dtype=float)
        ga, sa = fits[ka].ms_per_token("spec", grid, e.get(ka))
        gb, sb = fits[kb].ms_per_token("spec", grid, e.get(kb))
        gap, sd = np.log(gb / ga), np.sqrt((sa / ga) ** 2 + (sb / gb) ** 2)
        switch = here[1]
        first_clear = np.flatnonzero(gap[:switch] > BAND_Z * sd[:switch])
        next_clear = np.flatnonzero(-gap[switch:] > BAND_Z * sd[switch:])
        return (switch, ka, kb, int(first_clear[-1]) + 1 if first_clear.size else 0,
                int(next_clear[0]) + switch + 1 if next_clear.size else None)
    return None


def _r(x: float) -> float:
    return float(f"{float(x):.6g}")


def _last_paying(s: np.ndarray) -> int | None:
    below = np.flatnonzero(~(s >= 1.0))
    if below.size == 0:
        return None
    return int(below[0])  # grid starts at batch 1: index i is batch i + 1, so the last paying batch is i


def fit_steps(points: list[StepPoint], shape: Shape = Shape(), k: int | None = None) -> StepFit:
    """Fit both arms to the points. Never raises on what the runs cannot pin: the result says it. Where the
    model's shape misses runs that pin both arms on their own (MODEL_MISFIT_PCT), the straight line is
    fitted instead, and the result says so (MODEL_SHAPE_MISFIT)."""
    fit = _fit_over(points, shape, k)
    if shape.kind == LINEAR or SPEEDUP_ONLY in fit.notes:
        return fit
    misfit = any(a is not None and a.residual_pct is not None and a.residual_pct > MODEL_MISFIT_PCT
                 for a in (fit.plain, fit.spec))
    line = _fit_over(points, Shape(), k) if misfit else None
    if line is None or not line.usable:
        return fit
    return replace(line, notes=line.notes + (MODEL_SHAPE_MISFIT,), shape=replace(line.shape,
                                                                                described_as=shape.described_as))


def _fit_over(points: list[StepPoint], shape: Shape, k: int | None) -> StepFit:
    points = [p for p in points if p.batch and p.batch > 0]
    # the batches the speculative arm was measured at (a plain-only point, e.g. the plain half of a run above
    # --fit-up-to, pins the plain step there and is listed in plain_batches)
    batches = tuple(sorted({float(p.batch) for p in points if _positive(p.spec_ms_per_token) or _positive(p.speedup)}
                           or {float(p.batch) for p in points}))
    plain_batches = tuple(sorted({float(p.batch) for p in points if _positive(p.plain_ms)}))
    notes = []
    es = [p.tokens_per_step for p in points if _positive(p.tokens_per_step)]
    e_fit = float(np.mean(es)) if es else None

    def at_fit_e(p: StepPoint, g: float) -> tuple[float, float]:
        # the speculative step T_s = E·G is what grows with the batch; a run's acceptance is its own (its
        # prompts, its sampling), so each run's G is taken to the runs' mean E before the batch trend is fitted
        return p.batch, g * p.tokens_per_step / e_fit if e_fit and _positive(p.tokens_per_step) else g

    plain_obs = [(p.batch, p.plain_ms) for p in points if _positive(p.plain_ms)]
    plain = _fit_arm(plain_obs, shape, "plain")
    spec_obs = [at_fit_e(p, p.spec_ms_per_token) for p in points if _positive(p.spec_ms_per_token)]
    from_speedup = [p for p in points if not _positive(p.spec_ms_per_token) and _positive(p.speedup)]
    if from_speedup and plain is not None:
        notes.append(SPEEDUP_ONLY)
        tp, _ = plain.at(shape, "plain", [p.batch for p in from_speedup])
        spec_obs += [at_fit_e(p, float(t) / float(p.speedup)) for p, t in zip(from_speedup, tp)]
    spec = _fit_arm(spec_obs, shape, "spec")
    if shape.kind == LINEAR and plain is not None and spec is not None and plain_obs and e_fit:
        held = _held_above_plain(plain_obs, spec_obs, e_fit)
        if held is not None:
            plain, spec = held
            notes.append(SPEC_HELD)
    if len(batches) == 1:
        notes.append(ONE_BATCH)
    unpinned = tuple(f"{name}.{q}" for name, a in (("plain", plain), ("spec", spec)) if a is None
                     for q in QUANTITIES)
    fit = StepFit(shape, plain, spec, k, e_fit, batches, (), unpinned, tuple(notes), plain_batches,
                  _measured_speedups(points))
    return _checked(fit)


def _measured_speedups(points: list[StepPoint]) -> tuple[tuple[float, float], ...]:
    """(batch, speedup) of each point that measured both arms (or gave its speedup), in batch order."""
    out = []
    for p in points:
        if _positive(p.speedup):
            out.append((float(p.batch), float(p.speedup)))
        elif _positive(p.plain_ms) and _positive(p.spec_ms_per_token):
            out.append((float(p.batch), float(p.plain_ms) / float(p.spec_ms_per_token)))
    return tuple(sorted(out))


def _held_above_plain(plain_obs, spec_obs, e: float) -> tuple[ArmFit, ArmFit] | None:
    """Both straight-line arms fitted together where the separate fits let the speculative step T_s = E·G fall
    below the plain step or grow more slowly than it: a speculative step runs the target over every sequence as
    the plain step does, and drafts and verifies more, so T_s(b) = T_p(b) + extra_1 + extra_per_sequence·(b − 1)
    with its extra at batch 1 and the extra's growth both ≥ 0 (and so a speedup never above E at any batch ≥ 1).
    The extras that the runs put below zero are held at zero (least squares over the feasible set: every choice
    of held extras tried, the best feasible one kept). None where the separate fits already keep both ≥ 0 (then
    they are this fit)."""
    bp = np.array([o[0] for o in plain_obs], float)
    yp = np.array([o[1] for o in plain_obs], float)
    bs = np.array([o[0] for o in spec_obs], float)
    ys = np.array([o[1] for o in spec_obs], float)
    # θ = (f, g, extra_1, extra_per_sequence): T_p = f + g·b; G = (f + g·b + extra_1 + extra_per_seq·(b − 1)) / E
    x = np.vstack([np.stack([np.ones_like(bp), bp, 0 * bp, 0 * bp], 1),
                   np.stack([np.ones_like(bs), bs, np.ones_like(bs), bs - 1], 1) / e])
    y = np.concatenate([yp, ys])
    w = 1.0 / (NOISE_FLOOR * y) ** 2
    best = None
    for free in ((2, 3), (2,), (3,), ()):
        cols = [0, 1, *free]
        a = x[:, cols]
        precision = a.T @ (w[:, None] * a)
        if np.linalg.matrix_rank(precision) < len(cols):
            continue
        cov_free = np.linalg.inv(precision)
        theta = np.zeros(4)
        theta[cols] = cov_free @ (a.T @ (w * y))
        if np.any(theta[2:] < 0):
            continue
        if free == (2, 3):
            return None  # nothing held: the separate fits stand
        chi = float(np.sum(w * (x @ theta - y) ** 2))
        if best is None or chi < best[0]:
            cov = np.zeros((4, 4))
            cov[np.ix_(cols, cols)] = cov_free
            best = (chi, theta, cov)
    if best is None:
        return None
    _, theta, cov = best
    n_p, n = len(yp), len(y)
    rel = (x @ theta - y) / y
    widen = max(1.0, float(np.sum((rel / NOISE_FLOOR) ** 2)) / (n - np.count_nonzero(np.diag(cov)))) \
        if n > np.count_nonzero(np.diag(cov)) else 1.0  # residuals beyond the noise floor widen the band
    to_spec = np.array([[1, 0, 1, -1], [0, 1, 0, 1]], float) / e  # (fixed, per sequence) of G

    def arm(mean, c, r, points):
        residual = float(np.sqrt(np.mean(r ** 2))) * 100 if len(r) > 2 else None
        return ArmFit(LINEAR, (float(mean[0]), float(mean[1])), tuple(map(tuple, (c * widen).tolist())), QUANTITIES,
                      (), points, residual)
    return (arm(theta[:2], cov[:2, :2], rel[:n_p], n_p),
            arm(to_spec @ theta, to_spec @ cov @ to_spec.T, rel[n_p:], n - n_p))


def _positive(x) -> bool:
    if type(x) is float:  # most calls (a fit of a large file's setups asks it of every point several times)
        return 0.0 < x < math.inf
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@lru_cache(maxsize=256)  # chosen: a table's fits ask for a few distinct grids (their largest batch sets _checked's)
def _log_grid(start: float, stop: float, num: int, whole: bool = False) -> np.ndarray:
    """np.geomspace(start, stop, num), rounded to whole batches and made unique where whole; made once per
    arguments (a file of hundreds of setups asked for the same grid hundreds of times) and read-only."""
    grid = np.geomspace(start, stop, num)
    grid = np.unique(np.round(grid)) if whole else grid
    grid.flags.writeable = False
    return grid


def _fit_arm(obs: list[tuple[float, float]], shape: Shape, arm: str) -> ArmFit | None:
    """Weighted least squares of T(b) = a + c·basis(b), in relative error, with the model's prior where
    there is a model; None where the observations cannot pin a linear arm (fewer than two batches)."""
    if not obs:
        if shape.kind == LINEAR:
            return None
        return _prior_only(shape, arm)
    b = np.array([o[0] for o in obs], dtype=float)
    y = np.array([o[1] for o in obs], dtype=float)
    x = np.stack([np.ones_like(b), shape.basis(arm, b)], axis=1)
    w = 1.0 / (NOISE_FLOOR * y) ** 2
    precision = x.T @ (w[:, None] * x)
    rhs = x.T @ (w * y)
    prior_mean, prior_prec = _prior(shape, arm)
    precision_post = precision + np.diag(prior_prec)
    if np.linalg.matrix_rank(precision_post) < 2 or len(set(b.tolist())) < 2 and shape.kind == LINEAR:
        return None
    cov = np.linalg.inv(precision_post)
    mean = cov @ (rhs + prior_prec * prior_mean)
    rel = (x @ mean - y) / y
    n = len(y)
    p_eff = float(np.trace(cov @ precision))  # terms the runs fit (< 2 where the model's prior holds them)
    residual = float(np.sqrt(np.mean(rel ** 2))) * 100 if n > p_eff + 0.1 else None
    if residual is not None:
        chi2 = float(np.sum((rel / NOISE_FLOOR) ** 2)) / (n - p_eff)
        cov = cov * max(1.0, chi2)  # residuals beyond the noise floor widen the band
    pinned, defaults = _pinned(cov, prior_prec, x, shape.kind)
    return ArmFit(shape.kind, (float(mean[0]), float(mean[1])), tuple(map(tuple, cov.tolist())), pinned, defaults,
                  n, residual)


def _prior(shape: Shape, arm: str) -> tuple[np.ndarray, np.ndarray]:
    """(prior mean, prior precision) of (a, c): none on a straight line; the model as it stands otherwise."""
    if shape.kind == LINEAR:
        return np.zeros(2), np.zeros(2)
    first = float(shape.basis(arm, [shape.batches[0]])[0])
    return np.array([0.0, 1.0]), np.array([1.0 / (PRIOR_OFFSET_SHARE * first) ** 2, 1.0 / PRIOR_SCALE_SD ** 2])


def _prior_only(shape: Shape, arm: str) -> ArmFit:
    mean, prec = _prior(shape, arm)
    cov = np.diag(1.0 / prec)
    return ArmFit(shape.kind, (0.0, 1.0), tuple(map(tuple, cov.tolist())), (), QUANTITIES, 0, None)


def _pinned(cov: np.ndarray, prior_prec: np.ndarray, x: np.ndarray, kind: str
            ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(pinned, at the model's values) of "level" and "growth": a straight line's are both pinned by the
    two batches it needs; a model-shaped arm's where the runs cut the prior spread by PINNED_SHRINK: its
    level at the runs' mean design point, its growth as its scale."""
    if kind == LINEAR:
        return QUANTITIES, ()
    prior = np.diag(1.0 / prior_prec)
    ref = x.mean(axis=0)
    level = float(ref @ cov @ ref) <= PINNED_SHRINK ** 2 * float(ref @ prior @ ref)
    growth = cov[1, 1] <= PINNED_SHRINK ** 2 * prior[1, 1]
    pinned = tuple(q for q, ok in zip(QUANTITIES, (level, growth)) if ok)
    return pinned, tuple(q for q in QUANTITIES if q not in pinned)


def _checked(fit: StepFit) -> StepFit:
    """The fit, or the fit marked refused where a term left its physical range."""
    refused = []
    top = max(fit.batches + fit.plain_batches or (1.0,)) * 4
    grid = _log_grid(1.0, float(max(top, 2.0)), 32)
    for name in ARMS:
        a = getattr(fit, name)
        if a is None:
            continue
        sd = np.sqrt(np.diag(np.asarray(a.cov)))
        if a.kind == LINEAR and a.mean[1] < -SLOPE_TOLERANCE_SD * sd[1]:
            refused.append(f"{name}.{TERMS[LINEAR][1]}")
        if a.kind == MODEL_SHAPED and not MIN_SCALE <= a.mean[1] <= MAX_SCALE:
            refused.append(f"{name}.{TERMS[MODEL_SHAPED][1]}")
        step, _ = a.at(fit.shape, name, grid)
        if np.any(step <= 0):
            refused.append(f"{name}.{TERMS[a.kind][0]}")
    if not refused:
        return fit
    return replace(fit, refused=tuple(refused))
