"""What a review of runs says in sentences: one line per workload and verdict, and how far the
model was off (the Past runs page's headline and `runs`' first line); and what became of every row
(`runs --json`'s counts: predicted, refused by reason, predicted on an assumption)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from specmodel.runs.records import ASSUMED_KINDS
from specmodel.runs.review import MEASURED
from specmodel.words import BORDERLINE_LABEL, CLEARS, FAILS, UNCERTAIN, verdict_words
from specmodel.words.readings import assumed_sentence, readings_sentences
from specmodel.runs.unpredicted import left_out_sentence, reason_of
from specmodel.runs.row_scenario import row_alpha
from specmodel.runs.setups import setups_of


MAX_LEVELS_SHOWN = 12  # chosen: levels a headline names one by one before it summarizes the rest


def _levels(values) -> str:
    """Concurrency levels as a short list: distinct, sorted, the first ones when there are many."""
    levels = sorted({int(v) for v in values if pd.notna(v)})
    if len(levels) <= MAX_LEVELS_SHOWN:
        return ", ".join(map(str, levels))
    return ", ".join(map(str, levels[:MAX_LEVELS_SHOWN - 2])) + f", … {levels[-1]} ({len(levels)} levels)"


def as_read(table: pd.DataFrame) -> pd.DataFrame:
    """A review table as people read it: a verdict the model predicted (no measured speedup) whose 80% band
    straddles 1.0 reads "uncertain", as the What-if page says for the same setting; measured verdicts stay.
    For what is shown (the page's tables and lines, `runs`' text, the HTML report); `runs --json` and the
    CSV export keep the model's code in `verdict` beside `uncertain`."""
    if table.empty or not {"uncertain", "verdict", "verdict_basis"} <= set(table.columns):
        return table
    unsure = (table["uncertain"].eq(True) & table["verdict_basis"].notna() & table["verdict_basis"].ne(MEASURED)
              & table["verdict"].isin([CLEARS, BORDERLINE_LABEL, FAILS]))  # `uncertain`: review's, the band's test
    return table.assign(verdict=table["verdict"].where(~unsure, UNCERTAIN)) if unsure.any() else table


def sweep_order(table: pd.DataFrame) -> pd.DataFrame:
    """A review table in the order a sweep reads: the rows of each workload and setup together (in the order each
    first appears), by concurrency within them (files given as `*_c*.json` arrive c1, c16, c2, c4, c8); rows of one
    concurrency, and rows without one (last), in the order read. For the verdict tables (`runs`' text, Past runs);
    `runs --json`, the CSV export and "Runs as read" keep the order read."""
    if table.empty:
        return table
    n = len(table)
    blank = pd.Series([""] * n, index=table.index)
    workload = pd.factorize(table.get("workload", blank).fillna("").astype(str))[0]
    setup = pd.factorize(setups_of(table))[0]
    conc = pd.to_numeric(table.get("concurrency", blank), errors="coerce").to_numpy(dtype=float)
    order = np.lexsort((np.arange(n), np.nan_to_num(conc, nan=np.inf), setup, workload))
    return table if (order == np.arange(n)).all() else table.iloc[order]


def verdict_lines(table: pd.DataFrame) -> list[tuple[str, str]]:
    """One (verdict, sentence) per workload, setup and verdict, saying which levels were measured and which
    predicted and where the model disagreed with the measurement, e.g.
    ("fails", "chat loses at concurrency 8, 32 (measured) — the model said pays off at 32"); a workload run
    under several setups names each by what differs (setups.setup_names): "GSM8K (Qwen3-8B, k=6) pays off …".
    Workloads and setups in the order the table first names them; one pass over the rows (a selection per
    workload, setup and verdict took ~9 s for a 6,000-row file of 768 setups)."""
    if table.empty:
        return []
    setups = setups_of(table)
    ids = table.groupby([table["workload"], setups], sort=False, dropna=False).ngroup().to_numpy()
    n = len(table)
    measured = (table["verdict_basis"] == MEASURED).to_numpy() if "verdict_basis" in table else np.zeros(n, bool)
    disagrees = table["model_agrees"].eq(False).to_numpy() if "model_agrees" in table else np.zeros(n, bool)
    said_as = table["predicted_verdict"].tolist() if "model_agrees" in table else [None] * n
    groups: dict[int, tuple[str, dict]] = {}
    for i, (gid, label, setup, workload, conc) in enumerate(zip(ids.tolist(), table["verdict"].tolist(),
                                                                 setups.tolist(), table["workload"].tolist(),
                                                                 table["concurrency"].tolist())):
        if label not in _LINE_ORDER:
            continue
        if gid not in groups:  # a group's name once, not once a row
            groups[gid] = (_workload_name(workload, setup), {})
        name, per_label = groups[gid]
        levels = per_label.setdefault(label, ([], [], {}))  # measured, predicted, the model's verdicts
        levels[0 if measured[i] else 1].append(conc)
        if disagrees[i] and not pd.isna(said_as[i]):
            levels[2].setdefault(said_as[i], []).append(conc)
    return [(label, _verdict_sentence(name, label, *per_label[label]))
            for _gid, (name, per_label) in sorted(groups.items()) for label in _LINE_ORDER if label in per_label]


_LINE_ORDER = (CLEARS, BORDERLINE_LABEL, FAILS, UNCERTAIN)  # the verdicts' order within a workload's lines


def _workload_name(workload, setup: str) -> str:
    """The workload as a line names it: with its setup where the workload ran under several."""
    workload = "nan" if pd.isna(workload) else workload  # as a group of missing names reads
    return f"{workload} ({setup})" if setup else f"{workload}"


def _verdict_sentence(name: str, label: str, measured: list, predicted: list, said: dict) -> str:
    """'chat loses at concurrency 8, 32 (measured) — the model said pays off at 32'."""
    parts = ([f"{_levels(measured)} (measured)"] if measured else []) \
        + ([f"{_levels(predicted)} (predicted)"] if predicted else [])
    verb = f"is {verdict_words(label)}" if label in (BORDERLINE_LABEL, UNCERTAIN) else verdict_words(label)
    sentence = f"{name} {verb} at concurrency " + ", ".join(parts)
    if said:
        sentence += " — the model said " + ", ".join(f"{verdict_words(model_label)} at {_levels(levels)}"
                                                      for model_label, levels in said.items())
    return sentence


def _no_comparison_headline(table: pd.DataFrame | None) -> str:
    """The headline when no run has both speedups, counted from the verdict records the rows show."""
    basis = table["verdict_basis"] if table is not None and "verdict_basis" in table else pd.Series(dtype=object)
    measured = int((basis == MEASURED).sum())
    predicted = int(basis.notna().sum()) - measured
    head = "No run has both a measured and a predicted speedup, so the model's accuracy is not checked here"
    if measured and not predicted:
        return f"{head}: every verdict here is from the measurement (measured)."
    if predicted and not measured:
        return f"{head}: every verdict here is the model's (predicted)."
    if measured:
        return (f"{head}: {measured:,} verdict{'s' if measured != 1 else ''} from the measurement (measured), "
                f"{predicted:,} the model's (predicted).")
    return f"{head}."


def model_headline(summary: dict, table: pd.DataFrame | None = None, said_as: str | None = None) -> str:
    """How far the model was off, in one sentence: its verdict against the measured one; how many runs that
    comparison leaves out because the model predicted nothing for them (runs.unpredicted); then how acceptance
    the files do not settle was read (a column whose name does not say which it holds, the rows on an assumed
    acceptance and from where: never a silent reading). `said_as` names where a column's meaning is said."""
    reading = [*readings_sentences(summary.get("acceptance_readings") or [], said_as),
               assumed_sentence(summary.get("acceptance_assumed") or {})]
    left_out = left_out_sentence(summary.get("rows_unpredicted") or 0)
    return " ".join(filter(None, [_verdicts_headline(summary, table), left_out, *reading]))


def _verdicts_headline(summary: dict, table: pd.DataFrame | None) -> str:
    """The model's verdict against the measured one, in one sentence."""
    n = summary.get("rows_compared") or 0
    if not n:
        return _no_comparison_headline(table)
    off = summary.get("model_disagreements", n - summary.get("verdicts_agreeing", 0))
    if not off:
        return f"The model's verdict agrees with the measured one on all {n:,} run{'s' if n != 1 else ''} with both."
    example = ""
    if table is not None and "model_agrees" in table:
        first = table[table["model_agrees"].eq(False)].head(1)
        if not first.empty:
            r = first.iloc[0]
            setup = r.get("setup")
            named = f"{r['workload']} ({setup})" if isinstance(setup, str) and setup else f"{r['workload']}"
            example = f" (e.g. {named} at concurrency {int(r['concurrency'])}: {r['disagreement']})"
    return (f"The model's verdict differs from the measured one on {off:,} of {n:,} run{'s' if n != 1 else ''}"
            f"{example}; each run with a measurement takes its verdict from it.")


def prediction_counts(problems, evaluated: pd.DataFrame) -> dict:
    """What became of every row: predicted, refused (by reason, each row once, its first reason) and
    predicted on an assumption (k, acceptance, context). Rows left out by the reader are counted from
    its problems; loaded rows the model could not predict count as "no_acceptance" or "model"."""
    refused: dict[str, str] = {}
    for p in problems:
        if p.severity == "error" and p.row is not None:
            refused.setdefault(f"{p.file}\0{p.row}", p.reason or "invalid")
    predicted = evaluated["predicted_speedup"].notna() if len(evaluated) else pd.Series([], dtype=bool)
    for r in evaluated[~predicted].to_dict("records") if len(evaluated) else []:
        alpha = row_alpha(r)
        no_alpha = math.isnan(alpha)
        unpredicted = r.get("no_prediction")  # a name matched no preset: its refusal's code (runs.unpredicted)
        refused.setdefault(f"{r['file']}\0{r['row']}", reason_of(unpredicted) if isinstance(unpredicted, str) else
                           "no_acceptance" if no_alpha else "model")
    by_reason: dict[str, int] = {}
    for reason in refused.values():
        by_reason[reason] = by_reason.get(reason, 0) + 1
    assumed_col = evaluated["assumed"].fillna("").astype(str)[predicted] if "assumed" in evaluated else pd.Series([])
    n_pred = int(predicted.sum())
    codes, texts = pd.factorize(assumed_col)  # each distinct "assumed" text looked at once, with its rows
    said = list(zip(texts.tolist(), np.bincount(codes[codes >= 0], minlength=len(texts)).tolist()))
    total = n_pred + len(refused)
    return {"rows_in_files": total, "rows_predicted": n_pred,
            "share_predicted": round(n_pred / total, 4) if total else None, "rows_refused": len(refused),
            "refused_by_reason": dict(sorted(by_reason.items(), key=lambda kv: -kv[1])),
            "assumed": {kind: sum(n for text, n in said if re.search(rf"\b{kind}\b", text)) for kind in ASSUMED_KINDS}}
