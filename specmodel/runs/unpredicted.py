"""Measured first: a run whose measured speedup is known is read and judged on its measurement whatever its
names. A GPU, target or draft name that matches no preset (or two) does not refuse such a row: it keeps its
measured figures and measured verdict, names no preset for what it could not match (never a stand-in), and
its prediction is empty with one line saying which preset to name (the row's `no_prediction`). A row without
a measured speedup is still refused for such a name: there is nothing to judge it on.

A run the model cannot predict for another reason (a setting past the model's bounds, a model that does not
fit) says so too: "no prediction: why" leads its advice (`say_unpredicted`), and `unpredicted_problems`
gives the warning the page and `runs` list with the file's problems.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specmodel.runs.frames import column_of
from specmodel.runs.records import Problem

# Refusal reasons (records.REFUSAL_REASONS) that are about a name only: the measurement stands without it.
NAME_REASONS = frozenset({"gpu_unknown", "gpu_ambiguous", "gpu_missing", "target_unknown", "draft_unknown",
                          "draft_missing", "gpu_spec"})
# The refusals of a GPU's name, which a row's GPU by its numbers (runs.gpu_columns) stands in for.
GPU_NAME_REASONS = frozenset({"gpu_unknown", "gpu_ambiguous", "gpu_missing"})
# The preset column each name refusal leaves empty (a name that matched nothing is never replaced).
_EMPTIED = {"gpu_unknown": "gpu_preset", "gpu_ambiguous": "gpu_preset", "gpu_missing": "gpu_preset",
            "gpu_spec": "gpu_preset",
            "target_unknown": "target_preset", "draft_unknown": "draft_preset", "draft_missing": "draft_preset"}
_KIND = {"gpu_preset": "gpu", "target_preset": "target", "draft_preset": "draft"}
PREFIX = "no prediction (judged on its measurement): "
# Why a row with a measured speedup and no k is not predicted (a measured verdict needs no k; runs.validate).
NO_K = ("k (draft tokens per step) is not in the file and the method has no documented default, so the model does "
        "not predict it: give a k column, or k with --k N on the command line or the Past runs page's \"k for files "
        "that do not record it\"")


def no_prediction_line(refusals: list[tuple[str, str]], speedup) -> str | None:
    """The one line of a row kept for its measurement though a name refuses its prediction; None where the
    row has no refusal, or one that is not about a name, or no measured speedup (it stays refused)."""
    if not refusals or speedup is None or any(reason not in NAME_REASONS for reason, _ in refusals):
        return None
    return PREFIX + "; ".join(message for _, message in refusals)


def measured_only(row: dict, refusals: list[tuple[str, str]], line: str) -> dict:
    """The row with the presets its refused names would have fallen back to emptied, its line in
    `no_prediction`, and its fallbacks without the kinds it does not claim (nothing was predicted on them)."""
    emptied = {_EMPTIED[reason] for reason, _ in refusals}
    kinds = {_KIND[column] for column in emptied}
    row |= {column: None for column in emptied}
    row["no_prediction"] = line
    row["_fallbacks"] = {kind: name for kind, name in row.get("_fallbacks", {}).items() if kind not in kinds}
    return row


# The refusal each name message starts with (runs.names._refusals), most specific first.
_STARTS = (("k (draft tokens", "", "no_k"),
           ("GPU '", " names ", "gpu_ambiguous"), ("GPU '", "", "gpu_unknown"), ("no GPU in", "", "gpu_missing"),
           ("GPU by its numbers: ", "", "gpu_spec"),
           ("target '", "", "target_unknown"), ("draft '", "", "draft_unknown"), ("'", "names no draft", "draft_missing"))


def reason_of(line: str) -> str:
    """The refusal code (records.REFUSAL_REASONS) of a row's `no_prediction` line: its first name's."""
    said = line[len(PREFIX):] if line.startswith(PREFIX) else line
    first = said.split("; ")[0]
    return next((reason for start, inside, reason in _STARTS if first.startswith(start) and inside in first),
                "no_preset")


def unpredicted(row: dict) -> bool:
    """Whether a row (a dict of the run table, where a missing text is None or NaN) is judged on its
    measurement only: its `no_prediction` line is set."""
    line = row.get("no_prediction")
    return isinstance(line, str) and bool(line)


def unpredicted_rows(frame) -> list[bool]:
    """unpredicted() of every row of a run table (a DataFrame with or without a `no_prediction` column)."""
    if "no_prediction" not in frame:
        return [False] * len(frame)
    lines = frame["no_prediction"]
    given = lines.notna().to_numpy()  # a file of 200,000 rows names its presets: few rows, or none, to look at
    out = np.zeros(len(lines), dtype=bool)
    out[given] = [unpredicted({"no_prediction": line}) for line in lines.to_numpy(dtype=object)[given].tolist()]
    return out.tolist()


def left_out_sentence(rows_unpredicted: int) -> str:
    """The sentence that says how many runs a comparison of predicted with measured speedups leaves out
    because the model predicted nothing for them (error_summary's rows_unpredicted); "" for none."""
    n = rows_unpredicted or 0
    if not n:
        return ""
    return (f"{n:,} run{'s' if n != 1 else ''} judged on {'their' if n != 1 else 'its'} measurement alone, with no "
            f"prediction (a name that matches no preset), {'are' if n != 1 else 'is'} left out of the model's accuracy check.")


NO_PREDICTION = "no prediction: "  # how a run's advice begins where the model could not predict it


def say_unpredicted(rows: pd.DataFrame, results: pd.DataFrame) -> None:
    """A run left without a prediction for a reason other than its names (their refusal is its
    `no_prediction` line): the reason leads its advice, "no prediction: tensor parallelism is 1,000,000,000,
    above the 64 ..." (such a row showed blank cells and no word: a TP, tree or depth of 10^9, a context of
    10^15, a model that does not fit)."""
    error = results["prediction_error"].to_numpy(dtype=object)
    said = np.array([isinstance(e, str) and bool(e) for e in error.tolist()], dtype=bool)
    silent = np.flatnonzero(said & ~np.isfinite(results["predicted_speedup"].to_numpy(dtype=float))
                            & ~np.array(unpredicted_rows(rows), dtype=bool))
    if silent.size:
        advice = results["advice"].to_numpy(dtype=object).copy()
        advice[silent] = [NO_PREDICTION + e + (f"; {a}" if isinstance(a, str) and a else "")
                          for e, a in zip(error[silent].tolist(), advice[silent].tolist())]
        results["advice"] = column_of(advice)


def unpredicted_problems(evaluated: pd.DataFrame) -> list[Problem]:
    """A warning per run `say_unpredicted` gave a reason, naming its file and row: the page and `runs` list
    it with the file's problems (identical ones collapse into one line with their rows)."""
    advice = evaluated["advice"].to_numpy(dtype=object)
    at = [i for i, a in enumerate(advice.tolist()) if isinstance(a, str) and a.startswith(NO_PREDICTION)]
    error = evaluated["prediction_error"].to_numpy(dtype=object)
    files, lines = evaluated["file"].to_numpy(dtype=object), evaluated["row"].to_numpy(dtype=object)
    return [Problem(str(files[i]), None if pd.isna(lines[i]) else int(lines[i]), None,
                    f"left without a prediction: {error[i]}", "warning") for i in at]
