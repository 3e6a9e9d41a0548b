"""The decision line of one scenario that pages and commands lead with (specmodel.words.decision_line): the
user's step fit's where one answers for its k and method, else the model's; beside a threshold the band
leaves open, the runs that would pin it (plan.measure.threshold_runs): the two concurrencies to run, plain
and speculative. No pandas: What-if reads it (one line per workload of a runs review: show.runs_view)."""

from __future__ import annotations

from dataclasses import dataclass

from specmodel.errors import SpecModelError
from specmodel.model.decide import SCHEDULE_MAX_BATCH
from specmodel.plan.measure import fit_threshold_runs, largest_batch, threshold_runs
from specmodel.words import Summary
from specmodel.words.decision_line import decision_line, fit_decision_line, pin_line


@dataclass(frozen=True)
class Decided:
    """One decision line, the runs that would pin its threshold ("" where it is not open), and whether the
    user's own runs (a step fit) decided it."""

    line: str
    pin: str = ""
    from_runs: bool = False

    def to_dict(self) -> dict:
        return {"decision_line": self.line, "pin": self.pin or None, "from_runs": self.from_runs}


def _pin(summary: Summary | None, open_range: bool) -> str:
    """The runs that would pin the model's open threshold (plan.measure.threshold_runs)."""
    if summary is None or not open_range:
        return ""
    try:
        return pin_line(threshold_runs(summary))
    except SpecModelError:
        return ""


def fit_pin(off: tuple, summary: Summary | None, batches: tuple[float, ...]) -> str:
    """The runs that would pin a step fit's open threshold: its band's ends, up to what the speculative arm fits
    (the model's, where it predicts the setup; else 4× the largest batch the runs ran, up to 512)."""
    largest = largest_batch(summary) if summary is not None else int(min(SCHEDULE_MAX_BATCH, 4 * max(batches or (1,))))
    return pin_line(fit_threshold_runs(off, largest))


def scenario_decision(summary: Summary, fit=None, tokens_per_step: float | None = None, who: str | None = None
                      ) -> Decided:
    """The decision line of one scenario: its step fit's (a StepFit for its k and method, asked at
    `tokens_per_step`, the runs' own E where None) where one is given and usable, else the model's. `who`:
    the method's label unless given."""
    who = summary.scenario.method.label if who is None else who
    if fit is not None and fit.usable:
        off = fit.off_above(tokens_per_step)
        return Decided(fit_decision_line(fit.k, off, who), fit_pin(off, summary, fit.batches), True)
    low, high = summary.off_above_range or (None, None)
    return Decided(decision_line(summary, who), _pin(summary, low != high and summary.scenario.k > 0))
