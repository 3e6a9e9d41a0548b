"""The decision line of one scenario that pages and commands lead with (specmodel.words.decision_line): the
user's step fit's where one answers for its k and method, else the model's; beside a threshold the band
leaves open, the runs that would pin it (plan.measure.threshold_runs): the two concurrencies to run, plain
and speculative. No pandas: What-if reads it (one line per workload of a runs review: show.runs_view)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from specmodel.errors import SpecModelError
from specmodel.export.deploy import VLLM_MIN_VERSION
from specmodel.model.acceptance import tokens_per_step
from specmodel.model.decide import SCHEDULE_MAX_BATCH, k_at
from specmodel.plan.measure import fit_threshold_runs, largest_batch, threshold_runs
from specmodel.words import Summary
from specmodel.fit.saved import fits_across_k
from specmodel.fit.steps import schedule_across_k, switch_range
from specmodel.words.decision_line import (decision_line, fit_decision_line, fit_schedule_line, per_batch_line,
                                          pin_line, switch_pin_line)


@dataclass(frozen=True)
class Decided:
    """One decision line, the two concurrencies that would pin its threshold (None where it is not open), and
    whether the user's own runs (a step fit) decided it."""

    line: str
    runs: tuple[int, int] | None = None
    from_runs: bool = False
    schedule: tuple | None = None  # ((first batch, last batch, k), ...), k = 0 off: a line across several k
    switch_ks: tuple[int, int] | None = None  # a line across k: `runs` pin where it switches from one k to the other
    off_note: str = ""  # what the runs measured with speculation configured and off (words.off_cost.measured_off_words)

    @property
    def per_batch(self) -> str:
        """A line across k as vLLM's per-batch table (words.decision_line.per_batch_line); "" for one k's line."""
        if not self.schedule:
            return ""
        return per_batch_line(self.schedule, VLLM_MIN_VERSION["num_speculative_tokens_per_batch_size"])

    @property
    def pin(self) -> str:
        """The runs in one line (words.decision_line.pin_line, switch_pin_line); "" where there are none."""
        return switch_pin_line(self.runs, self.switch_ks) if self.switch_ks else pin_line(self.runs)

    def to_dict(self) -> dict:
        return {"decision_line": self.line, "pin": self.pin or None, "threshold_runs": list(self.runs or ()) or None,
                "from_runs": self.from_runs, "schedule": [list(band) for band in self.schedule] if self.schedule else None,
                "off_note": self.off_note or None}


def _pin(summary: Summary | None, open_range: bool) -> tuple[int, int] | None:
    """The runs that would pin the model's open threshold (plan.measure.threshold_runs)."""
    if summary is None or not open_range:
        return None
    try:
        return threshold_runs(summary)
    except SpecModelError:
        return None


def fit_pin(off: tuple, summary: Summary | None, fit) -> tuple[int, int] | None:
    """The runs that would pin a step fit's open threshold: its band's ends, up to what the speculative arm fits
    (the model's, where it predicts the setup; else 4× the largest batch the runs ran, up to 512), inside the
    batches the runs measured (plan.measure.fit_threshold_runs)."""
    batches = fit.batches
    largest = largest_batch(summary) if summary is not None else int(min(SCHEDULE_MAX_BATCH, 4 * max(batches or (1,))))
    return fit_threshold_runs(off, largest, tuple(b for b, _ in fit.measured))


def scenario_decision(summary: Summary | None, fit=None, tokens_per_step: float | None = None, who: str | None = None
                      ) -> Decided:
    """The decision line of one scenario: its step fit's (a StepFit for its k and method, asked at
    `tokens_per_step`, the runs' own E where None) where one is given and usable, else the model's (`summary`:
    None only beside a usable fit and `who`). `who`: the method's label unless given."""
    who = summary.scenario.method.label if who is None else who
    if fit is not None and fit.usable:
        off = fit.off_above(tokens_per_step)
        reach = fit.band_reaches_one(tokens_per_step) if off[2] == 0 else None
        return Decided(fit_decision_line(fit.k, off, who, reach), fit_pin(off, summary, fit), True)
    low, high = summary.off_above_range or (None, None)
    return Decided(decision_line(summary, who), _pin(summary, low != high and summary.scenario.k > 0))


def across_k_decision(fits: dict, who: str = "", tokens_per_step: dict | None = None) -> Decided:
    """One server's step fits at several k ({k: StepFit}) as one decision line and its schedule
    (fit.steps.schedule_across_k): which k up to which batch, off above; `runs`, Past runs, What-if, `predict`,
    and `scrape` and Live at the window's acceptance (`tokens_per_step`: {k: E})."""
    schedule = schedule_across_k(fits, SCHEDULE_MAX_BATCH, tokens_per_step)
    switch = switch_range(fits, schedule, tokens_per_step)
    runs = None
    if switch is not None:  # where the runs leave open at which batch the next k gets faster: the two to run
        measured = tuple(sorted({b for f in fits.values() for b in f.batches}))
        runs = fit_threshold_runs(switch[:1] + switch[3:], schedule[-1][1], measured)
    return Decided(fit_schedule_line(schedule, sorted(fits), who, bool(tokens_per_step)), runs, True,
                   tuple(map(tuple, schedule)), switch[1:3] if runs else None)


def live_decision(verdict, judgement, who: str) -> Decided:
    """A Live or Fleet window's decision line (metrics.live.decision_line_of: the step fit's threshold, measured step
    times at this batch, or the model's schedule over k' ≤ k), with the runs that would pin an open threshold."""
    from specmodel.metrics.live import decision_line_of  # here: What-if, which reads this module, scrapes nothing

    line = decision_line_of(verdict, judgement, who)
    d = verdict.decision
    fit_off = ((judgement.fit or {}).get("off_above") if judgement is not None and judgement.decides else None)
    if fit_off is not None:
        off = (fit_off["batch"], fit_off["low"], fit_off["high"])
        largest = largest_batch(d) if d is not None else SCHEDULE_MAX_BATCH
        return Decided(line, fit_threshold_runs(off, largest), True)
    if judgement is not None and judgement.decides or d is None:
        return Decided(line)
    low, high = d.off_above_range or (None, None)
    return Decided(line, _pin(d, low != high and bool(verdict.measured or d.scenario.k)))


def server_decisions(verdict, judgement, fits, method: str | None, stats, who: str) -> list[Decided]:
    """A scraped server's decision lines (Live, the Fleet page): the window's own (live_decision) and, under it, the
    schedule across k where the calibration holds the server's runs at other k too (server_across_k)."""
    across = server_across_k(judgement, fits, method, stats, who)
    return [live_decision(verdict, judgement, who)] + ([across] if across else [])


def server_across_k(judgement, fits, method: str | None, stats, who: str) -> Decided | None:
    """Where a step fit of the server's runs answers for its k and the calibration (`fits`) holds the same server's
    runs at other k too: the schedule across them (across_k_decision; `scrape`, Live, `fleet`, Fleet), else None: the
    k it runs now may not be the one to run at every batch. Each k at the window's acceptance, as the window's own
    line: its measured E at the k it runs, E at the window's α at the others (model.acceptance.tokens_per_step); at
    the runs' own E where the window measured none."""
    fit = (judgement.fit or {}) if judgement is not None else {}
    k = fit.get("k")
    # the runs of the server whose fit answered: its method (a page's sidebar may name another, the fit chosen alone)
    across = fits_across_k(list(fits), k, fit.get("method") or method, stats.model_name) if k else {}
    if not across:
        return None
    e = None
    if stats.spec_enabled and stats.tokens_per_step is not None and stats.alpha is not None:
        e = {other: (stats.tokens_per_step if other == k else float(tokens_per_step(stats.alpha, other)))
             for other in across}
    return across_k_decision(across, who, e)


def runs_schedule(fit=None, tokens_per_step: float | None = None, across: dict | None = None) -> list[list[int]] | None:
    """The schedule the user's runs give ([[first batch, last batch, k], ...] up to SCHEDULE_MAX_BATCH, k = 0 off), as
    the decision lines say it: the schedule across k of a server's fits at several k (`across`, at the runs' own E),
    else one k's fit on up to its turn-off batch (StepFit.off_above at `tokens_per_step`), off above; None where no
    usable fit answers."""
    if across:
        return schedule_across_k(across, SCHEDULE_MAX_BATCH)
    if fit is None or not fit.usable or not fit.k:
        return None
    off = fit.off_above(tokens_per_step)[0]
    if off is None or off >= SCHEDULE_MAX_BATCH:
        return [[1, SCHEDULE_MAX_BATCH, fit.k]]
    return [[1, SCHEDULE_MAX_BATCH, 0]] if off == 0 else [[1, off, fit.k], [off + 1, SCHEDULE_MAX_BATCH, 0]]


def with_runs_schedule(summary: Summary, schedule: list[list[int]]) -> Summary:
    """The summary deployed as the user's runs decide (runs_schedule): their schedule, and the k it runs at the
    scenario's concurrency as the best k there; the prediction, band and the rest stay the model's (What-if's "What
    to deploy" writes the engines' configs from it)."""
    here = min(int(summary.scenario.concurrency), SCHEDULE_MAX_BATCH)
    return replace(summary, schedule=[list(band) for band in schedule], best_k=k_at(schedule, here) or 0)
