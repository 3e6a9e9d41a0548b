"""The decision line: what to deploy for one workload in about a dozen words, the first thing every page and
command says ("extraction: k = 3 up to batch 92 (33–512+), off above"; "chat: off (0.81× at batch 32; band
0.62–1.22×)"), written once from the model's Decision, from the user's own step fit ("(your runs)") or from a
traffic-mix comparison. Why, caveats and notes are said elsewhere (the verdict, its notes); the line only
answers on or off, which k, and above which batch, with the range the threshold may lie in. Beside an open
range, `pin_line` says the two runs that would settle it (plan.measure.threshold_runs)."""

from __future__ import annotations

from specmodel.fit.steps import OFF_SEARCH_MAX as FIT_SEARCH_MAX
from specmodel.model.decide import JUDGED, SCHEDULE_MAX_BATCH, Decision, k_at

YOUR_RUNS = "your runs"  # how a line from the user's step fit says where it comes from
# What-if's "What to deploy" where the session's step fits decide (show.decisions.with_runs_schedule)
RUNS_DEPLOYED = ("From your runs' step fits, as the decision at the top says: their k up to the batch where it stops "
                 "paying (and the schedule across k where they measured several), not the model's.")


def _head(who: str) -> str:
    return f"{who}: " if who else ""


def threshold_range(low: int | None, high: int | None) -> str:
    """The range the off threshold may lie in, "33–512+" (None: still paying at the schedule's last batch,
    512; 0: paying at no batch); "" where both ends agree."""
    if low == high:
        return ""
    end = lambda b: f"{SCHEDULE_MAX_BATCH}+" if b is None else f"{b}"  # noqa: E731
    return f"{end(low)}–{end(high)}"


def _ks_up_to(schedule: list[list[int]], here: int, top: str) -> str:
    """The schedule's k from the band the batch `here` is in up to `top` (the batch where it turns speculation
    off): "k = 3 up to batch 92", or "k = 4 to batch 20, then 3 up to 92" where it switches (the bands between
    are left to the schedule itself)."""
    on = [band for band in schedule if band[2] > 0]
    start = next((i for i, band in enumerate(on) if band[1] >= here), 0)
    first, last = on[start], on[-1]
    if first is last:
        return f"k = {first[2]} up to batch {top}"
    return f"k = {first[2]} to batch {first[1]}, then {last[2]} up to {top}"


def decision_line(d: Decision, who: str = "") -> str:
    """The model's decision in one line (`who`: the workload, instance or method it is about, "" for none):
    the k to run and the batch above which to turn speculation off, with the range the model's band leaves
    for that batch; off with the speedup and band at the scenario's batch where no k pays at any batch."""
    s = d.scenario
    head = _head(who)
    if not d.spec_fits:
        return f"{head}off: the draft and its KV cache do not fit beside the target"
    off = d.off_above
    low, high = d.off_above_range or (off, off)
    if off == 0 or not any(k for _, _, k in d.schedule):
        if not s.k:
            return f"{head}off"
        band = f"; band {d.band[0]:.2f}–{d.band[1]:.2f}×" if d.band else ""
        return f"{head}off ({float(d.prediction.speedup):.2f}× with k = {s.k} at batch {s.concurrency}{band})"
    span = f" ({threshold_range(low, high)})" if threshold_range(low, high) else ""
    top = f"{SCHEDULE_MAX_BATCH}+" if off is None else f"{off}"  # None: on at every batch the schedule looks at
    here = min(s.concurrency, SCHEDULE_MAX_BATCH)
    if off is not None and k_at(d.schedule, here) == 0:  # this batch is in the off band
        return f"{head}off at batch {s.concurrency}; {_ks_up_to(d.schedule, 1, top)}{span}"
    # on at every batch the schedule looks at: no "off above" (it read as off above batch 512)
    return f"{head}{_ks_up_to(d.schedule, here, top)}{span}" + ("" if off is None else ", off above")


def fit_decision_line(k: int | None, off: tuple[int | None, int | None, int | None], who: str = "",
                      reach: int | None = None) -> str:
    """The user's step fit's decision in one line, said to come from their runs: "draft model, k = 4: off above
    batch 7 (3–12, your runs)". `off`: the fit's StepFit.off_above (at the fit, the band's low and high end);
    `reach`: where off at every batch, the batch its band reaches 1.0 at all the same (StepFit.band_reaches_one)."""
    named = f"k = {k}" if k else ""
    head = _head(", ".join(filter(None, [who, named])))
    mid, low, high = off
    if mid is None and high is None:
        return f"{head}{on_at_every_batch(low)} ({YOUR_RUNS})"
    if high == 0:
        if reach is not None:
            return f"{head}off at every batch (the band reaches 1.0 at batch {reach}; {YOUR_RUNS})"
        return f"{head}off at every batch, band included ({YOUR_RUNS})"
    if mid == 0:
        return f"{head}off from batch 1 (the band reaches batch {f'{FIT_SEARCH_MAX}+' if high is None else high}; {YOUR_RUNS})"
    span = "" if low == high else f"{low}–{f'{FIT_SEARCH_MAX}+' if high is None else high}, "
    return f"{head}off above batch {mid} ({span}{YOUR_RUNS})"


def fit_schedule_line(schedule: list[list[int]], ks: list[int], who: str = "", at_window: bool = False) -> str:
    """One server's step fits at several k as one decision (fit.steps.schedule_across_k): "chat: k = 4 to batch 12,
    then 2 up to 44, off above (your runs at k = 2 and 4)"; `at_window`: each k at a live window's acceptance, not
    at its runs' ("…, at this window's acceptance)")."""
    head = _head(who)
    compared = f"{YOUR_RUNS} at k = {', '.join(map(str, ks[:-1]))} and {ks[-1]}" + (
        ", at this window's acceptance" if at_window else "")
    on = [band for band in schedule if band[2] > 0]
    if not on:
        return f"{head}off at every batch ({compared})"
    if schedule[-1][2] > 0:
        return f"{head}{_ks_up_to(schedule, 1, f'{schedule[-1][1]}+')} ({compared})"
    return f"{head}{_ks_up_to(schedule, 1, str(on[-1][1]))}, off above ({compared})"


def on_at_every_batch(low: int | None, on: str = "on", by_fit: str = "the fit stays on") -> str:
    """A fit whose central line pays at every batch it looks at, led by where its band says so too: "on at every
    batch the fit looks at", "on up to batch 4, uncertain above: the fit stays on, its band reaches 1.0" or
    "uncertain at every batch: on by the fit, its band reaches 1.0 from batch 1" (`low`: the band's lowest batch
    at 1.0, None where it stays above). A line that said "on at every batch" with the band's doubt in brackets
    after it was read as on at every batch."""
    if low is None:
        return f"{on} at every batch the fit looks at"
    if low == 0:
        return f"uncertain at every batch: {on} by the fit, its band reaches 1.0 from batch 1"
    return f"{on} up to batch {low}, uncertain above: {by_fit}, its band reaches 1.0"


def timed_decision_line(label: str, speedup: float, band: tuple[float, float] | None, batch: float, k: int | None,
                        who: str = "", rests_on: str = "measured step times") -> str:
    """The decision where the server's own step times decide at this batch (metrics/timed.py): on or off here,
    with the measured speedup and its band."""
    on = label in ("pays off", "borderline")
    what = (f"keep k = {k}" if k else "keep it on") if on else "off"
    spread = f"; band {band[0]:.2f}–{band[1]:.2f}×" if band else ""
    return f"{_head(who)}{what} at batch {batch:g} ({speedup:.2f}×{spread}, {rests_on})"


def pin_batches(batches: tuple[int, int] | None) -> str:
    """The two concurrencies of pin_line alone, for a table's cell: "batch 33 and 134"."""
    return f"batch {batches[0]} and {batches[1]}" if batches else ""


def pin_line(batches: tuple[int, int] | None) -> str:
    """The one-line measurement that would pin an open off threshold: the two concurrencies to run, plain and
    speculative (plan.measure.threshold_runs); "" where the threshold is not open."""
    if not batches:
        return ""
    return f"Pin it: plain and speculative runs at {pin_batches(batches)}."


def mix_pool_line(concurrency: int, k: int, ratio: float, band: tuple[float, float], k_deployed: int) -> str:
    """One pool serving the whole mix: the k of the best single pool, or off with what the deployed k gives,
    over one pool with speculation off at the ends of the model's band: "mixed at 32: off (0.91× with k = 4;
    band 0.70–1.37×)"."""
    spread = f"band {band[0]:.2f}–{band[1]:.2f}×"
    if k:
        return f"mixed at {concurrency}: k = {k} in one pool ({ratio:.2f}×; {spread})"
    if not k_deployed:
        return f"mixed at {concurrency}: off"
    return f"mixed at {concurrency}: off ({ratio:.2f}× with k = {k_deployed}; {spread})"


def split_lines(concurrency: int, ratio: float, band: tuple[float, float],
                pools: list[tuple[tuple[str, ...], int, int]]) -> list[str]:
    """A split that beats one pool: its gain over one pool with speculation off, then one line per pool
    (`pools`: (workloads, k, GPUs)): "extraction: k = 3, own pool on 1 GPU"."""
    lines = [f"split at {concurrency}: {ratio:.2f}× one pool without speculation (band {band[0]:.2f}–{band[1]:.2f}×)"]
    for labels, k, gpus in pools:
        gpu_words = f"{gpus} GPU{'s' if gpus != 1 else ''}"
        pool = "own pool" if len(labels) == 1 else "one pool"
        lines.append(f"{' + '.join(labels)}: {f'k = {k}' if k else 'off'}, {pool} on {gpu_words}")
    return lines


def verdict_at(label: str, speedup: float | None, band: tuple[float, float] | None, batch: float | None = None) -> str:
    """A verdict in one short clause, the band kept where it straddles 1.0 (the whole verdict, why and caveats
    are said under the page's decision): "uncertain (pays off by the estimate): 1.22x at batch 32 (80% band
    0.91–1.90x)"."""
    if speedup is None:
        return label
    at = "" if batch is None else f" at batch {batch:g}"
    if band is not None and band[0] < 1.0 < band[1] and label in JUDGED:
        return f"uncertain ({label} by the estimate): {speedup:.2f}x{at} (80% band {band[0]:.2f}–{band[1]:.2f}x)"
    return f"{label}: {speedup:.2f}x{at}"


def switch_pin_line(batches: tuple[int, int] | None, ks: tuple[int, int]) -> str:
    """The runs that would settle where a schedule across k switches from one k to the next (fit.steps.switch_range):
    "Pin the switch: speculative runs at k = 4 and k = 2, at batch 9 and 20."; "" where it is settled."""
    if not batches:
        return ""
    return f"Pin the switch: speculative runs at k = {ks[0]} and k = {ks[1]}, at {pin_batches(batches)}."


def per_batch_line(schedule, since: str) -> str:
    """A schedule across k as vLLM takes it (`num_speculative_tokens_per_batch_size`, `since`: its first release):
    "vLLM (0.24.0 on): num_speculative_tokens_per_batch_size = [[1, 14, 4], [15, 44, 2], [45, 512, 0]]"."""
    return f"vLLM ({since} on): num_speculative_tokens_per_batch_size = {[list(band) for band in schedule]}"
