"""`vllm bench serve --save-result` JSON: one object per run, or a list of them.

A run with spec-decode counters is the speculative arm, one without is a baseline; the two are paired
later (specmodel.runs.pairing) on model, dataset and concurrency (or request rate). Row numbers are
the position of the benchmark in a list (1 = first), None for a file of one object.
"""

from __future__ import annotations

import math
from pathlib import Path

from specmodel import bounds
from specmodel.model.rate import littles_law_concurrency
from specmodel.runs.cells import model_key, number, shown
from specmodel.runs.draft_length import at_mean_draft_length
from specmodel.runs.records import Problem, RunRecord, stopped_reading, too_many_rows

_METHOD_WORDS = (("eagle", "eagle"), ("medusa", "medusa"), ("mtp", "mtp"), ("ngram", "ngram"),
                 ("n-gram", "ngram"), ("prompt_lookup", "ngram"), ("draft", "draft_model"))
# canonical name <- the result's key, for the speculative arm's acceptance counters
_SPEC_KEYS = (("accepted_tokens", "spec_decode_accepted_tokens"), ("drafts", "spec_decode_num_drafts"),
              ("draft_tokens", "spec_decode_draft_tokens"), ("tokens_per_step", "spec_decode_acceptance_length"),
              ("acceptance_rate_percent", "spec_decode_acceptance_rate"))


def _method_from_label(label) -> str | None:
    text = str(label or "").lower()
    for word, method in _METHOD_WORDS:
        if word in text:
            return method
    return None


def _spec_config(value) -> dict:
    """The server's --speculative-config where the result records it (a `spec_config` key, as
    `vllm bench serve --metadata spec_config='{...}'` saves it: a JSON object or its text); {} otherwise."""
    if isinstance(value, str) and value.strip().startswith("{") and len(value) <= bounds.MAX_CELL_CHARS:
        try:
            import json

            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def read_vllm_bench_list(name: str, docs: list[dict]) -> tuple[list[RunRecord], list[Problem]]:
    """A JSON list of results: one record per result, the first bounds.MAX_ROWS_PER_FILE of them."""
    recs, probs = [], []
    if len(docs) > bounds.MAX_ROWS_PER_FILE:
        probs.append(too_many_rows(name, len(docs)))
    for i, d in enumerate(docs[:bounds.MAX_ROWS_PER_FILE], start=1):
        if bounds.stop_due(i):
            probs.append(stopped_reading(name, i))
            break
        r, p = read_vllm_bench(name, d, index=i)
        recs.extend(r)
        probs.extend(p)
    return recs, probs


@bounds.bounded_cache(256)
def _stem(name: str) -> str:
    """The file's name without its suffix (a workload's name when the run names none): once per file, not
    per run."""
    return Path(name).stem


def _lengths(name: str, d: dict, values: dict) -> tuple[float | None, float | None, object]:
    """(mean input tokens, mean output tokens, dataset) per request; sets context_len and workload."""
    completed = number(d.get("completed")) or number(d.get("num_prompts"))
    in_len = out_len = None
    if completed:
        in_len = (number(d.get("total_input_tokens")) or 0) / completed
        out_len = (number(d.get("total_output_tokens")) or 0) / completed
        if math.isfinite(in_len + out_len / 2):  # a tiny "completed" makes them overflow: then unknown
            values["context_len"] = round(in_len + out_len / 2)
        else:
            in_len = out_len = None
    dataset = d.get("dataset_name") or d.get("dataset")
    values["workload"] = str(dataset) if dataset else (
        f"{in_len:.0f} in / {out_len:.0f} out tokens" if in_len is not None else _stem(name))
    return in_len, out_len, dataset


def _load(name: str, row: int | None, d: dict, values: dict, problems: list) -> tuple[float | None, float | None]:
    """(concurrency, request rate): max_concurrency, else estimated from throughput × latency (a warning)."""
    concurrency = number(d.get("max_concurrency"))
    rate = number(d.get("request_rate"))
    if concurrency is None:
        # Little's law (model.rate, its one home): requests completed per second × mean time in the system
        little = littles_law_concurrency(number(d.get("request_throughput")) or 0,
                                         (number(d.get("mean_e2el_ms")) or 0) / 1e3)
        if little > 0:
            concurrency = max(1, round(little))
            problems.append(Problem(name, row, "max_concurrency", f"not set (the run was paced by request rate "
                                    f"{d.get('request_rate')}); concurrency estimated as {concurrency} from "
                                    "request throughput × mean latency", "warning"))
    if concurrency is not None:
        values["concurrency"] = concurrency
    if rate is not None:
        values["request_rate"] = rate
    return concurrency, rate


def read_vllm_bench(name: str, d: dict, index: int | None = None) -> tuple[list[RunRecord], list[Problem]]:
    """One result: a record of the speculative or the baseline arm, and its problems."""
    row = index
    problems = []
    throughput = number(d.get("output_throughput"))
    values: dict = {}
    headers = {"spec_tok_s": "output_throughput", "concurrency": "max_concurrency", "k": "spec_decode_draft_tokens",
               "target_model": "model_id", "gpu": "gpu", "workload": "dataset_name",
               "context_len": "total_input_tokens", "temperature": "temperature"}
    in_len, out_len, dataset = _lengths(name, d, values)
    concurrency, rate = _load(name, row, d, values, problems)
    for key, src in (("target_model", "model_id"), ("gpu", "gpu"), ("draft_model", "draft_model"),
                     ("temperature", "temperature"), ("tp", "tp"), ("notes", "label")):
        if d.get(src) not in (None, ""):
            values[key] = d[src]
    spec_config = _spec_config(d.get("spec_config"))
    method = d.get("method") or spec_config.get("method") or _method_from_label(d.get("label"))
    if method:
        values["method"] = method
    if spec_config.get("model") not in (None, "") and "draft_model" not in values:  # the draft the server loaded
        values["draft_model"] = spec_config["model"]
        headers["draft_model"] = "spec_config"
    if spec_config.get("num_speculative_tokens") is not None:
        values["k"] = spec_config["num_speculative_tokens"]
        headers["k"] = "spec_config"
    drafts = number(d.get("spec_decode_num_drafts"))
    remark = None
    is_spec = drafts is not None and drafts > 0 or d.get("spec_decode_acceptance_length") is not None
    if throughput is None or throughput <= 0:
        problems.append(Problem(name, row, "output_throughput", f"{shown(d.get('output_throughput'))} is not a "
                                "positive number; expected output tokens per second; not loaded"))
        return [], problems
    if is_spec:
        per_pos = d.get("spec_decode_per_position_acceptance_rates")
        if isinstance(per_pos, list) and per_pos:
            values["survival"] = per_pos
            headers["survival"] = "spec_decode_per_position_acceptance_rates"
        for key, src in _SPEC_KEYS:
            if d.get(src) is not None:
                values[key] = d[src]
                headers[key] = src
        longest = len(per_pos) if isinstance(per_pos, list) and per_pos else number(values.get("k"))
        remark = at_mean_draft_length(values, headers, *(number(values.get(key)) for key in (
            "drafts", "draft_tokens", "accepted_tokens")), longest, "spec_decode_draft_tokens / spec_decode_num_drafts")
    key = (model_key(d.get("model_id")), str(dataset or (round(in_len or 0), round(out_len or 0))),
           concurrency if concurrency is not None else ("rate", rate))
    if str(d.get("speculation", "")).strip().lower() == "off":  # --metadata speculation=off: configured, switched off
        values["off_tok_s"] = throughput
        headers["off_tok_s"] = "output_throughput"
        return [RunRecord(name, row, "vllm bench serve", values, headers, "off", key)], problems
    values["spec_tok_s" if is_spec else "baseline_tok_s"] = throughput
    headers["baseline_tok_s"] = "output_throughput"
    rec = RunRecord(name, row, "vllm bench serve", values, headers, "spec" if is_spec else "baseline", key)
    if is_spec and remark:
        rec.remarks.append(remark)
    return [rec], problems
