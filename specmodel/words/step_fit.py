"""A step fit (specmodel.fit.steps) in words: what the runs pinned, what it predicts, which runs would
pin the rest, and why a fit was refused."""

from __future__ import annotations

from specmodel.fit.steps import (FAR, LINEAR, MODEL_MISFIT_PCT, MODEL_SHAPE_MISFIT, NOISE_FLOOR, ONE_BATCH,
                                 SPEC_HELD, SPEEDUP_ONLY, StepFit)
from specmodel.words.decision_line import on_at_every_batch

_ARM = {"plain": "plain", "spec": "speculative"}
_TERM = {"level": "level at the measured batches", "growth": "growth with the batch",
         "fixed_ms": "fixed cost per step", "per_sequence_ms": "cost per running sequence",
         "offset_ms": "fixed cost beyond the model's", "scale": "growth with the batch"}


def term_words(name: str) -> str:
    """"spec.per_sequence_ms" -> "the speculative step's cost per running sequence"."""
    arm, term = name.split(".", 1)
    return f"the {_ARM.get(arm, arm)} step's {_TERM.get(term, term)}"


def _batches(batches) -> str:
    return ", ".join(f"{b:.3g}" for b in batches)


def runs_at(fit: StepFit) -> str:
    """"1, 4", or "1, 4 and plain runs at 16" where plain runs beyond the speculative ones pinned the plain step."""
    plain_only = [b for b in fit.plain_batches if b not in fit.batches]
    return _batches(fit.batches) + (f" and plain runs at {_batches(plain_only)}" if plain_only else "")


def pinned_words(fit: StepFit) -> str:
    """Per arm, what the runs pinned of its level and growth with the batch, and what stayed at the model's:
    "plain step: level and growth from the runs; speculative step: level from the runs, growth the model's", and
    where a straight line misses its runs by more than twice their noise, by how much (its residuals widen the band
    everywhere: at its own runs' batches too, which a user reads off the chart).
    Said under fit_line, which names the model's shape once (a verify-shaped one's description is long)."""
    parts = []
    for arm in ("plain", "spec"):
        a = getattr(fit, arm)
        if a is None:
            continue
        said = []
        if a.pinned:
            said.append(" and ".join(a.pinned) + " from the runs")
        if a.defaults:
            said.append(" and ".join(a.defaults) + " the model's")
        parts.append(f"{_ARM[arm]} step: " + ", ".join(said))
    missed = [(_ARM[arm], a.residual_pct) for arm in ("plain", "spec") if (a := getattr(fit, arm)) is not None
              and a.kind == LINEAR and a.residual_pct is not None and a.residual_pct > MODEL_MISFIT_PCT]
    if missed:
        parts.append("the straight line misses the runs by " + " and ".join(f"{pct:.0f}% ({arm})" for arm, pct in missed)
                     + f" where their noise is ~{NOISE_FLOOR:.0%}: the band is that much wider at every batch, the "
                     "runs' own included")
    return "; ".join(parts)


def runs_to_pin(fit: StepFit) -> list[str]:
    """The runs that would pin what the fit could not (the plan's measurement lines)."""
    out = []
    top = max(fit.batches) if fit.batches else 1.0
    second = f"{top * 4:g}" if top * 4 <= 256 else f"{max(top / 4, 1):g}"
    plain_only = [b for b in fit.plain_batches if b not in fit.batches]
    if (ONE_BATCH in fit.notes or fit.unpinned) and plain_only:  # a baseline without its pair: its batch is the one
        out.append(f"run speculative at concurrency {max(plain_only):g} too (the plain run there pins the plain step): "
                   "one concurrency pins a step's total at that batch, not how it grows")
    elif ONE_BATCH in fit.notes or fit.unpinned:
        out.append(f"run plain and speculative at a second concurrency ({second}): one concurrency pins a step's "
                   "total at that batch, not how it grows")
    if SPEEDUP_ONLY in fit.notes and (fit.plain is None or fit.plain.points == 0):
        out.append("record the plain run's output throughput (tokens/s), not only the speedup: it pins the plain "
                   "step apart from the speculative one")
    defaults = [f"{arm}.{t}" for arm in ("plain", "spec") for t in (getattr(fit, arm).defaults if getattr(fit, arm) else ())]
    if defaults and not out:
        out.append(f"run plain and speculative at {second}: it pins " + "; ".join(term_words(t) for t in defaults))
    return out


def threshold_runs_words(batches: tuple[int, int], off: tuple) -> str:
    """The plan's line for the two concurrencies that would narrow a fit's open turn-off batch (`off`:
    StepFit.off_above, at the fit and the band's ends)."""
    _, low, high = off
    now = f"between batch {low} and {high}" if high is not None else f"above batch {low}"
    return (f"run plain and speculative at concurrency {batches[0]} and {batches[1]}: they narrow where speculation "
            f"stops paying (now {now})")


def refused_words(fit: StepFit) -> str:
    """Why a fit is not applied ("" where it is)."""
    if fit.refused:
        return ("fit refused: " + "; ".join(term_words(t) for t in fit.refused)
                + (" left its physical range " if len(fit.refused) == 1 else " left their physical range ")
                + "(a step that shrinks as the batch grows, or a negative step time): the runs were probably taken "
                "under different conditions; rerun them back to back on a quiet server")
    if fit.unpinned:
        what = "; ".join(term_words(t) for t in fit.unpinned)
        if fit.shape.kind == LINEAR and ONE_BATCH in fit.notes:
            return ("nothing predicted at other batches: runs at one concurrency pin each step's total there, not "
                    "how it grows with the batch")
        return f"nothing predicted: the runs do not pin {what}"
    return ""


def prediction_words(fit: StepFit, batch: float, tokens_per_step: float | None = None) -> str:
    """"0.86× (0.70–1.05×) at 16, an extrapolation" for one batch of a usable fit."""
    s, low, high = (float(v) for v in fit.speedup(float(batch), tokens_per_step))
    far = fit.batches and batch > FAR * max(fit.batches)
    return f"{s:.2f}× ({low:.2f}–{high:.2f}×) at {batch:g}" + (", an extrapolation" if far else "")


def off_words(fit: StepFit, tokens_per_step: float | None = None) -> str:
    """Where speculation stops paying by the fit, with the band's range."""
    mid, low, high = fit.off_above(tokens_per_step)
    if mid is None and high is None:
        return on_at_every_batch(low, "pays off", "the fit pays off")
    if high == 0:
        reach = fit.band_reaches_one(tokens_per_step)
        if reach is not None:
            return (f"loses at every batch by the fit, but its band reaches 1.0 at batch {reach}: turn it off; a run "
                    f"at {reach} would settle it")
        return "loses at every batch, band included: turn it off"
    if mid == 0:
        reach = "every batch" if high is None else f"batch {high}"
        return f"loses from batch 1 by the fit (the band reaches 1.0 up to {reach})"
    hi = "beyond" if high is None else f"{high}"
    return f"stops paying above batch {mid} (band {low}–{hi})"


def fit_line(fit: StepFit) -> str:
    """The fit in one line: what it saw and its turn-off batch (or why it predicts nothing), then, where the
    speculative step was held at the plain step's (SPEC_HELD), why and the run that would settle it: the
    conclusion first, the hold's reasons after it (they came first, and a reader met three lines of them before
    the verdict)."""
    seen = f"fitted on concurrency {runs_at(fit)}" + (" (speedups only)" if SPEEDUP_ONLY in fit.notes else "")
    why = refused_words(fit)
    if why:
        return f"{seen}: {why}"
    shape = "a straight line in the batch" if fit.shape.kind == LINEAR else f"the model's shape ({fit.shape.described_as})"
    if MODEL_SHAPE_MISFIT in fit.notes:
        shape += f" (the model's shape for {fit.shape.described_as} missed these runs by more than their noise)"
    held = f". Held: {held_words(fit)}" if SPEC_HELD in fit.notes else ""
    return f"{seen}, over {shape}: speculation {off_words(fit)}{held}"


def held_words(fit: StepFit) -> str:
    """Why the speculative step was held at the plain step's level and growth (SPEC_HELD), and the run that would
    settle it: where the plain runs reach batches the speculative ones did not, the plain growth there is not
    something the speculative runs contradict, they did not look."""
    above = [b for b in fit.plain_batches if b > max(fit.batches or (0,))]
    if above and not _held_within_runs(fit):
        return ("the speculative runs grow more slowly than the plain step does up to the plain runs at "
                f"{_batches(above)}, where no speculative run was taken; a step that also drafts and verifies grows "
                "at least as the plain one does, so it is held at the plain step's growth: a speculative run at "
                f"{_batches(above[-1:])} would measure its own")
    return ("these runs put the speculative step below the plain step or growing more slowly than it, which a step "
            "that also drafts and verifies cannot do: held at the plain step's level and growth; rerun both arms back "
            "to back")


def _held_within_runs(fit: StepFit) -> bool:
    """Whether the speculative runs themselves, against the plain step at their own batches, put the speculative step
    below the plain one or growing less between their smallest and largest batch (a measurement to take again);
    False where they do not (the hold then comes from the plain growth beyond them)."""
    by_batch: dict[float, list[float]] = {}
    for b, speedup in fit.measured:
        by_batch.setdefault(b, []).append(speedup)
    if len(by_batch) < 2 or not fit.tokens_per_step:
        return True
    ends = [min(by_batch), max(by_batch)]
    plain, _ = fit.plain.at(fit.shape, "plain", ends)
    spec = [fit.tokens_per_step / (sum(by_batch[b]) / len(by_batch[b])) * float(t) for b, t in zip(ends, plain)]
    return spec[0] < plain[0] or spec[1] < plain[1] or spec[1] - spec[0] < plain[1] - plain[0]


def fit_decision(fit: StepFit, batch: float, tokens_per_step: float | None = None) -> tuple[str, str]:
    """(decision label, sentence) of a usable fit at one batch: pays_off where the whole band is above 1.0,
    loses where it is below, uncertain where it straddles it."""
    s, low, high = (float(v) for v in fit.speedup(float(batch), tokens_per_step))
    label = "pays_off" if low >= 1 else ("loses" if high < 1 else "uncertain")
    words = {"pays_off": "pays off", "loses": "loses", "uncertain": "uncertain"}[label]
    return label, f"{words}: {prediction_words(fit, batch, tokens_per_step)}, by the step fit of runs at {runs_at(fit)}"


# chosen: runs' E within 5% of their mean (the fit's noise floor) sit on the drawn line as well as their noise allows
E_SPREAD_SAID = 0.05


def line_e_words(fit: StepFit, measured_es) -> str:
    """Why a fitted run can sit off the drawn line: the line is the fit at the runs' mean E, each run at its own
    (its prompts and sampling). "" where every run's E is within E_SPREAD_SAID of the mean."""
    es = [float(e) for e in measured_es if e is not None and e == e and e > 0]
    if not fit.tokens_per_step or not es:
        return ""
    low, high = min(es), max(es)
    if max(abs(low / fit.tokens_per_step - 1), abs(high / fit.tokens_per_step - 1)) <= E_SPREAD_SAID:
        return ""
    return (f"the line is drawn at the runs' mean tokens per step (E {fit.tokens_per_step:.2f}); these runs measured E "
            f"{low:.2f}–{high:.2f}, and a run's speedup moves with its own E, so a fitted run sits off the line by as "
            "much (the table's fit column is each run's fit at its own E)")


def mix_fit_line(label: str, by_fit: dict) -> str:
    """A traffic mix's single pool by the user's runs (plan.mix.workloads_by_fit), in one line: "measured fit
    (setup), the single pool at 16 sequences per replica: chat 1.21× (1.02–1.43×, pays off); …"."""
    return (f"measured fit ({label}), the single pool at {by_fit['batch']:g} sequences per replica: "
            + "; ".join(f"{w['label']} {w['speedup']:.2f}× ({w['speedup_low']:.2f}–{w['speedup_high']:.2f}×, "
                        f"{w['decision'].replace('_', ' ')})" for w in by_fit["workloads"]))
