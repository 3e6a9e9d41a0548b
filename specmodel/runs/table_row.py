"""The run table's row of a record that validated (runs.validate): one dict with every column the review,
the pages and `runs --json` read, from the record's names, measured figures and acceptance."""

from __future__ import annotations

import math

import numpy as np

from specmodel.runs.meanings import READ_AS
from specmodel.runs.cells import number
from specmodel.runs.records import RunRecord


def table_row(rec: RunRecord, names, measured, acc, acc_col, *, conc, rate, k, temperature, base, spec, speedup,
              remarks, assumed, lengths, metric, latencies, defaults_shape, spreads, proposal_rate) -> dict:
    """The run table's row of a record that validated."""
    v = rec.values
    (input_len, output_len), (depth_default, branching_default), (k_spread, draft_spread) = lengths, defaults_shape, spreads
    read_as = v.get(READ_AS)  # (header, meaning, said, ...) of a column whose name does not say (runs.meanings)
    read_as = read_as if read_as and acc and acc_col == read_as[0] else (None, None, None)
    row = {
        "file": rec.file, "row": rec.row, "format": rec.fmt, "workload": str(v.get("workload") or "(unnamed)"),
        "concurrency": conc, "request_rate": rate, "k": k if k is not None else (acc.k if acc else None),
        "method": names.method, "temperature": temperature,
        "alpha": acc.alpha if acc else np.nan, "tokens_per_step": acc.tokens_per_step if acc else np.nan,
        "acceptance_from": acc_col or "", "acceptance_read_as": read_as[1], "acceptance_meaning_said": read_as[2],
        "acceptance_assumed": False, "acceptance_assumed_source": None,  # set where load fills one in
        "survival": acc.survival if acc else None,
        "baseline_tok_s": base, "spec_tok_s": spec, "measured_speedup": speedup,
        "gpu": names.gpu_text, "gpu_preset": names.gpu, "target_model": names.target_text,
        "target_preset": names.target, "draft_model": names.draft_text, "draft_preset": names.draft,
        "context_len": int(names.context), "t_target_ms": measured.t_target, "t_draft_ms": measured.t_draft,
        "tp": names.tp, "engine": names.engine,
        "draft_depth": measured.depth if measured.depth is not None else (
            names.method_depth if names.method_depth is not None else depth_default),
        "branching": measured.branching if measured.branching is not None else (
            names.method_branching if names.method_branching is not None else branching_default),
        "ep": names.ep, "weight_dtype": names.weight_dtype, "draft_kv_budget": measured.kv_budget,
        "source": str(v["source"]) if v.get("source") not in (None, "") else None,
        "notes": str(v.get("notes") or ""), "remarks": "; ".join(remarks),
        "assumed": ", ".join(assumed), "parallel_draft": names.parallel, "input_len": input_len,
        "output_len": output_len, "speedup_metric": metric, "rate_driven": conc is None and rate is not None,
        "alpha_assumed": np.nan, "latency_plain_s": latencies[0] if latencies else np.nan,
        "latency_spec_s": latencies[1] if latencies else np.nan, "k_spread": k_spread,
        "draft_spread": draft_spread, "proposal_rate": proposal_rate, "no_prediction": None,
        "e_from_alpha": acc is not None and acc.source == "α",  # E read from α (i.i.d. acceptance), not measured
        "draft_acceptance_rate": draft_acceptance_rate(v),
        # the longest draft, where the row is judged at its mean draft length (k) below it
        "max_draft_length": number(v.get("max_draft_length")),
    }
    return row


def draft_acceptance_rate(values: dict) -> float:
    """Accepted ÷ drafted tokens (vLLM's draft acceptance rate, not α) where the record states it: the rate
    itself (a CSV column, a vLLM log line), its percent form (`vllm bench serve`), or the accepted and draft
    token counts; NaN where it states none or the value is no fraction."""
    rate = number(values.get("draft_acceptance_rate"))
    if rate is None and number(values.get("acceptance_rate_percent")) is not None:
        rate = number(values["acceptance_rate_percent"]) / 100
    accepted, drafted = number(values.get("accepted_tokens")), number(values.get("draft_tokens"))
    if rate is None and accepted is not None and drafted:
        rate = accepted / drafted
    return float(rate) if rate is not None and math.isfinite(rate) and 0 <= rate <= 1 else np.nan
