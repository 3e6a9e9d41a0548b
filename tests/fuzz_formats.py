"""One fuzz input generator per run-file format (issue 25, item 15), so each reader gets every input of its
own `make fuzz` target instead of a tenth of a shared one (spec_json's coverage swung 86% -> 55% between
two runs of the one "runs files" target). Each generator builds its format from drawn parameters: which
keys and layouts appear (every spelling the reader accepts), which values are valid, at a bound or of
the wrong type, and how the document is wrapped; the branches `FUZZ_SHOW_MISSED=1 python -m tests.fuzz`
listed as never run are what the choices below reach.

    spec_json_files()   vLLM per-request spec-decode responses (JSON, a list, JSON Lines with `data:`
                        prefixes), older per-choice stats, AIPerf's records trace and its summary export
                        in all three layouts (records by tag, top level, records as a list)
    vllm_bench_files()  `vllm bench serve --save-result` results, one or a list, speculative or baseline
    guidellm_jsons()    guidellm benchmarks.json: the strategy and metrics at each path guidellm used
    plain_csvs()        plain run CSVs: every alias, position columns, near-miss and repeated headers,
                        columns kept for reference, other delimiters, number styles per column
    run_bytes()         any format's bytes as a file may hold them (byte-order marks, bad bytes, NULs,
                        Windows-1252), empty or past the size limit, or a path on disk

Every generator returns (name, data, row_bound): `row_bound` is None (the real bounds.MAX_ROWS_PER_FILE)
or a small number the target lowers the bound to while it reads that one input, so the "only the first N
rows are read" branch runs on a file of a few rows (the real bound, 200,000 rows, is read by
`python -m bench limits` and tests/test_hostile.py; a fuzz input of that size costs tens of seconds).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from hypothesis import strategies as st

from specmodel import bounds
from specmodel.runs import csv_rows
from specmodel.runs.csv_plain import ALIAS_INDEX, ALIASES, norm_header, throughput_column
from tests import fuzz_structured as structured

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference"


def _text(name: str) -> str:
    for folder in (FIXTURES, SAMPLES, SHARED):
        if (folder / name).is_file():
            return (folder / name).read_text(encoding="utf-8")
    raise FileNotFoundError(name)


# Values of the wrong type or past a bound, for any field (a reader must refuse or ignore each by name).
WRONG = [None, True, False, -1, 0, 1e308, 10 ** 40, float("nan"), float("inf"), "x", "", "12", [], {}, [1], {"avg": 3}]


def _pick(draw, good: list, wrong=WRONG, bad_one_in: int = 5):
    """A valid value most of the time, else one of `wrong`."""
    return draw(st.sampled_from(wrong)) if draw(st.integers(0, bad_one_in - 1)) == 0 else draw(st.sampled_from(good))


def _row_bound(draw):
    """None (the real bound) or a bound of a few rows for this input."""
    return draw(st.sampled_from([None] * 7 + [1, 3]))


@contextlib.contextmanager
def row_bound(bound: int | None):
    """bounds.MAX_ROWS_PER_FILE lowered to `bound` for one input (None: left as it is)."""
    if bound is None:
        yield
        return
    real = bounds.MAX_ROWS_PER_FILE
    bounds.MAX_ROWS_PER_FILE = bound
    try:
        yield
    finally:
        bounds.MAX_ROWS_PER_FILE = real


def _dumps(doc) -> str:
    return json.dumps(doc, allow_nan=True, default=str)


# --- vLLM per-request spec-decode metrics, older per-choice stats, AIPerf -------------------------------

_STEP_KEYS = ["num_spec_steps", "num_spec_steps", "num_drafts", "num_verify_steps", "num_spec_decode_steps"]
_ACCEPTED_KEYS = ["num_accepted_draft_tokens", "num_accepted_draft_tokens", "num_accepted_tokens"]
_DRAFTED_KEYS = ["num_draft_tokens", "num_draft_tokens", "num_drafted_tokens"]
_MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B", "my-finetune", "", "\x1b[31mred", "x" * 300]


def _histogram(draw, k: int):
    """An acceptance histogram (steps that accepted exactly j drafts) as a list or a dict, or a broken one."""
    counts = [draw(st.sampled_from([0, 1, 4, 10, 250])) for _ in range(k + 1)]
    shape = draw(st.sampled_from(["list", "list", "dict", "dict", "bad key", "negative", "past k", "huge key",
                                  "not a count", "other type"]))
    if shape == "list":
        return counts
    if shape == "dict":
        return {str(j): n for j, n in enumerate(counts)}
    if shape == "bad key":
        return {"x": 1, "0": 2}
    if shape == "negative":
        return {"0": -1, "1": 3}
    if shape == "past k":
        return {str(bounds.MAX_K + draw(st.sampled_from([0, 1]))): 1, "0": 4}
    if shape == "huge key":
        return {str(10 ** draw(st.sampled_from([9, 400]))): 1}
    if shape == "not a count":
        return [1, "x", None]
    return draw(st.sampled_from(["3", 7, None]))


def _request_record(draw) -> dict:
    """One response's spec-decode counts under one of the spellings engines used."""
    k = draw(st.sampled_from([1, 3, 4, 7, bounds.MAX_K, bounds.MAX_K + 1]))
    steps = _pick(draw, [0, 1, 6, 18, 1000, 10 ** 6], bad_one_in=8)
    accepted = _pick(draw, [0, 3, 9, 31, 2000], [-1, None, "x", 10 ** 12, 1e308], bad_one_in=8)
    rec = {draw(st.sampled_from(_STEP_KEYS)): steps, draw(st.sampled_from(_ACCEPTED_KEYS)): accepted}
    if draw(st.integers(0, 3)):
        drafted = draw(st.sampled_from([k * s for s in (1, 6, 18, 1000)] + [-2, 0, 1e308, 5e-324]))
        rec[draw(st.sampled_from(_DRAFTED_KEYS))] = drafted
    if draw(st.booleans()):
        rec["acceptance_histogram"] = _histogram(draw, k)
    if draw(st.integers(0, 3)) == 0:
        rec["num_spec_tokens"] = _pick(draw, [k, 3], bad_one_in=4)
    if draw(st.integers(0, 3)) == 0:
        rec["per_step_drafted"] = draw(st.sampled_from([[k, k, k - 1], [], [k, "x"], "3", [k] * 3]))
    if draw(st.integers(0, 4)) == 0:
        rec["mean_acceptance_length"], rec["draft_acceptance_rate"] = 2.7, 0.56
    return rec


def _response(draw) -> object:
    """One response (or trace line) carrying a record where one of the formats puts it."""
    rec = _request_record(draw)
    where = draw(st.sampled_from(["metrics", "metrics", "aiperf", "top", "stats", "choices", "choices", "bare",
                                  "none", "not an object", "metrics not an object"]))
    if where == "metrics":
        doc = {"id": "cmpl-1", "metrics": {"speculative_decoding": rec}}
    elif where == "aiperf":
        doc = {"request_id": "r1", "spec_decode_acceptance": rec}
    elif where == "top":
        doc = {"speculative_decoding": rec}
    elif where == "stats":
        doc = {"speculative_decoding_stats": rec}
    elif where == "choices":
        doc = {"choices": [{"index": i, draw(st.sampled_from(["speculative_decoding_stats", "speculative_decoding"])):
                            _request_record(draw)} for i in range(draw(st.integers(1, 3)))]
               + draw(st.sampled_from([[], ["text"], [{"index": 9}]]))}
    elif where == "bare":
        doc = {"num_spec_steps": rec.get("num_spec_steps", 5), **rec}
    elif where == "none":
        doc = {"id": "cmpl-2", "choices": draw(st.sampled_from([[], [{"index": 0}], "x"]))}
    elif where == "not an object":
        return draw(st.sampled_from([3, "x", None, [rec]]))
    else:
        doc = {"metrics": draw(st.sampled_from([None, 3, [rec], {"speculative_decoding": "x"}]))}
    if draw(st.integers(0, 2)):
        doc["model"] = draw(st.sampled_from(_MODELS[:2] * 4 + _MODELS + [3]))
    return doc


_AIPERF_CONCURRENCY_PATHS = [("input_config", "loadgen", "concurrency"), ("user_config", "loadgen", "concurrency"),
                             ("input_config", "concurrency"), ("loadgen", "concurrency"), ("concurrency",),
                             ("input_config", "runtime", "concurrency"), ("input_config", "phases")]
# AIPerf 0.11's phases list (input_config.phases): a warmup then the profiling phase, or odd entries
_AIPERF_PHASES = [[{"name": "warmup", "kind": "warmup", "concurrency": 4}, {"name": "profiling", "concurrency": 32}],
                  [{"name": "x", "kind": "profiling", "concurrency": 8}], [{"name": "w", "exclude_from_results": True}],
                  [], [3, "x", None], {"concurrency": 8}]


def _put(doc: dict, path: tuple, value) -> None:
    for key in path[:-1]:
        doc = doc.setdefault(key, {}) if isinstance(doc.get(key, {}), dict) else {}
    doc[path[-1]] = value


def _aiperf_summary(draw) -> dict:
    """AIPerf's profile_export_aiperf.json in one of its layouts, with or without spec-decode totals."""
    metrics: dict = {}
    wrap = draw(st.sampled_from(["avg", "avg", "avg", "bare"]))

    def metric(tag, value, unit="count"):
        metrics[tag] = {"tag": tag, "unit": unit, "avg": value} if wrap == "avg" else value

    if draw(st.integers(0, 5)):
        metric("output_token_throughput", _pick(draw, [1874.2, 1402.5, 95.0], [0, -3, None, "x", 1e308, {}]),
               "tokens/sec")
    metric("request_count", 200, "requests")
    spec = draw(st.sampled_from(["totals", "totals", "histogram only", "steps only", "none", "none"]))
    k = draw(st.sampled_from([3, 4, 5, bounds.MAX_K + 1]))
    if spec in ("totals", "steps only"):
        metric("total_spec_decode_steps", _pick(draw, [24000, 25600, 1], [0, -1, None, "x"]))
    if spec == "totals":
        metric("total_accepted_draft_tokens", _pick(draw, [52000, 56320, 0], [None, "x", -5]))
        if draw(st.integers(0, 3)):
            metric("total_draft_tokens", draw(st.sampled_from([96000, 128000, k * 24000, 1e308, 0, 7])))
    if spec in ("totals", "histogram only") and draw(st.integers(0, 2)):
        metrics["pooled_spec_decode_acceptance_histogram"] = _histogram(draw, k)
    layout = draw(st.sampled_from(["records", "top", "list", "list"]))
    doc: dict = {}
    if layout == "records":
        doc["records"] = metrics
    elif layout == "top":
        doc.update(metrics)
    else:
        doc["records"] = [({"tag": t, **v} if isinstance(v, dict) else {"tag": t, "avg": v}) for t, v in metrics.items()]
        doc["records"] += draw(st.sampled_from([[], ["x"], [{"tag": 3}]]))
    for marker in draw(st.lists(st.sampled_from(["input_config", "aiperf_version", "schema_version"]), max_size=2,
                                unique=True)):
        doc[marker] = {"endpoint": {}} if marker == "input_config" else "0.14.0"
    if draw(st.integers(0, 3)):
        path = draw(st.sampled_from(_AIPERF_CONCURRENCY_PATHS))
        _put(doc, path, draw(st.sampled_from(_AIPERF_PHASES)) if path[-1] == "phases" else
             _pick(draw, [16, 1, 64], [0, -1, "x", None, 0.5]))
    if draw(st.booleans()):
        names = draw(st.sampled_from([[_MODELS[0]], ["Qwen/Qwen3-8B", "b"], [], [3], "m"]))
        config = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
        doc["input_config"] = {**config, "endpoint": draw(st.sampled_from([{"model_names": names}, "x"]))}
    return doc


@st.composite
def spec_json_files(draw):
    """A per-request spec-decode file or an AIPerf export: the reader's every layout, odd values in places."""
    kind = draw(st.sampled_from(["jsonl", "jsonl", "list", "one", "aiperf", "aiperf", "fixture"]))
    bound = _row_bound(draw)
    if kind == "fixture":  # a real-format sample with values retyped at any depth
        name, text = draw(structured.spec_jsons())
        return name, text, bound
    if kind == "aiperf":
        doc = _aiperf_summary(draw)
        return "profile_export_aiperf.json", _dumps(doc), bound
    responses = [_response(draw) for _ in range(draw(st.integers(1, 5)))]
    if kind == "one":
        doc = responses[0] if isinstance(responses[0], dict) else {"metrics": {"speculative_decoding":
                                                                                _request_record(draw)}}
        if draw(st.booleans()):
            doc[draw(st.sampled_from(["concurrency", "max_concurrency"]))] = _pick(draw, [8, 1, 32], [0, -1, "x"])
        return "responses.json", _dumps(doc), bound
    if kind == "list":
        return "responses.json", _dumps(responses), bound
    lines = [_dumps(r) for r in responses]
    lines = [draw(st.sampled_from(["", "", "data: ", "data:"])) + line for line in lines]
    for _ in range(draw(st.integers(0, 3))):
        extra = draw(st.sampled_from(["", "# a comment", "data: [DONE]", "[DONE]", "{broken", '{"a": [1, 2}']))
        lines.insert(draw(st.integers(1, len(lines))), extra)
    repeat = draw(st.sampled_from([1] * 9 + [max(1, structured.MAX_BYTES // max(1, sum(map(len, lines))))]))
    return "profile_export.jsonl", "\n".join(lines * repeat) + "\n", bound


# --- vllm bench serve --save-result ---------------------------------------------------------------------

_VLLM_SPEC = json.loads(_text("vllm_bench_serve_sample.json"))
_VLLM_BASE = json.loads(_text("vllm_bench_serve_baseline_sample.json"))
_VLLM_FIELDS = {
    "max_concurrency": [1, 8, 64, None], "request_rate": ["inf", 4.0, float("inf"), "x"],
    "completed": [100, 0, 5e-324, None], "num_prompts": [100, 0], "total_input_tokens": [51200, 0, "x"],
    "total_output_tokens": [12800, 1e308], "dataset_name": ["sharegpt", "random", "", None, 5],
    "dataset": ["sonnet"], "model_id": ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B", "", None, 3],
    "gpu": ["H100 80GB", "1x L40S", ""], "draft_model": ["meta-llama/Llama-3.2-1B-Instruct", ""],
    "temperature": [0, 0.7, "x"], "tp": [1, 2, 0], "request_throughput": [5.2, 0, None],
    "mean_e2el_ms": [1500.0, 0, None], "method": ["eagle", "ngram", "", None],
    "label": ["eagle3 k=3", "medusa", "mtp", "ngram", "n-gram lookup", "prompt_lookup", "draft model", "baseline",
              None, 5],
    "spec_decode_num_drafts": [100, 0, -1, None, "x"], "spec_decode_acceptance_length": [2.5, None, "x"],
    "spec_decode_per_position_acceptance_rates": [[0.7, 0.5, 0.3], [], "x", [0.5] * (bounds.MAX_K + 1), None],
    "spec_decode_accepted_tokens": [250, None], "spec_decode_draft_tokens": [300, 10 ** 7, None],
    "spec_decode_acceptance_rate": [83.3, None],
}


def _vllm_result(draw) -> dict:
    doc = dict(draw(st.sampled_from([_VLLM_SPEC, _VLLM_BASE, {}])))
    for key, values in _VLLM_FIELDS.items():
        choice = draw(st.integers(0, 5))
        if choice == 0:
            doc.pop(key, None)
        elif choice == 1:
            doc[key] = draw(st.sampled_from(values))
    if draw(st.integers(0, 3)) == 0:  # paced by rate, no concurrency: estimated from Little's law
        doc.pop("max_concurrency", None)
    doc["output_throughput"] = _pick(draw, [doc.get("output_throughput") or 150.0, 1130.5],
                                     [0, -5, None, "x", True, 1e308, float("nan")], bad_one_in=6)
    return doc


@st.composite
def vllm_bench_files(draw):
    """One `vllm bench serve` result or a list of them (a sweep), keys dropped, set or retyped."""
    bound = _row_bound(draw)
    shape = draw(st.sampled_from(["one", "one", "list", "list", "list mixed"]))
    if shape == "one":
        return "bench.json", _dumps(_vllm_result(draw)), bound
    results = [_vllm_result(draw) for _ in range(draw(st.integers(1, 5)))]
    if shape == "list mixed":
        results.append(draw(st.sampled_from([{"output_throughput": 1}, {"x": 1}, 3])))
    return "sweep.json", _dumps(results), bound


# --- guidellm benchmarks.json ---------------------------------------------------------------------------

_STRATEGY_PATHS = [("config", "strategy"), ("args", "strategy"), ("scheduler", "strategy"), ("strategy",)]
_MODEL_PATHS = [("config", "backend", "model"), ("args", "backend", "model"), ("backend", "model"),
                ("worker", "backend_model")]


def _guidellm_benchmark(draw) -> object:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["x", 3, None, []]))
    b: dict = {"type_": "generative_benchmark"}
    kind = draw(st.sampled_from(["synchronous", "concurrent", "concurrent", "throughput", "poisson", "constant",
                                 5, None]))
    strategy = {draw(st.sampled_from(["type_", "type_", "kind"])): kind}
    if kind == "concurrent":
        strategy["streams"] = _pick(draw, [1, 4, 16, 64], [0, "x", None, 1e308])
    else:
        strategy["rate"] = _pick(draw, [2.5, 10.0], [0, "x", None])
    _put(b, draw(st.sampled_from(_STRATEGY_PATHS)), draw(st.sampled_from([strategy] * 6 + ["synchronous", 3])))
    if draw(st.integers(0, 3)):
        _put(b, draw(st.sampled_from(_MODEL_PATHS)), draw(st.sampled_from(_MODELS[:2] * 3 + _MODELS)))
    stat = draw(st.sampled_from(["successful", "successful", "flat"]))

    def metric(key, value):
        _put(b, ("metrics", key) + (("successful", "mean") if stat == "successful" else ("mean",)), value)

    metric("output_tokens_per_second", _pick(draw, [121.5, 410.0, 1900.0], [0, -1, None, "x", True, 1e308]))
    for key, good in (("request_concurrency", [0.99, 3.7, 15.2]), ("prompt_token_count", [512, 128]),
                      ("output_token_count", [128, 256]), ("output_tokens_per_iteration", [1.0, 1.05, 2.4, 3.1]),
                      ("input_tokens", [512]), ("output_tokens", [128])):
        if draw(st.integers(0, 3)):
            metric(key, _pick(draw, good, [0, None, "x", 1e308]))
    return b


@st.composite
def guidellm_jsons(draw):
    """A guidellm benchmarks.json: benchmarks with their strategy, model and metrics at the paths guidellm used."""
    bound = _row_bound(draw)
    if draw(st.integers(0, 5)) == 0:  # the real sample, retyped at any depth
        doc = structured._retyped(draw, json.loads(_text("guidellm_baseline_benchmarks.json")))
        if not isinstance(doc.get("benchmarks"), list):
            doc["benchmarks"] = []
        return "benchmarks.json", _dumps(doc), bound
    doc: dict = {"benchmarks": [_guidellm_benchmark(draw) for _ in range(draw(st.integers(0, 5)))]}
    if draw(st.booleans()):
        _put(doc, draw(st.sampled_from([("args", "backend", "model"), ("spec", "backend", "model")])), _MODELS[0])
    return "benchmarks.json", _dumps(doc), bound


@st.composite
def guidellm_files(draw):
    """guidellm's CSV (three header rows) or its benchmarks.json."""
    if draw(st.booleans()):
        name, data = draw(structured.guidellm_csvs())
        return name, data, _row_bound(draw)
    return draw(guidellm_jsons())


# --- plain run CSVs -------------------------------------------------------------------------------------

# Headers as people write them: every canonical column in one or more of its spellings, near misses a
# typo away, throughput words in either order, position columns, kept-for-reference columns, units.
_HEADER_WORDS = [
    "workload", "Workload", "task", "dataset_name", "concurrency", "Max Concurrency", "batch-size", "users",
    "request_rate", "qps", "k", "num_speculative_tokens", "gamma", "method", "spec method", "temperature", "temp",
    "alpha", "token_acceptance", "tokens_per_step", "Mean Acceptance Length", "accept_len", "draft_acceptance_rate",
    "acceptance_rate_percent", "spec_decode_acceptance_rate", "accepted_tokens", "drafts", "draft_tokens",
    "survival", "p1", "p2", "p3", "pos_4", "accept_pos5", "position_2", "baseline_tok_s", "spec_tok_s",
    "Baseline Throughput (tok/s)", "tok_s_spec", "sd_throughput", "tokens_per_s_nospec", "plain_throughput",
    "speedup", "gpu", "hardware", "target_model", "model", "draft_model", "context_len", "t_target_ms", "t_draft_ms",
    "tp", "engine", "backend", "draft_depth", "branching", "ep", "weight_dtype", "draft_kv_budget", "source",
    "source_id", "notes", "comment", "url", "citation", "accept_len_source",
    "concurency", "spec_toks", "worklaod", "basline_tok_s", "alpah", "unknown", "x1", "", "é", "throughput_tps",
]
# Headers that name no column: near misses a typo away from one (read as it, or ignored when the column is
# there), columns kept for reference, unknown ones, blank ones.
_ODD_HEADERS = ["concurency", "spec_toks", "worklaod", "basline_tok_s", "alpah", "temprature", "url", "citation",
                "accept_len_source", "reference", "unknown", "x1", "", "é", "Notes (free text)"]
_NUMBERS = ["1", "8", "64", "0.7", "150", "1,500", "1,024", "1,234,567.5", "2,500.5", "0,75", "1,5", "1.234,5",
            "1.500", "75%", "0,75 %", "-1,500", "1.234.567", "", "x", "0", "65", "1e309", "-1"]
_CELL_FOR = {"text": ["chat", "code", "summarise", "=1+1", "a\x01b", "H100", "eagle", "vLLM V1", "SGLang", "",
                      "Llama 3.1 8B", "0.7, 0.5"],
             "survival": ["0.7;0.5;0.3", '"0.7, 0.5"', "0.8", "x", ""], "position": ["0.7", "0.5", "0,3", "", "x"],
             "number": _NUMBERS}
_TEXT = {"workload", "method", "gpu", "target_model", "draft_model", "engine", "weight_dtype", "source", "notes"}


def _cell_kind(header: str) -> str:
    key = norm_header(header)
    canon = ALIAS_INDEX.get(key) or throughput_column(key)
    if canon is None:
        return "position" if key[-1:].isdigit() else "text"
    return "text" if canon in _TEXT else ("survival" if canon == "survival" else "number")


@st.composite
def plain_csvs(draw):
    """A plain run CSV whose header takes the reader's every path (aliases, near misses, repeats, positions)."""
    bound = _row_bound(draw)
    if draw(st.integers(0, 3)) == 0:  # the generators of fuzz_structured and fuzz_targets (defects by row)
        name, data = draw(structured.csv_files())
        return name, data, bound
    # one spelling of each of a few canonical columns (two spellings of one column refuse the file): half of
    # the time the columns a run needs (so rows load and reach the checks after the header), then a few of
    # the odd headers above
    core = ["workload", "concurrency", "k", draw(st.sampled_from(["alpha", "tokens_per_step", "survival",
                                                                  "draft_acceptance_rate", "drafts"])),
            "baseline_tok_s", "spec_tok_s"] if draw(st.booleans()) else []
    others = draw(st.lists(st.sampled_from(sorted(set(ALIASES) - set(core))), max_size=5 if core else 10,
                           unique=True, min_size=0 if core else 1))
    header = [draw(st.sampled_from(ALIASES[c] + tuple(h for h in _HEADER_WORDS if norm_header(h) in ALIASES[c])))
              for c in core + others]
    header += draw(st.lists(st.sampled_from(_ODD_HEADERS), max_size=3))
    if draw(st.booleans()):
        header += ["p1", "p2", "p3"][:draw(st.integers(1, 3))]
    header = draw(st.permutations(header))
    shape = draw(st.sampled_from(["as drawn"] * 8 + ["one column", "many unknown", "too many", "nothing known",
                                                     "repeat"]))
    if shape == "one column":
        header = [draw(st.sampled_from(["workload", "x"]))]
    elif shape == "many unknown":  # past one warning each, past the near-miss search
        header += [f"col{i}" for i in range(draw(st.sampled_from([6, 60])))]
    elif shape == "too many":
        header += [f"c{i}" for i in range(bounds.MAX_COLUMNS + 1 - len(header))]
    elif shape == "nothing known":
        header = ["x", "y", "z"]
    elif shape == "repeat":
        header += [draw(st.sampled_from(["workload", "task", "notes", "comment", "source", "p1", "spec_tok_s"]))]
    delimiter = draw(st.sampled_from([","] * 6 + [";", "\t", "|"]))
    # each number column written in one style (plain, thousands separators, decimal commas, only "1,500"
    # that fits both, or mixed): the reader decides per column, and from the file's other columns
    # (a number column's rows take its style's cells in turn from a drawn start, so two rows show two of them)
    columns = [(_CELL_FOR[_cell_kind(h)], None) if _cell_kind(h) != "number" else
               (draw(st.sampled_from(_STYLES)), draw(st.integers(0, 7))) for h in header[:16]]
    rows = []
    for row in range(draw(st.sampled_from([2, 3, 6, 1, 0]))):
        cells = [draw(st.sampled_from(c)) if start is None else c[(start + row) % len(c)] for c, start in columns]
        cells += ["1"] * max(0, len(header) - 16)
        rows.append([f'"{c}"' if delimiter in c and not c.startswith('"') else c for c in cells])
    # defects by row, as csv_rows must name them: short and long rows, a trailing delimiter, a blank row, a
    # quote opened and never closed (mid-file or at the end), a quoted cell over lines, a cell past the limit
    for defect in draw(st.lists(st.sampled_from(["short", "long", "trailing", "blank", "quote", "quote_end",
                                                 "line_break", "long_cell", "quote_header", "long_cell",
                                                 "many_quotes", "quote_long", "quote_long"]), max_size=4)):
        if not rows:
            break
        at = draw(st.integers(0, len(rows) - 1))
        cells = rows[at]
        if defect == "short" and len(cells) > 1:
            rows[at] = cells[:-1]
        elif defect == "long":
            rows[at] = cells + ["extra"]
        elif defect == "trailing":
            rows[at] = cells + [""]
        elif defect == "blank":
            rows[at] = [""] * len(cells)
        elif defect == "quote":
            rows[at] = ['"' + cells[0].strip('"')] + cells[1:]
        elif defect == "quote_end":
            rows[-1] = rows[-1] + ['"open']
        elif defect == "line_break":
            rows[at] = ['"two\nlines"'] + cells[1:]
        elif defect == "long_cell":
            rows[at] = ["x" * (bounds.MAX_CELL_CHARS + draw(st.sampled_from([0, 1, 10])))] + cells[1:]
        elif defect == "quote_long":  # a quote still open past the cell limit, over lines of their own
            half = "y" * (bounds.MAX_CELL_CHARS // 2 + 1)
            rows[at:at + 1] = [['"' + cells[0].strip('"')] + cells[1:], [half], [half], [half]]
        elif defect == "many_quotes":  # past MAX_BROKEN_ROWS rows refused for their quoting
            rows += [['"' + cells[0].strip('"')] + cells[1:]] * (csv_rows.MAX_BROKEN_ROWS + 1)
        else:
            header = ['"' + header[0]] + list(header[1:])
    rows = [delimiter.join(cells) for cells in rows]
    end = draw(st.sampled_from(["\n", "\n", "\r\n", ""]))  # "": no line break after the last row
    if end != "\n":
        return "runs.csv", end.join([delimiter.join(header)] + rows).encode("utf-8") + end.encode(), bound
    lines = [""] * draw(st.sampled_from([0, 0, 1])) + [delimiter.join(header)] + rows
    return "runs.csv", ("\n".join(lines) + "\n").encode("utf-8"), bound


_STYLES = [["1", "8", "64", "0.7", "150", "48", "2.5", "3"], ["1", "8", "64", "0.7", "150", "48", "2.5", "3"],
           ["1,500", "2,500.5", "1,024", "1,234,567.5", "-1,500", "64", "1,500 %"],  # thousands separators
           ["0,75", "1.500", "1,5", "1.234,5", "150", "0,75 %", "2,5"],  # decimal commas (a dot-grouped "1.500")
           ["1,500", "1,024", "64"],  # fits both: the file's other columns decide
           ["2,500.5", "0,75", "1,5", "1,234,567.5"],  # mixed: a comma cell cannot be read
           ["0.7", "150", "", "x", "0", "65", "1e309", "-1", "1.234.567", "NaN"]]


# --- any file's bytes: what sniff.py decodes and dispatches -----------------------------------------------

_ANY_FORMAT = ["seed_runs.csv", "vllm_bench_serve_sample.json", "guidellm_benchmarks_sample.csv",
               "guidellm_baseline_benchmarks.json", "vllm_v1_specdecode.log", "vllm_per_request_spec.jsonl",
               "aiperf_profile_export_aiperf.json", "aiperf_records_layout_baseline.json", "multi_workload.csv",
               "aiperf_phases_layout_spec.json"]


@st.composite
def run_bytes(draw):
    """A run file of any format as bytes the way a file may hold them, or an odd file: what the reader
    decodes (byte-order marks, bad bytes, Windows-1252, NULs) and tells apart before any format reader."""
    shape = draw(st.sampled_from(["format"] * 8 + ["empty", "blank", "too big", "random", "not text", "json",
                                                   "path", "cp1252 undefined", "many bad"]))
    bound = None
    if shape == "format":
        data = _text(draw(st.sampled_from(_ANY_FORMAT))).encode("utf-8")
        return draw(st.sampled_from(["a.csv", "a.json", "a.log", "名前.csv"])), structured._encoded(draw, data), bound
    if shape == "empty":
        return "empty.csv", b"", bound
    if shape == "blank":
        return "blank.csv", draw(st.sampled_from([b"   \n\n", b"\xef\xbb\xbf", b"\n\r\n"])), bound
    if shape == "too big":
        return "big.csv", b"a" * (bounds.MAX_FILE_BYTES + 1), bound
    if shape == "random":
        return "x.csv", draw(st.binary(max_size=300)), bound
    if shape == "not text":
        return "x.csv", b"workload\n" + bytes(range(1, 32)) * 20 + b"\xff", bound
    if shape == "cp1252 undefined":  # bytes Windows-1252 has no character for
        return "x.csv", b"workload,concurrency\n\x81\x8d,1\n", bound
    if shape == "many bad":
        return "x.csv", "é\n".encode() + b"\xff" * draw(st.sampled_from([2, 200])), bound
    if shape == "json":
        return "x.json", draw(st.sampled_from([b"{", b"[1, 2]", b"3", b'"x"', b'{"a": 1, "b": 2}', b"[]", b"null",
                                               b'[{"output_throughput": 1}, 2]'])), bound
    return "PATH", _text(draw(st.sampled_from(_ANY_FORMAT))).encode("utf-8"), bound


__all__ = ["guidellm_files", "plain_csvs", "row_bound", "run_bytes", "spec_json_files", "vllm_bench_files"]
