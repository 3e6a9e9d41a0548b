"""Decisions built on predict(): the best k, the crossover batch, vLLM-style per-batch schedules,
the verdict's label, the band: the Decision a reviewer reads off one scenario (summarize), and the same
for many runs of one setup at once (summarize_many, files of 200,000 runs), one implementation
(_decide) for both. Numbers and labels only: specmodel.words says them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace

import numpy as np

from specmodel.bounds import bounded_cache
from specmodel.errors import SpecModelError
from specmodel.model.off_state import OffCost, off_row, scenario_off_cost
from specmodel.model.scenario import (Prediction, Scenario, emitted_tokens, predict, speedup_grid,
                                      speedup_per_emitted_token, with_changes)

# chosen (no measurement of run-to-run noise found in bench/evidence/): |speedup − 1| within this is
# "borderline", taken as inside the run-to-run noise of a serving benchmark
BORDERLINE = 0.05
MAX_CROSSOVER_BATCH = 4096  # chosen: the crossover search's reach, above any engine's default running limit (1024)
# chosen: the largest k the advice and schedules try; the chains in bench/evidence/published_dev.csv run
# k <= 7 (only its trees verify more: 21 to 64 tokens)
K_MAX = 8


# chosen (no measurement found): a larger k that gains less than this share over a smaller one is not advised: the gain is inside
# run-to-run noise, and each extra draft token costs KV cache and verify work when acceptance drops.
K_TIE = 0.01


def nan_as_zero(grid, copy: bool = True) -> np.ndarray:
    """np.nan_to_num(grid, nan=0.0) (NaN 0, ±inf the largest finite floats), a new array (copy=False: a float
    array made for this call, cleaned in place), looking one by one only at the cells that are not finite (a
    large grid of finite speedups in one pass)."""
    g = np.array(grid, dtype=float) if copy else np.asarray(grid, dtype=float)
    bad = ~np.isfinite(g)
    if bad.any():
        g[bad] = np.nan_to_num(g[bad], nan=0.0)
    return g


def smallest_best(grid, axis: int = 0):
    """Index along `axis` of the smallest k whose speedup is within K_TIE of the largest (NaN: 0)."""
    g = np.asarray(grid, dtype=float)
    if not np.isfinite(g).all():  # a grid already cleaned (schedule_grid's) is not copied again
        g = nan_as_zero(g)
    top = g.max(axis=axis, keepdims=True)
    return np.argmax(g >= top * (1.0 - K_TIE) - 1e-12, axis=axis)


def best_k(s: Scenario, k_max: int = K_MAX, concurrency=None):
    """(best k in 0..k_max, its speedup) at the scenario's concurrency (or an array of them).
    k = 0 means speculation off (speedup 1); of k values within K_TIE of the best, the smallest."""
    ks = np.arange(0, k_max + 1)
    b = np.asarray(s.concurrency if concurrency is None else concurrency, dtype=float)
    grid = np.nan_to_num(speedup_grid(s, ks, np.atleast_1d(b)), nan=0.0)
    grid[0] = 1.0
    idx = smallest_best(grid, axis=0)
    best = ks[idx]
    speed = grid[idx, np.arange(grid.shape[1])]
    if b.ndim == 0:
        return int(best[0]), float(speed[0])
    return best, speed


def crossover_concurrency(s: Scenario, k: int | None = None) -> int | None:
    """Largest batch B such that speculation does not lose (speedup ≥ 1) at any batch up to B.

    None when it never loses up to MAX_CROSSOVER_BATCH; 0 when it loses already at one sequence.
    The one search, summarize's (_crossovers), on the grid schedule_grid reads.
    """
    kk = s.k if k is None else k
    if kk == 0:
        return None
    ks = np.arange(0, max(K_MAX, kk) + 1)
    sp = _Speedups(s, emitted_tokens(s, ks[None, :]))
    r_sched = speedup_per_emitted_token(s, ks, np.arange(1, SCHEDULE_MAX_BATCH + 1))
    return _crossovers(sp, r_sched, np.array([kk]), np.zeros(1, dtype=np.int64))[0]


def schedule_grid(s: Scenario, k_max: int = K_MAX, max_batch: int = 512, off: OffCost | None = None) -> np.ndarray:
    """Speedup for k in 0..k_max (rows) at every batch in 1..max_batch (columns), NaN as 0: what k_schedule
    and off_above_range read (summarize computes it once for both). Row k = 0 is the schedule's off band
    against a server without speculation (off_state.off_row: 1 where the off cost is free, and where no k
    pays at any batch: nothing is configured then); `off`: the off cost, the engine's where None."""
    grid = np.nan_to_num(speedup_grid(s, np.arange(0, k_max + 1), np.arange(1, max_batch + 1)), nan=0.0)
    paying = (grid[1:] >= 1.0).any()
    grid[0] = off_row(s, np.arange(1, max_batch + 1), scenario_off_cost(s) if off is None else off) if paying else 1.0
    return grid


# chosen (no measurement found): a schedule switches k (between two k, or from off back on, or to off) only
# where the other k beats the one in use by more than this: run-to-run noise of a serving benchmark is taken
# as about 2% (an estimate; bench/evidence/ holds no repeated runs to measure it), and every
# switch has a price the model does not see (vLLM re-pads to another CUDA graph; k flipping 2 <-> 0 around
# a threshold thrashes graphs). The per-batch best k without it is `best_k_per_batch` (an upper bound).
SWITCH_GAIN = 0.02


def best_k_per_batch(grid: np.ndarray) -> np.ndarray:
    """The best k at every batch of a schedule_grid (smallest within K_TIE of the fastest): what an
    engine that re-chose k every step for free could reach (an upper bound, not a schedule to deploy)."""
    return smallest_best(grid, axis=0)


def ks_in_use(grid: np.ndarray) -> np.ndarray:
    """The k a schedule runs at every batch of a speedup grid (k rows 0..K, batch columns 1..B; any
    leading axes are separate grids): the best k of batch 1, kept until another k beats it by more
    than SWITCH_GAIN (a comparison with NaN is false). The one walk, for one grid (k_schedule, a page)
    and for many (summarize_many's runs): each grid's next switch after its last one, where the batch's
    best k beats the k in use by more than SWITCH_GAIN, for all grids at once (a schedule switches a few
    times, not at every batch: each round looks only at the k each grid has in use)."""
    g = np.asarray(grid, dtype=float)
    lead = g.shape[:-2]
    flat = g.reshape((-1,) + g.shape[-2:])
    best = smallest_best(flat, axis=-2)
    n, _, batches = flat.shape
    keep = 1.0 + SWITCH_GAIN
    at_best = np.take_along_axis(flat, best[:, None, :], axis=1)[:, 0, :]
    current = best[:, 0].copy()
    new_k = np.full((n, batches), -1, dtype=np.int64)  # the k switched to at a batch, -1 where none
    new_k[:, 0] = current
    since = np.zeros(n, dtype=np.int64)  # the batch of each grid's last switch
    live = np.arange(n)
    columns = np.arange(batches)
    while live.size:  # each round moves every grid still switching past its last switch
        k_now = current[live]
        gives_way = (best[live] != k_now[:, None]) & (at_best[live] > flat[live, k_now, :] * keep)
        later = gives_way & (columns[None, :] > since[live, None])
        found = later.any(axis=1)
        live = live[found]
        at = np.argmax(later[found], axis=1)
        current[live] = best[live, at]
        new_k[live, at] = current[live]
        since[live] = at
    last_switch = np.maximum.accumulate(np.where(new_k >= 0, columns[None, :], 0), axis=1)
    return np.take_along_axis(new_k, last_switch, axis=1).astype(best.dtype, copy=False).reshape(lead + (batches,))


def k_schedule(s: Scenario, k_max: int = K_MAX, max_batch: int = 512, grid: np.ndarray | None = None) -> list[list[int]]:
    """vLLM's `num_speculative_tokens_per_batch_size`: [[min_batch, max_batch, k], ...] for batch sizes
    1..max_batch (inclusive ranges from 1; k = 0: speculation off). It starts at the best k of batch 1
    and keeps the k in use until another k beats it by more than SWITCH_GAIN (ks_in_use), so it never
    switches k for a gain inside run-to-run noise. `grid`: schedule_grid(s, k_max, max_batch) when
    already computed."""
    grid = schedule_grid(s, k_max, max_batch) if grid is None else grid
    return ranges_of(ks_in_use(grid))


def ranges_of(ks) -> list[list[int]]:
    """[[min_batch, max_batch, k], ...] from the k at every batch 1..B."""
    ranges: list[list[int]] = []
    for b, kb in enumerate(np.asarray(ks).tolist(), start=1):
        if ranges and ranges[-1][2] == kb:
            ranges[-1][1] = b
        else:
            ranges.append([b, b, int(kb)])
    return ranges


def k_at(schedule: list[list[int]], batch: int) -> int | None:
    """The schedule's k at a batch size (None beyond its last range)."""
    for lo, hi, k in schedule:
        if lo <= batch <= hi:
            return int(k)
    return None


def small_flips(grid: np.ndarray) -> int:
    """How often the per-batch best k changes for a gain of at most SWITCH_GAIN over the k before it:
    the switches an engine that chases the best k would make for nothing (k_schedule makes none)."""
    best = best_k_per_batch(grid)
    n = 0
    for i in range(1, grid.shape[1]):
        if best[i] != best[i - 1] and grid[best[i], i] <= grid[best[i - 1], i] * (1.0 + SWITCH_GAIN):
            n += 1
    return n


# A verdict's label -> how its headline reads (specmodel.notes.TONES); any other label is "neutral".
TONE_OF_LABEL = {"pays off": "good", "borderline": "caution", "loses": "bad"}


def tone_of(label: str) -> str:
    """The tone of a verdict label: "pays off" reads good, "borderline" caution, "loses" bad,
    anything else ("off", "unknown") neutral."""
    return TONE_OF_LABEL.get(label, "neutral")


JUDGED = ("pays off", "borderline", "loses")  # verdicts on a speedup; "off" (k = 0) and "unknown" judge none


def band_tone(label: str, tone: str, band: tuple[float, float] | None) -> str:
    """How a verdict's box reads: "caution" where its band straddles 1.0 (the model cannot tell whether
    speculation pays off, whichever way the speedup leans), else the label's own `tone`."""
    return "caution" if label in JUDGED and straddles(band) else tone


def off_above(schedule: list[list[int]]) -> int | None:
    """The batch above which the schedule turns speculation off for good (None if it never
    does within the schedule's range; 0 if it is off from batch 1)."""
    if not schedule or schedule[-1][2] != 0:
        return None
    return schedule[-1][0] - 1


def verdict_label(speedup: float, k: int, spec_fits: bool = True) -> str:
    """A verdict's label: "loses" where speculation does not fit, "off" at k = 0, else "pays off" at
    1 + BORDERLINE and above, "borderline" within BORDERLINE of 1, "loses" below (specmodel.words says it)."""
    if not spec_fits:
        return "loses"
    if k == 0:
        return "off"
    if speedup >= 1 + BORDERLINE:
        return "pays off"
    return "borderline" if speedup >= 1 - BORDERLINE else "loses"


SCHEDULE_MAX_BATCH = 512  # chosen: the schedule's last batch (vLLM's default running limit is 256 or 1024)


@dataclass(frozen=True)
class Decision:
    """What the model decides for one scenario, numbers and labels only (specmodel.words.Summary adds
    the words): the prediction, the k the schedule runs here, the crossover, the schedule, the label."""

    scenario: Scenario
    prediction: Prediction
    best_k: int
    best_k_speedup: float
    crossover_concurrency: int | None
    schedule: list[list[int]]
    label: str  # verdict_label: "pays off" | "borderline" | "loses" | "off"
    spec_fits: bool = True  # False: the draft and its KV cache do not fit beside the target
    band: tuple[float, float] | None = None  # speedup_low, speedup_high (speedup_band)
    off_above_range: tuple[int | None, int | None] | None = None  # off_above_batch_low/high (off_above_range)
    grid: np.ndarray | None = field(default=None, compare=False, repr=False)  # schedule_grid the schedule came from
    off_cost: OffCost | None = None  # what the schedule's off band costs (off_state), measured or the engine's
    # separate pools: a pool with speculation for the batches it pays at (up to pools_above) and one without
    # for the rest beat this schedule by up to pools_gain above pools_above (None: it pays up to 512, or no gain)
    pools_above: int | None = None
    pools_gain: float | None = None
    restart_gain: float | None = None  # a server without speculation over this schedule here, where best_k is 0

    @property
    def off_above(self) -> int | None:
        """The batch above which the schedule turns speculation off (off_above of the schedule)."""
        return off_above(self.schedule)

    @property
    def off_above_k(self) -> int | None:
        """The schedule's k just below the batch where it turns speculation off (None where it never does)."""
        s = self.schedule
        return s[-2][2] if len(s) >= 2 and s[-1][2] == 0 else None

    @property
    def uncertain(self) -> bool:
        """True when the band straddles 1.0: the data leave open whether speculation pays off."""
        return straddles(self.band) and self.scenario.k > 0


def summarize(s: Scenario, k_max: int = K_MAX, band_spans: tuple[float, ...] = (), off: OffCost | None = None
              ) -> Decision:
    """Predict the scenario and decide: best k, crossover, schedule, label, band. `band_spans`: other
    speedups the inputs allow (the ends of a measured acceptance interval), which the band also spans.
    `off`: what the schedule's off band costs where a run measured it (else the engine's, off_state).
    summarize_many's one implementation, for one run whose own speedups make the grid (specmodel.words.summarize
    adds the words).

    >>> d = summarize(Scenario(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3))
    >>> d.label, round(d.prediction.speedup, 2), d.best_k
    ('pays off', 1.7, 3)
    """
    p = predict(s)
    ks = np.arange(0, max(k_max, s.k) + 1)
    one = lambda x: np.array([x])  # noqa: E731 - the one run as arrays of one
    runs = _decide(_Speedups(s, emitted_tokens(s, ks[None, :]), own=True), one(s.k), one(s.concurrency),
                   np.zeros(1, dtype=np.int64), p, [one(float(v)) for v in band_spans], keep_grid=True, off=off)
    grid = runs["grid"]
    schedule = ranges_of(runs["in_use"][0])
    between = off_above_range(grid) if s.k else None
    number = lambda x: None if not np.isfinite(x) else float(x)  # noqa: E731 - NaN: none
    return Decision(s, p, int(runs["best_k"][0]), float(runs["best_k_speedup"][0]), runs["crossover"][0], schedule,
                    verdict_label(float(p.speedup), s.k, bool(runs["spec_fits"][0])), bool(runs["spec_fits"][0]),
                    (float(runs["speedup_low"][0]), float(runs["speedup_high"][0])), between, grid, runs["off"],
                    runs["pools_above"][0], number(runs["pools_gain"][0]), number(runs["restart_gain"][0]))


class _Speedups:
    """How the runs of one setup get their speedups: speedup(α, k, B) = tokens[u, k] · ratio(k, B), with
    tokens[u, k] what a step emits per sequence at the u-th distinct α (or the setup's profile) and ratio
    free of α (scenario.speedup_per_emitted_token): at a given k and batch, α changes only the tokens a
    step emits. Best k, crossover and schedule for thousands of distinct α then need the ratio once per
    setup (a k × batch grid) and multiplications. `own`: the base carries the runs' α or profile (summarize;
    a profile's runs), so a band variant predicts them as they are."""

    def __init__(self, base: Scenario, tokens: np.ndarray, own: bool = False):
        self.base, self.tokens, self.own = base, tokens, own

    def ratio(self, scenario: Scenario, ks, batches) -> np.ndarray:
        return speedup_per_emitted_token(scenario, ks, batches)

    def at_runs(self, scenario: Scenario, k, conc, u_idx) -> np.ndarray:
        """Each run's speedup under `scenario` (a band variant of the base: another version of the same
        engine, which emits the same tokens per step)."""
        if self.own:
            return np.broadcast_to(np.asarray(predict(scenario, k=k, concurrency=conc).speedup, dtype=float), k.shape)
        c_uniq, c_idx = np.unique(conc, return_inverse=True)
        r = self.ratio(scenario, np.arange(self.tokens.shape[1]), c_uniq)
        return self.tokens[u_idx, k] * r[k, c_idx.reshape(-1)]


def _decide(sp: _Speedups, k: np.ndarray, conc: np.ndarray, u_idx: np.ndarray, p: Prediction,
            spans: list[np.ndarray], keep_grid: bool = False, off: OffCost | None = None) -> dict[str, np.ndarray]:
    """The decision for runs (k, concurrency, α row u_idx) of one group: the k the schedule runs at each
    run's concurrency (best k beyond the schedule's 512 batches; 0 where a server without speculation beats
    the schedule there by more than SWITCH_GAIN) and its speedup, the crossover, where the schedule turns
    speculation off and its k just below, whether speculation fits, the band, and the schedule against a
    server without speculation (`off`: its off band's cost, the engine's where None; off_state); `in_use`:
    the schedule's k at every batch per α row."""
    n = len(k)
    ks = np.arange(sp.tokens.shape[1])
    vec = lambda x: np.broadcast_to(np.asarray(x, dtype=float), (n,))  # noqa: E731 - scalars from one run
    speedup = vec(p.speedup)
    cost = scenario_off_cost(sp.base) if off is None else off
    row = off_row(sp.base, np.arange(1, SCHEDULE_MAX_BATCH + 1), cost)
    r_sched = sp.ratio(sp.base, ks, np.arange(1, SCHEDULE_MAX_BATCH + 1))
    off_u, last_k_u, in_use, grid, pools = _schedules(sp.tokens, r_sched, keep_grid, row)
    inside = conc <= SCHEDULE_MAX_BATCH
    col = np.where(inside, conc, 1).astype(int) - 1
    best = np.where(inside, in_use[u_idx, col], 0)
    best_speed = nan_as_zero(sp.tokens[u_idx, best] * r_sched[best, col], copy=False)
    configured = pools[0][u_idx] != 0  # speculation pays somewhere: the schedule configures it (off band at k = 0)
    here = np.where(best == 0, np.where(configured, row[col], 1.0), best_speed)  # the schedule's speedup there
    beaten = inside & (best > 0) & (here * (1.0 + SWITCH_GAIN) < 1.0)  # a plain server beats the schedule here
    best[beaten] = 0
    best_speed[best == 0] = 1.0
    with np.errstate(divide="ignore"):
        restart = np.where(inside & (best == 0) & (here > 0), 1.0 / np.where(here > 0, here, 1.0), np.nan)
    if (~inside).any():  # beyond the schedule: best k at the run's own concurrency (best_k)
        rows = np.flatnonzero(~inside)
        c_uniq, c_idx = np.unique(conc[rows], return_inverse=True)
        g = nan_as_zero(sp.tokens[u_idx[rows]] * sp.ratio(sp.base, ks, c_uniq)[:, c_idx.reshape(-1)].T, copy=False)
        g[:, 0] = 1.0
        best[rows] = smallest_best(g, axis=1)
        best_speed[rows] = g[np.arange(len(rows)), best[rows]]
    band_low, band_high = band_of([speedup, *spans, *_variant_speedups(sp, k, conc, u_idx)])
    with np.errstate(invalid="ignore"):
        uncertain = (band_low < 1.0) & (1.0 < band_high) & (k > 0)
    out = {"best_k": best, "best_k_speedup": best_speed, "crossover": _crossovers(sp, r_sched, k, u_idx),
           "off_above": off_u[u_idx], "off_above_k": last_k_u[u_idx], "in_use": in_use,
           "spec_fits": (k == 0) | (vec(p.spec.max_concurrency) >= 1), "speedup_low": band_low,
           "speedup_high": band_high, "uncertain": uncertain, "off": cost, "off_cost": cost.at(conc),
           "pools_above": _objects([None if v < 0 else v for v in pools[0][u_idx].tolist()]),
           "pools_gain": pools[1][u_idx], "restart_gain": restart}
    if keep_grid:
        out["grid"] = grid
    return out


def _variant_speedups(sp: _Speedups, k, conc, u_idx) -> list[np.ndarray]:
    """Each run's speedup in each of band_variants (an engine version that differs; one it refuses left out)."""
    values = []
    for other in band_variants(sp.base):
        with contextlib.suppress(SpecModelError):
            values.append(sp.at_runs(other, k, conc, u_idx))
    return values


def _crossovers(sp: _Speedups, r_sched: np.ndarray, k: np.ndarray, u_idx: np.ndarray) -> np.ndarray:
    """crossover_concurrency per run: the last batch before the first losing one (speedup below 1 or not
    a number) in 1..MAX_CROSSOVER_BATCH, None where none loses or k = 0; batches past the schedule's
    are predicted only for the runs that do not lose within it."""
    crossover = np.full(len(k), None, dtype=object)
    for kv in sorted(set(k[k > 0].tolist())):  # not np.unique: it loads numpy.ma (the What-if page loads none)
        rows = np.flatnonzero(k == kv)
        with np.errstate(divide="ignore"):
            need = 1.0 / sp.tokens[u_idx[rows], kv]
        first, found = _first_below(r_sched[kv], need)
        rest = rows[~found]
        if rest.size and MAX_CROSSOVER_BATCH > SCHEDULE_MAX_BATCH:
            later = sp.ratio(sp.base, [kv], np.arange(SCHEDULE_MAX_BATCH + 1, MAX_CROSSOVER_BATCH + 1))[0]
            more, found_more = _first_below(later, need[~found])
            first[~found], found[~found] = more + SCHEDULE_MAX_BATCH, found_more
        crossover[rows[found]] = _objects(first[found].tolist())
    return crossover


def _first_below(row: np.ndarray, need: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each threshold in `need`: the first index of `row` whose value is below it (NaN counts as
    below), and whether there is one."""
    falling = np.minimum.accumulate(np.where(np.isnan(row), -np.inf, row))
    first = np.searchsorted(-falling, -need, side="right")
    return first, first < len(row)


def _objects(values: list) -> np.ndarray:
    """A list as a 1-d object array of its items."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# chosen (memory only, same result): schedule grid elements per numpy operation (memory stays ~ 16 MB)
_CHUNK_ELEMENTS = 2_000_000


def _schedules(tokens: np.ndarray, r_sched: np.ndarray, keep_grid: bool = False, row: np.ndarray | None = None):
    """Per row of tokens (one α): (off_above of its schedule, -1 where None; the schedule's k just below
    it, -1 where None), the k the schedule runs at every batch 1..512 (rows × batches), the first row's
    whole schedule_grid where keep_grid (else None), and (pools_above, -1 where None; pools_gain, NaN where
    none) of _pools. `row`: the off band's speedup at every batch (k = 0; off_state.off_row), 1 where None."""
    rows, k_count, batches = tokens.shape[0], tokens.shape[1] - 1, r_sched.shape[1]
    row = np.ones(batches) if row is None else np.asarray(row, dtype=float)
    first = None
    if keep_grid:
        first = nan_as_zero(tokens[0][:, None] * r_sched, copy=False)
        first[0] = row if (first[1:] >= 1.0).any() else 1.0  # never pays: unconfigured, k = 0 is a plain server
    if k_count == 0:
        return (np.zeros(rows, dtype=np.int64), np.full(rows, -1, dtype=np.int64), np.zeros((rows, batches), int),
                first, (np.full(rows, -1, dtype=np.int64), np.full(rows, np.nan)))
    # Above the sequences that fit every batch runs the same: from the first batch whose column (the off
    # band's included) equals the last one, every column is that one, and a schedule (the k in use, switched
    # only where another k beats it) that met it once keeps its k at the next; it is walked up to there and held.
    same = (r_sched == r_sched[:, -1:]) | (np.isnan(r_sched) & np.isnan(r_sched[:, -1:]))
    differs = np.flatnonzero(~(same.all(axis=0) & (row == row[-1])))
    width = min(batches, (int(differs[-1]) + 1 if differs.size else 0) + 1)
    chunk = max(1, _CHUNK_ELEMENTS // ((k_count + 1) * width))
    off, last_k = np.empty(rows, dtype=np.int64), np.empty(rows, dtype=np.int64)
    pools_above, pools_gain = np.empty(rows, dtype=np.int64), np.empty(rows)
    in_use = np.empty((rows, batches), dtype=int)
    for start in range(0, rows, chunk):
        g = nan_as_zero(tokens[start:start + chunk, :, None] * r_sched[None, :, :width], copy=False)
        g[:, 0, :] = row[:width]
        ks_used = ks_in_use(g)
        above, gain = _pools(g, ks_used)
        ks_used[above == 0] = 0  # speculation never pays against a plain server: leave it unconfigured (off)
        pools_above[start:start + chunk], pools_gain[start:start + chunk] = above, np.where(above == 0, np.nan, gain)
        if width < batches:
            ks_used = np.concatenate([ks_used, np.repeat(ks_used[:, -1:], batches - width, axis=1)], axis=1)
        in_use[start:start + chunk] = ks_used
        off[start:start + chunk], last_k[start:start + chunk] = _off_and_last_k(ks_used)
    return off, last_k, in_use, first, (pools_above, pools_gain)


def _pools(g: np.ndarray, ks_used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per grid (k rows, batch columns from 1; `ks_used` its schedule): the largest batch at which speculation
    at its best k still pays against a server without it (-1: it pays at the last column, so no split is
    needed; 0: it never pays), and what separate pools (speculation up to that batch, a plain server above it)
    gain over the schedule above that batch at most: the plain server ÷ the schedule's own speedup there (NaN
    where there is no such batch). Columns left out after the last one are equal to it (_schedules)."""
    paying = g[:, 1:, :].max(axis=1) >= 1.0
    cols = g.shape[2]
    last = np.where(paying.any(axis=1), cols - 1 - np.argmax(paying[:, ::-1], axis=1), -1)
    above = np.where(paying[:, -1], -1, last + 1)
    sched = np.take_along_axis(g, ks_used[:, None, :], axis=1)[:, 0, :]
    later = np.arange(cols)[None, :] >= above[:, None]  # index b - 1 >= above: batch b above it
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(later & (sched > 0), 1.0 / np.where(sched > 0, sched, 1.0), np.nan)
    gain = np.where((above >= 0)[:, None], gain, np.nan)
    best = np.full(len(above), np.nan)
    has = np.isfinite(gain).any(axis=1)
    best[has] = np.nanmax(gain[has], axis=1)
    return above, best


def _off_and_last_k(ks_used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row (the k at every batch from 1): off_above and the k of the range before the last of its
    ranges_of schedule, as Decision.off_above and off_above_k read it, without building the ranges (-1 where None)."""
    last = ks_used[:, -1]
    changed = ks_used != last[:, None]
    has_before = changed.any(axis=1)
    # index of the last batch whose k differs from the final one (-1 where none does)
    last_change = np.where(has_before, ks_used.shape[1] - 1 - np.argmax(changed[:, ::-1], axis=1), -1)
    before_k = ks_used[np.arange(len(last)), np.maximum(last_change, 0)]
    off = np.where(last != 0, -1, last_change + 1)
    return off, np.where((last != 0) | ~has_before, -1, before_k)


# summarize() for many runs of one setup at once, for files of 200,000 runs. A setup is everything of a
# Scenario except α, k and concurrency (GPU, models, method, timings, calibration); its runs share one
# ratio grid (_Speedups).
FIELDS = ("speedup", "tokens_per_step", "break_even_tokens_per_step", "break_even_alpha", "plain_tok_s",
          "spec_tok_s", "best_k", "best_k_speedup", "crossover", "off_above", "off_above_k", "spec_fits",
          "speedup_low", "speedup_high", "uncertain", "off_cost", "pools_above", "pools_gain", "restart_gain", "error")
NUMBER_FIELDS = frozenset({"speedup", "tokens_per_step", "break_even_tokens_per_step", "break_even_alpha", "plain_tok_s",
                           "spec_tok_s", "best_k_speedup", "speedup_low", "speedup_high", "off_cost", "pools_gain",
                           "restart_gain"})


def setup_of(s: Scenario) -> Scenario:
    """The setup a scenario belongs to: its α, k and concurrency set to fixed values (k = 0 skips
    the per-k checks, which summarize_many makes per run)."""
    return with_changes(s, alpha=0.5, k=0, concurrency=1)


def summarize_many(setup: Scenario, alpha, k, concurrency, off: OffCost | None = None) -> dict[str, np.ndarray]:
    """Per run (α[i], k[i], concurrency[i]) on `setup`: the FIELDS, as arrays (NUMBER_FIELDS as floats,
    NaN where a run has none; the others as objects, None where a run has none). `error` holds the
    message summarize() raised for a run (its other fields NaN or None). A survival profile in the
    setup is used for every run (α is then ignored), as in summarize(). `off`: the off band's cost the
    setup's runs measured (the engine's where None), as summarize() takes it."""
    alpha = np.asarray(alpha, dtype=float).reshape(-1)
    k = np.asarray(k, dtype=float).reshape(-1)
    conc = np.asarray(concurrency, dtype=float).reshape(-1)
    n = len(k)
    out = {f: np.full(n, np.nan) if f in NUMBER_FIELDS else np.full(n, None, dtype=object) for f in FIELDS}
    ok = _valid_runs(setup, alpha, k, conc)
    k_grid = np.maximum(K_MAX, np.where(ok, k, 0)).astype(int)
    for kk in np.unique(k_grid[ok]):
        idx = np.flatnonzero(ok & (k_grid == kk))
        try:
            part = _many(setup, alpha[idx], k[idx].astype(int), conc[idx].astype(int), int(kk), off)
        except SpecModelError as exc:  # the setup itself refused (nothing fits): summarize() says the same
            _one(setup, alpha[idx[0]], k[idx[0]], conc[idx[0]], out, idx[0], off)
            part = {"error": [str(exc)] * len(idx)} if out["error"][idx[0]] == str(exc) else None
        if part is None:
            ok[idx] = False
            continue
        for f, values in part.items():  # a part the setup refused has only its errors
            out[f][idx] = values
    for i in np.flatnonzero(~ok):  # one by one: runs summarize() refuses, with their messages
        _one(setup, alpha[i], k[i], conc[i], out, i, off)
    return out


def _valid_runs(setup: Scenario, alpha, k, conc) -> np.ndarray:
    """Runs whose α, k and concurrency pass Scenario.validated() (the others go one by one and
    get its message)."""
    ok = np.isfinite(k) & (k >= 0) & (k == np.round(k)) & np.isfinite(conc) & (conc >= 1) & (conc == np.round(conc))
    if setup.survival is None:
        ok &= np.isfinite(alpha) & (alpha >= 0) & (alpha <= 1)
    if setup.draft_depth is not None:
        ok &= ~((k > 0) & (setup.draft_depth > k))
    return ok


def _many(setup: Scenario, alpha, k, conc, k_top: int, off: OffCost | None = None) -> dict[str, np.ndarray]:
    """summarize_many's runs of one k range, every α at once: decided by _decide, with the predictions' own
    numbers beside."""
    ks = np.arange(0, k_top + 1)
    if setup.survival is not None:  # every run at the setup's profile (α ignored), as summarize() predicts
        tokens, u_idx, run_alpha = emitted_tokens(setup, ks[None, :]), np.zeros(len(k), dtype=np.int64), None
    else:
        uniq, u_idx = np.unique(alpha, return_inverse=True)
        tokens, u_idx, run_alpha = emitted_tokens(setup, ks[None, :], uniq[:, None]), u_idx.reshape(-1), alpha
    p = predict(setup, alpha=run_alpha, k=k, concurrency=conc)
    return _fields(p, _decide(_Speedups(setup, tokens, own=run_alpha is None), k, conc, u_idx, p, [], off=off), len(k))


def _fields(p: Prediction, runs: dict, n: int) -> dict[str, np.ndarray]:
    """summarize_many's FIELDS (but error) of n runs from their prediction and _decide."""
    vec = lambda x: np.broadcast_to(np.asarray(x, dtype=float), (n,))  # noqa: E731 - scalars from one run
    off, off_k = runs["off_above"], runs["off_above_k"]
    return {"speedup": vec(p.speedup), "tokens_per_step": vec(p.tokens_per_step),
            "break_even_tokens_per_step": vec(p.break_even_tokens_per_step),
            "break_even_alpha": vec(p.break_even_alpha), "plain_tok_s": vec(p.plain.throughput_tok_s),
            "spec_tok_s": vec(p.spec.throughput_tok_s), "best_k": _objects(runs["best_k"].tolist()),
            "best_k_speedup": runs["best_k_speedup"], "crossover": runs["crossover"],
            "off_above": _objects([None if v < 0 else v for v in off.tolist()]),
            "off_above_k": _objects([None if v < 0 else v for v in off_k.tolist()]),
            "spec_fits": _objects(runs["spec_fits"].tolist()), "speedup_low": runs["speedup_low"],
            "speedup_high": runs["speedup_high"], "uncertain": _objects(runs["uncertain"].tolist()),
            "off_cost": vec(runs["off_cost"]), "pools_above": runs["pools_above"], "pools_gain": runs["pools_gain"],
            "restart_gain": runs["restart_gain"]}


def _one(setup: Scenario, alpha, k, conc, out: dict, i: int, off: OffCost | None = None) -> None:
    """One run through summarize() (runs the grouped path does not cover, with their messages), into out[...][i]."""
    try:
        s = with_changes(setup, alpha=float(alpha), k=int(k) if k == round(k) else k,
                         concurrency=int(conc) if conc == round(conc) else conc)
        d = summarize(s, off=off)
    except SpecModelError as exc:
        out["error"][i] = str(exc)
        return
    except (TypeError, ValueError, OverflowError) as exc:  # NaN k or concurrency: not a number to predict at
        out["error"][i] = f"cannot predict at k = {k}, concurrency = {conc}: {exc}"
        return
    p = d.prediction
    values = {"speedup": float(p.speedup), "tokens_per_step": float(p.tokens_per_step),
              "break_even_tokens_per_step": float(p.break_even_tokens_per_step),
              "break_even_alpha": float(p.break_even_alpha), "plain_tok_s": float(p.plain.throughput_tok_s),
              "spec_tok_s": float(p.spec.throughput_tok_s), "best_k": d.best_k, "best_k_speedup": d.best_k_speedup,
              "crossover": d.crossover_concurrency, "off_above": d.off_above, "off_above_k": d.off_above_k,
              "spec_fits": d.spec_fits, "speedup_low": d.band[0] if d.band else None,
              "speedup_high": d.band[1] if d.band else None, "uncertain": d.uncertain,
              "off_cost": float(d.off_cost.at(d.scenario.concurrency)) if d.off_cost else None,
              "pools_above": d.pools_above, "pools_gain": d.pools_gain, "restart_gain": d.restart_gain, "error": None}
    for f, v in values.items():
        out[f][i] = np.nan if v is None and f in NUMBER_FIELDS else v


def off_above_range(grid: np.ndarray):
    """(low, high): the batch above which speculation at its best k stops beating the schedule's off band
    (grid row 0: a server without speculation where the off cost is free), at the band's low and high ends
    (BAND_RATIO); None for an end where it still pays at SCHEDULE_MAX_BATCH, 0 where it never pays. The
    range a measurement has to settle. `grid`: schedule_grid's."""
    best, off = grid[1:].max(axis=0), grid[0]

    def last_paying(ratio: float):
        losing = np.flatnonzero(best * ratio * (1.0 - K_TIE) <= off)
        return None if losing.size == 0 else int(losing[0])  # batches[i] - 1 == i

    return last_paying(BAND_RATIO[0]), last_paying(BAND_RATIO[1])


# The band is an 80% interval of the model's error where it was not tuned: the 10% and 90% quantiles
# of measured ÷ predicted speedup on the development set (bench/evidence/published_dev.csv), every
# source predicted with the fitted engine constants re-fitted without it (leave-one-source-out) and
# the sources weighted equally. `python -m bench fidelity` derives them ("band:" line; re-derived
# 2026-12-01 after engine versions were read from the rows' notes and SGLang's per-sequence constants
# re-fitted) and tests/test_fidelity.py holds this constant to them: ×0.769..×1.504, which covers 86%
# of the 29 rows that carry their own acceptance (4 sources: Leviathan et al. 2023, MagicDec,
# SpecDecode-Bench, vLLM PR #29334), few enough that the band is itself uncertain.
BAND_RATIO = (0.769, 1.504)


def straddles(band: tuple[float, float] | None) -> bool:
    """True when a band reaches both sides of 1.0: the inputs leave open whether speculation pays off."""
    return band is not None and band[0] < 1.0 < band[1]


def band_text(low: float, high: float) -> str:
    """A band as the pages, tables and report write it: "0.68–1.38"."""
    return f"{low:.2f}–{high:.2f}"


def band_around(low, high):
    """The band from the lowest and highest prediction the inputs allow: each widened by BAND_RATIO."""
    return np.asarray(low, dtype=float) * BAND_RATIO[0], np.asarray(high, dtype=float) * BAND_RATIO[1]


def engine_variants(s: Scenario) -> list[str]:
    """The engine versions whose behaviour the band also spans for this scenario (Engine.other_behaviours:
    the engine named without a version, or newer than any release read)."""
    return [text for text, _ in _variants_of(s.engine, s.method.name, s.gpu.kernel_name, s.target.attention)]


# chosen: one entry per engine, method, GPU kernel and attention a process meets (a few dozen). A What-if
# rerun after an α move asked for the same versions three times (words, band, plan), parsing every
# version the engine's data names each time, and built the variant engines again (~0.2 ms together).
@bounded_cache(256)
def _variants_of(engine, method: str, gpu_name: str, attention: str) -> tuple:
    """(engine text, that engine) per Engine.other_behaviours."""
    return tuple((text, engine.variant(text)) for text in engine.other_behaviours(method, gpu_name, attention))




def band_variants(s: Scenario) -> list[Scenario]:
    """The scenarios the inputs leave as likely as this one: an engine named without a version run as
    each behaviour of its versions that costs more (Engine.other_behaviours: SGLang before v0.5.11 runs EAGLE
    without its overlap scheduler; vLLM from 0.19.0 on Instinct GPUs verifies with a kernel that does not
    pack the GQA group).

    Calibrated parameters add no variant. Calibrated on a source's other runs with their own
    acceptance and predicting each run out of sample (`python -m bench fidelity`, "calibrated band":
    27 runs of Leviathan et al. 2023, MagicDec and SpecDecode-Bench), measured ÷ predicted spans
    ×0.85..×1.50 (10-90%) and BAND_RATIO holds 89% of them: calibration moves the prediction but does
    not make the error on another run of the same setup smaller, so a calibrated band is BAND_RATIO
    around the calibrated prediction. Keeping the uncalibrated prediction as a second end (as before)
    only widened it by however far calibration had moved the prediction."""
    return [replace(s, engine=engine)
            for _, engine in _variants_of(s.engine, s.method.name, s.gpu.kernel_name, s.target.attention)]


def speedup_band(s: Scenario, speedup: float | None = None) -> tuple[float, float]:
    """(low, high): an 80% interval of the speedup (BAND_RATIO) around the predictions the inputs
    leave open: the scenario's own (calibrated or not) and an engine version that differs
    (band_variants). `speedup`: the scenario's own prediction when already known (saves predicting it
    again)."""
    values = [float(predict(s).speedup) if speedup is None else float(speedup)]
    for other in band_variants(s):
        with contextlib.suppress(SpecModelError):
            values.append(float(predict(other).speedup))
    low, high = band_of([np.array([v]) for v in values])
    return float(low[0]), float(high[0])


def band_of(values: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per run: the band around the lowest and highest finite speedup the inputs allow (`values`: arrays
    of one speedup per run each: the run's own, other speedups its inputs allow, its band_variants'),
    widened by BAND_RATIO (band_around); NaN where a run has none."""
    stack = np.vstack(values)
    finite = np.isfinite(stack)
    low, high = band_around(np.where(finite, stack, np.inf).min(axis=0), np.where(finite, stack, -np.inf).max(axis=0))
    none = ~finite.any(axis=0)
    return np.where(none, np.nan, low), np.where(none, np.nan, high)
