"""Read per-request speculative-decoding metrics into run records: vLLM's responses and AIPerf's exports.

Formats (recognised from the content by `looks_like_spec_json`):

- vLLM with `--per-request-spec-decode-metrics summary|detailed`: every response carries
  `metrics.speculative_decoding` = {num_spec_steps, num_draft_tokens, num_accepted_draft_tokens,
  mean_acceptance_length, draft_acceptance_rate, and with `detailed` acceptance_histogram (steps that
  accepted exactly j drafts, j = 0..k), per_step_accepted, per_step_drafted}
  (https://docs.vllm.ai/en/stable/features/speculative_decoding/acceptance_metrics/). A file may hold one
  response, a JSON list of them, or one per line (JSONL, e.g. saved from a client or a streamed run's final
  chunks, `data: ` prefixes allowed); the whole file becomes one run.
- AIPerf: `profile_export_aiperf.json` (run totals `total_spec_decode_steps`, `total_accepted_draft_tokens`,
  `total_draft_tokens` and `pooled_spec_decode_acceptance_histogram` {j: steps}) and the records trace
  `profile_export.jsonl` (each line's `spec_decode_acceptance` record), as documented in
  github.com/ai-dynamo/aiperf docs/metrics-reference.md ("Speculative Decoding Metrics") and
  docs/tutorials/spec-decode-metrics.md.

Totals are pooled over requests: E = 1 + Σ accepted / Σ steps (every verify step weighs the same), and
from a histogram the survival p_i = Σ_{j ≥ i} steps_j / Σ steps. Neither format records concurrency:
the run is judged at the file's `concurrency` if it has one (AIPerf's input_config.loadgen.concurrency),
else at batch 1, and the warning says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from specmodel.errors import SpecModelError
from specmodel.runs.records import Problem, RunRecord

_MARKERS = ('"speculative_decoding"', '"spec_decode_acceptance"', '"num_spec_steps"',
            '"pooled_spec_decode_acceptance_histogram"', '"total_spec_decode_steps"')


def looks_like_spec_json(text: str) -> bool:
    head = text[:200_000]
    lines = (line.strip() for line in head.splitlines())
    first = next((line for line in lines if line and not line.startswith("#")), "")
    return (first[:1] in ("{", "[") or first.startswith("data:")) and any(m in head for m in _MARKERS)


def _num(x):
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def _documents(text: str) -> list[tuple[int, object]]:
    """(line or position, JSON value): one JSON document, or JSON Lines."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        pass
    else:
        return [(i, d) for i, d in enumerate(doc, start=1)] if isinstance(doc, list) else [(1, doc)]
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        if not line or line == "[DONE]" or line.startswith("#"):
            continue
        try:
            out.append((lineno, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise SpecModelError(f"line {lineno} is not valid JSON ({exc.msg}, column {exc.colno}); expected one "
                                 "response per line (JSON Lines) or one JSON document") from None
    return out


def _metric_avg(doc: dict, tag: str):
    value = doc.get(tag)
    if isinstance(value, dict):
        return _num(value.get("avg"))
    return _num(value)


def _per_request(d) -> dict | None:
    """The per-request acceptance record in one response / trace line, if any."""
    if not isinstance(d, dict):
        return None
    for path in (("metrics", "speculative_decoding"), ("spec_decode_acceptance",), ("speculative_decoding",)):
        cur = d
        for key in path:
            cur = cur.get(key) if isinstance(cur, dict) else None
        if isinstance(cur, dict):
            return cur
    return d if "num_spec_steps" in d else None


def _histogram(raw) -> dict[int, float] | None:
    if isinstance(raw, list):
        items = enumerate(raw)
    elif isinstance(raw, dict):
        items = raw.items()
    else:
        return None
    out = {}
    for j, n in items:
        try:
            j = int(j)
        except (TypeError, ValueError):
            return None
        v = _num(n)
        if v is None or v < 0 or j < 0:
            return None
        out[j] = out.get(j, 0.0) + v
    return out


@dataclass
class _Pooled:
    """Spec-decode counts summed over the responses of one file."""

    steps: float = 0.0
    accepted: float = 0.0
    drafted: float = 0.0
    hist: dict = field(default_factory=dict)  # accepted drafts j -> verify steps
    hist_complete: bool = True  # every response had a histogram
    k_seen: list = field(default_factory=list)
    models: set = field(default_factory=set)
    used: int = 0

    def add(self, rec: dict, d, s: float, a: float, t: float | None) -> None:
        """One response's record `rec` (in the document `d`): s steps, a accepted, t drafted."""
        self.steps, self.accepted, self.drafted = self.steps + s, self.accepted + a, self.drafted + (t or 0.0)
        h = _histogram(rec.get("acceptance_histogram"))
        if h is None:
            self.hist_complete = False
        else:
            for j, n in h.items():
                self.hist[j] = self.hist.get(j, 0.0) + n
            if isinstance(rec.get("acceptance_histogram"), list):
                self.k_seen.append(len(rec["acceptance_histogram"]) - 1)
        if _num(rec.get("num_spec_tokens")):
            self.k_seen.append(int(_num(rec["num_spec_tokens"])))
        per_step = rec.get("per_step_drafted")
        if isinstance(per_step, list) and per_step and all(_num(x) is not None for x in per_step):
            self.k_seen.append(int(max(_num(x) for x in per_step)))
        if isinstance(d, dict) and isinstance(d.get("model"), str):
            self.models.add(d["model"])
        self.used += 1


def _pool(name: str, docs: list, problems: list) -> _Pooled:
    """The counts of every response with at least one verify step; a response with bad counts is a problem."""
    pooled = _Pooled()
    for where, d in docs:
        rec = _per_request(d)
        if rec is None:
            continue
        s, a, t = (_num(rec.get("num_spec_steps")), _num(rec.get("num_accepted_draft_tokens")),
                   _num(rec.get("num_draft_tokens")))
        if s is None or a is None or s < 0 or a < 0 or (t is not None and t < 0):
            problems.append(Problem(name, where, "num_spec_steps", "needs num_spec_steps and num_accepted_draft_tokens "
                                    "as counts ≥ 0; this response was left out"))
            continue
        if s == 0:
            continue  # a request that finished before any verify step
        if a > s * 64:
            problems.append(Problem(name, where, "num_accepted_draft_tokens", f"{a:g} accepted drafts in {s:g} "
                                    "steps is not possible; this response was left out"))
            continue
        pooled.add(rec, d, s, a, t)
    if not pooled.used:
        raise SpecModelError("no response in this file carries speculative-decoding metrics with at least one verify "
                             "step: start vLLM with --per-request-spec-decode-metrics summary (or detailed) and save "
                             "the responses, or give AIPerf's profile_export_aiperf.json")
    return pooled


def read(name: str, text: str, defaults) -> tuple[list, list]:
    """Records and problems for one file (see the module docstring)."""
    docs = _documents(text)
    if len(docs) == 1 and isinstance(docs[0][1], dict) and (
            "pooled_spec_decode_acceptance_histogram" in docs[0][1] or "total_spec_decode_steps" in docs[0][1]):
        return _read_aiperf_summary(name, docs[0][1])
    problems: list = []
    p = _pool(name, docs, problems)
    values = {"workload": Path(name).stem, "drafts": p.steps, "accepted_tokens": p.accepted,
              "notes": f"{p.used} requests with per-request spec-decode metrics, pooled"}
    headers = {"drafts": "num_spec_steps", "accepted_tokens": "num_accepted_draft_tokens",
               "draft_tokens": "num_draft_tokens", "survival": "acceptance_histogram", "k": "num_spec_tokens"}
    k = max(p.k_seen) if p.k_seen else (round(p.drafted / p.steps) if p.drafted else None)
    if p.drafted:
        values["draft_tokens"] = p.drafted
    if k:
        values["k"] = k
    if p.hist_complete and p.hist and k and sum(p.hist.values()) > 0:
        total = sum(p.hist.values())
        values["survival"] = [sum(n for j, n in p.hist.items() if j >= i) / total for i in range(1, k + 1)]
    if len(p.models) == 1:
        values["target_model"] = next(iter(p.models))
    wrapper = docs[0][1] if len(docs) == 1 and isinstance(docs[0][1], dict) else {}
    conc = next((_num(wrapper.get(key)) for key in ("concurrency", "max_concurrency") if _num(wrapper.get(key))), None)
    if conc and conc >= 1:
        values["concurrency"] = conc
    else:
        values["concurrency"] = 1
        problems.append(Problem(name, None, "concurrency", "per-request metrics do not record how many requests ran "
                                "at once: judged at batch 1; for a run at higher load, put its tokens per step and "
                                "concurrency in a CSV row", "warning"))
    return [RunRecord(name, None, "vLLM per-request spec-decode JSON", values, headers)], problems


def _read_aiperf_summary(name: str, doc: dict) -> tuple[list, list]:
    problems = []
    steps = _metric_avg(doc, "total_spec_decode_steps")
    accepted = _metric_avg(doc, "total_accepted_draft_tokens")
    drafted = _metric_avg(doc, "total_draft_tokens")
    hist = _histogram(doc.get("pooled_spec_decode_acceptance_histogram"))
    if not steps and hist:
        steps = sum(hist.values())
        accepted = sum(j * n for j, n in hist.items()) if accepted is None else accepted
    if not steps or accepted is None:
        raise SpecModelError("AIPerf export without total_spec_decode_steps and total_accepted_draft_tokens (or the "
                             "pooled_spec_decode_acceptance_histogram): the run carried no spec-decode stats")
    values = {"workload": Path(name).stem, "drafts": steps, "accepted_tokens": accepted,
              "notes": "AIPerf profile_export_aiperf.json, spec-decode totals"}
    headers = {"drafts": "total_spec_decode_steps", "accepted_tokens": "total_accepted_draft_tokens",
               "draft_tokens": "total_draft_tokens", "survival": "pooled_spec_decode_acceptance_histogram",
               "concurrency": "input_config.loadgen.concurrency", "spec_tok_s": "output_token_throughput"}
    if drafted:
        values["draft_tokens"] = drafted
    k = round(drafted / steps) if drafted else (max(hist) if hist else None)
    if hist and k:
        total = sum(hist.values())
        values["survival"] = [sum(n for j, n in hist.items() if j >= i) / total for i in range(1, k + 1)]
    config = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    loadgen = config.get("loadgen") if isinstance(config.get("loadgen"), dict) else {}
    conc = _num(loadgen.get("concurrency"))
    if conc and conc >= 1:
        values["concurrency"] = conc
    else:
        values["concurrency"] = 1
        problems.append(Problem(name, None, "input_config.loadgen.concurrency", "not in the export: judged at batch 1",
                                "warning"))
    endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    models = endpoint.get("model_names")
    if isinstance(models, list) and models and isinstance(models[0], str):
        values["target_model"] = models[0]
    throughput = _metric_avg(doc, "output_token_throughput")
    if throughput and throughput > 0:
        values["spec_tok_s"] = throughput
    return [RunRecord(name, None, "AIPerf spec-decode export", values, headers)], problems
