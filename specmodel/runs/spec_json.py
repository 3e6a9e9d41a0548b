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
the run is judged at the file's `concurrency` if it has one (AIPerf's profiling phase, input_config.phases[i],
or its input_config.loadgen.concurrency: `_AIPERF_CONCURRENCY`),
else at batch 1, and the warning says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from specmodel.errors import SpecModelError
from specmodel import bounds
from specmodel.bounds import MAX_K, check_k
from specmodel.files import load_json
from specmodel.runs.cells import model_key, number
from specmodel.numbers import quoted, refusal
from specmodel.runs.records import Problem, RunRecord, stopped_reading

_MARKERS = ('"speculative_decoding"', '"spec_decode_acceptance"', '"num_spec_steps"', '"speculative_decoding_stats"',
            '"pooled_spec_decode_acceptance_histogram"', '"total_spec_decode_steps"')
# Per-request count names: today's (vLLM --per-request-spec-decode-metrics, AIPerf's records) first, then the
# older per-choice `speculative_decoding_stats` spellings.
_STEPS = ("num_spec_steps", "num_drafts", "num_verify_steps", "num_spec_decode_steps")
_ACCEPTED = ("num_accepted_draft_tokens", "num_accepted_tokens")
_DRAFTED = ("num_draft_tokens", "num_drafted_tokens")


def looks_like_spec_json(text: str) -> bool:
    head = text[:200_000]
    lines = (line.strip() for line in head.splitlines())
    first = next((line for line in lines if line and not line.startswith("#")), "")
    return (first[:1] in ("{", "[") or first.startswith("data:")) and any(m in head for m in _MARKERS)


def _num(x):
    """x as a finite float, or None: the one number parser (cells.number), true/false no number."""
    return number(x)


def _documents(text: str) -> list[tuple[int, object]]:
    """(line or position, JSON value): one JSON document, or JSON Lines."""
    try:
        doc = load_json(text)
    except json.JSONDecodeError:
        pass
    else:
        return [(i, d) for i, d in enumerate(doc, start=1)] if isinstance(doc, list) else [(1, doc)]
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if bounds.stop_due(lineno):
            raise SpecModelError(f"reading stopped at line {lineno:,} after the {bounds.MAX_LOAD_S:g} s limit on "
                                 "processing one load; split the file")
        line = line.strip()
        if line.startswith("data:"):
            line = line[5:].strip()
        if not line or line == "[DONE]" or line.startswith("#"):
            continue
        try:
            out.append((lineno, load_json(line)))
        except json.JSONDecodeError as exc:
            raise SpecModelError(f"line {lineno} is not valid JSON ({exc.msg}, column {exc.colno}); expected one "
                                 "response per line (JSON Lines) or one JSON document") from None
    return out


def _drafts_per_step(drafted, steps):
    """round(drafted / steps), or None where there is no count; a ratio past any float stays a number
    for check_k to refuse (1e300 / 1e-300 overflowed into a traceback)."""
    if not drafted or not steps:
        return None
    ratio = drafted / steps
    return round(ratio) if math.isfinite(ratio) else ratio


def _metric_avg(doc: dict, tag: str):
    value = doc.get(tag)
    if isinstance(value, dict):
        return _num(value.get("avg"))
    return _num(value)


def _per_request(d) -> list[dict]:
    """The per-request acceptance records in one response / trace line: vLLM's `metrics.speculative_decoding`,
    AIPerf's `spec_decode_acceptance`, or one `speculative_decoding_stats` per choice (older responses)."""
    if not isinstance(d, dict):
        return []
    for path in (("metrics", "speculative_decoding"), ("spec_decode_acceptance",), ("speculative_decoding",),
                 ("speculative_decoding_stats",)):
        cur = d
        for key in path:
            cur = cur.get(key) if isinstance(cur, dict) else None
        if isinstance(cur, dict):
            return [cur]
    choices = d.get("choices")
    if isinstance(choices, list):
        found = [c.get(key) for c in choices if isinstance(c, dict)
                 for key in ("speculative_decoding_stats", "speculative_decoding") if isinstance(c.get(key), dict)]
        if found:
            return found
    return [d] if any(key in d for key in _STEPS[:1]) else []


def _first(rec: dict, names: tuple[str, ...]):
    """The first of `names` the record has, as a number (None: none of them, or not a number)."""
    return next((_num(rec[n]) for n in names if n in rec), None)


def _histogram(raw) -> dict[int, float] | None:
    if isinstance(raw, list):
        items = enumerate(raw)
    elif isinstance(raw, dict):
        items = raw.items()
    else:
        return None
    out = {}
    for key, n in items:
        j = _num(key)  # a key "٣" or "1_0" was int()'s 3 or 10: the one number parser refuses both, by name
        why = refusal(key) if j is None and isinstance(key, str) else None
        if why not in (None, "is not a number"):
            raise SpecModelError(f"an acceptance histogram has the key {quoted(key)}, which {why}")
        if j is None or j != int(j):
            return None
        j, v = int(j), _num(n)
        if v is None or v < 0 or j < 0:
            return None
        if j > MAX_K:  # checked before any list of k positions is built
            raise SpecModelError(f"an acceptance histogram has the key {j:,} (steps that accepted {j:,} drafts): "
                                 f"more than the {MAX_K} drafts per step this tool handles; check the file")
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
    for i, (where, d) in enumerate(docs):
        if bounds.stop_due(i):  # the responses pooled by then are read, and the rest said
            problems.append(stopped_reading(name, where))
            break
        for rec in _per_request(d):
            s, a, t = _first(rec, _STEPS), _first(rec, _ACCEPTED), _first(rec, _DRAFTED)
            if s is None or a is None or s < 0 or a < 0 or (t is not None and t < 0):
                problems.append(Problem(name, where, "num_spec_steps", "needs num_spec_steps and "
                                        "num_accepted_draft_tokens as counts ≥ 0; this response was left out"))
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
    if len(docs) == 1 and is_aiperf_summary(docs[0][1]):
        return read_aiperf_summary(name, docs[0][1])
    problems: list = []
    p = _pool(name, docs, problems)
    values = {"workload": Path(name).stem, "drafts": p.steps, "accepted_tokens": p.accepted,
              "notes": f"{p.used} requests with per-request spec-decode metrics, pooled"}
    headers = {"drafts": "num_spec_steps", "accepted_tokens": "num_accepted_draft_tokens",
               "draft_tokens": "num_draft_tokens", "survival": "acceptance_histogram", "k": "num_spec_tokens"}
    k = max(p.k_seen) if p.k_seen else _drafts_per_step(p.drafted, p.steps)
    if k:
        k = check_k(k, "k (num_spec_tokens, the histogram's length or drafts per step)")
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


# AIPerf's profile_export_aiperf.json, in the layouts github.com/ai-dynamo/aiperf has committed: metrics under
# "records" keyed by tag (examples/artifacts/run1/profile_export_aiperf.json, commit 7c31f57), metrics at the top
# level keyed by tag (docs/metrics-reference.md, 0.1x), and "records" as a list of {"tag": ...} entries.
_AIPERF_TAGS = ("output_token_throughput", "request_throughput", "request_count", "total_spec_decode_steps",
                "pooled_spec_decode_acceptance_histogram")
# Where the run's concurrency sits, by the version that wrote it (read from github.com/ai-dynamo/aiperf):
# - `input_config.phases[i].concurrency`, the profiling phase (AIPerf 0.11, config v2.0: the export dumps the
#   BenchmarkConfig, src/aiperf/exporters/metrics_json_exporter.py @ 047d59d, whose `phases` list,
#   src/aiperf/config/config.py @ 0205ea1, holds each phase's `concurrency` and `kind` warmup | profiling,
#   src/aiperf/config/phases.py @ 0205ea1; a warmup phase comes first);
# - `input_config.loadgen.concurrency` (AIPerf 0.1: the export dumps the UserConfig,
#   aiperf/exporters/json_exporter.py @ db4f639, whose `loadgen` is aiperf/common/config/loadgen_config.py);
# - `input_config.runtime.concurrency` (exports seen in the field; AIPerf's RuntimeConfig at 0205ea1 has no such
#   field), `input_config.concurrency` (genai-perf's flat input config), the user config's, a top-level copy.
MAX_PHASES = 64  # chosen: phases of one AIPerf export looked at (a real one has a warmup and a profiling phase)
_AIPERF_CONCURRENCY = (("input_config", "phases"), ("input_config", "loadgen", "concurrency"),
                       ("input_config", "runtime", "concurrency"), ("user_config", "loadgen", "concurrency"),
                       ("input_config", "concurrency"), ("loadgen", "concurrency"), ("concurrency",))


def _aiperf_metrics(doc: dict) -> dict:
    """tag -> its statistics (a dict with avg, ...) or value, whichever layout the export has."""
    records = doc.get("records")
    if isinstance(records, dict):
        return {**doc, **records}
    if isinstance(records, list):
        return {**doc, **{r["tag"]: r for r in records if isinstance(r, dict) and isinstance(r.get("tag"), str)}}
    return doc


def is_aiperf_summary(doc) -> bool:
    """Whether a JSON document is AIPerf's aggregated export (with or without speculative-decoding metrics)."""
    if not isinstance(doc, dict):
        return False
    metrics = _aiperf_metrics(doc)
    has_tag = any(tag in metrics for tag in _AIPERF_TAGS)
    return has_tag and ("input_config" in doc or "records" in doc or "aiperf_version" in doc
                        or "total_spec_decode_steps" in doc or "pooled_spec_decode_acceptance_histogram" in doc)


def _aiperf_concurrency(doc: dict) -> tuple[float | None, str]:
    """(the concurrency the export ran at, where it was read: "input_config.phases[1].concurrency", ...)."""
    for path in _AIPERF_CONCURRENCY:
        cur = doc
        for key in path:
            cur = cur.get(key) if isinstance(cur, dict) else None
        if path[-1] == "phases":
            value, where = _profiling_phase_concurrency(cur)
        else:
            value, where = _num(cur), ".".join(path)
        if value is not None and value >= 1:
            return value, where
    return None, "input_config.phases[0].concurrency"


def _profiling_phase_concurrency(phases) -> tuple[float | None, str]:
    """The concurrency of the phase the results are of, in AIPerf's `phases` list: the first whose `kind` (or,
    where it has none, `name`) is profiling, else the first that is no warmup and not excluded from the results;
    and where it sits."""
    if not isinstance(phases, list):
        return None, ""
    listed = [(i, p) for i, p in enumerate(phases[:MAX_PHASES]) if isinstance(p, dict)]
    role = {i: str(p.get("kind") or p.get("name") or "").lower() for i, p in listed}
    chosen = next(((i, p) for i, p in listed if role[i] == "profiling"), None) or next(
        ((i, p) for i, p in listed if role[i] != "warmup" and p.get("exclude_from_results") is not True), None)
    if chosen is None:
        return None, ""
    return _num(chosen[1].get("concurrency")), f"input_config.phases[{chosen[0]}].concurrency"


def read_aiperf_summary(name: str, doc: dict) -> tuple[list, list]:
    """One AIPerf export: the speculative arm when it carries spec-decode totals, else a baseline run (its
    output token throughput at its concurrency), paired with a speculative run of the same model and load."""
    metrics = _aiperf_metrics(doc)
    if "total_spec_decode_steps" in metrics or "pooled_spec_decode_acceptance_histogram" in metrics:
        return _read_aiperf_summary(name, metrics, doc)
    problems = []
    throughput = _metric_avg(metrics, "output_token_throughput")
    if not throughput or throughput <= 0:
        raise SpecModelError("AIPerf export without output_token_throughput and without spec-decode totals: "
                             "nothing to compare; give the export of a finished run")
    values = {"workload": Path(name).stem, "baseline_tok_s": throughput,
              "notes": "AIPerf profile_export_aiperf.json, no speculative decoding"}
    conc, where = _aiperf_concurrency(doc)
    headers = {"baseline_tok_s": "output_token_throughput", "concurrency": where}
    model = _aiperf_model(doc)
    if model:
        values["target_model"] = model
    if conc:
        values["concurrency"] = conc
    else:
        values["concurrency"] = 1
        problems.append(Problem(name, None, where, "not in the export: judged at batch 1", "warning"))
    key = (model_key(model), "", values["concurrency"])
    return [RunRecord(name, None, "AIPerf export", values, headers, "baseline", key)], problems


def _aiperf_model(doc: dict) -> str | None:
    """The benchmarked model: `input_config.endpoint.model_names[0]` (AIPerf 0.1), else the first of
    `input_config.models.items` (0.11's ModelsAdvanced: {"strategy", "items": [{"name"}]}) or a plain list."""
    config = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    models = endpoint.get("model_names")
    if isinstance(models, list) and models and isinstance(models[0], str):
        return models[0]
    models = config.get("models")
    items = models.get("items") if isinstance(models, dict) else models
    first = items[0] if isinstance(items, list) and items else None
    name = first.get("name") if isinstance(first, dict) else first
    return name if isinstance(name, str) and name else None


def _read_aiperf_summary(name: str, metrics: dict, doc: dict) -> tuple[list, list]:
    problems = []
    steps = _metric_avg(metrics, "total_spec_decode_steps")
    accepted = _metric_avg(metrics, "total_accepted_draft_tokens")
    drafted = _metric_avg(metrics, "total_draft_tokens")
    hist = _histogram(metrics.get("pooled_spec_decode_acceptance_histogram"))
    if not steps and hist:
        steps = sum(hist.values())
        accepted = sum(j * n for j, n in hist.items()) if accepted is None else accepted
    if not steps or accepted is None:
        raise SpecModelError("AIPerf export without total_spec_decode_steps and total_accepted_draft_tokens (or the "
                             "pooled_spec_decode_acceptance_histogram): the run carried no spec-decode stats")
    values = {"workload": Path(name).stem, "drafts": steps, "accepted_tokens": accepted,
              "notes": "AIPerf profile_export_aiperf.json, spec-decode totals"}
    conc, where = _aiperf_concurrency(doc)
    headers = {"drafts": "total_spec_decode_steps", "accepted_tokens": "total_accepted_draft_tokens",
               "draft_tokens": "total_draft_tokens", "survival": "pooled_spec_decode_acceptance_histogram",
               "concurrency": where, "spec_tok_s": "output_token_throughput"}
    if drafted:
        values["draft_tokens"] = drafted
    k = _drafts_per_step(drafted, steps) if drafted else (max(hist) if hist else None)
    if k:
        k = check_k(k, "k (total_draft_tokens / total_spec_decode_steps)")
    if hist and k:
        total = sum(hist.values())
        values["survival"] = [sum(n for j, n in hist.items() if j >= i) / total for i in range(1, k + 1)]
    if conc:
        values["concurrency"] = conc
    else:
        values["concurrency"] = 1
        problems.append(Problem(name, None, where, "not in the export: judged at batch 1", "warning"))
    model = _aiperf_model(doc)
    if model:
        values["target_model"] = model
    throughput = _metric_avg(metrics, "output_token_throughput")
    if throughput and throughput > 0:
        values["spec_tok_s"] = throughput
    key = (model_key(model), "", values["concurrency"])
    return [RunRecord(name, None, "AIPerf spec-decode export", values, headers, "spec", key)], problems
