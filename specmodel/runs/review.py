"""Loaded runs -> per-row prediction and verdict: did speculation pay off where it ran?

Measured first. A run with a measured speedup gets its verdict from the measurement: it *clears*
(pays off) above 1 + decide.BORDERLINE, *fails* (loses) below 1 − BORDERLINE, and is
*borderline* in between. Beside it sit the model's verdict on the same run (its predicted speedup,
judged with the same band, on the run's own GPU, models, k, acceptance and concurrency) and the
tokens per step E at which speculation breaks even there; where the two verdicts differ the row
says so ("model: pays off (1.42×); measured 0.71×") and the summary counts it. A run with only an
acceptance (no measured speedup) keeps the model's verdict, labelled as predicted: its measured E
against the model's break-even E.

Rows are predicted grouped by setup (specmodel.model.decide.summarize_many): a file of 200,000 runs is a few hundred
vectorised predict() calls, with a progress callback between groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from specmodel.errors import SpecModelError
from specmodel.model import acceptance, spec_defaults
from specmodel.model.decide import BORDERLINE, band_around, setup_of, summarize_many
from specmodel.model.off_state import measured_off_cost, scenario_off_cost
from specmodel.model.roofline import Efficiency
from specmodel.model.scenario import Scenario, predict, with_changes
from specmodel.runs.readings import reading_summary
from specmodel.runs.frames import cells_that, column_of, frame_of, preset_names, with_band_text  # noqa: F401 - re-exported
from specmodel.runs.load import paused_gc
from specmodel.runs.row_scenario import float_or_none, rate_prediction, row_alpha, scenario_for_row
from specmodel.runs.setups import setup_names
from specmodel.runs.unpredicted import say_unpredicted, unpredicted_rows
from specmodel.words.off_cost import off_cost_brief
from specmodel.words import (BORDERLINE_LABEL, CLEARS, FAILS, UNCERTAIN, VERDICT_WORDS, advice_of_runs,  # noqa: F401 - re-exported
                             decision, disagreement_words, ngram_advice, verdict_words)

# verdict_basis values
MEASURED = "measured speedup"
PREDICTED_E = "predicted: measured tokens per step vs break-even"
PREDICTED_SPEEDUP = "predicted speedup"
PREDICTED_UNREACHABLE = "predicted: break-even unreachable at this k"

# Columns evaluate_runs adds to a run.
RESULT_COLUMNS = ["predicted_speedup", "predicted_tokens_per_step", "break_even_tokens_per_step", "break_even_alpha",
                  "margin_tokens_per_step", "margin_pct", "verdict", "verdict_words", "decision", "verdict_basis",
                  "predicted_verdict", "measured_verdict", "model_agrees", "disagreement", "advice", "best_k",
                  "crossover_concurrency", "timings", "predicted_baseline_tok_s", "predicted_spec_tok_s",
                  "prediction_error", "speedup_low", "speedup_high", "uncertain", "off_cost", "off_cost_source",
                  "pools_above_batch", "pools_gain", "restart_gain"]

# Columns of the break-even table (export and page), in order.
TABLE_COLUMNS = ["workload", "setup", "concurrency", "k", "verdict", "tokens_per_step", "break_even_tokens_per_step",
                 "margin_tokens_per_step", "margin_pct", "measured_speedup", "predicted_speedup", "speedup_low",
                 "speedup_high", "uncertain", "advice",
                 "measured_verdict", "predicted_verdict", "verdict_basis", "model_agrees", "disagreement", "method",
                 "gpu_preset", "file", "row"]
_NUMERIC_RESULTS = ["predicted_speedup", "predicted_tokens_per_step", "break_even_tokens_per_step", "break_even_alpha",
                    "margin_tokens_per_step", "margin_pct", "predicted_baseline_tok_s", "predicted_spec_tok_s",
                    "speedup_low", "speedup_high", "off_cost", "pools_gain", "restart_gain"]
# Every column scenario_for_row reads except α, k and concurrency: rows equal on these share a setup.
_SETUP_COLUMNS = ["gpu_preset", "target_preset", "method", "draft_preset", "survival", "context_len", "t_target_ms",
                  "t_draft_ms", "tp", "engine", "draft_depth", "branching", "draft_kv_budget", "weight_dtype",
                  "kv_dtype", "proposal_rate", "parallel_draft"]

Progress = Callable[[int, int], None]  # (rows done, rows in all)
# result column <- decide.summarize_many field (advice: words.advice_of_runs)
_FROM_SUMMARY = {"predicted_speedup": "speedup", "predicted_tokens_per_step": "tokens_per_step",
                 "break_even_tokens_per_step": "break_even_tokens_per_step", "break_even_alpha": "break_even_alpha",
                 "best_k": "best_k", "crossover_concurrency": "crossover", "predicted_baseline_tok_s": "plain_tok_s",
                 "predicted_spec_tok_s": "spec_tok_s", "speedup_low": "speedup_low", "speedup_high": "speedup_high",
                 "uncertain": "uncertain", "off_cost": "off_cost", "pools_above_batch": "pools_above",
                 "pools_gain": "pools_gain", "restart_gain": "restart_gain"}


def _label(ratio: float) -> str:
    if ratio >= 1 + BORDERLINE:
        return CLEARS
    if ratio >= 1 - BORDERLINE:
        return BORDERLINE_LABEL
    return FAILS


def _labels(ratio: np.ndarray) -> np.ndarray:
    """_label over an array; None where the ratio is not a finite number."""
    out = np.full(ratio.shape, None, dtype=object)
    with np.errstate(invalid="ignore"):
        out[ratio >= 1 - BORDERLINE] = BORDERLINE_LABEL
        out[ratio >= 1 + BORDERLINE] = CLEARS
        out[ratio < 1 - BORDERLINE] = FAILS
    return out


def _setups(rows: pd.DataFrame, idx: np.ndarray) -> list[np.ndarray]:
    """Row positions (among idx, ascending) grouped by setup: equal on every _SETUP_COLUMNS value
    (NaN equal to NaN), in order of first appearance."""
    if idx.size == 0:
        return []
    codes = []
    for c in _SETUP_COLUMNS:
        if c not in rows.columns:
            continue
        column = rows[c].iloc[idx]
        if column.dtype == object and cells_that(column, lambda v: isinstance(v, list)).any():
            column = column.map(lambda v: tuple(v) if isinstance(v, list) else v)
        codes.append(pd.factorize(column, use_na_sentinel=False)[0])
    if not codes:
        return [idx]
    sizes = [int(c.max()) + 1 for c in codes]
    if np.prod(np.array(sizes, dtype=float)) < 2.0 ** 62:  # one integer per row: a fast 1-D unique
        _, inverse = np.unique(np.ravel_multi_index(codes, sizes), return_inverse=True)
    else:
        _, inverse = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.diff(inverse[order])) + 1
    groups = np.split(idx[order], bounds)
    return sorted(groups, key=lambda g: g[0])


def _ngram_break_even(setup: Scenario, k: np.ndarray, conc: np.ndarray) -> np.ndarray:
    """Break-even E with n-gram drafting (no GPU time) at each (k, concurrency) of a setup; NaN
    where the model refuses it."""
    t_draft = 0.0 if setup.t_target_ms is not None else None
    try:
        p = predict(with_changes(setup, method="ngram", draft=None, t_draft_ms=t_draft), alpha=0.5, k=k,
                    concurrency=conc)
    except SpecModelError:
        return np.full(len(k), np.nan)
    return np.broadcast_to(np.asarray(p.break_even_tokens_per_step, dtype=float), (len(k),))


def evaluate_runs(rows: pd.DataFrame, efficiency: Efficiency | None = None,
                  progress: Progress | None = None) -> pd.DataFrame:
    """The run table with prediction, break-even and verdict columns added (RESULT_COLUMNS).

    progress(done, total) is called between groups of rows; an exception it raises (a page whose
    session ended) stops the work."""
    if rows.empty:
        return rows.reindex(columns=[*rows.columns, *RESULT_COLUMNS, "setup"])
    with paused_gc():
        return _evaluate(rows, efficiency, progress)


def _evaluate(rows: pd.DataFrame, efficiency: Efficiency | None, progress: Progress | None) -> pd.DataFrame:
    numeric = ["concurrency", "k", "alpha", "tokens_per_step", "baseline_tok_s", "spec_tok_s", "measured_speedup"]
    rows = rows.reset_index(drop=True)  # copy-on-write (pandas 3): the caller's table is never changed
    rows[numeric] = rows[numeric].apply(pd.to_numeric, errors="coerce")
    n = len(rows)
    res: dict[str, np.ndarray] = {c: np.full(n, np.nan) if c in _NUMERIC_RESULTS else np.full(n, None, dtype=object)
                                  for c in RESULT_COLUMNS}
    alpha = rows["alpha"].to_numpy(dtype=float)
    if "alpha_assumed" in rows.columns:  # a published figure where the row and its source have none
        alpha = np.where(np.isfinite(alpha), alpha, pd.to_numeric(rows["alpha_assumed"], errors="coerce").to_numpy(float))
    k = rows["k"].to_numpy(dtype=float)
    conc = rows["concurrency"].to_numpy(dtype=float)
    off_tok_s = pd.to_numeric(rows["off_tok_s"], errors="coerce").to_numpy(dtype=float) if "off_tok_s" in rows.columns \
        else np.full(len(rows), np.nan)
    predictable = np.isfinite(alpha)
    res["prediction_error"][~predictable] = "no acceptance to predict with"
    if "no_prediction" in rows.columns:  # a name matched no preset: judged on its measurement only (runs.unpredicted)
        line = rows["no_prediction"].to_numpy(dtype=object)
        named = np.array([isinstance(x, str) and bool(x) for x in line], dtype=bool)
        res["prediction_error"][named], predictable = line[named], predictable & ~named
    done = 0
    ngram_be = np.full(n, np.nan)
    for idx in _setups(rows, np.flatnonzero(predictable)):
        try:
            setup = setup_of(scenario_for_row(rows.iloc[idx[0]].to_dict(), efficiency))
        except (SpecModelError, TypeError, ValueError) as exc:
            res["prediction_error"][idx] = str(exc)
        else:
            off = measured_off_cost(conc[idx], rows["baseline_tok_s"].to_numpy(dtype=float)[idx], off_tok_s[idx],
                                    "off_tok_s of this setup's rows")  # runs with speculation configured and off
            part = summarize_many(setup, alpha[idx], k[idx], conc[idx], off)  # arrays: floats (NaN) or objects
            failed = part["error"] != None  # noqa: E711 - elementwise: the runs with a message
            res["prediction_error"][idx[failed]] = part["error"][failed]
            good = idx[~failed]
            for column, field in _FROM_SUMMARY.items():
                res[column][good] = part[field][~failed]
            res["off_cost_source"][good] = off_cost_brief(off or scenario_off_cost(setup))
            res["advice"][good] = advice_of_runs(setup, alpha[idx], k[idx], conc[idx], part, off)[~failed]
            del part
            res["timings"][good] = "measured" if setup.t_target_ms is not None else "hardware"
            if setup.method.name != "ngram":
                ngram_be[idx] = _ngram_break_even(setup, k[idx], conc[idx])
        done += len(idx)
        if progress is not None:
            progress(done, n)
    results = frame_of(res, RESULT_COLUMNS, _NUMERIC_RESULTS)
    _rate_rows(rows, results, efficiency)
    _widen_assumed(rows, results, efficiency)
    _judge(rows, results, ngram_be)
    say_unpredicted(rows, results)
    out = pd.concat([rows, results], axis=1)
    out["setup"] = setup_names(out)  # what tells the run apart from its workload's other setups
    return out


def _rate_rows(rows: pd.DataFrame, results: pd.DataFrame, efficiency: Efficiency | None) -> None:
    """A row given as a request rate is predicted as the end-to-end latency ratio of the two arms,
    each at the concurrency Little's law gives it (model.rate), in place."""
    if "rate_driven" not in rows.columns:
        return
    for i in np.flatnonzero(rows["rate_driven"].fillna(False).astype(bool).to_numpy()):
        if not np.isfinite(results.at[i, "predicted_speedup"]):
            continue
        try:
            found = rate_prediction(rows.iloc[i].to_dict(), efficiency)
        except (SpecModelError, TypeError, ValueError):
            continue
        ratio = found.latency_speedup
        results.at[i, "predicted_speedup"] = ratio
        low, high = band_around(ratio, ratio)
        results.at[i, "speedup_low"], results.at[i, "speedup_high"] = float(low), float(high)


def _widen_assumed(rows: pd.DataFrame, results: pd.DataFrame, efficiency: Efficiency | None) -> None:
    """The band of a row predicted on an input it does not state spans the prediction at every value that
    input may have, each end widened by decide.BAND_RATIO as any band is (inputs the band reads, kept
    apart from the band's own rule), as an engine named without a version spans its versions:
    - an assumed acceptance (a published figure, or another dataset's rows of its source): α ±
      spec_defaults.ASSUMED_ALPHA_SPREAD;
    - no k stated and no documented default (k_spread): every k the method is commonly run at, with a
      measured tokens per step read as α again at each k (a k below it minus one cannot have run);
    - no draft named (draft_spread): every draft preset of the target's family."""
    if "assumed" not in rows.columns:
        return
    marked = rows["assumed"].fillna("").astype(str).str.contains("acceptance").to_numpy().copy()
    for column in ("k_spread", "draft_spread"):
        if column in rows.columns:
            marked |= cells_that(rows[column], lambda v: isinstance(v, (tuple, list)) and len(v) > 0)
    for i in np.flatnonzero(marked & np.isfinite(results["predicted_speedup"].to_numpy(dtype=float))):
        row = rows.iloc[i].to_dict()
        try:
            ends = _assumed_ends(row, scenario_for_row(row, efficiency))
        except (SpecModelError, TypeError, ValueError):
            continue
        if ends.size == 0:
            continue
        if row.get("rate_driven"):
            ends = ends * results.at[i, "predicted_speedup"] / float(predict(scenario_for_row(row, efficiency)).speedup)
        low, high = band_around(ends.min(), ends.max())
        results.at[i, "speedup_low"] = min(float(low), float(results.at[i, "speedup_low"]))
        results.at[i, "speedup_high"] = max(float(high), float(results.at[i, "speedup_high"]))
        results.at[i, "uncertain"] = bool(results.at[i, "speedup_low"] < 1 < results.at[i, "speedup_high"]) or \
            bool(results.at[i, "uncertain"])


def _spread(value, own) -> tuple:
    """A row's spread cell as a tuple of values (its own value alone where it has none)."""
    return tuple(value) if isinstance(value, (tuple, list)) and len(value) else (own,)


def _assumed_ends(row: dict, s: Scenario) -> np.ndarray:
    """Every prediction _widen_assumed spans for one row (flat; non-finite ones left out)."""
    if s.survival is not None:
        s = with_changes(s, survival=None)
    alpha = row_alpha(row)
    alpha_assumed = "acceptance" in str(row.get("assumed") or "")
    measured_e = float_or_none(row.get("tokens_per_step"))
    ks = _spread(row.get("k_spread"), int(row["k"]))
    drafts = _spread(row.get("draft_spread"), row.get("draft_preset"))
    values = []
    for draft in drafts:
        for k in ks:
            if measured_e is not None and not alpha_assumed and ks != (int(row["k"]),):
                if measured_e > k + 1:
                    continue
                alphas = [acceptance.from_tokens_per_step(measured_e, k).alpha]
            else:
                alphas = list(spec_defaults.alpha_range(alpha)) if alpha_assumed else [alpha]
            try:
                other = with_changes(s, k=k, draft=draft if s.method.name == "draft_model" else s.draft)
                values.extend(np.ravel(np.asarray(predict(other, alpha=np.array(alphas)).speedup, dtype=float)))
            except SpecModelError:
                continue
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]


def _judge(rows: pd.DataFrame, results: pd.DataFrame, ngram_be: np.ndarray) -> None:
    """Verdicts, margins, agreement and n-gram advice, in place (the rules in the module docstring)."""
    measured = rows["measured_speedup"].to_numpy(dtype=float)
    measured_e = rows["tokens_per_step"].to_numpy(dtype=float)
    k = rows["k"].to_numpy(dtype=float)
    predicted = results["predicted_speedup"].to_numpy(dtype=float)
    be = results["break_even_tokens_per_step"].to_numpy(dtype=float)
    has_predicted = np.isfinite(predicted)
    if "measured_plausible" in rows.columns:  # a speedup above its E is no verdict (runs.plausible)
        measured = np.where(rows["measured_plausible"].to_numpy(dtype=object) == False, np.nan, measured)  # noqa: E712
    has_measured = np.isfinite(measured)
    be_finite = has_predicted & np.isfinite(be) & (be > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        e_ratio = np.where(be_finite, measured_e / np.where(be_finite, be, 1.0), np.nan)
    measured_verdict, predicted_verdict = _labels(measured), _labels(predicted)
    n = len(measured)

    by_e = ~has_measured & has_predicted & np.isfinite(e_ratio)
    by_speedup = ~has_measured & has_predicted & ~by_e & be_finite
    unreachable = ~has_measured & has_predicted & ~by_e & ~be_finite
    verdict = np.where(has_measured, measured_verdict, None)
    verdict = np.where(by_e, _labels(e_ratio), verdict)
    verdict = np.where(by_speedup, predicted_verdict, verdict)
    verdict = np.where(unreachable, FAILS, verdict)
    basis = np.select([has_measured, by_e, by_speedup, unreachable],
                      [MEASURED, PREDICTED_E, PREDICTED_SPEEDUP, PREDICTED_UNREACHABLE], "")
    margin_pct = np.where(has_measured, measured - 1, np.where(by_e, e_ratio - 1, np.nan))
    both = has_measured & has_predicted
    same = measured_verdict == predicted_verdict
    agrees = np.full(n, None, dtype=object)
    agrees[both] = [bool(a) for a in same[both].tolist()]
    disagreement = np.full(n, "", dtype=object)
    differ = np.flatnonzero(both & ~same)
    if differ.size:  # each distinct (verdict, predicted, measured) worded once
        disagreement[differ] = [disagreement_words(*said) for said in zip(
            predicted_verdict[differ].tolist(), predicted[differ].tolist(), measured[differ].tolist())]

    results["verdict"] = column_of(verdict)
    results["verdict_words"] = column_of(_each_once(verdict_words, verdict))
    results["decision"] = column_of(_each_once(decision, verdict))
    results["verdict_basis"] = column_of(np.where(basis == "", None, basis))
    results["measured_verdict"] = column_of(measured_verdict)
    results["predicted_verdict"] = column_of(predicted_verdict)
    results["margin_pct"] = margin_pct
    results["margin_tokens_per_step"] = np.where(be_finite & np.isfinite(measured_e), measured_e - be, np.nan)
    results["break_even_tokens_per_step"] = np.where(be_finite, be, np.nan)
    results["model_agrees"] = pd.Series(agrees, index=results.index, dtype=object)
    results["disagreement"] = column_of(disagreement)

    # n-gram advice where the verdict is not "clears" and n-gram's break-even is reachable at this k
    advice = results["advice"].to_numpy(dtype=object).copy()
    told = np.flatnonzero(has_predicted & (verdict != CLEARS) & np.isfinite(ngram_be) & (ngram_be <= k + 1))
    if told.size:  # each distinct break-even worded once, each distinct (advice, n-gram advice) joined once
        values, at = np.unique(ngram_be[told], return_inverse=True)
        extra = [ngram_advice(v) for v in values.tolist()]
        said, texts = pd.factorize(advice[told], use_na_sentinel=False)
        pairs, distinct = pd.factorize(said.astype(np.int64) * len(extra) + at.reshape(-1))
        joined = ["; ".join(filter(None, (texts[p // len(extra)], extra[p % len(extra)]))) for p in distinct.tolist()]
        advice[told] = np.array(joined, dtype=object)[pairs]
    results["advice"] = column_of(advice)


def _each_once(word, values: np.ndarray) -> np.ndarray:
    """[word(v) for v in values] as an object array, word called once per distinct value (None and NaN
    each a value of their own; -0.0 and 0.0 apart)."""
    if values.dtype.kind == "f" and (values == 0).any():  # factorize takes -0.0 for 0.0
        return np.array([word(v) for v in values.tolist()], dtype=object)  # words: text or None
    codes, distinct = pd.factorize(values, use_na_sentinel=False)
    return np.array([word(v) for v in distinct.tolist()], dtype=object)[codes]


def break_even_table(evaluated: pd.DataFrame) -> pd.DataFrame:
    """Per workload and concurrency: measured E vs break-even, margin, verdict, the model's verdict and advice;
    sorted by workload, then its setups in the order the files first give them, then concurrency."""
    table = evaluated.reindex(columns=TABLE_COLUMNS)
    table["gpu_preset"] = preset_names(table["gpu_preset"])  # a GPU given by its numbers is held as itself
    first_seen = (lambda c: pd.Series(pd.factorize(c)[0], index=c.index) if c.name == "setup" else c)  # noqa: E731
    return table.sort_values(["workload", "setup", "concurrency"], kind="stable", key=first_seen).reset_index(drop=True)


def error_summary(evaluated: pd.DataFrame) -> dict:
    """How far predictions landed from measurements: MAPE of speedup, verdict agreement, and how
    many measured verdicts the model got wrong (model_disagreements). Only runs the model predicted
    count: a run judged on its measurement alone (runs.unpredicted) is left out, and counted in
    rows_unpredicted."""
    left_out = np.array(unpredicted_rows(evaluated), dtype=bool)
    read = ("measured_speedup", "predicted_speedup", "measured_plausible", "measured_verdict", "predicted_verdict")
    both = evaluated[[c for c in read if c in evaluated.columns]]  # the columns read, not a copy of the whole table
    both = both[~left_out] if left_out.any() else both
    both = both.dropna(subset=["measured_speedup", "predicted_speedup"]) if not both.empty else both
    if "measured_plausible" in both.columns:  # an impossible measurement checks no prediction
        both = both[both["measured_plausible"].to_numpy(dtype=object) != False]  # noqa: E712
    n = len(both)
    if n == 0:
        return {"rows_compared": 0, "mape_speedup_pct": None, "verdict_agreement": None, "verdicts_agreeing": 0,
                "model_disagreements": 0, "rows_unpredicted": int(left_out.sum())}
    meas = both["measured_speedup"].astype(float).to_numpy()
    pred = both["predicted_speedup"].astype(float).to_numpy()
    agree = int((both["measured_verdict"] == both["predicted_verdict"]).sum())
    return {"rows_compared": n, "mape_speedup_pct": float(np.mean(np.abs(pred - meas) / meas) * 100),
            "verdict_agreement": agree / n, "verdicts_agreeing": agree, "model_disagreements": n - agree,
            "rows_unpredicted": int(left_out.sum())}


@dataclass(frozen=True)
class Review:
    """What the Runs page and the `runs` command show: every run evaluated, the table, the errors."""

    evaluated: pd.DataFrame
    table: pd.DataFrame
    summary: dict


def review(rows: pd.DataFrame, efficiency: Efficiency | None = None, progress: Progress | None = None) -> Review:
    evaluated = evaluate_runs(rows, efficiency, progress)
    return Review(evaluated, break_even_table(evaluated), error_summary(evaluated) | reading_summary(evaluated))
