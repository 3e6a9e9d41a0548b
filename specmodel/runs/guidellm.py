"""guidellm results: `benchmarks.json` and the CSV `guidellm benchmark --outputs csv` writes (three header rows).

Each benchmark (one concurrency level or request rate of a sweep) is one arm: speculative when the
stream carried more than SPEC_TOKENS_PER_CHUNK tokens per chunk, else a baseline. guidellm records no
k, so a speculative arm needs one (--k, or the page's "k for files that do not record it"). Row
numbers: the CSV line on which the benchmark's record starts, as the `csv` module's reader counts it
(the first benchmark is row 4); in JSON the position in the benchmarks list (1 = first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from specmodel import bounds
from specmodel.errors import SpecModelError
from specmodel.files import load_json
from specmodel.runs.cells import model_key, number, shown
from specmodel.runs.csv_rows import csv_records
from specmodel.runs.records import Problem, RunRecord, stopped_reading, too_many_rows

# chosen: plain decoding streams one token per chunk, so 10% above that is speculation's
SPEC_TOKENS_PER_CHUNK = 1.1  # a streamed run above this many tokens per chunk was speculative
HEADER_ROWS = 3  # documented: `guidellm benchmark --outputs csv` writes three header rows (group, label, statistic)
_STRATEGY = ("Benchmark", "Strategy", None)
_THROUGHPUT = ("Token Throughput", "Successful Output Tokens/Sec", "Mean")
_CHUNK_FORMULA = "tokens per step estimated from streamed chunks: (output tokens − 1) / (chunks − 1)"


@dataclass(frozen=True)
class Level:
    """One benchmark of a guidellm sweep as its file gives it, before it becomes a RunRecord."""

    file: str
    row: int | None
    fmt: str  # "guidellm CSV" / "guidellm JSON"
    concurrency: float | None  # from the strategy (None for a rate-paced run)
    rate: float | None
    measured_concurrency: float | None
    throughput: object  # the raw output tokens per second, as written
    throughput_column: str
    model: str | None
    in_len: float | None
    out_len: float | None
    tokens_per_chunk: float | None
    dataset: str | None = None
    strategy_header: str = "strategy"
    formula: str = _CHUNK_FORMULA  # how tokens_per_chunk was worked out, for the row's remark


def _dig(d, *paths):
    """First value found at any of the dotted paths."""
    for path in paths:
        cur = d
        for part in path.split("."):
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            else:
                cur = None
                break
        if cur is not None:
            return cur
    return None


def _strategy_concurrency(kind: str | None, streams, rate) -> tuple[float | None, float | None]:
    kind = str(kind or "").lower()  # JSON may hold any type here
    if kind == "synchronous":
        return 1.0, None
    if kind == "concurrent":
        return number(streams), None
    return None, number(rate)


def _json_or_none(text):
    try:
        return load_json(text) if text else None
    except (TypeError, ValueError):  # not JSON, or JSON past the depth limit (SpecModelError is a ValueError)
        return None


# --- benchmarks.json -------------------------------------------------------------------------------------

def _json_level(name: str, doc: dict, i: int, b: dict) -> Level:
    strategy = _dig(b, "config.strategy", "args.strategy", "scheduler.strategy", "strategy") or {}
    kind = strategy.get("type_") or strategy.get("kind") if isinstance(strategy, dict) else str(strategy)
    conc, rate = _strategy_concurrency(kind, strategy.get("streams") if isinstance(strategy, dict) else None,
                                       strategy.get("rate") if isinstance(strategy, dict) else None)

    def metric(key):
        return number(_dig(b, f"metrics.{key}.successful.mean", f"metrics.{key}.mean"))

    model = _dig(b, "config.backend.model", "args.backend.model", "backend.model", "worker.backend_model") or \
        _dig(doc, "args.backend.model", "spec.backend.model")
    iters = metric("output_tokens_per_iteration")
    return Level(file=name, row=i, fmt="guidellm JSON", concurrency=conc, rate=rate,
                 measured_concurrency=metric("request_concurrency"),
                 throughput=_dig(b, "metrics.output_tokens_per_second.successful.mean",
                                 "metrics.output_tokens_per_second.mean"),
                 throughput_column="metrics.output_tokens_per_second.successful.mean", model=model,
                 in_len=metric("prompt_token_count") or metric("input_tokens"),
                 out_len=metric("output_token_count") or metric("output_tokens"), tokens_per_chunk=iters or None,
                 formula="tokens per step taken as guidellm's output_tokens_per_iteration (mean output tokens per "
                         "streamed iteration)")


def read_guidellm_json(name: str, doc: dict) -> tuple[list[RunRecord], list[Problem]]:
    """Records and problems of a guidellm benchmarks.json (a dict with a 'benchmarks' list)."""
    records, problems = [], []
    if len(doc["benchmarks"]) > bounds.MAX_ROWS_PER_FILE:
        problems.append(too_many_rows(name, len(doc["benchmarks"])))
    for i, b in enumerate(doc["benchmarks"][:bounds.MAX_ROWS_PER_FILE], start=1):
        if bounds.stop_due(i):
            problems.append(stopped_reading(name, i))
            break
        if not isinstance(b, dict):
            problems.append(Problem(name, i, None, "benchmark entry is not an object; skipped"))
            continue
        record = level_record(_json_level(name, doc, i, b), problems)
        if record:
            records.append(record)
    if not doc["benchmarks"]:
        problems.append(Problem(name, None, "benchmarks", "the benchmarks list is empty; nothing to read"))
    return records, problems


# --- the CSV ---------------------------------------------------------------------------------------------

def _csv_rows(text: str, problems: list | None = None) -> tuple[list[tuple], list[tuple[int, list[str]]]]:
    """(column (group, label, statistic) per index, [(line, cells)] per benchmark); blank lines skipped.
    A row the csv reader cannot take (an unclosed quote, an over-long cell) is a problem in `problems`."""
    records = []
    for seen, (line, cells, trouble) in enumerate(csv_records(text, ",", skipinitialspace=False)):
        if bounds.stop_due(seen):
            if problems is not None:
                problems.append(stopped_reading("", line))
            break
        if trouble is not None and problems is not None:
            problems.append(Problem("", line, None, trouble, reason="invalid"))
        elif trouble is None and (len(cells) > 1 or "".join(cells).strip()):
            records.append((line, cells))
    if len(records) < HEADER_ROWS:
        raise SpecModelError(f"looks like a guidellm CSV but cannot be read (only {len(records)} of its three header "
                             "rows); expected the file `guidellm benchmark --outputs csv` writes (three header rows)")
    header = [cells for _, cells in records[:HEADER_ROWS]]
    width = max(map(len, header))
    columns = [tuple(row[i] if i < len(row) else "" for row in header) for i in range(width)]
    return columns, records[HEADER_ROWS:]


def _csv_level(name: str, line: int, cells: list[str], column) -> Level:
    def get(group: str, label: str, stat: str | None = None) -> str:
        i = column(group, label, stat)
        return cells[i] if i is not None and i < len(cells) else ""  # a short row: the missing cells are empty

    strategy = get(*_STRATEGY)
    kind, _, arg = strategy.partition("@")
    conc, rate = _strategy_concurrency(kind, arg, arg)
    backend = _json_or_none(get("Run Info", "Backend"))
    args = _json_or_none(get("Runtime Info", "Arguments")) or {}
    data = _dig(args, "spec.data") or []
    out = number(get("Token Metrics", "Successful Output Tokens", "Mean"))
    iters = number(get("Streaming Iterations", "Successful Count", "Mean"))
    return Level(file=name, row=line, fmt="guidellm CSV", concurrency=conc, rate=rate,
                 measured_concurrency=number(get("Server Throughput", "Successful Concurrency", "Mean")),
                 throughput=get(*_THROUGHPUT), throughput_column="Token Throughput: Successful Output Tokens/Sec, Mean",
                 model=backend.get("model") if isinstance(backend, dict) else None,
                 in_len=number(get("Token Metrics", "Successful Input Tokens", "Mean")), out_len=out,
                 tokens_per_chunk=(out - 1) / (iters - 1) if out and iters and iters > 1 else None,
                 dataset=data[0].get("path") if isinstance(data, list) and data and isinstance(data[0], dict) else None,
                 strategy_header="Benchmark Strategy")


def read_guidellm_csv(name: str, text: str) -> tuple[list[RunRecord], list[Problem]]:
    """Records and problems of the CSV guidellm writes (three header rows: group, label, statistic)."""
    troubles: list[Problem] = []
    columns, rows = _csv_rows(text, troubles)
    index = {}
    for i, (group, label, stat) in enumerate(columns):
        index.setdefault((group, label, stat), i)
        index.setdefault((group, label, None), i)

    def column(group: str, label: str, stat: str | None = None) -> int | None:
        return index.get((group, label, stat))

    needed = {"Benchmark/Strategy": column(*_STRATEGY),
              "Token Throughput/Successful Output Tokens/Sec/Mean": column(*_THROUGHPUT)}
    missing = [k for k, v in needed.items() if v is None]
    if missing:
        raise SpecModelError(f"guidellm CSV without the column(s) {', '.join(missing)}; expected the CSV "
                             "`guidellm benchmark` writes")
    records, problems = [], [replace(p, file=name) for p in troubles]
    if len(rows) > bounds.MAX_ROWS_PER_FILE:
        problems.append(too_many_rows(name, len(rows)))
        rows = rows[:bounds.MAX_ROWS_PER_FILE]
    for line, cells in rows:
        if len(cells) > len(columns):
            problems.append(Problem(name, line, None, "some rows have more cells than the three header rows name; the "
                                    "extra cells were ignored (was the file edited or cut?)", "warning"))
        record = level_record(_csv_level(name, line, cells, column), problems)
        if record:
            records.append(record)
    return records, problems


def level_record(level: Level, problems: list) -> RunRecord | None:
    """The RunRecord of one benchmark (an arm to be paired), or None with an error when it has no throughput."""
    throughput = number(level.throughput)
    conc, rate = level.concurrency, level.rate
    if conc is None and level.measured_concurrency:
        conc = max(1, round(level.measured_concurrency))
        problems.append(Problem(level.file, level.row, level.strategy_header, f"a rate-paced run (rate {rate}); "
                                f"concurrency taken as the measured mean {level.measured_concurrency:.3g} → {conc}",
                                "warning"))
    if throughput is None or throughput <= 0:
        problems.append(Problem(level.file, level.row, level.throughput_column, f"{shown(level.throughput)} is not a "
                                "positive throughput; expected output tokens per second; row skipped"))
        return None
    in_len, out_len, dataset = level.in_len, level.out_len, level.dataset
    values = {"concurrency": conc, "request_rate": rate, "target_model": level.model}
    values = {k: v for k, v in values.items() if v is not None}
    if in_len is not None and math.isfinite(in_len + (out_len or 0) / 2):
        values["context_len"] = round(in_len + (out_len or 0) / 2)
    values["workload"] = str(dataset) if dataset else (
        f"{in_len:.0f} in / {out_len:.0f} out tokens" if in_len is not None and out_len else Path(level.file).stem)
    headers = {"concurrency": level.strategy_header, "spec_tok_s": level.throughput_column,
               "baseline_tok_s": level.throughput_column, "tokens_per_step": "Streaming Iterations"}
    tokens_per_chunk = level.tokens_per_chunk
    is_spec = tokens_per_chunk is not None and tokens_per_chunk > SPEC_TOKENS_PER_CHUNK
    rec = RunRecord(level.file, level.row, level.fmt, values, headers, "spec" if is_spec else "baseline",
                    (model_key(level.model), str(dataset or ""), conc if conc is not None else ("rate", rate)))
    if is_spec:
        values["spec_tok_s"] = throughput
        values["tokens_per_step"] = tokens_per_chunk
        rec.remarks.append(f"{level.formula} = {tokens_per_chunk:.3f}")
    else:
        values["baseline_tok_s"] = throughput
    return rec
