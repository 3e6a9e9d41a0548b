"""scenario.summarize() for many runs of one setup at once: vectorised, for files of 200,000 runs.

A setup is everything of a Scenario except α, k and concurrency (GPU, models, method, timings,
calibration). `summarize_many(setup, alpha, k, concurrency)` returns, per run, what summarize()
gives for it: the prediction, best k, crossover batch, the batch above which the per-batch
schedule turns speculation off, the advice and the uncertainty band.

It rests on one property of the model: at a given k and batch, α changes only the tokens per
step T (E after the proposal rate), so speedup(α, k, B) = T(α, k) · R(k, B) with R free of α.
Best k, crossover and schedule for thousands of distinct α then need R once per setup (a k × batch
grid) and multiplications. The property is checked on every call (R at two α must agree); where
it fails, as it would for a model in which α changes step times, every run goes through
summarize() one by one. tests/test_grouped.py compares both paths on the sample files.
"""

from __future__ import annotations


import numpy as np

from specmodel.errors import SpecModelError
from specmodel.model.decide import (K_MAX, MAX_CROSSOVER_BATCH, advice_many, band_around, band_variants, ks_in_use,
                                    nan_as_zero, off_above, smallest_best, summarize)
from specmodel.model.scenario import Scenario, predict, with_changes

SCHEDULE_BATCHES = 512  # k_schedule's batch range in summarize()
_CHUNK_ELEMENTS = 2_000_000  # schedule grid elements per numpy operation (memory stays ~ 16 MB)
_PROBE_ALPHAS = (0.5, 0.9)
_PROBE_BATCHES = np.array([1, 2, 3, 16, 100, 512, 4096])

FIELDS = ("speedup", "tokens_per_step", "break_even_tokens_per_step", "break_even_alpha", "plain_tok_s",
          "spec_tok_s", "best_k", "best_k_speedup", "crossover", "off_above", "advice", "speedup_low",
          "speedup_high", "uncertain", "error")
NUMBER_FIELDS = frozenset({"speedup", "tokens_per_step", "break_even_tokens_per_step", "break_even_alpha", "plain_tok_s",
                           "spec_tok_s", "best_k_speedup", "speedup_low", "speedup_high"})


def setup_of(s: Scenario) -> Scenario:
    """The setup a scenario belongs to: its α, k and concurrency set to fixed values (k = 0 skips
    the per-k checks, which summarize_many makes per run)."""
    return with_changes(s, alpha=0.5, k=0, concurrency=1)


def summarize_many(setup: Scenario, alpha, k, concurrency, k_max: int = K_MAX) -> dict[str, np.ndarray]:
    """Per run (α[i], k[i], concurrency[i]) on `setup`: the FIELDS, as arrays (NUMBER_FIELDS as floats,
    NaN where a run has none; the others as objects, None where a run has none). `error` holds the
    message summarize() raised for a run (its other fields NaN or None). A survival profile in the
    setup is used for every run (α is then ignored), as in summarize()."""
    alpha = np.asarray(alpha, dtype=float).reshape(-1)
    k = np.asarray(k, dtype=float).reshape(-1)
    conc = np.asarray(concurrency, dtype=float).reshape(-1)
    n = len(k)
    out = {f: np.full(n, np.nan) if f in NUMBER_FIELDS else np.full(n, None, dtype=object) for f in FIELDS}
    ok = _valid_runs(setup, alpha, k, conc)
    k_grid = np.maximum(k_max, np.where(ok, k, 0)).astype(int)
    for kk in np.unique(k_grid[ok]):
        idx = np.flatnonzero(ok & (k_grid == kk))
        try:
            part = _vectorised(setup, alpha[idx], k[idx].astype(int), conc[idx].astype(int), int(kk))
        except _NotFactorable:
            part = None
        except SpecModelError as exc:  # the setup itself refused (nothing fits): summarize() says the same
            _one(setup, alpha[idx[0]], k[idx[0]], conc[idx[0]], k_max, out, idx[0])
            part = {"error": [str(exc)] * len(idx)} if out["error"][idx[0]] == str(exc) else None
        if part is None:
            ok[idx] = False
            continue
        for f, values in part.items():  # a part the setup refused has only its errors
            out[f][idx] = values
    for i in np.flatnonzero(~ok):  # one by one: runs the vectorised path does not cover, with their messages
        _one(setup, alpha[i], k[i], conc[i], k_max, out, i)
    return out


class _NotFactorable(Exception):
    """R(k, B) differs between two α: the speedup is not T(α, k) · R(k, B) for this setup."""


def _valid_runs(setup: Scenario, alpha, k, conc) -> np.ndarray:
    """Runs whose α, k and concurrency pass Scenario.validated() (the others go one by one and
    get its message)."""
    ok = np.isfinite(k) & (k >= 0) & (k == np.round(k)) & np.isfinite(conc) & (conc >= 1) & (conc == np.round(conc))
    if setup.survival is None:
        ok &= np.isfinite(alpha) & (alpha >= 0) & (alpha <= 1)
    if setup.draft_depth is not None:
        ok &= ~((k > 0) & (setup.draft_depth > k))
    return ok


def _ratio(setup: Scenario, alpha, ks, batches) -> np.ndarray:
    """R(k, B) = speedup / tokens per step, shape (len(ks), len(batches))."""
    p = predict(setup, alpha=alpha, k=ks[:, None], concurrency=np.asarray(batches)[None, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(p.speedup, dtype=float) / np.asarray(p.tokens_per_step, dtype=float)


def _vectorised(setup: Scenario, alpha, k, conc, k_top: int) -> dict[str, np.ndarray]:
    survival = setup.survival is not None
    ks = np.arange(0, k_top + 1)
    a0 = None if survival else _PROBE_ALPHAS[0]
    if not survival:
        r0 = _ratio(setup, _PROBE_ALPHAS[0], ks, _PROBE_BATCHES)
        r1 = _ratio(setup, _PROBE_ALPHAS[1], ks, _PROBE_BATCHES)
        if not np.allclose(r0, r1, rtol=1e-9, atol=0.0, equal_nan=True):
            raise _NotFactorable()

    # the runs themselves
    p = predict(setup, alpha=None if survival else alpha, k=k, concurrency=conc)
    n = len(k)
    vec = lambda x: np.broadcast_to(np.asarray(x, dtype=float), (n,))  # noqa: E731 - scalars from one run
    speedup, tokens = vec(p.speedup), vec(p.tokens_per_step)
    spec_fits = (k == 0) | (vec(p.spec.max_concurrency) >= 1)

    # tokens per step for every k, per distinct α (one row for a survival profile)
    if survival:
        uniq, u_idx = np.zeros(1), np.zeros(n, dtype=int)
        t_grid = np.asarray(predict(setup, k=ks, concurrency=1).tokens_per_step, dtype=float).reshape(1, -1)
    else:
        uniq, u_idx = np.unique(alpha, return_inverse=True)
        t_grid = np.asarray(predict(setup, alpha=uniq[:, None], k=ks[None, :], concurrency=1).tokens_per_step,
                            dtype=float).reshape(len(uniq), len(ks))

    # best k at each run's own concurrency (as decide.best_k: NaN counts 0, k = 0 counts 1, within K_TIE the smaller k)
    c_uniq, c_idx = np.unique(conc, return_inverse=True)
    r_runs = _ratio(setup, a0, ks, c_uniq)
    # one grid row per distinct (α, concurrency), not per run: 200,000 runs at k = 64 are not 200,000 × 65 floats
    pairs, pair_of = np.unique(u_idx.reshape(-1) * len(c_uniq) + c_idx.reshape(-1), return_inverse=True)
    pair_of = pair_of.reshape(-1)
    grid = nan_as_zero(t_grid[pairs // len(c_uniq)] * r_runs[:, pairs % len(c_uniq)].T)
    grid[:, 0] = 1.0
    best = smallest_best(grid, axis=1)[pair_of]
    best_speed = grid[pair_of, best]
    batches = np.arange(1, MAX_CROSSOVER_BATCH + 1)
    r_full = _ratio(setup, a0, ks, batches)
    # the schedule per distinct α (decide.ks_in_use, as k_schedule): its off threshold, the k just below
    # it, and the k it runs at each run's concurrency up to 512 (decide.decided_k)
    off_u, last_k_u, in_use = _schedules(t_grid, r_full[:, :SCHEDULE_BATCHES])
    off, last_k = off_u[u_idx], last_k_u[u_idx]  # -1 where None
    inside = conc <= SCHEDULE_BATCHES
    if in_use is not None and inside.any():
        rows = np.flatnonzero(inside)
        best[rows] = in_use[u_idx[rows], conc[rows].astype(int) - 1]
        best_speed = grid[pair_of, best]

    # crossover (as scenario.crossover_concurrency): the last batch before the first losing one in 1..4096
    crossover = np.full(n, None, dtype=object)
    for kv in np.unique(k):
        if kv == 0:
            continue
        rows = np.flatnonzero(k == kv)
        falling = np.minimum.accumulate(np.where(np.isnan(r_full[kv]), -np.inf, r_full[kv]))
        with np.errstate(divide="ignore"):
            need = 1.0 / t_grid[u_idx[rows], kv]
        first_losing = np.searchsorted(-falling, -need, side="right")
        losing = first_losing < len(batches)
        crossover[rows[losing]] = _objects(first_losing[losing].tolist())


    band_low, band_high = _band(setup, a0, ks, c_uniq, c_idx, k, speedup, tokens)

    advice = advice_many(speedup, best, best_speed, off, k, conc, last_k)
    for i in np.flatnonzero(~spec_fits).tolist():  # the message names the real cause: summarize() for this run
        advice[i] = summarize(with_changes(setup, alpha=float(alpha[i]), k=int(k[i]),
                                           concurrency=int(conc[i]))).verdict.advice
    with np.errstate(invalid="ignore"):
        uncertain = (band_low < 1.0) & (1.0 < band_high) & (k > 0)
    be_alpha = np.broadcast_to(np.asarray(p.break_even_alpha, dtype=float), (n,))
    off_above = np.full(n, None, dtype=object)
    off_above[off >= 0] = _objects(off[off >= 0].tolist())
    return {"speedup": speedup, "tokens_per_step": tokens,
            "break_even_tokens_per_step": vec(p.break_even_tokens_per_step), "break_even_alpha": be_alpha,
            "plain_tok_s": vec(p.plain.throughput_tok_s), "spec_tok_s": vec(p.spec.throughput_tok_s),
            "best_k": _objects(best.tolist()), "best_k_speedup": best_speed, "crossover": crossover,
            "off_above": off_above, "advice": advice, "speedup_low": band_low, "speedup_high": band_high,
            "uncertain": _objects(uncertain.tolist())}


def _objects(values: list) -> np.ndarray:
    """A list as a 1-d object array of its items."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _schedules(t_grid: np.ndarray, r_sched: np.ndarray):
    """Per row of t_grid (one α): (off_above of its schedule, the schedule's k just below it), and the
    k the schedule runs at every batch 1..512 (rows × batches; None without any k > 0)."""
    k_count = t_grid.shape[1] - 1
    rows = t_grid.shape[0]
    if k_count == 0:
        return np.zeros(rows, dtype=np.int64), np.full(rows, -1, dtype=np.int64), None
    batches = r_sched.shape[1]
    # Above the sequences that fit every batch runs the same: from the first batch whose column equals the
    # last one, every column is that one, and a schedule (the k in use, switched only where another k
    # beats it) that met it once keeps its k at the next; it is walked up to there and held.
    same = (r_sched == r_sched[:, -1:]) | (np.isnan(r_sched) & np.isnan(r_sched[:, -1:]))
    differs = np.flatnonzero(~same.all(axis=0))
    width = min(batches, (int(differs[-1]) + 1 if differs.size else 0) + 1)
    chunk = max(1, _CHUNK_ELEMENTS // ((k_count + 1) * width))
    off, last_k = np.empty(rows, dtype=np.int64), np.empty(rows, dtype=np.int64)
    in_use = np.empty((rows, batches), dtype=int)
    for start in range(0, rows, chunk):
        g = nan_as_zero(t_grid[start:start + chunk, :, None] * r_sched[None, :, :width])
        g[:, 0, :] = 1.0
        ks_used = ks_in_use(g)
        if width < batches:
            ks_used = np.concatenate([ks_used, np.repeat(ks_used[:, -1:], batches - width, axis=1)], axis=1)
        in_use[start:start + chunk] = ks_used
        off[start:start + chunk], last_k[start:start + chunk] = _off_and_last_k(ks_used)
    return off, last_k, in_use


def _off_and_last_k(ks_used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row (the k at every batch from 1): off_above and the k of the range before the last of its
    ranges_of schedule, as decide.off_above reads it, without building the ranges (-1 where None)."""
    last = ks_used[:, -1]
    changed = ks_used != last[:, None]
    has_before = changed.any(axis=1)
    # index of the last batch whose k differs from the final one (-1 where none does)
    last_change = np.where(has_before, ks_used.shape[1] - 1 - np.argmax(changed[:, ::-1], axis=1), -1)
    before_k = ks_used[np.arange(len(last)), np.maximum(last_change, 0)]
    off = np.where(last != 0, -1, last_change + 1)
    return off, np.where((last != 0) | ~has_before, -1, before_k)


def _band(setup: Scenario, a0, ks, c_uniq, c_idx, k, speedup, tokens):
    """decide.speedup_band per run: the run's speedup and its speedup in each of decide.band_variants (an
    engine version that differs), widened by decide.BAND_RATIO."""
    values = [speedup]
    for other in band_variants(setup):
        try:
            r = _ratio(other, a0, ks, c_uniq)
            values.append(tokens * r[k.astype(int), c_idx])
        except SpecModelError:
            pass
    stack = np.vstack(values)
    finite = np.isfinite(stack)
    low, high = band_around(np.where(finite, stack, np.inf).min(axis=0), np.where(finite, stack, -np.inf).max(axis=0))
    none = ~finite.any(axis=0)
    return np.where(none, np.nan, low), np.where(none, np.nan, high)


def _one(setup: Scenario, alpha, k, conc, k_max: int, out: dict, i: int) -> None:
    """One run through summarize() (runs the vectorised path does not cover), into out[...][i]."""
    try:
        s = with_changes(setup, alpha=float(alpha), k=int(k) if k == round(k) else k,
                         concurrency=int(conc) if conc == round(conc) else conc)
        summary = summarize(s, k_max)
    except SpecModelError as exc:
        out["error"][i] = str(exc)
        return
    except (TypeError, ValueError, OverflowError) as exc:  # NaN k or concurrency: not a number to predict at
        out["error"][i] = f"cannot predict at k = {k}, concurrency = {conc}: {exc}"
        return
    p = summary.prediction
    values = {"speedup": float(p.speedup), "tokens_per_step": float(p.tokens_per_step),
              "break_even_tokens_per_step": float(p.break_even_tokens_per_step),
              "break_even_alpha": float(p.break_even_alpha), "plain_tok_s": float(p.plain.throughput_tok_s),
              "spec_tok_s": float(p.spec.throughput_tok_s), "best_k": summary.best_k,
              "best_k_speedup": summary.best_k_speedup, "crossover": summary.crossover_concurrency,
              "off_above": off_above(summary.schedule), "advice": summary.verdict.advice,
              "speedup_low": summary.band[0] if summary.band else None,
              "speedup_high": summary.band[1] if summary.band else None, "uncertain": summary.uncertain,
              "error": None}
    for f, v in values.items():
        out[f][i] = np.nan if v is None and f in NUMBER_FIELDS else v
