"""Loaded runs -> per-row prediction and break-even: did speculation clear it where it ran?

For each run the model predicts the speedup at the run's own concurrency, k, acceptance, GPU and
models (measured timings when the row has t_target_ms / t_draft_ms, hardware presets otherwise),
and the tokens per step E at which speculation breaks even there. The run *clears* when its
measured E is above that break-even by more than run-to-run noise (scenario.BORDERLINE), *fails*
when below by more, and is *borderline* in between. A row without a measured E (a mixed workload)
is judged by its measured speedup instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import SpecModelError
from .engines import DEFAULT_ENGINE
from .roofline import Efficiency
from .scenario import BORDERLINE, Scenario, predict, summarize, with_changes

CLEARS, BORDERLINE_LABEL, FAILS = "clears", "borderline", "fails"

# Columns evaluate_row adds to a run.
RESULT_COLUMNS = ["predicted_speedup", "predicted_tokens_per_step", "break_even_tokens_per_step", "break_even_alpha",
                  "margin_tokens_per_step", "margin_pct", "verdict", "verdict_basis", "predicted_verdict",
                  "measured_verdict", "advice", "best_k", "crossover_concurrency", "timings",
                  "predicted_baseline_tok_s", "predicted_spec_tok_s", "prediction_error", "speedup_low",
                  "speedup_high", "uncertain"]

# Columns of the break-even table (export and page), in order.
TABLE_COLUMNS = ["workload", "concurrency", "k", "verdict", "tokens_per_step", "break_even_tokens_per_step",
                 "margin_tokens_per_step", "margin_pct", "measured_speedup", "predicted_speedup", "advice",
                 "measured_verdict", "predicted_verdict", "verdict_basis", "method", "gpu_preset", "file", "row"]
_NUMERIC_RESULTS = ["predicted_speedup", "predicted_tokens_per_step", "break_even_tokens_per_step", "break_even_alpha",
                    "margin_tokens_per_step", "margin_pct", "predicted_baseline_tok_s", "predicted_spec_tok_s",
                    "speedup_low", "speedup_high"]


def scenario_for_row(row, efficiency: Efficiency | None = None) -> Scenario:
    """The Scenario a loaded run describes (its presets, k, α or survival, concurrency, timings)."""
    survival = row.get("survival")
    survival = tuple(survival) if isinstance(survival, (tuple, list)) and len(survival) else None
    method = row["method"]
    return Scenario(
        gpu=row["gpu_preset"], target=row["target_preset"], method=method,
        draft=row["draft_preset"] if method == "draft_model" else None,
        alpha=float(row["alpha"]), survival=survival, k=int(row["k"]), concurrency=int(row["concurrency"]),
        context_len=int(row["context_len"]), t_target_ms=_opt(row.get("t_target_ms")),
        t_draft_ms=_opt(row.get("t_draft_ms")), tp=int(_opt(row.get("tp")) or 1),
        efficiency=efficiency or Efficiency(), engine=_text(row.get("engine")) or DEFAULT_ENGINE,
        draft_depth=_whole(row.get("draft_depth")), branching=_whole(row.get("branching")) or 1,
        draft_kv_budget=_whole(row.get("draft_kv_budget")), weight_dtype=_text(row.get("weight_dtype")),
        kv_dtype=_text(row.get("kv_dtype")) or "bf16", proposal_rate=_opt(row.get("proposal_rate")))


def _text(x) -> str | None:
    return x if isinstance(x, str) and x.strip() else None


def _whole(x) -> int | None:
    x = _opt(x)
    return None if x is None else int(x)


def _opt(x):
    if x is None or isinstance(x, str) or x is pd.NA:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _label(ratio: float) -> str:
    if ratio >= 1 + BORDERLINE:
        return CLEARS
    if ratio >= 1 - BORDERLINE:
        return BORDERLINE_LABEL
    return FAILS


def _ngram_advice(s: Scenario, measured_e: float) -> str:
    """n-gram drafting costs no GPU time; its break-even at this batch, for the advice."""
    if s.method == "ngram":
        return ""
    t_draft = 0.0 if s.t_target_ms is not None else None
    try:
        be = float(predict(with_changes(s, method="ngram", draft=None, t_draft_ms=t_draft)).break_even_tokens_per_step)
    except SpecModelError:
        return ""
    if not math.isfinite(be) or be > s.k + 1:
        return ""
    return f"try n-gram: with no draft model it breaks even at {be:.2f} tokens per step here"


def evaluate_row(row, efficiency: Efficiency | None = None) -> dict:
    """Prediction, break-even, margin, verdicts and advice for one loaded run."""
    out = dict.fromkeys(RESULT_COLUMNS)
    measured = _opt(row.get("measured_speedup"))
    if measured is not None:
        out["measured_verdict"] = _label(measured)
    if row.get("alpha") is None or math.isnan(float(row["alpha"])):
        out["prediction_error"] = "no acceptance to predict with"
        if measured is not None:
            out.update(verdict=out["measured_verdict"], verdict_basis="measured speedup", margin_pct=measured - 1)
        return out
    try:
        s = scenario_for_row(row, efficiency)
        summary = summarize(s)
    except SpecModelError as exc:
        out["prediction_error"] = str(exc)
        if measured is not None:
            out.update(verdict=out["measured_verdict"], verdict_basis="measured speedup", margin_pct=measured - 1)
        return out
    p = summary.prediction
    be = float(p.break_even_tokens_per_step)
    out.update(predicted_speedup=float(p.speedup), predicted_tokens_per_step=float(p.tokens_per_step),
               break_even_tokens_per_step=be if math.isfinite(be) else None,
               break_even_alpha=_opt(p.break_even_alpha), predicted_verdict=_label(float(p.speedup)),
               best_k=summary.best_k, crossover_concurrency=summary.crossover_concurrency,
               timings="measured" if s.t_target_ms is not None else "hardware",
               predicted_baseline_tok_s=float(p.plain.throughput_tok_s),
               predicted_spec_tok_s=float(p.spec.throughput_tok_s),
               speedup_low=summary.band[0] if summary.band else None,
               speedup_high=summary.band[1] if summary.band else None, uncertain=summary.uncertain)
    measured_e = _opt(row.get("tokens_per_step"))
    if measured_e is not None and math.isfinite(be) and be > 0:
        ratio = measured_e / be
        out.update(margin_tokens_per_step=measured_e - be, margin_pct=ratio - 1, verdict=_label(ratio),
                   verdict_basis="measured tokens per step vs break-even")
    elif measured is not None:
        out.update(verdict=out["measured_verdict"], verdict_basis="measured speedup", margin_pct=measured - 1)
    else:
        out.update(verdict=FAILS, verdict_basis="break-even unreachable at this k")
    advice = [summary.verdict.advice] if summary.verdict.advice else []
    if out["verdict"] != CLEARS:
        ngram = _ngram_advice(s, measured_e or float(p.tokens_per_step))
        if ngram:
            advice.append(ngram)
    out["advice"] = "; ".join(advice)
    return out


def evaluate_runs(rows: pd.DataFrame, efficiency: Efficiency | None = None) -> pd.DataFrame:
    """The run table with prediction and break-even columns added (one evaluate_row per run)."""
    if rows.empty:
        return rows.reindex(columns=[*rows.columns, *RESULT_COLUMNS])
    results = pd.DataFrame([evaluate_row(r, efficiency) for r in rows.to_dict("records")], columns=RESULT_COLUMNS)
    results[_NUMERIC_RESULTS] = results[_NUMERIC_RESULTS].apply(pd.to_numeric, errors="coerce")
    numeric = ["concurrency", "k", "alpha", "tokens_per_step", "baseline_tok_s", "spec_tok_s", "measured_speedup"]
    rows = rows.reset_index(drop=True).copy()
    rows[numeric] = rows[numeric].apply(pd.to_numeric, errors="coerce")
    return pd.concat([rows, results], axis=1)


def break_even_table(evaluated: pd.DataFrame) -> pd.DataFrame:
    """Per workload and concurrency: measured E vs break-even E, margin, verdict and advice."""
    table = evaluated.reindex(columns=TABLE_COLUMNS)
    return table.sort_values(["workload", "concurrency"], kind="stable").reset_index(drop=True)


def error_summary(evaluated: pd.DataFrame) -> dict:
    """How far predictions landed from measurements: MAPE of speedup, verdict agreement."""
    both = evaluated.dropna(subset=["measured_speedup", "predicted_speedup"]) if not evaluated.empty else evaluated
    n = len(both)
    if n == 0:
        return {"rows_compared": 0, "mape_speedup_pct": None, "verdict_agreement": None, "verdicts_agreeing": 0}
    meas = both["measured_speedup"].astype(float).to_numpy()
    pred = both["predicted_speedup"].astype(float).to_numpy()
    agree = int((both["measured_verdict"] == both["predicted_verdict"]).sum())
    return {"rows_compared": n, "mape_speedup_pct": float(np.mean(np.abs(pred - meas) / meas) * 100),
            "verdict_agreement": agree / n, "verdicts_agreeing": agree}


@dataclass(frozen=True)
class Review:
    """What the Runs page and the `runs` command show: every run evaluated, the table, the errors."""

    evaluated: pd.DataFrame
    table: pd.DataFrame
    summary: dict


def review(rows: pd.DataFrame, efficiency: Efficiency | None = None) -> Review:
    evaluated = evaluate_runs(rows, efficiency)
    return Review(evaluated, break_even_table(evaluated), error_summary(evaluated))


def verdict_lines(table: pd.DataFrame) -> list[tuple[str, str]]:
    """One (verdict, sentence) per workload and verdict, e.g. ("fails", "chat fails at concurrency 8, 32")."""
    lines = []
    if table.empty:
        return lines
    for workload, group in table.groupby("workload", sort=False):
        for label in (CLEARS, BORDERLINE_LABEL, FAILS):
            sel = group[group["verdict"] == label]
            if not sel.empty:
                levels = ", ".join(str(int(c)) for c in sel["concurrency"])
                lines.append((label, f"{workload} {'is borderline' if label == BORDERLINE_LABEL else label} "
                                     f"at concurrency {levels}"))
    return lines
