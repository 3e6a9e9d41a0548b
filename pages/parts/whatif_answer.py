"""What-if's answer: the decision line first (the session's step fit's where it answers for this k and
method, else the model's), then the verdict with its advice in one box, and the why (the verdict's whole
words where its band is open, the crossover beside the off threshold) and the notes behind an expander."""

from __future__ import annotations

from pages.parts.calibration import calibration_badge, step_fits
from pages.parts.decision import show_decisions, why_box
from pages.parts.display import show_verdict
from pages.parts.step_fit_answer import session_fit, show_step_fit
from specmodel.fit.saved import fits_across_k
from specmodel.show.decisions import across_k_decision, runs_schedule, scenario_decision
from specmodel.words.off_cost import measured_off_words


def short_verdict(summary) -> str:
    """The verdict's words without the open threshold's clause (the decision line and its runs say it), the
    band kept where it straddles 1.0."""
    text = summary.verdict.text
    if summary.uncertain_words and summary.band:
        text = text.removesuffix(summary.uncertain_words) + f" (80% band {summary.band[0]:.2f}–{summary.band[1]:.2f}x)"
    return text


def show_answer(slot, answer, summary):
    """The decision in `slot` (first on the page), the step fit's and the model's verdicts in `answer`; returns the
    schedule the session's step fits give (show.decisions.runs_schedule), None where the model decides, and what
    their runs measured of the off state ("" where none): "What to deploy" writes them."""
    scenario = summary.scenario
    e = float(summary.prediction.tokens_per_step)  # at this page's α: a what-if
    saved = session_fit(scenario)
    decided = [scenario_decision(summary, saved.fit if saved else None, e)]
    # the runs of the answering fit's server at other k too (its method: the fit may be chosen as the only one)
    across = fits_across_k(step_fits() or [], scenario.k, (saved.method if saved else None) or scenario.method.name)
    if across and saved is not None:
        decided.append(across_k_decision(across, saved.workload))
    show_decisions(slot, decided)
    with answer:
        show_step_fit(scenario, e)
        show_verdict(summary.tone, short_verdict(summary), summary.verdict.advice)
        calibration_badge()
        threshold = summary.threshold_text
        why = [summary.verdict.text if summary.uncertain_words else "",
               threshold[:1].upper() + threshold[1:] + "." if threshold else ""]
        count = len(summary.notes)
        why_box(f"Why, and {count} note{'s' if count != 1 else ''}" if count else "Why", why, summary.notes)
    schedule = runs_schedule(saved.fit if saved else None, e, across if saved is not None else None)
    return schedule, measured_off_words(saved.fit.off_measured) if schedule is not None else ""
