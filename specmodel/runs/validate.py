"""Validation: one path for every format. A RunRecord's raw values become one row of the run table.

Acceptance in whatever form the row has becomes E and α through `specmodel.model.acceptance`; numbers are
checked against their range; names become presets (specmodel.runs.names). A row with an error is left
out and each error is a Problem naming its column; a row that needed a fallback (an unknown GPU, a
missing k) is kept and the fallback is written into its `remarks`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.bounds import MAX_CONCURRENCY, MAX_K, bounded_cache
from specmodel.model import acceptance, spec_defaults
from specmodel.runs.assumed import assumed_draft, assumed_engine, benchmark_proposal_rate, default_k, spread_k
from specmodel.runs.cells import number
from specmodel.runs.gpu_columns import REASON as GPU_SPEC_REASON, row_gpu, with_spec_fault
from specmodel.runs.measured import RATE_NEEDS_LENGTH, REFUSED_METRICS, measured_latencies, speedup_metric, throughput_per_gpu
from specmodel.runs.names import cleaned_name, context_from_text, lengths_from_text, names_of, parse_method
from specmodel.runs.records import PLAIN_JOINED, PLAIN_RUN, Problem, Remark, RunDefaults, RunRecord
from specmodel.runs.row_numbers import RowError, number_of
from specmodel.runs.table_row import table_row
from specmodel.runs.meanings import row_reading
from specmodel.runs.unpredicted import NO_K, PREFIX, measured_only, no_prediction_line

# Remarks that change what is predicted, so they are also listed as warnings beside the table.
_WARNING_REMARKS = ("GPU '", "model '", "method '", "no draft model", "no baseline run", "k not in the file",
                    "speedup ", "the per-position list", PREFIX)


def _survival_values(raw) -> list[float]:
    """A survival cell's numbers (parse_survival's grammar, checked later); ValueError if not a list of numbers."""
    return list(acceptance.parse_survival(raw, validate=False) if isinstance(raw, (list, tuple))
                else acceptance.survival_of_text(str(raw)))


# Acceptance given as one number that needs k, most direct first: (column, low, high, what is
# expected, conversion to acceptance.Acceptance). The ranges are documented: each is what the quantity can be
# (docs/model.md "Acceptance numbers").
SINGLE_NUMBER_FORMS = (
    ("tokens_per_step", 1, None, "tokens per step E in [1, k + 1]",
     lambda e, k, column: acceptance.from_tokens_per_step(e, k, f"{column} (tokens per step)")),
    ("draft_acceptance_rate", 0, 1, "a fraction of draft tokens accepted, in [0, 1]",
     lambda r, k, column: acceptance.from_draft_acceptance_rate(r, k)),
    ("acceptance_rate_percent", 0, 100, "a percentage of draft tokens accepted, in [0, 100]",
     lambda r, k, column: acceptance.from_vllm_percent(r, k)),
    ("alpha", 0, 1, "the per-token acceptance α, in [0, 1]",
     lambda a, k, column: acceptance.from_alpha(a, k)),
)


@bounded_cache(65536)
def convert_single(form: str, value: float, k: int, column: str):
    """One number and k -> acceptance.Acceptance (frozen, so shared): a large file repeats them."""
    convert = next(c for key, *_, c in SINGLE_NUMBER_FORMS if key == form)
    return convert(value, k, column)


def _acceptance(rec: RunRecord, k: int | None, errors: list):
    """The row's acceptance as an acceptance.Acceptance, from the most direct form it has."""
    v = rec.values
    col = lambda key: rec.headers.get(key, key)  # noqa: E731
    try:
        if "survival" in v:
            try:
                surv = _survival_values(v["survival"])
            except ValueError:
                raise RowError(col("survival"), f"'{v['survival']}' is not a list of numbers; expected "
                                "p_1;p_2;...;p_k, each in [0, 1]") from None
            return acceptance.from_survival_once(tuple(surv), "per-position acceptance"), col("survival")
        if "drafts" in v and "accepted_tokens" in v:
            drafts = number_of(rec, "drafts", errors, lo=0, strict_lo=True, what="a count of drafts > 0")
            accepted = number_of(rec, "accepted_tokens", errors, lo=0, what="a count of accepted tokens ≥ 0")
            draft_tokens = number_of(rec, "draft_tokens", errors, lo=0, what="a count of draft tokens ≥ 0")
            if drafts is None or accepted is None:
                return None, None
            return acceptance.from_counts(accepted, drafts, draft_tokens, k), col("accepted_tokens")
        for key, lo, hi, what, _ in SINGLE_NUMBER_FORMS:
            if key not in v:
                continue
            value = number_of(rec, key, errors, lo=lo, hi=hi, what=what)
            if value is None:
                return None, None
            return _needs_k(k, col(key), lambda kk, key=key, value=value: convert_single(key, value, kk, col(key))), col(key)
    except RowError as exc:
        errors.append(exc)
        return None, None
    except SpecModelError as exc:
        key = next((c for c in ("survival", "tokens_per_step", "draft_acceptance_rate", "acceptance_rate_percent",
                                "alpha", "accepted_tokens") if c in v), None)
        errors.append(RowError(col(key) if key else None, str(exc)))
        return None, None
    return None, None


def _needs_k(k, column, make):
    if k is None:
        raise RowError("k", f"k (draft tokens per step) is needed to read {column} and this file does not "
                             "record it, and the method has no documented default: give it with --k N on the "
                             "command line or the Past runs page's \"k for files that do not record it\" (or add a "
                             "k column to a CSV)", "no_k")
    return make(k)


def _temperature(rec: RunRecord, errors: list, remarks: list[str]):
    """A temperature as people write it: "0 (greedy)" and "greedy (argmax)" are 0; "nucleus
    sampling" says sampling without a number (left empty, with a remark)."""
    raw = rec.values.get("temperature")
    if isinstance(raw, str):
        text = raw.strip().lower()
        lead = re.match(r"(\d+(?:\.\d+)?)\b", text)
        if lead and text != lead.group(1):
            rec.values["temperature"] = lead.group(1)
        elif re.search(r"greedy|argmax", text):
            return 0.0
        elif re.search(r"sampl|nucleus|top[\s_-]?p|top[\s_-]?k", text):
            remarks.append(f"temperature '{raw.strip()}' is not a number: left empty")
            return np.nan
    return number_of(rec, "temperature", errors, lo=0, what="a sampling temperature ≥ 0")



def validate(rec: RunRecord, defaults: RunDefaults) -> tuple[dict | None, list[Problem]]:
    """(the row, problems), or (None, problems) when the row has an error or is refused and is left out."""
    return validate_row(rec, defaults)[:2]


def _refused(rec: RunRecord, refusals: list[tuple[str, str]], spec_column: str | None, plain_only: bool) -> list[Problem]:
    """The problems of a row whose names refuse its prediction and that has no measured speedup: each refusal, or,
    for a plain run whose plain step joined its setup's step fit (runs.pairing, PLAIN_JOINED), one warning that
    says so with the refusals in it (the row is not in the verdict table, but its measurement is used)."""
    if plain_only and rec.values.get(PLAIN_JOINED):
        return [Problem(rec.file, rec.row, None, f"{PLAIN_RUN}: its plain step joins the step fit of its setup; with "
                        "nothing measured to judge and names no preset describes, it is not in the verdict table ("
                        + "; ".join(m for _, m in refusals) + ")", "warning")]
    return [Problem(rec.file, rec.row, spec_column if reason == GPU_SPEC_REASON else None,
                    f"{message}; row not predicted", reason=reason) for reason, message in refusals]


def _row_notes(rec: RunRecord, changed) -> list[Problem]:
    """What a loaded row says beside its result: names whose control characters were removed (`changed`), and a
    plain run whose plain step joined its setup's step fit (PLAIN_JOINED)."""
    notes = [Problem(rec.file, rec.row, rec.headers.get(key, key), "control characters (such as NUL, escape or "
                     "text-direction marks) were removed from this name", "warning") for key in changed]
    if rec.values.get(PLAIN_JOINED):
        notes.append(Problem(rec.file, rec.row, None, f"{PLAIN_RUN}: predicted here, and its plain step also joins "
                             "the step fit of its setup", "info"))
    return notes


def validate_row(rec: RunRecord, defaults: RunDefaults):
    """validate's (row, problems) and how its numbers were read: (acceptance's k, k assumed, throughputs' factor)."""
    errors: list[RowError] = []
    remarks = list(rec.remarks)
    assumed: list[str] = []
    conc, rate = _load(rec, errors, remarks)
    measured = _measured(rec, errors)
    v = rec.values
    method_text = v.get("method")  # as written: "same tree" is looked for before the name is cleaned
    gpu_spec, spec_fault = row_gpu(rec)  # the GPU by its numbers, or (its column, why not)
    names = names_of(v, rec.fmt, "gpu" in rec.headers, measured.tp, measured.ep, measured.context, defaults, gpu_spec)
    spec_column = spec_fault[0] if spec_fault else None
    why_not = spec_defaults.unmodelled(str(method_text or ""))
    if why_not is not None:  # REST, Lookahead: refused with the reason, not for a k they do not need
        return None, [Problem(rec.file, rec.row, rec.headers.get("method", "method"),
                              f"method '{method_text}': {why_not}", reason="method_unmodelled")], None
    k, parsed_method = _k(rec, defaults, errors, remarks)
    depth_default = branching_default = k_spread = None
    if k is None and "k" not in v and not any(e.column == rec.headers.get("k", "k") for e in errors):
        k, depth_default, branching_default, k_spread = _k_not_stated(rec, names, defaults, assumed, remarks)
    names, draft_spread = assumed_draft(rec, names, assumed, remarks)
    assumed_engine(names, assumed, remarks)
    proposal_rate = benchmark_proposal_rate(rec, names, remarks)  # NaN: the engine's own
    if depth_default is not None and measured.depth is None and names.method_depth is None:
        rec.values.setdefault("draft_depth", depth_default)
    acc, acc_col, k = _acceptance_at_k(rec, k, parsed_method, errors, remarks)
    base, spec, speedup = _throughputs(rec, errors, remarks)
    off = number_of(rec, "off_tok_s", errors, lo=0, strict_lo=True,  # speculation configured but off (off_state)
                  what="tokens per second > 0 of the speculative server with speculation switched off")
    temperature = _temperature(rec, errors, remarks)
    no_k = _nothing_to_compare(rec, k, acc, speedup, errors)  # a measured verdict needs no k: loaded, not predicted
    input_len, output_len = lengths_from_text(" ".join(str(v.get(key) or "") for key in ("workload", "notes")))
    described = " ".join(str(v.get(key) or "") for key in ("_context", "notes"))
    metric = speedup_metric(described)
    gpus = int(names.tp or 1)
    scale = gpus if (base or spec) and gpus > 1 and throughput_per_gpu(described) else 1
    if scale > 1:
        base, spec, off = (None if x is None else x * scale for x in (base, spec, off))
        remarks.append(f"throughputs given per GPU: × {scale} GPUs, the replica's throughput the model predicts")
    latencies = measured_latencies(rec.values, conc, rate, speedup, remarks)
    if conc is None and rate is not None and output_len is None and latencies is None and not errors:
        errors.append(RowError(rec.headers.get("concurrency", "concurrency"), RATE_NEEDS_LENGTH, "no_concurrency"))
    if errors:
        return None, [Problem(rec.file, rec.row, e.column, str(e) + "; row not loaded", reason=e.reason,
                              kind=e.kind and e.kind + "; rows not loaded", figures=e.figures) for e in errors], None
    refusals = with_spec_fault(_refusals(names, parsed_method, method_text, metric, speedup), spec_fault)
    unpredicted = no_prediction_line(refusals, speedup)  # a name refused, the measurement kept
    if refusals and unpredicted is None:
        return None, _refused(rec, refusals, spec_column, plain_only=speedup is None and spec is None), None
    if no_k is not None:
        unpredicted = f"{unpredicted}; {no_k}" if unpredicted else PREFIX + no_k

    problems = _row_notes(rec, names.changed)
    v.update(names.cleaned)
    remarks.extend(r for r in names.remarks if unpredicted is None or "predicted with" not in r)  # none was
    if measured.context is None and context_from_text(v.get("workload")) is None:
        assumed.append("context")
        remarks.append(f"context {int(names.context)} tokens assumed (the row states no context or input/output "
                       "lengths)")
    remarks += [] if speedup is not None else ["no measured speedup: predicted only"]
    row = table_row(rec, names, measured, acc, acc_col, conc=conc, rate=rate, k=k, temperature=temperature, base=base,
               spec=spec, speedup=speedup, remarks=remarks, assumed=assumed, lengths=(input_len, output_len),
               metric=metric, latencies=latencies, defaults_shape=(depth_default, branching_default),
               spreads=(k_spread, draft_spread), proposal_rate=proposal_rate)
    row["off_tok_s"], row["plain_runs"] = np.nan if off is None else off, v.get("plain_runs")  # pairing._join_step_fits
    if "k" in assumed and acc is not None:  # α read at an assumed k is itself assumed: kept out of fits
        row["alpha_assumed"], row["alpha"] = row["alpha"], np.nan
    row |= {
        "_fallbacks": dict(names.fallbacks),
        "_same_tree": bool(method_text and re.search(r"same\s+tree", str(method_text), re.I)),
    }
    if unpredicted is not None:
        remarks.append(unpredicted)
        row = measured_only(row | {"remarks": "; ".join(remarks)}, refusals, unpredicted)
    problems.extend(Problem(rec.file, rec.row, spec_column if r.startswith(PREFIX) else None, r, "warning",
                            kind=getattr(r, "kind", None), figures=getattr(r, "figures", None))
                    for r in remarks if r.startswith(_WARNING_REMARKS) and " matched to " not in r)
    return row, problems, (acc.k if acc is not None else None, "k" in assumed, scale)


def _k_not_stated(rec: RunRecord, names, defaults: RunDefaults, assumed: list[str], remarks: list[str]):
    """(k, its tree's depth, its branching, the spread of k) for a row that states no k: the method's documented
    default, else the user's own k from the settings, else the spread of k the row's engine and method allow."""
    found = default_k(rec, names)
    if found is not None:
        assumed.append("k")
        tree = found.draft_depth and found.branching and found.branching > 1
        remarks.append(f"k = {found.k} assumed" + (f" (a tree {found.draft_depth} deep, {found.branching} wide)"
                                                   if tree else "") + f": the documented default ({found.source})")
        return found.k, found.draft_depth, found.branching, None
    if defaults.k is not None and "k" in defaults.explicit:  # the user's own k beats a spread
        remarks.append(f"k not in the file: k = {int(defaults.k)} from the settings")
        return int(defaults.k), None, None, None
    k, k_spread = spread_k(rec, names, assumed, remarks)
    return k, None, None, k_spread


def _refusals(names, parsed_method, method_text, metric, speedup) -> list[tuple[str, str]]:
    """(reason, message) of each reason the model does not predict a row that was read."""
    refusals = list(names.refused)
    if parsed_method is not None and re.search(r"relaxed|lossy", str(method_text), re.I):
        refusals.append(("lossy", f"'{method_text}' uses a relaxed (lossy) acceptance; the model predicts lossless "
                                  "speculative decoding"))
    if metric in REFUSED_METRICS and speedup is not None:
        refusals.append(("metric", f"its speedup is {REFUSED_METRICS[metric]}, which the model does not predict "
                                   "(it predicts decode throughput, and end-to-end latency at a request rate)"))
    return refusals


def _load(rec: RunRecord, errors: list, remarks: list[str]) -> tuple[int | None, float | None]:
    """(concurrency, request rate); concurrency is required, a fractional one is rounded."""
    conc = number_of(rec, "concurrency", errors, lo=1, hi=MAX_CONCURRENCY, what=f"concurrent requests, 1 to {MAX_CONCURRENCY:,}")
    rate = number_of(rec, "request_rate", errors, lo=0, strict_lo=True, what="requests per second > 0")
    if conc is not None and conc != round(conc):
        remarks.append(f"concurrency {conc:g} rounded to {round(conc)}")
    conc = round(conc) if conc is not None else None
    if conc is None and rate is None and "concurrency" not in rec.values and \
            not any(e.column == rec.headers.get("concurrency") for e in errors):
        errors.append(RowError(rec.headers.get("concurrency", "concurrency"),
                                "missing; the model predicts at a number of concurrent requests, or at a request "
                                "rate with the output length, so give one", "no_concurrency"))
    return conc, rate


def _k(rec: RunRecord, defaults: RunDefaults, errors: list, remarks: list[str]):
    """(k, the method as parsed): the k column, else what the method, the survival list, the counts or
    the settings say (with a remark)."""
    v = rec.values
    k = number_of(rec, "k", errors, lo=1, hi=MAX_K, whole=True,
                what=f"draft tokens per step, a whole number from 1 to {MAX_K}")
    method_text = v.get("method")
    parsed_method = parse_method(cleaned_name(str(method_text), 200)[0]) if method_text not in (None, "") else None
    if k is not None or "k" in v:
        return k, parsed_method
    if parsed_method is not None and parsed_method.k is not None and parsed_method.k <= MAX_K:
        remarks.append(f"k = {parsed_method.k} read from the method '{method_text}'")
        return parsed_method.k, parsed_method
    if "survival" in v:
        try:
            return len(_survival_values(v["survival"])), parsed_method
        except ValueError:
            return None, parsed_method
    if number(v.get("draft_tokens")) and number(v.get("drafts")):
        k = round(number(v["draft_tokens"]) / number(v["drafts"]))
        if 1 <= k <= MAX_K:
            return k, parsed_method
        errors.append(RowError(rec.headers.get("draft_tokens", "draft_tokens"),
                                f"draft tokens ÷ drafts gives k = {k:,}, outside 1..{MAX_K}; check the counts"))
        return None, parsed_method
    needs_k = ("tokens_per_step", "draft_acceptance_rate", "acceptance_rate_percent", "accepted_tokens")  # to read
    if defaults.k is not None and any(key in v for key in needs_k + (("alpha",) if "k" in defaults.explicit else ())):
        remarks.append(f"k not in the file: k = {int(defaults.k)} from the settings")
        return int(defaults.k), parsed_method
    return None, parsed_method


def _acceptance_at_k(rec: RunRecord, k, parsed_method, errors: list, remarks: list[str]):
    """(acceptance, the column it came from, k): a tree converts at its depth, not its width; a
    survival list longer or shorter than k wins over k."""
    v = rec.values
    k_refused = any(e.column == rec.headers.get("k", "k") for e in errors)
    tree_depth = parsed_method.draft_depth if parsed_method else None
    if "draft_depth" in v:
        tree_depth = number(v["draft_depth"]) if number(v["draft_depth"]) == number(v["draft_depth"]) else tree_depth
    acc_k = int(min(k, tree_depth)) if k is not None and tree_depth and tree_depth >= 1 else k
    acc, acc_col = _acceptance(rec, acc_k, errors)
    remark, column, hint = row_reading(v, acc_col)  # a column whose name does not say which acceptance it holds
    remarks.extend([remark] if remark else [])
    errors[:] = [RowError(e.column, str(e) + hint, e.reason) if hint and e.column == column else e for e in errors]
    if k_refused:  # one message about k is enough: drop "k is needed to read ..."
        errors[:] = [e for e in errors if not (e.column == "k" and "is needed to read" in str(e))]
    if acc is not None and k is not None and acc.k != acc_k and "survival" in v:
        remarks.append(f"the per-position list has {acc.k} positions but k = {k}; using k = {acc.k}")
        k = acc.k
    return acc, acc_col, k


def _throughputs(rec: RunRecord, errors: list, remarks: list[str]):
    """(baseline tok/s, speculative tok/s, measured speedup); the throughputs win over a speedup column
    that disagrees with them by more than 2%."""
    base = number_of(rec, "baseline_tok_s", errors, lo=0, strict_lo=True, what="tokens per second > 0")
    spec = number_of(rec, "spec_tok_s", errors, lo=0, strict_lo=True, what="tokens per second > 0")
    speedup = number_of(rec, "speedup", errors, lo=0, strict_lo=True, what="spec / baseline throughput, > 0")
    if speedup is None and base and spec:
        speedup = spec / base
    elif speedup is not None and base and spec and abs(spec / base - speedup) > 0.02 * speedup:
        remarks.append(Remark(f"speedup {speedup:g} disagrees with {spec:g} / {base:g} = {spec / base:.3f}; using the "
                              "throughputs", kind="speedup disagrees with speculative / baseline tokens per second by "
                              "more than 2%; using the throughputs",
                              figures=f"{speedup:g} against {spec:g} / {base:g} = {spec / base:.3f}"))
        speedup = spec / base
    return base, spec, speedup


@dataclass(frozen=True)
class _Measured:
    """The row's own settings and timings (None where it does not give them)."""

    context: float | None
    t_target: float | None
    t_draft: float | None
    tp: int | None
    ep: int | None
    depth: int | None
    branching: int | None
    kv_budget: int | None


def _measured(rec: RunRecord, errors: list) -> _Measured:
    measured = _Measured(
        context=number_of(rec, "context_len", errors, lo=0, what="tokens in the KV cache per sequence, ≥ 0"),
        t_target=number_of(rec, "t_target_ms", errors, lo=0, strict_lo=True, what="the plain step time at batch 1, ms > 0"),
        t_draft=number_of(rec, "t_draft_ms", errors, lo=0, what="the draft step time at batch 1, ms ≥ 0"),
        tp=number_of(rec, "tp", errors, lo=1, whole=True, what="tensor-parallel GPUs, a whole number ≥ 1"),
        ep=number_of(rec, "ep", errors, lo=1, whole=True, what="expert-parallel GPUs, a whole number ≥ 1"),
        depth=number_of(rec, "draft_depth", errors, lo=1, whole=True, what="sequential draft passes, a whole number ≥ 1"),
        branching=number_of(rec, "branching", errors, lo=1, whole=True, what="children per tree node, a whole number ≥ 1"),
        kv_budget=number_of(rec, "draft_kv_budget", errors, lo=1, whole=True,
                          what="tokens of KV the draft reads, a whole number ≥ 1"))
    if measured.t_draft is not None and measured.t_target is None:
        errors.append(RowError(rec.headers.get("t_draft_ms", "t_draft_ms"),
                                "given without t_target_ms; measured timings come as a pair"))
    return measured


def _nothing_to_compare(rec: RunRecord, k, acc, speedup, errors: list) -> str | None:
    """Errors for a row with neither an acceptance nor a speedup. A row with a measured speedup whose only want is
    k loads without one (a measured verdict needs no k): its k errors are dropped and the line its empty
    prediction gives is returned (runs.unpredicted.NO_K); None otherwise."""
    if acc is None and speedup is None and not errors:
        errors.append(RowError(None, "neither an acceptance (alpha, tokens_per_step, acceptance rate, counts, "
                                      "per-position rates) nor a measured speedup or throughputs; nothing to compare"))
    if k is not None or acc is not None or speedup is None:
        return None
    if all(e.reason == "no_k" for e in errors):  # none at all, or only "k is needed to read the acceptance"
        errors.clear()
        return NO_K
    if not any(e.column == "k" for e in errors):
        errors.append(RowError(rec.headers.get("k", "k"), "missing, and the method has no documented default; "
                                                           "give the number of draft tokens per step", "no_k"))
    return None
