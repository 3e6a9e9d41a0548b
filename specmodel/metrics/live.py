"""A live measurement held against the model: the operating point, the verdict and k' ≤ k advice.

    v = live_verdict(stats, base)     # stats: prom.LiveStats; base: the Scenario of the chosen presets

The measured acceptance (the survival profile where the server gives one, else α) and the measured
running requests replace the base scenario's α, k and concurrency; the model then says what
speculation gives right now, what each k' ≤ k would give from the measured profile (positions past
the first k' simply go unused, so E(k') = 1 + p_1 + … + p_k'), and where the crossover lies. When
the server runs without speculation, the verdict is the model's prediction with the base
scenario's α and k at the measured load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.metrics import scrape, timed
from specmodel.metrics.prom import LiveStats, Snapshot, json_safe, stats_from_window, window_over
from specmodel.metrics.schemas import ENGINES
from specmodel.model import presets
from specmodel.model.decide import JUDGED, Decision, band_tone, straddles, tone_of
from specmodel.words import decision, summarize
from specmodel.words.decision_line import decision_line, fit_decision_line, timed_decision_line
from specmodel.words.served import judged_as, served_as_words
from specmodel.model.instances import as_served
from specmodel.model.scenario import Scenario, predict, with_changes
from specmodel.notes import info, warning, warnings_in

HISTORY_CAP = 360  # chosen: points kept per session for the rolling chart


@dataclass(frozen=True)
class InputNames:
    """How the verdict's notes name the inputs they point to. The defaults are the command line's
    flags; a page passes the names of its own widgets."""

    target: str = "--target"  # "the server serves A but --target is B"
    choose_target: str = "give --target {model}"  # what to do about it, {model} the served model
    assumed: str = "--alpha and --spec-k"  # where the assumed α and k come from
    give_k: str = "give --k N (the server's draft tokens per step)"  # where to give a k the server hides


COMMAND_LINE = InputNames()


@dataclass(frozen=True)
class KOption:
    k: int
    tokens_per_step: float
    speedup: float


@dataclass(frozen=True)
class LiveVerdict:
    label: str  # "pays off" | "borderline" | "loses" | "off" | "unknown"
    text: str  # one sentence with the number
    advice: str  # what to change now
    concurrency: int  # the measured running requests the model is evaluated at
    speedup: float | None  # model speedup with the measured acceptance at that concurrency
    speedup_range: tuple[float, float] | None  # from the acceptance confidence interval
    break_even_tokens_per_step: float | None  # E needed at that concurrency and k
    k_options: tuple[KOption, ...]  # k' = 0..k with the measured profile
    best_k: int | None
    best_k_speedup: float | None
    crossover_concurrency: int | None
    scenario: Scenario  # what the model was evaluated on
    measured: bool  # the acceptance was measured on the server (not the base scenario's)
    notes: tuple[str, ...] = ()
    # the model's 80% band at this point (decide.speedup_band), the acceptance interval folded in where measured
    band: tuple[float, float] | None = None
    # the model's decision at this point (schedule, off threshold and its range; None where nothing was decided)
    decision: Decision | None = field(default=None, compare=False, repr=False)

    @property
    def tone(self) -> str:
        """How the headline reads (specmodel.notes.TONES): "off" and "unknown" are "neutral"; "caution" where
        the band straddles 1.0 (decide.band_tone)."""
        return band_tone(self.label, tone_of(self.label), self.band)

    @property
    def uncertain(self) -> bool:
        """True when the band straddles 1.0: the model cannot say whether speculation pays off here."""
        return straddles(self.band)

    def to_dict(self) -> dict:
        return json_safe({
            "label": self.label, "text": self.text, "advice": self.advice, "concurrency": self.concurrency,
            "speedup": self.speedup, "speedup_range": self.speedup_range,
            "speedup_low": self.band[0] if self.band else None, "speedup_high": self.band[1] if self.band else None,
            "uncertain": self.uncertain if self.speedup is not None else None,
            "break_even_tokens_per_step": self.break_even_tokens_per_step,
            "k_options": [{"k": o.k, "tokens_per_step": round(o.tokens_per_step, 4),
                           "speedup": round(o.speedup, 4)} for o in self.k_options],
            "best_k": self.best_k, "best_k_speedup": self.best_k_speedup,
            "crossover_concurrency": self.crossover_concurrency, "measured": self.measured,
            "model": {**self.scenario.names(), "tp": self.scenario.tp,
                      "context_len": self.scenario.context_len},
            "notes": list(self.notes),
        })


# chosen (no measurement found): load "changed within the window" when its scrapes' running requests
# differ by this many requests and by this fraction of the highest: then the window's mean is no operating
# point the server ran at.
LOAD_CHANGE_REQUESTS = 2
LOAD_CHANGE_FRACTION = 0.25  # chosen: with LOAD_CHANGE_REQUESTS, see above


def measured_concurrency(stats: LiveStats) -> int:
    """Running requests at the end of the window (the operating point the server is at now; the
    window's mean when the end is not known), rounded, at least 1 (an idle server is placed at batch 1)."""
    running = stats.running_end if stats.running_end is not None else stats.running
    if running is None or not math.isfinite(running):
        return 1
    return max(1, int(round(running)))


def live_scenario(stats: LiveStats, base: Scenario) -> Scenario:
    """The base scenario with the measured acceptance, k and concurrency put in; where the window measured
    no acceptance (an idle server) but the server says its k, that k with the assumed α. The base as the server's
    engine runs it (model.instances.as_served: a TGI server runs n-gram, not a draft model)."""
    base = as_served(base, stats.server)[0]
    b = measured_concurrency(stats)
    if not stats.measured or not stats.k:
        if stats.spec_enabled and stats.k:
            keep = base.survival if base.survival is not None and len(base.survival) >= int(stats.k) else None
            return with_changes(base, k=int(stats.k), survival=keep, concurrency=b)
        return with_changes(base, concurrency=b)
    survival = tuple(stats.survival) if stats.survival is not None and len(stats.survival) == stats.k else None
    return with_changes(base, k=stats.k, survival=survival, alpha=float(stats.alpha), concurrency=b)


def load_change_note(stats: LiveStats) -> str | None:
    """A note when running requests moved within the window (a 0 → 32 jump, or 16 → 0 as a run ends): the
    verdict is at the window's end, and acceptance over the window mixes both loads. It says which way the
    load moved: from the window's first scrape to its last, with the extremes where they lie beyond both."""
    low, high, end = stats.running_low, stats.running_high, stats.running_end
    if low is None or high is None or end is None:
        return None
    if high - low < LOAD_CHANGE_REQUESTS or high - low < LOAD_CHANGE_FRACTION * high:
        return None
    return warning(f"load changed within the window: running requests {_load_path(stats.running_start, end, low, high)} "
                   f"(mean {stats.running:.3g}); judged at the window's end, batch {max(1, round(end))}; E and α "
                   "mix both loads, so read them again once a window has run at the new load")


def _load_path(start: float | None, end: float, low: float, high: float) -> str:
    """"went from 16 to 0" (first scrape to last), "(lowest …, highest … within the window)" where the
    extremes lie beyond both ends; "ranged from 0 to 32 within the window, 0 at its end" where the two ends
    are equal or the first is unknown."""
    if start is None or round(start, 3) == round(end, 3):
        return f"ranged from {low:.3g} to {high:.3g} within the window, {end:.3g} at its end"
    moved = f"went from {start:.3g} to {end:.3g}"
    if low < min(start, end) or high > max(start, end):
        moved += f" (lowest {low:.3g}, highest {high:.3g} within the window)"
    return moved


def _model_note(stats: LiveStats, base: Scenario, names: InputNames):
    if not stats.model_name:
        return None
    try:
        served = presets.find_model(stats.model_name).name
    except SpecModelError:
        return info(f"the server serves '{stats.model_name}', which has no preset: the model uses "
                    f"{base.target} ({names.target})")
    if served != base.target.name:
        return info(f"the server serves {served} but {names.target} is {base.target}: "
                    f"{names.choose_target.format(model=served)} for a matched prediction")
    return None


def assumed_model(stats: LiveStats, judged: Scenario) -> str | None:
    """Where the verdict rests on presets that are not the served model (the served model is no preset, reads
    as another one, or is not named), the clause that says what it was judged as; None where it is the
    served model's own preset (words.served.judged_as)."""
    served = presets.match_model(stats.model_name) if stats.model_name else None
    return judged_as(stats.model_name, served.name if served else None, judged.target.name, judged.gpu.name)


def live_verdict(stats: LiveStats, base: Scenario, names: InputNames = COMMAND_LINE) -> LiveVerdict:
    """Place the window's measurement on the model and say what to do right now; the notes name
    the inputs as `names` says (the command line's flags by default)."""
    s = live_scenario(stats, base)
    b = s.concurrency
    notes = [n for n in (load_change_note(stats), _model_note(stats, base, names)) if n]
    served = as_served(base, stats.server)[1]
    if served:
        notes.append(info(f"judged as {served_as_words(served)}"))
    if stats.running is None:
        notes.append(info("the server reports no running-requests gauge: placed at batch 1"))
    elif stats.running < 0.5:
        notes.append(info("no requests were running in the window: the operating point is placed at batch 1"))

    if stats.needs_k:
        text = (f"k unknown: E = {stats.tokens_per_step:.3f} tokens per step measured at batch {b}; α, break-even "
                "and the verdict need k (draft tokens per step), which this server does not expose")
        return LiveVerdict("unknown", text, names.give_k, b, None, None, None, (), None, None, None, s, False,
                           tuple(notes))
    if not stats.measured:
        if s.k == 0:
            raise SpecModelError("the base scenario has k = 0: choose k ≥ 1 to see what speculation would do")
        summary = summarize(s, k_max=max(s.k, 1))
        label = "off" if not stats.spec_enabled or stats.configured_off else "unknown"
        why = ("speculation is off on this server" if not stats.spec_enabled
               else "speculation is configured but switched off at this load (no draft proposed while decoding)"
               if stats.configured_off else "acceptance could not be measured in this window")
        text = (f"{why}; the model predicts k = {s.k} at α = {s.alpha:.2f} would give "
                f"{float(summary.prediction.speedup):.2f}x at batch {b}")
        if summary.best_k == 0:
            advice = f"keep it off at batch {b}: no k pays at this load"
        else:
            advice = f"try k = {summary.best_k} ({summary.best_k_speedup:.2f}x predicted at batch {b})"
            if summary.crossover_concurrency is not None and summary.crossover_concurrency >= 1:
                advice += f", off above batch {summary.crossover_concurrency}"
        if stats.spec_enabled and stats.k:
            notes.append(info(f"α = {s.alpha:.2f} is assumed ({names.assumed}), not measured on this server; "
                              f"k = {s.k} is the server's"))
        else:
            notes.append(info(f"α = {s.alpha:.2f} and k = {s.k} are assumed ({names.assumed}), not measured on "
                              "this server"))
        rng, options = None, ()
    else:
        k = int(stats.k)
        rng = None  # the speedups at the ends of the acceptance interval, which the model's band also spans
        if stats.alpha_ci is not None:
            lo_hi = np.asarray(predict(s, alpha=np.asarray(stats.alpha_ci)).speedup, dtype=float)
            rng = (float(np.min(lo_hi)), float(np.max(lo_hi)))
        summary = summarize(s, k_max=k, band_spans=rng or ())  # best k among 0..k: k' ≤ k needs no extrapolation
        ks = np.arange(0, k + 1)
        grid = predict(s, k=ks)
        options = tuple(KOption(int(kk), float(t), 1.0 if kk == 0 else float(v))
                        for kk, t, v in zip(ks, np.asarray(grid.tokens_per_step, dtype=float),
                                            np.asarray(grid.speedup, dtype=float)))
        label, advice = summary.verdict.label, summary.verdict.advice
        text = summary.verdict_text_with(f" at batch {b}, measured E = {stats.tokens_per_step:.2f} tokens per step "
                                         f"with k = {k} (break-even "
                                         f"{float(summary.prediction.break_even_tokens_per_step):.2f})")
        if rng is not None and (rng[0] < 1.0 <= rng[1] or rng[0] <= 1.0 < rng[1]):
            notes.append(info("the acceptance interval straddles break-even: watch a longer window before acting"))
        if stats.survival is None:
            notes.append(info("no per-position counts from this server: k' < k assumes a constant per-token α"))
    p = summary.prediction
    return LiveVerdict(label, text, advice, b, float(p.speedup), rng, _finite_or_none(p.break_even_tokens_per_step),
                       options, summary.best_k, summary.best_k_speedup, summary.crossover_concurrency, s,
                       stats.measured, tuple(notes), _finite_band(summary.band), summary)


def _finite_band(band: tuple[float, float] | None) -> tuple[float, float] | None:
    """The summary's band, or None where nothing the inputs allow could be predicted (NaN ends)."""
    return band if band is not None and np.isfinite(band).all() else None


def _finite_or_none(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def history_point(stats: LiveStats, at: float, verdict: LiveVerdict | None = None) -> dict:
    """One row of the rolling chart: time, E with its interval, load, throughput, model speedup."""
    ci = stats.tokens_per_step_ci
    return {"at": float(at), "tokens_per_step": stats.tokens_per_step,
            "tokens_per_step_lo": ci[0] if ci else None, "tokens_per_step_hi": ci[1] if ci else None,
            "running": stats.running, "waiting": stats.waiting, "generation_tok_s": stats.generation_tok_s,
            "kv_usage": stats.kv_usage, "speedup": verdict.speedup if verdict and verdict.measured else None}


def append_history(history: list, point: dict, cap: int = HISTORY_CAP) -> list:
    """The history with the point added, keeping only the newest `cap` points."""
    return (list(history) + [point])[-cap:]


def scrape_once(url: str, interval_s: float, user: str = "", password: str = "", token: str = "",
                model_name: str | None = None, k: int | None = None) -> Snapshot:
    """One scrape of a server's /metrics, with the time limits of a page scraping every `interval_s`;
    user and password for basic auth, token for a bearer token (empty: none)."""
    policy = scrape.ScrapePolicy.for_interval(interval_s)
    with scrape.make_client(policy) as client:
        return scrape.scrape_snapshot(client, scrape.with_credentials(url.strip(), user, password), token=token or None,
                                      policy=policy, model_name=model_name, k=k)


def window_stats(snapshots: list, window: str) -> tuple[LiveStats, int]:
    """The statistics of the named window (see WINDOWS) ending at the last snapshot, and how many
    scrape intervals it spans."""
    start = window_start(snapshots, window)
    return stats_from_window(window_over(snapshots[start:])), len(snapshots) - start - 1


@dataclass(frozen=True)
class LiveSession:
    """What one page session has seen of one server: its snapshots (the newest `cap`), the
    rolling chart's points, and the model the first scrape chose (later scrapes stay on it)."""

    key: tuple = ()  # what the session watches (a URL and k, or the recording)
    snapshots: tuple[Snapshot, ...] = ()
    history: tuple[dict, ...] = ()
    first_model: str | None = None
    cap: int = HISTORY_CAP

    def watching(self, key: tuple) -> LiveSession:
        """This session if it watches `key`, else a new one for it (another server: a new history)."""
        return self if key == self.key else LiveSession(key, cap=self.cap)

    @property
    def model_names(self) -> list[str]:
        """The models the server serves, as its latest scrape lists them."""
        return list(self.snapshots[-1].model_names) if self.snapshots else []

    @property
    def first_model_index(self) -> int:
        """Where the first scrape's model stands in model_names (0 if it is gone)."""
        names = self.model_names
        return names.index(self.first_model) if self.first_model in names else 0

    def with_snapshot(self, snap: Snapshot) -> LiveSession:
        """The session with `snap` added. A snapshot of another server or model starts the
        snapshots and the chart over: its counters are not comparable with the earlier ones."""
        last = self.snapshots[-1] if self.snapshots else None
        fresh = last is not None and (snap.server != last.server or snap.model_name != last.model_name)
        kept = () if fresh else self.snapshots
        return replace(self, snapshots=(*kept, snap)[-self.cap:], history=() if fresh else self.history,
                       first_model=snap.model_name if self.first_model is None else self.first_model)

    def with_latest_point(self) -> LiveSession:
        """The session with the latest scrape interval added to the chart, unless it is there already."""
        last = self.snapshots[-1]
        if self.history and self.history[-1]["at"] == last.at:
            return self
        point = history_point(stats_from_window(window_over(self.snapshots[-2:])), last.at)
        return replace(self, history=tuple(append_history(self.history, point, self.cap)))


# chosen: the Live page's windows, Prometheus' usual rate windows between one interval and the whole session
WINDOWS = {"last interval": None, "1 min": 60.0, "5 min": 300.0, "15 min": 900.0, "session": float("inf")}


def window_start(snapshots: list, window: str) -> int:
    """Index of the first snapshot of the named window (see WINDOWS) ending at the last snapshot."""
    if window not in WINDOWS:
        raise SpecModelError(f"unknown window '{window}'; choose one of: {', '.join(WINDOWS)}")
    n = len(snapshots)
    if n < 2:
        return 0
    span = WINDOWS[window]
    if span is None:
        return n - 2
    last = snapshots[-1].at
    start = n - 2
    while start > 0 and last - snapshots[start].at < span:
        start -= 1
    return start


def judgement_of(stats: LiveStats, verdict: LiveVerdict, **given) -> timed.Judgement:
    """What the window's verdict rests on (metrics/timed.py), from the step fit, plain step or measured batch-1
    plain step `given` (timed.judge's keywords); the model's verdict on presets where none is given."""
    return timed.judge(stats, verdict.scenario, verdict.concurrency, assumed_model(stats, verdict.scenario), **given)


def judged(stats: LiveStats, verdict: LiveVerdict, fits=(), method: str | None = None,
           plain: timed.PlainStep | None = None, t_target_ms: float | None = None,
           own_model_only: bool = False) -> timed.Judgement:
    """judgement_of with the step fit of `fits` (a calibration's) for this server's model, k and `method`
    (timed.fit_for_server); a warning note where the fits hold none or several that would do."""
    saved, why = (timed.fit_for_server(list(fits), stats.k, method, stats.model_name, own_model_only) if fits
                  else (None, None))
    j = judgement_of(stats, verdict, saved=saved, plain=plain, t_target_ms=t_target_ms)
    return replace(j, notes=((warning(why),) if why else ()) + j.notes)


def headline(verdict: LiveVerdict, judgement: timed.Judgement) -> tuple[str, str, str]:
    """(label, text, advice) of the verdict a reader sees first: the step times' where they decide, else the
    model's, its text led by what it rests on (presets)."""
    if judgement.decides:
        return judgement.label, judgement.text, judgement.advice
    if judgement.speedup is not None:  # a plain server against a step fit: what speculation would give
        return verdict.label, judgement.text, verdict.advice
    return verdict.label, f"{judgement.text}: {verdict.text}", verdict.advice


def decision_line_of(verdict: LiveVerdict, judgement: timed.Judgement | None, who: str = "") -> str:
    """The decision line (words.decision_line) of a window: the step fit's threshold where the fit decides ("your
    runs"), on or off at this batch where measured step times decide, else the model's schedule over k' ≤ k (said
    to rest on an assumed α where the server measured none)."""
    if judgement is not None and judgement.decides:
        off = (judgement.fit or {}).get("off_above")
        if off is not None:
            return fit_decision_line(judgement.fit.get("k"), (off["batch"], off["low"], off["high"]), who)
        return timed_decision_line(judgement.label, judgement.speedup, judgement.band, judgement.batch,
                                   verdict.scenario.k, who, judgement.rests_on)
    head = f"{who}: " if who else ""
    if verdict.decision is None or verdict.label not in (*JUDGED, "off", "unknown"):
        return f"{head}{verdict.label}: not predicted"
    if verdict.label == "unknown" and verdict.measured:
        return f"{head}unknown"
    return decision_line(verdict.decision, who) + ("" if verdict.measured else " (α assumed)")


def result_dict(url: str, last: Snapshot, stats: LiveStats, verdict: LiveVerdict,
                judgement: timed.Judgement | None = None) -> dict:
    """The public JSON of one measurement: `scrape --json`, and each instance of `fleet --json`.

    url is the address asked for (`url_given`; `url` and `metrics_url` are where the metrics were read, e.g.
    TensorRT-LLM's /prometheus/metrics after /metrics answered JSON), last the window's later snapshot (where
    the metrics were found, the model names and where k came from), stats the window's statistics, verdict the
    model's judgement, `judgement` what the verdict rests on (judgement_of; the model on presets where None).
    Where step times decide (`verdict_rests_on` other than "presets"), `verdict`, `decision`, `verdict_text`
    and `advice` are theirs and the model's stay in `model_verdict`, `model_verdict_text`, `model_advice`,
    `speedup` and its band. The keys are a stable interface: add keys, never rename or drop one.
    """
    st, vd = stats.to_dict(), verdict.to_dict()
    assumed = assumed_model(stats, verdict.scenario)
    judgement = judgement or judgement_of(stats, verdict)
    label, text, advice = headline(verdict, judgement)
    return {
        "url": scrape.display_url(last.source_url or url), "url_given": scrape.display_url(url),
        "server": stats.server, "model_name": stats.model_name,
        "model_names": list(last.model_names), "k": stats.k, "k_source": stats.k_source or last.k_source,
        "spec_enabled": stats.spec_enabled, "measured": stats.measured, "source": stats.source,
        "window_s": round(stats.window_s, 3),
        "tokens_per_step": st["tokens_per_step"], "tokens_per_step_ci": st["tokens_per_step_ci"],
        "alpha": st["alpha"], "alpha_ci": st["alpha_ci"],
        "per_position": st["survival"], "per_position_ci": st["survival_ci"],
        "conditional_acceptance": st["conditional"],
        "draft_acceptance_rate": st["draft_acceptance_rate"],
        "draft_acceptance_rate_ci": st["draft_acceptance_rate_ci"],
        "draft_acceptance_rate_source": st["rate_source"], "tokens_per_step_source": stats.source,
        # vLLM's own names for the same two numbers (vllm/v1/spec_decode/metrics.py): E and accepted ÷ drafted.
        "spec_decode_acceptance_length": st["tokens_per_step"],
        "spec_decode_acceptance_rate": st["draft_acceptance_rate"],
        "mean_draft_length": st["mean_draft_length"], "max_draft_length": st["max_draft_length"],
        "needs_k": stats.needs_k,
        "drafts": st["drafts"], "generation_tokens": st["generation_tokens"],
        "generation_tok_s": st["generation_tok_s"], "running_requests": st["running"],
        "running_end": st["running_end"], "running_start": st["running_start"],
        "running_low": st["running_low"], "running_high": st["running_high"],
        "waiting_requests": st["waiting"], "kv_cache_usage": st["kv_usage"],
        "num_gpu_blocks": st["num_gpu_blocks"], "block_size": st["block_size"],
        "kv_capacity_tokens": st["kv_capacity_tokens"],
        "model_assumed": assumed is not None, "judged_as": assumed,
        "verdict": label, "decision": decision(label), "verdict_text": judgement.text if judgement.decides else verdict.text,
        "advice": advice, "model_verdict": verdict.label, "model_decision": decision(verdict.label),
        "model_verdict_text": verdict.text, "model_advice": verdict.advice, **judgement.to_dict(),
        "headline": text, "timing": stats.timing.to_dict() if stats.timing else None,
        "decision_line": decision_line_of(verdict, judgement, stats.model_name or "this server"),
        "speedup": vd["speedup"], "speedup_range": vd["speedup_range"],
        "speedup_low": vd["speedup_low"], "speedup_high": vd["speedup_high"], "uncertain": vd["uncertain"],
        "concurrency": verdict.concurrency, "best_k": verdict.best_k,
        "k_options": vd["k_options"], "model": vd["model"],
        "notes": list(stats.notes) + list(verdict.notes) + list(judgement.notes) + _found_at(url, last),
        "warnings": warnings_in((*stats.notes, *verdict.notes, *judgement.notes)),
        "metrics_url": scrape.display_url(last.source_url or url),
        "engine": _engine_label(stats.server),
    }


def _engine_label(server: str) -> str:
    return ENGINES[server].label if server in ENGINES else server.removeprefix("other:") + " (vLLM's counter schema)"


def _found_at(url: str, last) -> list[str]:
    if not last.source_url or last.source_url == url:
        return []
    return [info(f"the metrics were found at {scrape.display_url(last.source_url)}: {scrape.display_url(url)} had "
                 "none (TensorRT-LLM's trtllm-serve answers JSON iteration stats at /metrics)")]
