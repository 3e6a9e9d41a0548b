"""Every verdict, advice, caveat and engine note in words: what pages, the CLI, reports, runs reviews and
live verdicts say about the model's numbers. specmodel.model decides (numbers and labels: decide.Decision,
decide.summarize_many); this module says it, once, for all of them.

It sits in a layer of its own just above model/ (docs/development.md, tests/test_layering.py): runs/,
metrics/, plan/ and export/ word their results with it, and so do show/ and cli/ above them.

>>> v = summarize(Scenario(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3)).verdict
>>> v.label, v.text
('pays off', 'pays off: 1.70x')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from specmodel.model import decide
from specmodel.model.decide import (K_MAX, K_TIE, SCHEDULE_MAX_BATCH, SWITCH_GAIN, Decision, band_tone,
                                    engine_variants, off_above, tone_of, verdict_label)
from specmodel.model.memory import speculation_does_not_fit
from specmodel.model.off_state import OffCost
from specmodel.model.rate import RatePrediction
from specmodel.model.scenario import Prediction, Scenario
from specmodel.model.spec_defaults import ASSUMED_ALPHA_SPREAD, AssumedAcceptance, alpha_range
from specmodel.notes import info


@dataclass(frozen=True)
class Verdict:
    label: str  # "pays off" | "borderline" | "loses" | "off" (decide.JUDGED: the labels a band can leave open)
    text: str  # one sentence with the number
    advice: str  # what to deploy

    @property
    def tone(self) -> str:
        return tone_of(self.label)


@dataclass(frozen=True)
class Summary(Decision):
    """Everything a reviewer reads off one scenario: the model's Decision and its words, for the CLI and
    the pages."""

    verdict: Verdict | None = None
    notes: tuple[str, ...] = ()
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
    def threshold_text(self) -> str | None:
        """Why the crossover (the k set here) and the off threshold (the schedule's k) are two numbers,
        in words; None where only one of them exists or they agree."""
        return threshold_words(self.scenario.k, self.crossover_concurrency, self.schedule,
                               self.off_cost is None or self.off_cost.free)


def summarize(s: Scenario, k_max: int = K_MAX, band_spans: tuple[float, ...] = (), off: OffCost | None = None
              ) -> Summary:
    """decide.summarize's Decision with its words: the verdict (led by "uncertain" where the band straddles
    1.0), the advice and the notes. `band_spans`: other speedups the inputs allow, which the band also spans;
    `off`: the off band's cost a run measured (the engine's where None)."""
    d = decide.summarize(s, k_max, band_spans, off)
    v = verdict(float(d.prediction.speedup), (d.best_k, d.best_k_speedup), d.off_above, s.k, s.concurrency,
                d.spec_fits, d.off_above_k, pools=(d.pools_above, d.pools_gain), restart=d.restart_gain)
    if not d.spec_fits:  # name the real cause for this method and the closest setting that fits
        why = speculation_does_not_fit(s.gpu, s.tp, s.target, s.context_len, s.method, s.k, s.draft,
                                       s.weight_dtype, s.kv_dtype)
        if why is not None:
            v = Verdict(v.label, f"{v.label}: {why}", why.closest)
    words = ""
    if d.uncertain:
        words = uncertain_words(d.band, d.off_above_range)
        v = replace(v, text=uncertain_head(v.text, v.label) + words)
    return Summary(**{f.name: getattr(d, f.name) for f in fields(Decision)}, verdict=v,
                   notes=tuple(scenario_notes(s, d.prediction) + off_notes(d)), uncertain_words=words)


def off_notes(d: Decision) -> list[str]:
    """What the schedule's off band costs, where it is not free: the share, its kind and where a measurement
    replaces it (an "info" note; the advice says what separate pools or a restart win)."""
    cost, s = d.off_cost, d.scenario
    if cost is None or cost.free or not s.k:
        return []
    at = s.concurrency if d.off_above is None else d.off_above + 1  # where the schedule's off band starts
    where = "" if cost.kind == "measured" else ": a run with speculation configured and off replaces it (`plan`)"
    return [info(f"speculation configured but off (the schedule's k = 0 band) still costs {float(cost.at(at)):.0%} "
                 f"of a plain step at batch {at}, {cost.kind}{where}")]


def scenario_notes(s: Scenario, p: Prediction) -> list[str]:
    """The notes under a scenario's verdict, all "info" (the queue shows in the throughput, and the tail is
    how the model extends a profile): engine version, running limits, sequences that wait, a profile's tail."""
    notes = engine_version_notes(s) + running_limit_notes(s, int(max(p.plain.batch, p.spec.batch if s.k else 0)))
    if s.k > 0 and p.spec.batch < s.concurrency:
        notes.append(info(f"with speculation only {int(p.spec.max_concurrency)} sequences fit in the KV cache; "
                          f"{int(s.concurrency - p.spec.batch)} of {s.concurrency} wait in the queue"))
    if p.plain.batch < s.concurrency:
        notes.append(info(f"without speculation only {int(p.plain.max_concurrency)} sequences fit; "
                          f"{int(s.concurrency - p.plain.batch)} of {s.concurrency} wait in the queue"))
    if s.survival is not None and s.k > len(s.survival):
        notes.append(info(f"k = {s.k} is beyond the measured profile's {len(s.survival)} positions: "
                          "positions past it use a geometric tail fitted to the profile"))
    return notes


def verdict(speedup: float, best: tuple[int, float], off_above_batch: int | None, k: int,
            concurrency: int, spec_fits: bool = True, off_above_k: int | None = None,
            pools: tuple[int | None, float | None] = (None, None), restart: float | None = None) -> Verdict:
    """Words for a speedup (its label: decide.verdict_label), and the advice that follows from the best k
    here and the batch size above which the best k is 0 (from k_schedule; `off_above_k` is the schedule's
    k just below it), with what separate pools (`pools`: the batch above which speculation stops paying and
    their largest gain over the schedule above it) or a restart without speculation (`restart`: its gain over
    the schedule here) win where the schedule's off band is not free (decide.Decision)."""
    best_k_value, best_speed = best
    if not spec_fits:
        return Verdict("loses", "loses: the draft and its KV cache do not fit beside the target",
                       "turn speculation off, or use n-gram or a smaller draft, or a GPU with more memory")
    label = verdict_label(speedup, k, spec_fits)
    if label == "off":
        text = "speculation is off (k = 0)"
    elif label == "borderline":
        text = f"borderline: {speedup:.2f}x, within run-to-run noise"
    else:
        text = f"{label}: {speedup:.2f}x"
    within = int(_within_code(np.array(best_k_value), np.array(k), np.array(best_speed), np.array(speedup)))
    return Verdict(label, text, _advice(best_k_value, f"{best_speed:.2f}", within, off_above_batch, k, concurrency,
                                        off_above_k, _said_gain(pools[1]) if pools[0] is not None else None,
                                        pools[0], _said_gain(restart)))


def _said_gain(gain: float | None) -> float | None:
    """A gain over the schedule worth a sentence (above SWITCH_GAIN, run-to-run noise) in hundredths, as
    advice_many words it, else None."""
    keep = gain is not None and math.isfinite(gain) and gain > 1.0 + SWITCH_GAIN
    return float(np.round(gain * 100)) / 100 if keep else None


def _advice(best_k_value: int, best_text: str, within: int, off_above_batch: int | None, k: int,
            concurrency: int, off_above_k: int | None, pools_gain: float | None = None,
            pools_above: int | None = None, restart: float | None = None) -> str:
    """verdict()'s advice: best_text is the best k's speedup as shown; `within` (_within_code) 0 where the best
    k is faster than the k set here by more than K_TIE (or larger and faster), 1 where it is smaller and within
    K_TIE but no slower, n >= 2 where it is slower here than the k set here (a smaller one within K_TIE, or the
    schedule's, kept within SWITCH_GAIN): then k is kept and the other named as within n - 1 %, never advised as
    the better one. One k per sentence: where the schedule's last k before it turns speculation off is another
    than the k advised, the off threshold is a sentence of its own. `pools_gain` above `pools_above` and
    `restart`: the gains _said_gain keeps (None: not said)."""
    parts, advised = [], k
    off_said = off_above_batch is not None and off_above_batch >= concurrency and best_k_value > 0
    holds = within >= 2 and off_said and off_above_k == best_k_value
    if best_k_value == 0:
        parts.append(f"turn speculation off at batch {concurrency}")
        if restart is not None:  # the schedule's own state here is not a plain server
            parts.append(f"restart without speculation: {restart:.2f}x this schedule")
    elif best_k_value != k and within >= 2:  # another k as fast within noise, slower here: keep k, name it
        parts.append(f"keep k = {k} (k = {best_k_value} is within {within - 1}%"
                     + (f" and holds to batch {off_above_batch}, then off)" if holds else ")"))
    elif best_k_value != k:  # best k: the smallest within K_TIE of the fastest (smallest_best)
        verb = "lower" if best_k_value < k else "raise"
        same = ", the same within 1%" if best_k_value < k and within else ""
        parts.append(f"{verb} k to {best_k_value} ({best_text}x{same})")
        advised = best_k_value
    elif k > 0:
        parts.append(f"keep k = {k}")
    sentences = []
    if off_said:
        # Name the k this batch belongs to: it is the schedule's last k, not necessarily the advised one
        # (whose own crossover may be far lower); another k than the advised one gets a sentence of its own.
        if holds:
            pass  # said: "holds to batch N, then off"
        elif not off_above_k:
            parts.append(f"turn it off above batch {off_above_batch}")
        elif off_above_k == advised:  # the advised k is the one that stops paying: no second k to name
            parts.append(f"turn it off above batch {off_above_batch}")
        else:
            sentences.append(f"Turn it off above batch {off_above_batch}, where the schedule's k = {off_above_k} "
                             "stops paying")
    if best_k_value > 0 and pools_gain is not None and pools_above is not None:
        (sentences or parts).append(f"above batch {pools_above}, separate pools beat this schedule by up to "
                                    f"{pools_gain:.2f}x")
    return ". ".join(filter(None, ["; ".join(parts), "; ".join(sentences)]))


def _within_code(best_k_value, k, best_speed, speedup) -> np.ndarray:
    """_advice's `within` for arrays: 0; 1 (a smaller best k within K_TIE, no slower); or 1 + the percent, rounded
    up, by which the best k is slower here than the k set here (kept: the best k is the schedule's, or the
    smallest within K_TIE of the fastest, either of which may be a little slower at this batch)."""
    best_k_value, k = np.asarray(best_k_value), np.asarray(k)
    best_speed, speedup = np.asarray(best_speed, dtype=float), np.asarray(speedup, dtype=float)
    named = (best_k_value != 0) & (best_k_value != k)
    with np.errstate(invalid="ignore", divide="ignore"):
        slower = named & (best_speed < speedup)
        same = named & (best_k_value < k) & ~slower & (best_speed <= speedup * (1 + K_TIE))
        pct = np.ceil(np.round((1.0 - best_speed / np.where(slower, speedup, 1.0)) * 100, 6))
    return np.where(slower, 1 + np.maximum(pct, 1), np.where(same, 1, 0)).astype(np.int64)


def advice_many(speedup, best_k_value, best_speed, off_above_batch, k, concurrency, off_above_k, pools_above=None,
                pools_gain=None, restart_gain=None) -> np.ndarray:
    """verdict()'s advice for many runs at once (arrays; off_above_batch, off_above_k and pools_above -1 where
    None, pools_gain and restart_gain NaN), worded once per distinct advice: an object array of strings."""
    speedup, best_speed = np.asarray(speedup, dtype=float), np.asarray(best_speed, dtype=float)
    best_k_value, k, conc = (np.asarray(x, dtype=np.int64) for x in (best_k_value, k, concurrency))
    off, off_k = np.asarray(off_above_batch, dtype=np.int64), np.asarray(off_above_k, dtype=np.int64)
    if len(k) == 0:
        return np.empty(0, dtype=object)
    pools, restart = _gain_codes(best_k_value, pools_above, pools_gain, restart_gain)
    named = (best_k_value != 0) & (best_k_value != k)  # the only advice that shows the best k's speedup
    speeds, speed_at = np.unique(best_speed[named], return_inverse=True)  # each worded once
    texts = [f"{v:.2f}" for v in speeds.tolist()]
    text_ids, text_of = np.unique(np.array(texts, dtype=object), return_inverse=True)
    text_code = np.full(len(k), -1, dtype=np.int64)
    text_code[named] = text_of.reshape(-1)[speed_at.reshape(-1)]
    within = _within_code(best_k_value, k, best_speed, speedup)
    off_said = (off >= 0) & (off >= conc) & (best_k_value > 0)
    parts = [best_k_value, text_code, within, k,
             np.where((best_k_value == 0) | off_said, conc, -1), np.where(off_said, off, -1),
             np.where(off_said, off_k, -1), *pools, restart]
    values, codes = zip(*(np.unique(p, return_inverse=True) for p in parts))  # each part's distinct values
    codes = [c.reshape(-1) for c in codes]
    sizes = [len(v) for v in values]
    if np.prod(np.array(sizes, dtype=float)) < 2.0 ** 62:  # one integer per run: a fast 1-D unique
        firsts, at = np.unique(np.ravel_multi_index(codes, sizes), return_index=True, return_inverse=True)[1:]
    else:
        firsts, at = np.unique(np.column_stack(codes), axis=0, return_index=True, return_inverse=True)[1:]
    worded = np.empty(len(firsts), dtype=object)
    said = lambda code: None if code < 0 else code / 100  # noqa: E731 - _gain_codes' hundredths
    worded[:] = [_advice(b, text_ids[t] if t >= 0 else "", int(w), None if o < 0 else o, kk, c,
                         None if ok < 0 else ok, said(pg), None if pa < 0 else pa, said(r))
                 for b, t, w, kk, c, o, ok, pa, pg, r in zip(*(p[firsts].tolist() for p in parts))]
    return worded[at.reshape(-1)]


def _gain_codes(best_k_value: np.ndarray, pools_above, pools_gain, restart_gain) -> tuple[list[np.ndarray], np.ndarray]:
    """The pools (batch, gain) and restart gain advice_many words, as whole numbers (gains in hundredths, as
    shown; -1 where _advice says none): ([pools_above, pools_gain], restart)."""
    n = len(best_k_value)
    as_float = lambda x: np.full(n, np.nan) if x is None else np.asarray(x, dtype=float)  # noqa: E731
    above = np.full(n, -1, dtype=np.int64) if pools_above is None else np.asarray(pools_above, dtype=np.int64)
    gain, again = as_float(pools_gain), as_float(restart_gain)
    with np.errstate(invalid="ignore"):
        pooled = (best_k_value > 0) & (above >= 0) & (gain > 1.0 + SWITCH_GAIN)
        restarted = (best_k_value == 0) & (again > 1.0 + SWITCH_GAIN)
    hundredths = lambda g, keep: np.where(keep, np.round(np.where(keep, g, 0.0) * 100), -1).astype(np.int64)  # noqa: E731
    return [np.where(pooled, above, -1), hundredths(gain, pooled)], hundredths(again, restarted)


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


def threshold_words(k: int, crossover: int | None, schedule: list[list[int]], off_free: bool = True) -> str | None:
    """The crossover (where the k set here stops paying) beside the schedule's off threshold, in words
    (`off_free`: the schedule's off band is a plain server; else its k is compared with that band)."""
    off = off_above(schedule)
    if not k or off is None or crossover is None or off == crossover:
        return None
    off_k = schedule[-2][2] if len(schedule) >= 2 else None
    cross = ("from batch 1" if crossover == 0 else f"above batch {crossover}")
    against = "plain decoding" if off_free else "its off band (speculation configured, k = 0)"
    if off_k == k and off_free:
        why = (f"between the two, k = {k} is within {SWITCH_GAIN:.0%} of plain decoding (run-to-run noise), "
               "so the schedule does not switch for it")
    elif off_k == k:
        why = (f"between the two, k = {k} still beats {against} or is within {SWITCH_GAIN:.0%} of it, so the "
               "schedule does not switch for it")
    else:
        why = (f"the schedule runs k = {off_k} there, which keeps within {SWITCH_GAIN:.0%} of {against} up to "
               f"batch {off}")
    if off == 0:
        return f"k = {k} loses {cross}; the schedule keeps speculation off at every batch"
    return (f"k = {k} (the k set here) loses {cross} (the crossover); the schedule turns speculation off above "
            f"batch {off}: {why}")


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
    if engine.beyond_read:
        notes.append(info(f"{engine.label} {engine.version_text} is newer than the newest release read for this "
                          f"preset ({engine.read_through}): predicted with that release's scheduling and kernels; "
                          "check its release notes for changes to async or overlap scheduling with speculative "
                          "decoding and to the default attention backend"))
    if variants and (engine.before_read or engine.beyond_read):  # a version given but not read: the band's span
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


def advice_of_runs(setup: Scenario, alpha, k, concurrency, runs: dict[str, np.ndarray], off: OffCost | None = None
                   ) -> np.ndarray:
    """The advice of each run of decide.summarize_many (`runs`: its fields; None where a run has an error),
    the words summarize() gives that run: advice_many's, or where speculation does not fit the closest
    setting that fits, named for that run (`off`: the off cost summarize_many was given)."""
    alpha, k, conc = (np.asarray(x, dtype=float).reshape(-1) for x in (alpha, k, concurrency))
    out = np.full(len(k), None, dtype=object)
    idx = np.flatnonzero(runs["error"] == None)  # noqa: E711 - elementwise: the runs without a message
    if not idx.size:
        return out
    none_as = lambda column: np.array([-1 if v is None else v for v in runs[column][idx].tolist()],  # noqa: E731
                                      dtype=np.int64)
    out[idx] = advice_many(runs["speedup"][idx], none_as("best_k"), runs["best_k_speedup"][idx], none_as("off_above"),
                           k[idx].astype(np.int64), conc[idx].astype(np.int64), none_as("off_above_k"),
                           none_as("pools_above"), runs["pools_gain"][idx], runs["restart_gain"][idx])
    for i in idx[runs["spec_fits"][idx] == False].tolist():  # noqa: E712 - the message names the real cause
        out[i] = summarize(replace(setup, alpha=float(alpha[i]), k=int(k[i]), concurrency=int(conc[i])),
                           off=off).verdict.advice
    return out


# The codes of a runs review's `verdict` column (kept: scripts read `verdict=clears`), and the one vocabulary
# every page, report and CLI line shows them in (the labels of decide.verdict_label; JSON key `verdict_words`).
CLEARS, BORDERLINE_LABEL, FAILS = "clears", "borderline", "fails"
UNCERTAIN = "uncertain"  # shown only (headlines.as_read): a predicted verdict whose band straddles 1.0
VERDICT_WORDS = {CLEARS: "pays off", BORDERLINE_LABEL: "borderline", FAILS: "loses", UNCERTAIN: "uncertain"}

# One machine vocabulary, the JSON key `decision` (beside `verdict` and `verdict_words`, kept): a label of
# predict, Live and Fleet ("pays off") and a code of a runs review ("clears") name the same decision once.
DECISIONS = {"pays off": "pays_off", CLEARS: "pays_off", "borderline": "borderline", "loses": "loses", FAILS: "loses",
             "off": "off", "unknown": "unknown", "does not fit": "does_not_fit"}


def verdict_words(code) -> str | None:
    """A verdict code of the runs table in the words shown to people ("clears" -> "pays off")."""
    return VERDICT_WORDS.get(code, code) if isinstance(code, str) else None


def decision(verdict) -> str | None:
    """A verdict label or code in the one machine vocabulary of `decision`: "pays_off", "borderline",
    "loses", "off", "unknown" or "does_not_fit" (None for anything else: no verdict)."""
    return DECISIONS.get(verdict) if isinstance(verdict, str) else None


def disagreement_words(predicted_code: str, predicted: float, measured: float) -> str:
    """Where the model's verdict on a run differs from the measured one: "model: pays off (1.42×); measured 0.71×"."""
    return f"model: {verdict_words(predicted_code)} ({predicted:.2f}×); measured {measured:.2f}×"


def ngram_advice(break_even: float) -> str:
    """The advice a run adds where n-gram drafting would break even within its k."""
    return f"try n-gram: with no draft model it breaks even at {break_even:.2f} tokens per step here"


def rate_remark(found: RatePrediction) -> str:
    """How a row given as a request rate was predicted (model.rate), in words: the concurrency Little's law
    gives each arm, the latencies, and an arm that saturates."""
    if found.from_measured:
        return _measured_rate_remark(found)
    said = (f"request rate {found.rate_rps:g}/s: by Little's law the plain arm runs at concurrency "
            f"{found.plain.concurrency:.0f}, the speculative arm at {found.spec.concurrency:.0f}; end-to-end "
            f"latency {found.plain.latency_s:.2f} s vs {found.spec.latency_s:.2f} s")
    for name, arm in (("plain", found.plain), ("speculative", found.spec)):
        if arm.saturated:
            said += (f"; the {name} arm saturates (it serves at most {arm.capacity_rps:.2f} requests/s), so its "
                     "requests queue")
    return said


def _measured_rate_remark(found: RatePrediction) -> str:
    """rate_remark of a row whose arms were put at the concurrency of their measured latencies."""
    parts = []
    for name, arm in (("plain", found.plain), ("speculative", found.spec)):
        if arm.measured_latency_s is None:
            parts.append(f"the {name} arm at {arm.concurrency:.1f} (the model's own latency, c = λ · L(c))")
        else:
            parts.append(f"the {name} arm at {arm.in_system:.1f} (measured latency {arm.measured_latency_s:.3g} s "
                         f"× {found.rate_rps:g}/s)")
    said = (f"request rate {found.rate_rps:g}/s: concurrency by Little's law from the measured end-to-end latency "
            f"× rate, per arm: {parts[0]}, {parts[1]}; predicted at those concurrencies")
    if math.isnan(found.plain.capacity_rps) and math.isnan(found.spec.capacity_rps):
        said += (f": time per output token {found.plain.latency_s * 1e3:.3g} ms vs {found.spec.latency_s * 1e3:.3g} ms "
                 "(the row gives no output length: prefill left out)")
    else:
        said += f": end-to-end latency {found.plain.latency_s:.2f} s vs {found.spec.latency_s:.2f} s"
    for name, arm in (("plain", found.plain), ("speculative", found.spec)):
        if arm.saturated:
            said += (f"; the {name} arm saturates ({arm.in_system:.1f} requests in the system, "
                     f"{arm.concurrency:.0f} run at once), so its requests queue")
    return said


def converted_words(published: AssumedAcceptance) -> str:
    """How a published figure was read for this engine's convention ("" where it was taken as published)."""
    if not published.converted:
        return ""
    published_tokens, why, tokens, proposal_rate = published.converted
    return (f"its {published_tokens} tokens per step count every step, those without a proposal too ({why}): "
            f"{tokens:.2f} per step with a proposal at this engine's proposal rate {proposal_rate:.2f}")


def published_remark(published: AssumedAcceptance) -> str:
    """What a row predicted on a published acceptance figure (spec_defaults.assumed_acceptance) says of it."""
    said = f"assumed acceptance: α {published.alpha:.2f} from '{published.label}' ({published.source})"
    if published.converted:
        said += f"; {converted_words(published)}"
    if published.differs:
        said += "; the figure is for " + " and ".join(published.differs)
    low, high = alpha_range(published.alpha)
    # every published figure, another family's included, widens the band alike (runs.review)
    return said + (f"; the band spans α {low:.2f}-{high:.2f} (± {ASSUMED_ALPHA_SPREAD:g}, as for any "
                   "assumed acceptance)")
