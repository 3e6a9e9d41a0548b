"""The Scenario one loaded run describes (its presets, k, α or survival, concurrency, timings), and
its request-rate prediction: shared by the reader (a rate-driven row's concurrency) and the review."""

from __future__ import annotations

import math

import pandas as pd

from specmodel.model.engines import DEFAULT_ENGINE
from specmodel.model.rate import at_request_rate
from specmodel.model.roofline import Efficiency
from specmodel.model.scenario import Scenario


def scenario_for_row(row, efficiency: Efficiency | None = None) -> Scenario:
    """The Scenario a loaded run describes (its presets, k, α or survival, concurrency, timings)."""
    survival = row.get("survival")
    survival = tuple(survival) if isinstance(survival, (tuple, list)) and len(survival) else None
    method = row["method"]
    return Scenario.from_names(
        gpu=row["gpu_preset"], target=row["target_preset"], method=method,
        draft=row["draft_preset"] if method == "draft_model" else None,
        alpha=row_alpha(row), survival=survival, k=int(row["k"]), concurrency=int(row["concurrency"]),
        context_len=int(row["context_len"]), t_target_ms=float_or_none(row.get("t_target_ms")),
        t_draft_ms=float_or_none(row.get("t_draft_ms")), tp=int(float_or_none(row.get("tp")) or 1),
        efficiency=efficiency or Efficiency(), engine=text_or_none(row.get("engine")) or DEFAULT_ENGINE,
        draft_depth=whole_or_none(row.get("draft_depth")), branching=whole_or_none(row.get("branching")) or 1,
        draft_kv_budget=whole_or_none(row.get("draft_kv_budget")), weight_dtype=text_or_none(row.get("weight_dtype")),
        kv_dtype=text_or_none(row.get("kv_dtype")) or "bf16", proposal_rate=float_or_none(row.get("proposal_rate")),
        parallel_draft=bool(row.get("parallel_draft")) and row.get("parallel_draft") == row.get("parallel_draft"))


def row_alpha(row) -> float:
    """The α a row is predicted with: its own (or its source's), else the published figure assumed for it."""
    own = float_or_none(row.get("alpha"))
    return own if own is not None else float(row.get("alpha_assumed") if row.get("alpha_assumed") is not None
                                             else float("nan"))


def is_rate_driven(row) -> bool:
    """A row given as a request rate: its speedup is a latency ratio at that rate, each arm at its own
    concurrency, not a speedup at one fixed batch (so no batch sweep's point, no fixed-batch fit's)."""
    return row.get("rate_driven") in (True, 1)


def assumes_setup(row) -> bool:
    """A row predicted across a spread of k values or drafts it does not state (runs.assumed): its setup
    is a guess, so no fit (calibrate) and no batch sweep's shape reads it; it is predicted, with its band."""
    return any(isinstance(row.get(c), (tuple, list)) and len(row.get(c)) > 0 for c in ("k_spread", "draft_spread"))


def left_out_of_fits(row) -> bool:
    """A row no fit and no batch sweep reads: given as a request rate, or predicted on an assumed setup."""
    return is_rate_driven(row) or assumes_setup(row)


def rate_prediction(row, efficiency: Efficiency | None = None):
    """model.rate.at_request_rate for a row given as a request rate with its output length, or with
    each arm's measured end-to-end latency (the concurrency then comes from Little's law per arm)."""
    r = dict(row)
    r["concurrency"] = 1
    measured = (float_or_none(row.get("latency_plain_s")), float_or_none(row.get("latency_spec_s")))
    return at_request_rate(scenario_for_row(r, efficiency), float(row["request_rate"]),
                           whole_or_none(row.get("output_len")), whole_or_none(row.get("input_len")), measured)


def text_or_none(x) -> str | None:
    return x if isinstance(x, str) and x.strip() else None


def whole_or_none(x) -> int | None:
    x = float_or_none(x)
    return None if x is None else int(x)


def float_or_none(x):
    """A table cell as a number; None when it is empty, text, NA or NaN."""
    if x is None or isinstance(x, str) or x is pd.NA:
        return None
    x = float(x)
    return None if math.isnan(x) else x
