"""A live window judged on step times: the server's own timing (metrics/timing.py) against a plain step that
was measured or fitted, a saved step fit's answer at the window's batch and E, and, where none of them is
at hand, the model on presets.

    j = judge(stats, scenario, batch_now, saved=fit, plain=plain_step, t_target_ms=None)

The first that applies decides (`rests_on`, words/served.py):

1. measured: the speculative server's time per emitted token against a plain server's, each from its own
   window (`plain_from_stats`);
2. measured + step fit: the speculative server's time per token against a saved step fit's plain step at the
   window's batch; or a plain server's measured step against the fit's speculative one (what speculation
   would give at this load);
3. measured + model: the speculative time per token against the model's plain step grown from a measured
   batch-1 step (`--t-target-ms`);
4. step fit: the fit's speedup at the window's batch with the window's measured E (`StepFit.speedup`), where
   the server exposes no step timing;
5. presets: the model's verdict stands, and the headline says it rests on presets.

Where a step fit is given, its own answer is kept beside (`fit`), and a note says where the window's
measured step lies outside the fit's band: the fit does not hold at this load and the measurement decides.
The band of a measured arm is its run-to-run noise (fit.steps.NOISE_FLOOR); of a fitted arm the fit's; of a
modelled one the model's band (decide.BAND_RATIO).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from specmodel.fit.saved import SavedFit, chosen_fit, of_served_model, saved_fits
from specmodel.fit.steps import BAND_Z, NOISE_FLOOR, StepFit
from specmodel.metrics.prom import LiveStats
from specmodel.model.calibration_file import calibration_from_json
from specmodel.model.decide import BAND_RATIO, band_tone, tone_of, verdict_label
from specmodel.model.scenario import Scenario, predict, with_changes
from specmodel.notes import info, warning
from specmodel.text import MAX_MESSAGE_CHARS, safe_text
from specmodel.words import served
from specmodel.words.step_fit import fit_decision, off_words, runs_at


@dataclass(frozen=True)
class PlainStep:
    """The plain step (ms per token and sequence) at one batch, and where it came from."""

    ms: float
    batch: float
    rel_sd: float  # relative standard deviation (a measurement's run-to-run noise, a fit's band)
    kind: str  # "measured" | "step fit" | "model"
    where: str  # in words, for the headline


@dataclass(frozen=True)
class Judgement:
    """What a window's verdict rests on, and the verdict where step times decide it (label None: the model's
    verdict on presets stands)."""

    rests_on: str
    batch: float
    text: str  # the headline: what it rests on and the verdict
    label: str | None = None  # "pays off" | "borderline" | "loses"
    speedup: float | None = None
    band: tuple[float, float] | None = None
    advice: str = ""
    tokens_per_step: float | None = None
    spec_ms_per_token: float | None = None
    plain_ms: float | None = None
    measured: tuple[str, ...] = ()  # the figures measured on the server(s)
    modelled: tuple[str, ...] = ()  # the figures a fit or the model supplied
    fit: dict | None = None  # the saved step fit's own answer at this batch and E
    notes: tuple[str, ...] = ()

    @property
    def decides(self) -> bool:
        return self.label is not None

    @property
    def tone(self) -> str | None:
        """How the headline reads where step times decide (decide.band_tone); None where they do not."""
        return band_tone(self.label, tone_of(self.label), self.band) if self.decides else None

    def to_dict(self) -> dict:
        """The JSON keys `scrape --json` and `fleet --json` add (live.result_dict)."""
        timed = None
        if self.speedup is not None:
            timed = {"speedup": _r(self.speedup), "speedup_low": _r(self.band[0]), "speedup_high": _r(self.band[1]),
                     "batch": _r(self.batch), "tokens_per_step": _r(self.tokens_per_step),
                     "spec_ms_per_token": _r(self.spec_ms_per_token), "plain_ms_per_token": _r(self.plain_ms)}
        return {"verdict_rests_on": self.rests_on, "figures_measured": list(self.measured),
                "figures_modelled": list(self.modelled), "timed": timed, "step_fit": self.fit}


def _r(x) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 4)


def fit_for_server(fits: list[SavedFit], k: int | None, method: str | None, model_name: str | None,
                   own_model_only: bool = False) -> tuple[SavedFit | None, str | None]:
    """(the saved step fit this server is about, or None; a note where the file holds fits and none or several
    would do). Fits of the served model come first (the runs' target named as the server names it), then the
    k and method (fit.saved.chosen_fit); `own_model_only` (a fleet of several models): only those, and no
    note for a server none of them is of."""
    usable = [f for f in fits if f.fit.usable]
    mine = of_served_model(usable, model_name)
    if own_model_only:
        usable = mine
    if not usable:
        return None, None
    chosen = chosen_fit(mine or usable, k, method)
    if chosen is not None:
        return chosen, None
    names = "; ".join(f"{safe_text(f.label, 80)} ({safe_text(f.method or 'method not named', 40)}, k={f.fit.k})"
                      for f in usable[:6])
    return None, (f"the calibration holds {len(usable)} step fits and none or several match this server (k = {k}"
                  f"{', method ' + method if method else ''}): {names}; give the method (--method) or k of one")


def fits_from_text(text: str, where: str) -> list[SavedFit]:
    """The step fits of a calibration file's text (an upload); SpecModelError naming `where` and the field
    where it is no calibration or a fit is malformed."""
    return saved_fits(calibration_from_json(text, where)[1], where)


def plain_from_stats(stats: LiveStats, where: str = "a plain server's window") -> PlainStep | None:
    """A plain server's measured step at the batch it ran (None where its window timed no step)."""
    t = stats.timing
    if t is None or stats.spec_enabled:
        return None
    batch = t.batch if t.batch is not None else (stats.running or 1.0)
    return PlainStep(t.ms_per_token, max(1.0, batch), NOISE_FLOOR, "measured",
                     f"measured: {where}, {t.series} at batch {max(1.0, batch):.3g}")


def _fit_words(saved: SavedFit) -> str:
    """"the step fit of runs at 1, 4" (the setup it is of is in `step_fit`'s words and JSON)."""
    return "the step fit of runs at " + runs_at(saved.fit)


def _plain_from_fit(saved: SavedFit, batch: float) -> PlainStep:
    fit = saved.fit
    ms, sd = (float(v) for v in fit.plain.at(fit.shape, "plain", batch))
    return PlainStep(ms, batch, sd / ms, "step fit", f"modelled: {_fit_words(saved)}")


def _plain_from_model(s: Scenario, batch: float, t_target_ms: float) -> PlainStep:
    at = with_changes(s, t_target_ms=t_target_ms, concurrency=max(1, int(round(batch))))
    ms = float(predict(at).plain.step_ms)
    return PlainStep(ms, batch, 0.0, "model",
                     f"modelled: the model's growth with batch from the measured batch-1 step of {t_target_ms:g} ms "
                     f"({s.target} on {s.gpu})")


def _band(speedup: float, plain: PlainStep) -> tuple[float, float]:
    """The band of measured time per token over a plain step: the measurement's noise and the plain step's."""
    if plain.kind == "model":
        return speedup * BAND_RATIO[0] * math.exp(-BAND_Z * NOISE_FLOOR), speedup * BAND_RATIO[1] * math.exp(BAND_Z * NOISE_FLOOR)
    sd = math.sqrt(NOISE_FLOOR ** 2 + plain.rel_sd ** 2)
    return speedup * math.exp(-BAND_Z * sd), speedup * math.exp(BAND_Z * sd)


def fit_answer(saved: SavedFit, batch: float, e: float | None) -> dict:
    """The saved step fit's own answer at this batch and E (the runs' E where e is None): the JSON `step_fit`."""
    fit = saved.fit
    s, low, high = (float(v) for v in fit.speedup(batch, e))
    decision, words = fit_decision(fit, batch, e)
    mid, lo, hi = fit.off_above(e)
    return {"setup": safe_text(saved.label), "method": safe_text(saved.method or "") or None, "k": fit.k,
            "off_above": {"batch": mid, "low": lo, "high": hi},
            "batches": list(fit.batches),
            "batch": _r(batch), "tokens_per_step": _r(e if e is not None else fit.tokens_per_step),
            "speedup": _r(s), "speedup_low": _r(low), "speedup_high": _r(high), "decision": decision,
            "words": words, "off_words": off_words(fit, e)}


def _spec_fit_check(fit: StepFit, batch: float, e: float | None, measured_ms: float, batches: str) -> str | None:
    """A warning where the measured speculative time per token lies outside the fit's band at this batch."""
    g, sd = (float(v) for v in fit.spec.at(fit.shape, "spec", batch))
    if e and fit.tokens_per_step:
        g = g * fit.tokens_per_step / e  # the fit's time per token at the window's E
    width = BAND_Z * math.sqrt((sd / g) ** 2 + NOISE_FLOOR ** 2) if g > 0 else 0.0
    if g > 0 and abs(math.log(measured_ms / g)) <= width:
        return None
    return warning(served.fit_contradicted("speculative", g, measured_ms, batch, batches))


def _batch(stats: LiveStats, batch_now: int) -> tuple[float, str]:
    """(the batch the window's step times were measured at, where it came from): sequences decoding per engine
    step where the server counts its steps, else the running requests' mean over the window; without step
    timing the batch the model's verdict is at (the window's end)."""
    t = stats.timing
    if t is not None and t.batch is not None:
        return max(1.0, round(t.batch, 1)), f"running batch ({t.series} observations per engine step)"
    if t is not None and stats.running is not None:
        return max(1.0, round(stats.running, 1)), "running batch (running-requests gauge, window mean)"
    return float(max(1, batch_now)), "running batch (running-requests gauge)"


def _acceptance_figures(stats: LiveStats) -> list[str]:
    if stats.tokens_per_step is None:
        return []
    return [f"tokens per step E ({stats.source})"]


def judge(stats: LiveStats, s: Scenario, batch_now: int, judged: str | None = None, saved: SavedFit | None = None,
          plain: PlainStep | None = None, t_target_ms: float | None = None) -> Judgement:
    """The window's judgement (see the module's docstring). `s` is the scenario the model judged (its presets
    name the model's figures), `batch_now` the batch its verdict is at, `judged` words.served.judged_as's
    clause, `saved` the step fit chosen for this server (fit_for_server), `plain` a plain server's step
    (plain_from_stats), `t_target_ms` a measured batch-1 plain step."""
    batch, batch_from = _batch(stats, batch_now)
    e = stats.tokens_per_step if stats.spec_enabled else None
    measured = _acceptance_figures(stats) + [batch_from]
    refused = ()
    if saved is not None and not _positive_at(saved.fit, batch):  # a line fitted on small batches, far beyond them
        refused = (warning(f"{_fit_words(saved)} gives no positive step time at batch {batch:.3g}: not applied here; "
                           "calibrate with a run nearer this load"),)
        saved = None
    fit = fit_answer(saved, batch, e) if saved is not None else None
    judgement = _judged(stats, s, batch, measured, fit, saved, plain, t_target_ms, judged)
    return replace(judgement, notes=refused + judgement.notes) if refused else judgement


def _positive_at(fit: StepFit, batch: float) -> bool:
    """Whether both of the fit's step times at this batch are positive (a straight line may cross zero far
    beyond the batches it was fitted on)."""
    return all(float(getattr(fit, arm).at(fit.shape, arm, batch)[0]) > 0 for arm in ("plain", "spec"))


def _judged(stats: LiveStats, s: Scenario, batch: float, measured: list[str], fit: dict | None,
            saved: SavedFit | None, plain: PlainStep | None, t_target_ms: float | None, judged: str | None) -> Judgement:
    """judge's cases in order (the module's docstring)."""
    t = stats.timing
    e = stats.tokens_per_step if stats.spec_enabled else None
    if t is not None and stats.spec_enabled:
        step = plain or (_plain_from_fit(saved, batch) if saved is not None else None) or \
            (_plain_from_model(s, batch, t_target_ms) if t_target_ms else None)
        if step is not None:
            return _timed(stats, batch, measured, fit, step, saved, e)
    if t is not None and not stats.spec_enabled and saved is not None:
        return _plain_server(stats, batch, measured, fit, saved)
    if saved is not None and stats.spec_enabled and fit is not None:
        return _fit_only(batch, measured, fit, saved, e)
    where = f"{s.target} on {s.gpu}"
    clause = served.presets_clause(safe_text(judged, MAX_MESSAGE_CHARS) if judged else None, s.target.name, s.gpu.name)
    return Judgement(served.PRESETS, batch, clause,
                     measured=tuple(_acceptance_figures(stats) + ["running requests (gauge)"]),
                     modelled=(f"every step time (the model on presets: {where})",), fit=fit,
                     notes=(() if t is None else (info(
                         f"the server's own timing was measured ({served.ms(t.ms_per_token)} ms a token at batch {batch:.3g}, "
                         f"{t.series}) but there is no plain step to set it against: give a calibration with step "
                         "fits, a plain server's metrics or a measured plain step"),)))


def _timed(stats: LiveStats, batch: float, measured: list[str], fit: dict | None, step: PlainStep,
           saved: SavedFit | None, e: float | None) -> Judgement:
    """The speculative server's measured time per token against `step`."""
    t = stats.timing
    speedup = step.ms / t.ms_per_token
    band = _band(speedup, step)
    label = verdict_label(speedup, 1)
    rests_on = {"measured": served.MEASURED, "step fit": served.MEASURED_FIT, "model": served.MEASURED_MODEL}[step.kind]
    spec_words = served.ms_words(t.ms_per_token, f"measured: {t.series}")
    text = served.timed_text(served.timed_head(label, speedup, band, batch), rests_on, spec_words,
                             served.ms_words(step.ms, step.where), stats.configured_off)
    notes = []
    if saved is not None:
        batches = ", ".join(f"{b:g}" for b in saved.fit.batches)
        check = _spec_fit_check(saved.fit, batch, e, t.ms_per_token, batches)
        notes += [check] if check else []
    if step.kind == "measured" and abs(step.batch - batch) > 0.25 * max(step.batch, batch):
        notes.append(warning(f"the plain server ran at batch {step.batch:.3g}, the speculative one at {batch:.3g}: "
                             "the two are not at the same load; compare windows of the same traffic"))
    if step.kind == "step fit":
        notes.append(info("the plain step is the fit's (runs' throughput, prefill included); the speculative one is "
                          "the server's decode time (prefill left out), which favours speculation by prefill's share"))
    measured = [f"time per token, speculative ({t.series})"] + measured
    measured += ["time per token, plain (a plain server's window)"] if step.kind == "measured" else []
    modelled = [] if step.kind == "measured" else [f"time per token, plain ({step.where.removeprefix('modelled: ')})"]
    off = fit["off_words"] if fit and not notes[:1] else None  # a fit the window contradicts advises nothing
    return Judgement(rests_on, batch, text, label, speedup, band,
                     served.timed_advice(label, batch, off, stats.configured_off), e,
                     t.ms_per_token, step.ms, tuple(measured), tuple(modelled), fit, tuple(notes))


def _plain_server(stats: LiveStats, batch: float, measured: list[str], fit: dict, saved: SavedFit) -> Judgement:
    """A plain server's measured step against the fit's speculative one: what speculation would give here."""
    t = stats.timing
    f = saved.fit
    g, sd = (float(v) for v in f.spec.at(f.shape, "spec", batch))
    speedup = t.ms_per_token / g
    band = _band(speedup, PlainStep(g, batch, sd / g, "step fit", ""))
    label = verdict_label(speedup, 1)
    head = "speculation is off here; turned on, by the step fit: " + served.timed_head(label, speedup, band, batch)
    text = served.timed_text(head, served.MEASURED_FIT, served.ms_words(g, f"modelled: {_fit_words(saved)}"),
                             served.ms_words(t.ms_per_token, f"measured: {t.series}"))
    return Judgement(served.MEASURED_FIT, batch, text, None, speedup, band, "", f.tokens_per_step, g, t.ms_per_token,
                     tuple([f"time per token, plain ({t.series})"] + measured),
                     (f"time per token, speculative ({_fit_words(saved)})",), fit)


def _fit_only(batch: float, measured: list[str], fit: dict, saved: SavedFit, e: float | None) -> Judgement:
    """The saved step fit's answer at the window's batch and E: the server exposes no step timing."""
    speedup, band = fit["speedup"], (fit["speedup_low"], fit["speedup_high"])
    label = verdict_label(speedup, 1)
    text = f"{served.STEP_FIT}: {served.timed_head(label, speedup, band, batch)}, by {_fit_words(saved)}"
    return Judgement(served.STEP_FIT, batch, text, label, speedup, band,
                     served.timed_advice(label, batch, fit["off_words"]), e, None, None, tuple(measured),
                     (f"both step times ({_fit_words(saved)})",), fit,
                     (info("this server exposes no step timing (vLLM's inter-token latency histogram): the step fit "
                           "decides at the window's batch and measured E"),))
