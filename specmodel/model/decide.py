"""Decisions built on predict(): the best k, the crossover batch, vLLM-style per-batch schedules,
the verdict in words (one vocabulary for pages, CLI and reports), the band and the Summary a
reviewer reads off one scenario."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.model.memory import speculation_does_not_fit
from specmodel.model.scenario import Prediction, Scenario, predict, speedup_grid
from specmodel.notes import info

BORDERLINE = 0.05  # |speedup − 1| within this is "borderline": inside run-to-run noise
MAX_CROSSOVER_BATCH = 4096
K_MAX = 8


# A larger k that gains less than this share over a smaller one is not advised: the gain is inside
# run-to-run noise, and each extra draft token costs KV cache and verify work when acceptance drops.
K_TIE = 0.01


def nan_as_zero(grid) -> np.ndarray:
    """np.nan_to_num(grid, nan=0.0) (NaN 0, ±inf the largest finite floats), a new array, looking one by
    one only at the cells that are not finite (a large grid of finite speedups in one pass)."""
    g = np.array(grid, dtype=float)
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


def crossover_concurrency(s: Scenario, k: int | None = None, max_batch: int = MAX_CROSSOVER_BATCH) -> int | None:
    """Largest batch B such that speculation does not lose (speedup ≥ 1) at any batch up to B.

    None when it never loses up to max_batch; 0 when it loses already at one sequence.
    """
    kk = s.k if k is None else k
    if kk == 0:
        return None
    # The first losing batch, looked for in the first 512 batches before the rest (most scenarios
    # lose early: an eighth of the work); the same answer as one pass over all of them. The first
    # 512 are a row of the grid schedule_grid reads (one grid per scenario, shared).
    for first, last in ((1, min(512, max_batch)), (513, max_batch)):
        if first > last:
            break
        batches = np.arange(first, last + 1)
        ks = np.arange(0, max(K_MAX, kk) + 1) if first == 1 else np.array([kk])
        speed = speedup_grid(s, ks, batches)[kk if first == 1 else 0]
        losing = np.flatnonzero(~(speed >= 1.0))
        if losing.size:
            return int(batches[losing[0]] - 1)
    return None


def schedule_grid(s: Scenario, k_max: int = K_MAX, max_batch: int = 512) -> np.ndarray:
    """Speedup for k in 0..k_max (rows; k = 0 is 1) at every batch in 1..max_batch (columns), NaN as
    0: what k_schedule and off_above_range read (summarize computes it once for both)."""
    grid = np.nan_to_num(speedup_grid(s, np.arange(0, k_max + 1), np.arange(1, max_batch + 1)), nan=0.0)
    grid[0] = 1.0
    return grid


# A schedule switches k (between two k, or from off back on, or to off) only where the other k beats
# the one in use by more than this: run-to-run noise of a serving benchmark is about 2%, and every
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
    than SWITCH_GAIN. One rule for k_schedule and the grouped runs (model/grouped.py)."""
    g = np.asarray(grid, dtype=float)
    best = smallest_best(g, axis=-2)
    lead = g.shape[:-2]
    flat = g.reshape((-1,) + g.shape[-2:])
    best = best.reshape(flat.shape[0], flat.shape[-1])
    if flat.shape[0] == 1:  # one grid (every page rerun): plain floats, ~50x faster than a numpy step per batch
        return _ks_in_use_one(flat[0].tolist(), best[0].tolist()).astype(best.dtype).reshape(lead + (flat.shape[-1],))
    return _ks_in_use_many(flat, best).astype(best.dtype, copy=False).reshape(lead + (flat.shape[-1],))


_SWITCH_ROUNDS = 16  # switches looked for all grids at once before the rest go batch by batch


def _ks_in_use_many(flat: np.ndarray, best: np.ndarray) -> np.ndarray:
    """ks_in_use for grids × k × batches, one switch at a time rather than one batch at a time: for
    every k that may be in use, where the batch's best k beats it by more than SWITCH_GAIN (a comparison
    with NaN is false, as in _ks_in_use_one); then each grid's next switch after the last one, for
    all grids at once (a schedule switches a few times, not at every batch)."""
    n, k_count, batches = flat.shape
    keep = 1.0 + SWITCH_GAIN
    at_best = np.take_along_axis(flat, best[:, None, :], axis=1)[:, 0, :]
    switch = np.empty((k_count, n, batches), dtype=bool)  # switch[c, g, b]: at batch b, k = c gives way
    for c in range(k_count):
        switch[c] = (best != c) & (at_best > flat[:, c, :] * keep)
    current = best[:, 0].copy()
    new_k = np.full((n, batches), -1, dtype=np.int64)  # the k switched to at a batch, -1 where none
    new_k[:, 0] = current
    since = np.zeros(n, dtype=np.int64)  # the batch of each grid's last switch
    live = np.arange(n)
    columns = np.arange(batches)
    for _ in range(_SWITCH_ROUNDS):
        if not live.size:
            break
        later = switch[current[live], live] & (columns[None, :] > since[live, None])
        found = later.any(axis=1)
        live = live[found]
        at = np.argmax(later[found], axis=1)
        current[live] = best[live, at]
        new_k[live, at] = current[live]
        since[live] = at
    if live.size:  # grids that switch again and again (noise, not a model's grid): the rest batch by batch
        for b in range(int(since[live].min()) + 1, batches):
            now = live[since[live] < b]
            cand = best[now, b]
            moved = (cand != current[now]) & (at_best[now, b] > flat[now, current[now], b] * keep)
            current[now[moved]] = cand[moved]
            new_k[now[moved], b] = cand[moved]
    last_switch = np.maximum.accumulate(np.where(new_k >= 0, columns[None, :], 0), axis=1)
    return np.take_along_axis(new_k, last_switch, axis=1)


def _ks_in_use_one(grid: list[list[float]], best: list[int]) -> np.ndarray:
    """ks_in_use for one grid, in Python floats (the same rule, the same NaN handling: a comparison
    with NaN is false in both)."""
    out, current, keep = [], best[0], 1.0 + SWITCH_GAIN
    for i, cand in enumerate(best):
        if cand != current and grid[cand][i] > grid[current][i] * keep:
            current = cand
        out.append(current)
    return np.asarray(out)


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


@dataclass(frozen=True)
class Verdict:
    label: str  # "pays off" | "borderline" | "loses" | "off" (JUDGED: the labels a band can leave open)
    text: str  # one sentence with the number
    advice: str  # what to deploy

    @property
    def tone(self) -> str:
        return tone_of(self.label)


JUDGED = ("pays off", "borderline", "loses")  # verdicts on a speedup; "off" (k = 0) and "unknown" judge none


def band_tone(label: str, tone: str, band: tuple[float, float] | None) -> str:
    """How a verdict's box reads: "caution" where its band straddles 1.0 (the model cannot tell whether
    speculation pays off, whichever way the speedup leans), else the label's own `tone`."""
    return "caution" if label in JUDGED and straddles(band) else tone


def off_above(schedule: list[list[int]]) -> int | None:
    """The batch size above which the schedule turns speculation off for good (None if it never
    does within the schedule's range; 0 if it is off from batch 1)."""
    if not schedule or schedule[-1][2] != 0:
        return None
    return schedule[-1][0] - 1


def verdict(speedup: float, best: tuple[int, float], off_above_batch: int | None, k: int,
            concurrency: int, spec_fits: bool = True, off_above_k: int | None = None) -> Verdict:
    """Words for a speedup, and the advice that follows from the best k here and the batch size
    above which the best k is 0 (from k_schedule; `off_above_k` is the schedule's k just below it)."""
    best_k_value, best_speed = best
    if not spec_fits:
        return Verdict("loses", "loses: the draft and its KV cache do not fit beside the target",
                       "turn speculation off, or use n-gram or a smaller draft, or a GPU with more memory")
    if k == 0:
        label, text = "off", "speculation is off (k = 0)"
    elif speedup >= 1 + BORDERLINE:
        label, text = "pays off", f"pays off: {speedup:.2f}x"
    elif speedup >= 1 - BORDERLINE:
        label, text = "borderline", f"borderline: {speedup:.2f}x, within run-to-run noise"
    else:
        label, text = "loses", f"loses: {speedup:.2f}x"
    within = best_speed <= speedup * (1 + K_TIE)
    return Verdict(label, text, _advice(best_k_value, f"{best_speed:.2f}", within, off_above_batch, k, concurrency,
                                        off_above_k))


def _advice(best_k_value: int, best_text: str, within: bool, off_above_batch: int | None, k: int,
            concurrency: int, off_above_k: int | None) -> str:
    """verdict()'s advice: best_text is the best k's speedup as shown, `within` whether it is within K_TIE of
    the speedup at k."""
    parts = []
    if best_k_value == 0:
        parts.append(f"turn speculation off at batch {concurrency}")
    elif best_k_value != k:  # best k: the smallest within K_TIE of the fastest (smallest_best)
        verb = "lower" if best_k_value < k else "raise"
        same = f", within 1% of k = {k}" if best_k_value < k and within else ""
        parts.append(f"{verb} k to {best_k_value} ({best_text}x{same})")
    elif k > 0:
        parts.append(f"keep k = {k}")
    if off_above_batch is not None and off_above_batch >= concurrency and best_k_value > 0:
        # Name the k this batch belongs to: it is the schedule's last k, not necessarily the chosen
        # one (whose own crossover may be far lower).
        parts.append(f"turn it off above batch {off_above_batch}"
                     + (f", where k = {off_above_k} stops paying" if off_above_k else ""))
    return "; ".join(parts)


def advice_many(speedup, best_k_value, best_speed, off_above_batch, k, concurrency, off_above_k) -> np.ndarray:
    """verdict()'s advice for many runs at once (arrays; off_above_batch and off_above_k -1 where None),
    worded once per distinct advice: an object array of strings."""
    speedup, best_speed = np.asarray(speedup, dtype=float), np.asarray(best_speed, dtype=float)
    best_k_value, k, conc = (np.asarray(x, dtype=np.int64) for x in (best_k_value, k, concurrency))
    off, off_k = np.asarray(off_above_batch, dtype=np.int64), np.asarray(off_above_k, dtype=np.int64)
    if len(k) == 0:
        return np.empty(0, dtype=object)
    named = (best_k_value != 0) & (best_k_value != k)  # the only advice that shows the best k's speedup
    speeds, speed_at = np.unique(best_speed[named], return_inverse=True)  # each worded once
    texts = [f"{v:.2f}" for v in speeds.tolist()]
    text_ids, text_of = np.unique(np.array(texts, dtype=object), return_inverse=True)
    text_code = np.full(len(k), -1, dtype=np.int64)
    text_code[named] = text_of.reshape(-1)[speed_at.reshape(-1)]
    lower = named & (best_k_value < k)
    with np.errstate(invalid="ignore"):
        within = lower & (best_speed <= speedup * (1 + K_TIE))
    off_said = (off >= 0) & (off >= conc) & (best_k_value > 0)
    parts = [best_k_value, text_code, within.astype(np.int64), k,
             np.where((best_k_value == 0) | off_said, conc, -1), np.where(off_said, off, -1),
             np.where(off_said, off_k, -1)]
    values, codes = zip(*(np.unique(p, return_inverse=True) for p in parts))  # each part's distinct values
    codes = [c.reshape(-1) for c in codes]
    sizes = [len(v) for v in values]
    if np.prod(np.array(sizes, dtype=float)) < 2.0 ** 62:  # one integer per run: a fast 1-D unique
        firsts, at = np.unique(np.ravel_multi_index(codes, sizes), return_index=True, return_inverse=True)[1:]
    else:
        firsts, at = np.unique(np.column_stack(codes), axis=0, return_index=True, return_inverse=True)[1:]
    worded = np.empty(len(firsts), dtype=object)
    worded[:] = [_advice(b, text_ids[t] if t >= 0 else "", bool(w), None if o < 0 else o, kk, c,
                         None if ok < 0 else ok) for b, t, w, kk, c, o, ok in zip(*(p[firsts].tolist() for p in parts))]
    return worded[at.reshape(-1)]


@dataclass(frozen=True)
class Summary:
    """Everything a reviewer reads off one scenario (scalars), for the CLI and the pages."""

    scenario: Scenario
    prediction: Prediction
    best_k: int
    best_k_speedup: float
    crossover_concurrency: int | None
    schedule: list[list[int]]
    verdict: Verdict
    notes: tuple[str, ...]
    band: tuple[float, float] | None = None  # speedup_low, speedup_high (speedup_band)
    off_above_range: tuple[int | None, int | None] | None = None  # off_above_batch_low/high (off_above_range)
    grid: np.ndarray | None = field(default=None, compare=False, repr=False)  # schedule_grid the schedule came from
    uncertain_words: str = ""  # what summarize added to the verdict's words where the band straddles 1.0

    @property
    def tone(self) -> str:
        """The verdict box's tone: the label's, or "caution" where the band straddles 1.0 (band_tone)."""
        return band_tone(self.verdict.label, self.verdict.tone, self.band)

    def verdict_text_with(self, measured: str) -> str:
        """The verdict's words with `measured` (" at batch 31, measured E = …") after the speedup and before
        the uncertain clause, so the sentence reads in order."""
        return self.verdict.text.removesuffix(self.uncertain_words) + measured + self.uncertain_words

    @property
    def off_above(self) -> int | None:
        """The batch above which the schedule turns speculation off (off_above of the schedule)."""
        return off_above(self.schedule)

    @property
    def threshold_text(self) -> str | None:
        """Why the crossover (the k set here) and the off threshold (the schedule's k) are two numbers,
        in words; None where only one of them exists or they agree."""
        return threshold_words(self.scenario.k, self.crossover_concurrency, self.schedule)

    @property
    def uncertain(self) -> bool:
        """True when the band straddles 1.0: the data leave open whether speculation pays off."""
        return straddles(self.band) and self.scenario.k > 0


def summarize(s: Scenario, k_max: int = K_MAX, band_spans: tuple[float, ...] = ()) -> Summary:
    """Predict the scenario and derive best k, crossover, schedule, verdict and notes. `band_spans`: other
    speedups the inputs allow (the ends of a measured acceptance interval), which the band also spans.

    >>> v = summarize(Scenario(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3)).verdict
    >>> v.label, v.text
    ('pays off', 'pays off: 1.70x')
    """
    p = predict(s)
    cross = crossover_concurrency(s)
    spec_fits = s.k == 0 or p.spec.max_concurrency >= 1
    grid = schedule_grid(s, max(k_max, s.k), SCHEDULE_MAX_BATCH)
    schedule = k_schedule(s, grid=grid)
    best = decided_k(s, schedule, grid, max(k_max, s.k))
    last_k = schedule[-2][2] if len(schedule) >= 2 and schedule[-1][2] == 0 else None
    v = verdict(float(p.speedup), best, off_above(schedule), s.k, s.concurrency, spec_fits, last_k)
    if not spec_fits:  # name the real cause for this method and the closest setting that fits
        why = speculation_does_not_fit(s.gpu, s.tp, s.target, s.context_len, s.method, s.k, s.draft,
                                       s.weight_dtype, s.kv_dtype)
        if why is not None:
            v = Verdict(v.label, f"{v.label}: {why}", why.closest)
    notes = []  # all "info": the queue shows in the throughput, and the tail is how the model extends a profile
    notes += engine_version_notes(s) + running_limit_notes(s, int(max(p.plain.batch, p.spec.batch if s.k else 0)))
    if s.k > 0 and p.spec.batch < s.concurrency:
        notes.append(info(f"with speculation only {int(p.spec.max_concurrency)} sequences fit in the KV cache; "
                          f"{int(s.concurrency - p.spec.batch)} of {s.concurrency} wait in the queue"))
    if p.plain.batch < s.concurrency:
        notes.append(info(f"without speculation only {int(p.plain.max_concurrency)} sequences fit; "
                          f"{int(s.concurrency - p.plain.batch)} of {s.concurrency} wait in the queue"))
    if s.survival is not None and s.k > len(s.survival):
        notes.append(info(f"k = {s.k} is beyond the measured profile's {len(s.survival)} positions: "
                          "positions past it use a geometric tail fitted to the profile"))
    band = speedup_band(s, speedup=float(p.speedup), spans=band_spans)
    between = off_above_range(s, grid=grid) if s.k else None
    summary = Summary(s, p, best[0], best[1], cross, schedule, v, tuple(notes), band, between, grid)
    if summary.uncertain:
        words = uncertain_words(band, between)
        summary = replace(summary, verdict=replace(v, text=uncertain_head(v.text, v.label) + words),
                          uncertain_words=words)
    return summary


def uncertain_head(text: str, label: str) -> str:
    """A verdict's words led by "uncertain" where its band straddles 1.0, the point estimate's label kept in
    brackets: "pays off: 1.07x" -> "uncertain (pays off by the estimate): 1.07x". The headline a reviewer
    reads first is then the verdict the band allows, not the one the point estimate alone would give."""
    if text.startswith(f"{label}: "):
        return f"uncertain ({label} by the estimate): {text[len(label) + 2:]}"
    return f"uncertain: {text}"


def uncertain_words(band: tuple[float, float], between: tuple[int | None, int | None] | None) -> str:
    """What summarize adds to the words of a verdict whose band straddles 1.0: the band, and the batch sizes
    between which the threshold lies (None: beyond the largest batch the schedule checks), where to measure."""
    text = f" — {band[0]:.2f}x to {band[1]:.2f}x across the model's 80% band"
    if between and between != (None, None):
        lo, hi = between
        top = f"{hi:,}" if hi is not None else f"{SCHEDULE_MAX_BATCH:,}, or beyond it"
        where = f"between {lo:,} and {top}" if lo else f"anywhere up to {top}"  # lo 0: it may never pay
        text += (f"; the batch above which it stops paying lies {where}: measure plain and speculative runs there "
                 "to settle it")
    return text


SCHEDULE_MAX_BATCH = 512


def decided_k(s: Scenario, schedule: list[list[int]], grid: np.ndarray, k_max: int = K_MAX) -> tuple[int, float]:
    """(k, its speedup) the decision runs at the scenario's concurrency: the schedule's k there (so the
    advice, the schedule and every engine's config name one k), best_k beyond the schedule's range."""
    k = k_at(schedule, int(s.concurrency))
    if k is None:
        return best_k(s, k_max)
    return k, float(grid[k, int(s.concurrency) - 1])


def threshold_words(k: int, crossover: int | None, schedule: list[list[int]]) -> str | None:
    """The crossover (where the k set here stops paying) beside the schedule's off threshold, in words."""
    off = off_above(schedule)
    if not k or off is None or crossover is None or off == crossover:
        return None
    off_k = schedule[-2][2] if len(schedule) >= 2 else None
    cross = ("from batch 1" if crossover == 0 else f"above batch {crossover}")
    if off_k == k:
        why = (f"between the two, k = {k} is within {SWITCH_GAIN:.0%} of plain decoding (run-to-run noise), "
               "so the schedule does not switch for it")
    else:
        why = (f"the schedule runs k = {off_k} there, which keeps within {SWITCH_GAIN:.0%} of plain decoding up to "
               f"batch {off}")
    if off == 0:
        return f"k = {k} loses {cross}; the schedule keeps speculation off at every batch"
    return (f"k = {k} (the k set here) loses {cross} (the crossover); the schedule turns speculation off above "
            f"batch {off}: {why}")


def off_above_range(s: Scenario, k_max: int = K_MAX, max_batch: int = SCHEDULE_MAX_BATCH,
                    grid: np.ndarray | None = None):
    """(low, high): the batch above which speculation stops paying at its best k, at the band's low
    and high ends (BAND_RATIO); None for an end where it still pays at max_batch, 0 where it never
    pays. The range a measurement has to settle. `grid`: schedule_grid when already computed."""
    grid = schedule_grid(s, max(k_max, 1), max_batch) if grid is None else grid
    best = grid[1:].max(axis=0)

    def last_paying(ratio: float):
        losing = np.flatnonzero(best * ratio * (1.0 - K_TIE) <= 1.0)
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
    return s.engine.other_behaviours(s.method.name, s.gpu.name, s.target.attention)


def _variants_words(s: Scenario, variants: list[str], sep: str = "; ") -> str:
    """What each engine version of engine_variants (newest first) does differently from the one before it
    (the first: from the scenario's), in words."""
    bases = [s.engine, *variants[:-1]]
    return sep.join(_variant_words(s, v, base) for v, base in zip(variants, bases))


def _variant_words(s: Scenario, variant: str, base: str | None = None) -> str:
    """What one engine version of engine_variants does differently from `base` (the scenario's engine), in words."""
    mine = s.engine if base is None else s.engine.variant(base) if isinstance(base, str) else base
    other = s.engine.variant(variant)
    method, gpu, attention = s.method.name, s.gpu.name, s.target.attention
    shown = variant.replace(".99", ".x")
    parts = []
    ms, per_seq = other.serial_cpu(method)
    if (ms or per_seq) and (ms, per_seq) != mine.serial_cpu(method):
        parts.append(f"at {shown} the speculative step runs without the overlap (async) scheduler that plain decoding "
                     f"keeps and pays ~{ms:.2f} ms + {per_seq * 1e3:.0f} µs per sequence more per step")
    elif not (ms or per_seq) and mine.serial_cpu(method) != (0.0, 0.0):
        parts.append(f"at {shown} plain and speculative decoding run the same scheduler")
    eager, my_eager = other.eager_first_pass_ms(method), mine.eager_first_pass_ms(method)
    if eager and not my_eager:
        parts.append(f"up to {shown} the draft pass after each verify runs outside CUDA graphs: ~{eager:.2f} ms more "
                     "per step")
    elif my_eager and not eager:
        parts.append(f"from {shown} the draft pass after each verify runs in a CUDA graph")
    if other.unpacks_verify(gpu, attention) and not mine.unpacks_verify(gpu, attention):
        parts.append(f"from {shown} on {gpu} the verify pass runs {other.verify_unpacked.get('backend')}'s prefill "
                     "kernel, which reads each KV head once per query head (the default attention backend there)")
    elif mine.unpacks_verify(gpu, attention) and not other.unpacks_verify(gpu, attention):
        parts.append(f"up to {shown} (or with ROCM_AITER_FA chosen) the verify pass runs a kernel that packs the GQA "
                     "group (TRITON_ATTN's unified attention)")
    return "; ".join(parts) or f"{shown} behaves the same here"


def _unpacked_note(s: Scenario) -> list[str]:
    engine, gpu = s.engine, s.gpu.name
    if not engine.unpacks_verify(gpu, s.target.attention):
        return []
    version = engine.version_text or f"{engine.read_through} (the newest release read; no version given)"
    return [info(f"{engine.label} {version} on {gpu} runs verify passes in {engine.verify_unpacked.get('backend')}'s "
                 "prefill kernel, its default attention backend for this model: one program per query head and "
                 f"{engine.verify_query_tile(gpu, s.target.attention)} query rows per program, so the "
                 "verify pass reads the KV cache several times over (one-token decode packs the group; "
                 "--attention-backend ROCM_AITER_FA avoids it, vLLM issue #46596: name it after the version, "
                 "'0.19.0 ROCM_AITER_FA', to predict with it)")]


def _acceptance_note(s: Scenario) -> list[str]:
    engine, gpu, method = s.engine, s.gpu.name, s.method
    c = engine.acceptance_caveat(method.name, gpu)
    if c is None:
        return []
    version = engine.version_text or f"{engine.read_through} (the newest release read; no version given)"
    return [info(f"{engine.label} {version} on {gpu}: its {method.label} drafter runs on {c['drafter_backend']} "
                 f"(the default from {c['since']}), where a known defect can cut acceptance well below what "
                 f"{method.label} reaches on CUDA (vLLM PR #47854, open): an acceptance measured on CUDA or published "
                 "for the method may not hold here, so use one measured on this engine and GPU (its /metrics is); "
                 f"{c['workaround']} is the workaround named there")]


def running_limit_notes(s: Scenario, running: int) -> list[str]:
    """The engine's own limits on requests running at once, where the scenario's batch is above them:
    SGLang's 48 while speculating unless --max-running-requests is given (spec_running_cap), and vLLM's
    default max_num_seqs by GPU memory, both arms alike (`running`: what fits of the concurrency)."""
    engine, gpu = s.engine, s.gpu
    notes = []
    cap = engine.running_cap(s.method.name) if s.k else None
    if cap is not None and s.concurrency > cap:
        notes.append(_over_limit(engine.label, cap, "requests at once while speculating", engine.spec_running_cap["flag"],
                                 f"its server arguments reset the limit to {cap} for speculative decoding; plain "
                                 "decoding keeps a larger one", f"{s.concurrency} or more",
                                 f"the speculative server runs {cap} and queues the other {s.concurrency - cap}"))
    limit = engine.default_running_limit(gpu.name, gpu.memory_GB)
    if limit is not None and running > limit:
        notes.append(_over_limit(engine.label, limit, f"sequences at once on {gpu.name}", engine.max_num_seqs["flag"],
                                 "its default by GPU memory, vllm/engine/arg_utils.py", str(running),
                                 f"both servers run {limit} and queue the rest, and the speedup is the one at batch "
                                 f"{limit}"))
    return notes


def _over_limit(label: str, limit: int, what: str, flag: str, why: str, asked: str, without: str) -> str:
    """A note: the engine runs at most `limit` of `what` unless `flag` is given; predicted with it."""
    return info(f"{label} runs at most {limit} {what} unless {flag} is given ({why}): predicted with {flag} {asked}, "
                f"as the launch flags set it; without it {without}")


def engine_version_notes(s: Scenario) -> list[str]:
    """What the engine's version does to the speculative step, in words (none where nothing differs)."""
    if not s.k:
        return []
    engine, method = s.engine, s.method.name
    variants = engine_variants(s)
    notes = _unpacked_note(s) + _acceptance_note(s)
    if engine.before_read:
        notes.append(info(f"{engine.label} {engine.version_text} is older than the oldest release read for this "
                          f"preset ({engine.read_from}): none of its source was read, so the band also spans the "
                          "other behaviours the releases read show; an engine that old may schedule speculative "
                          "decoding differently (vLLM before 0.9 ran it on its V0 engine by default): give a version from the "
                          "releases read, or measure it"))
        if variants:
            notes.append(info("The band also spans " + _variants_words(s, variants, "; and ")))
            variants = []
    if engine.beyond_read:
        notes.append(info(f"{engine.label} {engine.version_text} is newer than the newest release read for this "
                          f"preset ({engine.read_through}): predicted with that release's scheduling and kernels; "
                          "check its release notes for changes to async or overlap scheduling with speculative "
                          "decoding and to the default attention backend"))
        if variants:
            notes.append(info("The band also spans " + _variants_words(s, variants, "; and ")))
            variants = []
    if variants:
        example = variants[0].replace(".99", ".0")
        newest = f" as the newest release read ({engine.read_through})" if engine.read_through else ""
        return notes + [info(f"{engine.label} version not given: predicted{newest} with the preset's constants; "
                             + _variants_words(s, variants)
                             + f" (the band spans {'both' if len(variants) == 1 else 'each'}; the sidebar's Engine "
                             f"version, a run file's engine column or --engine takes it, e.g. '{example}')")]
    ms, per_seq = engine.serial_cpu(method)
    if ms or per_seq:
        notes.append(info(f"{engine.label} {engine.version_text or ''}".rstrip() + " overlaps plain decoding's CPU "
                          f"work with the GPU but not speculative decoding's: the speculative step pays ~{ms:.2f} ms + "
                          f"{per_seq * 1e3:.0f} µs per sequence more"))
    eager = engine.eager_first_pass_ms(method)
    if eager and s.t_target_ms is None:
        since = engine.eager_draft["first_pass_graphed_since"]
        notes.append(info(f"{engine.label} {engine.version_text} runs the draft pass after each verify (its draft "
                          f"extend) outside CUDA graphs, as releases before {since} do: ~{eager:.2f} ms more per "
                          "speculative step"))
    return notes


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
    return [replace(s, engine=s.engine.variant(variant)) for variant in engine_variants(s)]


def speedup_band(s: Scenario, speedup: float | None = None, spans: tuple[float, ...] = ()) -> tuple[float, float]:
    """(low, high): an 80% interval of the speedup (BAND_RATIO) around the predictions the inputs
    leave open: the scenario's own (calibrated or not), an engine version that differs (band_variants),
    and `spans`, other speedups the inputs allow, already predicted (the speedups at the ends of an
    acceptance interval from counter totals). `speedup`: the scenario's own prediction when already
    known (saves predicting it again)."""
    values = [float(predict(s).speedup) if speedup is None else float(speedup), *map(float, spans)]
    for other in band_variants(s):
        try:
            values.append(float(predict(other).speedup))
        except SpecModelError:
            pass
    values = [v for v in values if np.isfinite(v)]
    if not values:
        return float("nan"), float("nan")
    low, high = band_around(min(values), max(values))
    return float(low), float(high)
