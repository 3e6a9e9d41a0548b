"""One decision line per workload of a runs review (Past runs, `runs`): its step fit's where the runs answer
("your runs"), else the model's at the workload's largest predicted concurrency, else what was measured; each
with the runs that would pin an open threshold (show.decisions)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from specmodel.errors import SpecModelError
from specmodel.model.roofline import Efficiency
from specmodel.runs.row_scenario import float_or_none, scenario_for_row
from specmodel.runs.setups import setups_of
from specmodel.runs.step_points import setup_fits
from specmodel.show.decisions import Decided, across_k_decision, scenario_decision
from specmodel.words import Summary, summarize, verdict_words
from specmodel.words.off_cost import measured_off_words

MAX_WORKLOAD_LINES = 8  # chosen: lines a page leads with before it counts the rest (they stay in the table below)


def runs_decisions(evaluated: pd.DataFrame, efficiency: Efficiency | None = None,
                   limit: int = MAX_WORKLOAD_LINES, fit_efficiency: Efficiency | None = None,
                   top_batch: float | None = None) -> tuple[list[Decided], int]:
    """One decision line per workload and setup of a review's evaluated runs, in the table's order, for the
    first `limit` of them (and how many more there are): the step fit's where the runs pin one, else the
    model's at the group's largest predicted concurrency, else what was measured. `fit_efficiency`: the model
    the step fits are shaped by where it is not `efficiency` (`runs --calibrate` fits the steps over the model
    it started from, as its step-fit section shows them, and predicts rows with the calibrated one); `top_batch`:
    the largest concurrency the fits see (`runs --fit-up-to`), as the step-fit section's fits see them."""
    if evaluated.empty:
        return [], 0
    setups = setups_of(evaluated)
    keys = list(zip(evaluated["workload"].astype(str).tolist(), setups.tolist()))
    order = list(dict.fromkeys(keys))
    shown = set(order[:limit])
    chosen = evaluated[[key in shown for key in keys]]
    fits = {(f.workload, f.setup): f for f in setup_fits(chosen, fit_efficiency or efficiency, top_batch)
            if f.fit.usable}
    groups = {key: group for key, group in chosen.groupby([chosen["workload"].astype(str), setups[chosen.index]],
                                                          sort=False, dropna=False)}
    out = []
    firsts = {min(order.index(where) for _, where, _ in ks): ks for ks in _across_k(chosen, fits).values()}
    for i, (workload, setup) in enumerate(order[:limit]):
        if i in firsts:  # a server measured at several k: its fits as one schedule, before each k's own line
            out.append(across_k_decision({k: f.fit for k, _, f in firsts[i]}, workload))
        who = f"{workload} ({setup})" if setup else workload
        group = groups[(workload, setup)]
        summary = _group_summary(group, efficiency)
        found = fits.get((workload, setup))
        if found is not None or summary is not None:  # the fit's line where the runs pin one, else the model's
            decided = scenario_decision(summary, found.fit if found else None, who=who)
            # the fit's "off above" is against a plain server: where the runs measured the off state, say its cost
            out.append(replace(decided, off_note=measured_off_words(found.fit.off_measured)) if found else decided)
        else:
            out.append(Decided(_measured_line(group, who)))
    return out, max(0, len(order) - limit)


# chosen (the columns a run file names a server by, runs.records): one server's setups differ in k alone, so its
# fits at several k are one schedule where all of these agree (vLLM's per-batch k is one method's, on one server)
_SAME_SERVER = ("gpu", "target_model", "draft_model", "method", "engine", "tp", "ep", "context_len", "draft_depth",
                "branching", "weight_dtype", "temperature")


def _across_k(rows: pd.DataFrame, fits: dict) -> dict:
    """{(workload, the server's columns): [(k, (workload, setup), SetupFit), ...] in k order} for each server whose
    usable step fits span two or more k (a run of each k at two or more concurrencies), each k once (a server
    with two setups at one k that these columns do not tell apart is left out: which to schedule is not known)."""
    servers: dict = {}
    for (workload, setup), f in fits.items():
        if not f.fit.k:
            continue
        first = rows.iloc[f.rows[0]]
        key = (workload, tuple(str(first.get(c)) for c in _SAME_SERVER if c in rows.columns))
        servers.setdefault(key, []).append((f.fit.k, (workload, setup), f))
    return {key: sorted(ks, key=lambda item: item[0]) for key, ks in servers.items()
            if len(ks) >= 2 and len({k for k, _, _ in ks}) == len(ks)}


def _group_summary(group: pd.DataFrame, efficiency: Efficiency | None) -> Summary | None:
    """The model's summary of a group's run at its largest concurrency the model predicted (None: none)."""
    if "predicted_speedup" not in group:
        return None
    predicted = group[group["predicted_speedup"].notna()]
    if predicted.empty:
        return None
    row = predicted.loc[predicted["concurrency"].astype(float).idxmax()].to_dict()
    try:
        return summarize(scenario_for_row(row, efficiency))
    except (SpecModelError, KeyError, TypeError, ValueError):
        return None


def _measured_line(group: pd.DataFrame, who: str) -> str:
    """A group the model could not predict and no fit answers for: its measured verdict at its largest
    concurrency, and that it sets no threshold."""
    measured = group[group["measured_speedup"].notna()] if "measured_speedup" in group else group.iloc[:0]
    if measured.empty:
        return f"{who}: no decision (nothing measured, no preset to predict it)"
    row = measured.loc[measured["concurrency"].astype(float).idxmax()]
    batch = float_or_none(row.get("concurrency"))
    verdict = verdict_words(row.get("verdict")) or f"{float(row['measured_speedup']):.2f}×"
    at = f" at batch {batch:g}" if batch is not None else ""
    return f"{who}: {verdict}{at} (measured; no threshold without a step fit)"
