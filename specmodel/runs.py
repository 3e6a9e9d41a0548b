"""Read past benchmark runs (plain CSV, `vllm bench serve` JSON, guidellm CSV/JSON) into one table.

Every reader turns a file into *records* (one per run or per concurrency level) and a list of
`Problem`s that name the file, the row and the column. Records then go through one validation
path: acceptance in whatever form the row has becomes E and α through `specmodel.acceptance`,
free-text GPU and model names map to presets, and a speculative run that was measured alone is
paired with its baseline run. A row with an error is left out and reported; a row that needed a
fallback (an unknown GPU, a missing k) is kept and the fallback is written into its `remarks`.

Row numbers: for CSV files the spreadsheet row (the header is row 1, the first run row 2); for
JSON files the position of the benchmark in the file (1 = first).
"""

from __future__ import annotations

import csv
import gc
import io
import json
import math
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from . import acceptance, presets
from .errors import SpecModelError
from .limits import MAX_FILE_BYTES, MAX_K, MAX_ROWS_PER_FILE, MAX_ROWS_TOTAL, clean_name, load_json, read_file
# The name parsers are pure functions of the text, and a large file repeats the same few GPU, model,
# method and engine names on every row: each distinct text is parsed once.
_parse_hardware = lru_cache(maxsize=4096)(presets.parse_hardware)
_parse_model = lru_cache(maxsize=4096)(presets.parse_model)
_parse_method = lru_cache(maxsize=4096)(presets.parse_method)
_parse_engine = lru_cache(maxsize=4096)(presets.parse_engine)
_parse_dtype = lru_cache(maxsize=1024)(presets.parse_dtype)
_clean_name = lru_cache(maxsize=16384)(clean_name)


@lru_cache(maxsize=1024)
def _default_draft(target: str) -> str | None:
    return presets.find_model(target).default_draft
SPEC_TOKENS_PER_CHUNK = 1.1  # a streamed run above this many tokens per chunk was speculative

# Canonical columns of the run table, in display order (README-runs.md explains each).
COLUMNS = [
    "file", "row", "format", "workload", "concurrency", "request_rate", "k", "method", "temperature",
    "alpha", "tokens_per_step", "acceptance_from", "survival", "baseline_tok_s", "spec_tok_s",
    "measured_speedup", "gpu", "gpu_preset", "target_model", "target_preset", "draft_model",
    "draft_preset", "context_len", "t_target_ms", "t_draft_ms", "tp", "engine", "draft_depth", "branching", "ep",
    "weight_dtype", "draft_kv_budget", "source", "notes", "remarks",
]

# Plain-CSV headers: canonical name -> accepted spellings (compared after lower-casing and turning
# spaces, dashes and dots into underscores).
ALIASES: dict[str, tuple[str, ...]] = {
    "workload": ("workload", "task", "dataset", "dataset_name", "scenario", "name", "label", "workload_or_dataset"),
    "concurrency": ("concurrency", "max_concurrency", "batch", "batch_size", "concurrent_requests",
                    "num_concurrent", "streams", "users", "max_concurrent", "concurrency_or_batch"),
    "request_rate": ("request_rate", "rate", "qps", "rps", "requests_per_s"),
    "k": ("k", "num_speculative_tokens", "num_spec_tokens", "speculative_tokens", "gamma",
          "draft_tokens_per_step", "spec_k"),
    "method": ("method", "spec_method", "speculative_method", "speculation", "spec_decode_method",
               "draft_model_or_method"),
    "temperature": ("temperature", "temp"),
    "alpha": ("alpha", "per_token_acceptance", "token_acceptance", "acceptance_alpha"),
    "tokens_per_step": ("tokens_per_step", "mean_acceptance_length", "acceptance_length", "accept_len",
                        "accept_length", "spec_decode_acceptance_length", "spec_accept_length",
                        "mean_accept_len"),
    "draft_acceptance_rate": ("draft_acceptance_rate", "acceptance_rate", "accept_rate",
                              "spec_accept_rate"),
    "acceptance_rate_percent": ("spec_decode_acceptance_rate", "acceptance_rate_percent",
                                "acceptance_rate_pct", "draft_acceptance_rate_percent"),
    "accepted_tokens": ("accepted_tokens", "num_accepted_tokens", "spec_decode_accepted_tokens",
                        "spec_decode_num_accepted_tokens"),
    "drafts": ("drafts", "num_drafts", "spec_decode_num_drafts"),
    "draft_tokens": ("draft_tokens", "num_draft_tokens", "spec_decode_draft_tokens",
                     "spec_decode_num_draft_tokens"),
    "survival": ("survival", "per_position_acceptance", "per_position_acceptance_rates",
                 "spec_decode_per_position_acceptance_rates", "acceptance_per_position"),
    "baseline_tok_s": ("baseline_tok_s", "baseline_throughput", "baseline_output_throughput",
                       "plain_tok_s", "no_spec_tok_s", "tok_s_baseline", "baseline_tokens_per_s"),
    "spec_tok_s": ("spec_tok_s", "spec_throughput", "speculative_tok_s", "spec_output_throughput",
                   "output_throughput", "throughput", "tok_s", "output_tok_s", "tokens_per_s"),
    "speedup": ("speedup", "measured_speedup"),
    "gpu": ("gpu", "hardware", "device", "accelerator"),
    "target_model": ("target_model", "model", "model_id", "target"),
    "draft_model": ("draft_model", "draft", "speculative_model", "draft_model_id"),
    "context_len": ("context_len", "context_length", "mean_context_len", "ctx", "context_tokens"),
    "t_target_ms": ("t_target_ms", "target_step_ms", "target_ms"),
    "t_draft_ms": ("t_draft_ms", "draft_step_ms", "draft_ms"),
    "tp": ("tp", "tensor_parallel", "tensor_parallel_size"),
    "engine": ("engine", "server", "backend", "serving_engine", "inference_engine"),
    "draft_depth": ("draft_depth", "depth", "tree_depth", "num_steps"),
    "branching": ("branching", "tree_branching", "branching_factor", "topk", "eagle_topk"),
    "ep": ("ep", "expert_parallel", "expert_parallel_size", "ep_size"),
    "weight_dtype": ("weight_dtype", "dtype", "quantization", "weights_dtype"),
    "draft_kv_budget": ("draft_kv_budget", "kv_budget", "draft_budget"),
    "source": ("source_id", "source", "source_key"),
    "notes": ("notes", "note", "comment", "comments", "description"),
}
# Columns kept for people and not read (a citation, a URL, remarks on how a number was measured):
# named once in one info line, never one warning each. A second column for an already-read field
# (e.g. both `source_id` and `source`) is treated the same way.
IGNORED_COLUMNS = ("url_or_ref", "url", "reference", "ref", "citation", "latency_metric_note", "metric_note",
                   "accept_len_source", "acceptance_source")
_REFERENCE_FIELDS = {"source", "notes"}  # a second column for these is kept for reference, not an error
_POSITION_HEADER = re.compile(r"^(?:p|pos|position|acceptance_pos|accept_pos)_?(\d+)$")
_ALIAS_INDEX = {alias: canon for canon, names in ALIASES.items() for alias in names}
_TEXT_COLUMNS = {"workload", "method", "gpu", "target_model", "draft_model", "notes", "survival", "engine",
                 "weight_dtype", "source"}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, located as precisely as the file allows."""

    file: str
    row: int | None  # spreadsheet row (CSV, header = 1) or benchmark number (JSON); None: whole file
    column: str | None
    message: str  # what was wrong and what is expected
    severity: str = "error"  # "error": the row was not loaded; "warning": loaded with a fallback

    def where(self) -> str:
        parts = [self.file]
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.column:
            parts.append(f"column '{self.column}'")
        return ", ".join(parts)

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"


@dataclass(frozen=True)
class RunDefaults:
    """What a row that does not say gets (the sidebar's choices on the page, flags on the CLI)."""

    gpu: str = "L40S"
    target: str = "Llama 3.1 8B"
    method: str = "draft_model"
    draft: str | None = "Llama 3.2 1B"
    tp: int = 1
    context_len: int = 1024
    k: int | None = None  # for files that do not record k (guidellm)


@dataclass
class RunTable:
    rows: pd.DataFrame  # one row per loaded run, columns COLUMNS
    problems: list[Problem] = field(default_factory=list)
    # rows predicted on a fallback preset: {"rows": n, "gpu": {name as written: rows}, "target": {...},
    # "draft": {...}}; see fallback_line() for the sentence
    fallbacks: dict = field(default_factory=lambda: {"rows": 0, "gpu": {}, "target": {}, "draft": {}})

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]

    def problems_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"severity": p.severity, "file": p.file, "row": p.row, "column": p.column,
                              "problem": p.message} for p in self.problems],
                            columns=["severity", "file", "row", "column", "problem"])


# --- records: what readers produce before validation ------------------------------------------

@dataclass
class RunRecord:
    file: str
    row: int | None
    fmt: str
    values: dict  # canonical name -> raw value (str, number or list)
    headers: dict  # canonical name -> the user's header (for messages)
    arm: str = "pair"  # "pair": both arms in one row; "spec" / "baseline": one arm, to be paired
    pair_key: tuple | None = None
    remarks: list[str] = field(default_factory=list)


# --- entry points ------------------------------------------------------------------------------

def read_runs(files, defaults: RunDefaults | None = None, pairs: dict[str, str] | None = None,
              progress: Callable[[int, int], None] | None = None) -> RunTable:
    """Read several run files into one table.

    files: iterable of (name, bytes) or paths. pairs: {speculative file name: baseline file name}
    fixes which baseline a one-arm speculative file is compared with (otherwise matched on model,
    dataset and concurrency or request rate). progress(done, total) is called every
    PROGRESS_EVERY runs while rows are checked; an exception it raises stops the reading.
    At most MAX_ROWS_PER_FILE runs of one file and MAX_ROWS_TOTAL of all files are read (the first
    ones); a warning says how many were left out.
    """
    with paused_gc():
        return _read_runs(files, defaults or RunDefaults(), pairs, progress)


@contextmanager
def paused_gc():
    """Pause Python's cyclic garbage collector while a large file's objects are built: it would walk
    every live object again and again (reading 200,000 rows took twice as long with it). Nothing
    built here is a reference cycle; the collector resumes afterwards if it was on."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _read_runs(files, defaults: RunDefaults, pairs, progress) -> RunTable:
    records: list[RunRecord] = []
    problems: list[Problem] = []
    for item in files:
        name, data = _name_and_bytes(item)
        recs, probs = _read_one(name, data, defaults)
        if len(records) + len(recs) > MAX_ROWS_TOTAL:
            kept = max(0, MAX_ROWS_TOTAL - len(records))
            probs = [*probs, Problem(name, None, None, f"{len(recs) - kept:,} of its {len(recs):,} runs were not "
                                     f"loaded: {MAX_ROWS_TOTAL:,} runs in all files is the limit; load fewer files "
                                     "at once", "warning")]
            recs = recs[:kept]
        records.extend(recs)
        problems.extend(probs)
    records, pair_problems = _pair_arms(records, pairs or {})
    problems.extend(pair_problems)
    rows = []
    total = len(records)
    for i, rec in enumerate(records):
        if progress is not None and i % PROGRESS_EVERY == 0:
            progress(i, total)
        row, probs = _validate(rec, defaults)
        problems.extend(probs)
        if row is not None:
            rows.append(row)
    if progress is not None:
        progress(total, total)
    _fill_missing_alpha(rows)
    _fill_same_tree(rows)
    fallbacks = _count_fallbacks(rows)
    frame = pd.DataFrame({c: [r[c] for r in rows] for c in COLUMNS}, columns=COLUMNS)
    numeric = ["concurrency", "request_rate", "k", "temperature", "alpha", "tokens_per_step", "baseline_tok_s",
               "spec_tok_s", "measured_speedup", "context_len", "t_target_ms", "t_draft_ms", "tp", "draft_depth",
               "branching", "ep", "draft_kv_budget"]  # NaN where unknown (draft_depth: NaN = a chain, depth k)
    frame[numeric] = frame[numeric].apply(pd.to_numeric, errors="coerce")
    frame["row"] = pd.to_numeric(frame["row"], errors="coerce").astype("Int64")
    return RunTable(frame.reset_index(drop=True), problems, fallbacks)


PROGRESS_EVERY = 5000


def _count_fallbacks(rows: list[dict]) -> dict:
    """How many rows were predicted on a fallback preset, and which names as written were not
    recognised (with their row counts)."""
    out = {"rows": 0, "gpu": {}, "target": {}, "draft": {}}
    for row in rows:
        used = row.pop("_fallbacks", None) or {}
        if used:
            out["rows"] += 1
        for kind, name in used.items():
            out[kind][name] = out[kind].get(name, 0) + 1
    return out


def fallback_line(fallbacks: dict, total_rows: int) -> str | None:
    """One sentence for the top of a report: rows predicted on a fallback and the names not
    recognised, or None when every row used its own presets."""
    if not fallbacks or not fallbacks.get("rows"):
        return None
    parts = []
    for kind, label in (("gpu", "GPU"), ("target", "target"), ("draft", "draft")):
        for name, n in sorted(fallbacks.get(kind, {}).items(), key=lambda item: -item[1]):
            parts.append(f"{label} '{name}' ({n} row{'s' if n != 1 else ''})")
    n = fallbacks["rows"]
    return (f"{n} of {total_rows} row{'s' if total_rows != 1 else ''} predicted on a fallback preset (the sidebar "
            f"or flag choice) because a name was not recognised: " + ", ".join(parts))


@dataclass(frozen=True)
class ProblemGroup:
    """Identical problems (same severity, file, column and message) on several rows."""

    severity: str
    file: str
    column: str | None
    message: str
    rows: tuple  # row numbers in file order (None: the whole file)

    @property
    def count(self) -> int:
        """Rows affected (1 for a problem with the whole file)."""
        return max(1, sum(r is not None for r in self.rows))

    def where(self, max_rows: int = 12) -> str:
        """"f.csv, rows 3, 7, 9 (3 rows), column 'gpu'": the file, the rows (the first max_rows), the column."""
        numbered = [r for r in self.rows if r is not None]
        where = [self.file]
        if len(numbered) == 1:
            where.append(f"row {numbered[0]}")
        elif numbered:
            shown = ", ".join(map(str, numbered[:max_rows])) + (", ..." if len(numbered) > max_rows else "")
            where.append(f"rows {shown} ({len(numbered)} rows)")
        if self.column:
            where.append(f"column '{self.column}'")
        return ", ".join(where)


SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def group_problems(problems: list[Problem], by_size: bool = False) -> list[ProblemGroup]:
    """Identical problems grouped, in order of first appearance; with by_size, errors (rows not
    loaded) first, then warnings, then notes, the largest groups first within each."""
    groups: dict[tuple, list] = {}
    for p in problems:
        groups.setdefault((p.severity, p.file, p.column, p.message), []).append(p.row)
    out = [ProblemGroup(sev, file, column, message, tuple(rows)) for (sev, file, column, message), rows in groups.items()]
    if by_size:
        out.sort(key=lambda g: (SEVERITY_ORDER.get(g.severity, 3), -g.count))
    return out


def collapse_problems(problems: list[Problem], with_severity: bool = True) -> list[str]:
    """Problems as lines for a person, identical ones (same severity, file, column and message)
    collapsed into one line with their row numbers: "warning: f.csv, rows 3, 7, 9 (3 rows): ...".
    A problem met once reads as str(problem) (after "severity: " when with_severity)."""
    return [(f"{g.severity}: " if with_severity else "") + f"{g.where()}: {g.message}" for g in group_problems(problems)]


def _fill_same_tree(rows: list[dict]) -> None:
    """A method that says "same tree" takes the draft depth and branching of the nearest earlier
    row of the same file and source with the same method and k."""
    for i, row in enumerate(rows):
        if not row.pop("_same_tree", False) or row["draft_depth"] is not None:
            continue
        for prev in reversed(rows[:i]):
            if (prev["file"], prev["source"], prev["method"], prev["k"]) == \
                    (row["file"], row["source"], row["method"], row["k"]) and prev["draft_depth"] is not None:
                row["draft_depth"], row["branching"] = prev["draft_depth"], prev["branching"]
                row["remarks"] = "; ".join(filter(None, [row["remarks"], f"same tree as row {prev['row']}: depth "
                                                        f"{prev['draft_depth']}, branching {prev['branching']}"]))
                break


def read_run_file(name: str, data: bytes, defaults: RunDefaults | None = None) -> RunTable:
    return read_runs([(name, data)], defaults)


def _name_and_bytes(item) -> tuple[str, bytes]:
    if isinstance(item, (str, Path)):
        path = Path(item)
        return path.name, read_file(path)
    name, data = item
    if isinstance(data, str):
        data = data.encode()
    return str(name), bytes(data)


def _read_one(name: str, data: bytes, defaults: RunDefaults) -> tuple[list[RunRecord], list[Problem]]:
    def fail(message: str):
        return [], [Problem(name, None, None, message)]

    if len(data) > MAX_FILE_BYTES:
        return fail(f"the file is {len(data) / 1e6:.1f} MB, over the {MAX_FILE_BYTES / 1e6:.0f} MB limit; "
                    "split it or keep only the summary rows")
    if not data.strip():
        return fail("the file is empty; expected a CSV header and one row per run, or a JSON benchmark result")
    text, problem = decode_text(data)
    if text is None:
        return fail(problem)
    stripped = text.lstrip()
    from . import runs_logs, runs_spec  # readers of per-request spec-decode JSON and vLLM log lines
    try:
        if runs_spec.looks_like_spec_json(stripped):
            return runs_spec.read(name, stripped, defaults)
        if runs_logs.looks_like_log(stripped):
            return runs_logs.read(name, text, defaults)
        if stripped[:1] in "{[":
            return _read_json(name, stripped)
        first_line = stripped.splitlines()[0]
        if first_line.startswith("Run Info") or ("Benchmark" in first_line and "Token Throughput" in first_line):
            return _read_guidellm_csv(name, text)
        return _read_plain_csv(name, text)
    except SpecModelError as exc:
        return fail(str(exc))


# Byte-order marks of the Unicode encodings a spreadsheet may save (longest first: UTF-32 LE
# starts with UTF-16 LE's mark).
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"), (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"),
         (b"\xff\xfe", "utf-16-le", "UTF-16"), (b"\xfe\xff", "utf-16-be", "UTF-16"))


def decode_text(data: bytes) -> tuple[str | None, str | None]:
    """(text, None), or (None, why it is not text). UTF-8 (with or without a byte-order mark),
    UTF-16/32 with a byte-order mark, else Windows-1252 when that reads as text."""
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(codec), None
            except UnicodeDecodeError as exc:
                return None, (f"starts with a {label} byte-order mark but byte {exc.start + len(bom)} is not "
                              f"{label}; save it again as UTF-8 CSV or JSON")
    if b"\x00" in data[:8192]:
        return None, "this is not a text file (it contains binary data); expected CSV or JSON"
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        try:
            text = data.decode("cp1252")  # spreadsheets on Windows; still text
        except UnicodeDecodeError:
            return None, f"this is not UTF-8 text (byte {exc.start} cannot be decoded); expected CSV or JSON"
        if sum(not (c.isprintable() or c.isspace()) for c in text[:4096]) > 8:
            return None, "this is not a text file (unreadable characters); expected CSV or JSON"
        return text, None


# --- plain CSV -------------------------------------------------------------------------------

def _norm_header(h: str) -> str:
    h = re.sub(r"\(.*?\)|\[.*?\]", "", str(h)).strip().lower()
    return re.sub(r"[^a-z0-9%]+", "_", h).strip("_").replace("%", "percent")


def _sniff_delimiter(text: str) -> str:
    sample = "\n".join(text.splitlines()[:20])
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _csv_records(text: str, delimiter: str):
    """(first line number, cells) per CSV record, blank lines included as empty records."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, skipinitialspace=True, strict=False)
    line = 1
    try:
        for cells in reader:
            yield line, cells
            line = reader.line_num + 1
    except csv.Error as exc:
        raise SpecModelError(f"not readable as CSV at line {reader.line_num} ({exc}); expected a header line "
                             "and one comma-separated row per run") from None


def _columns(name: str, header: list[str]) -> tuple[dict[str, int], dict[int, int], list[Problem], list[int]]:
    """Canonical column -> index, survival position -> index, warnings for unknown headers, and the
    indices of columns kept for reference (IGNORED_COLUMNS, a second `source` or `notes`: one info
    line for all of them). Two headers meaning the same column are otherwise an error naming both
    (which one is meant is unknowable)."""
    headers: dict[str, int] = {}
    positions: dict[int, int] = {}
    problems = []
    kept: list[int] = []
    seen: dict[tuple, int] = {}
    for i, raw in enumerate(header):
        h = raw.strip()
        key = _norm_header(h)
        canon = _ALIAS_INDEX.get(key)
        pos = _POSITION_HEADER.match(key)
        if key in IGNORED_COLUMNS or (canon in _REFERENCE_FIELDS and ("column", canon) in seen):
            kept.append(i)
            continue
        slot = ("column", canon) if canon else (("position", int(pos.group(1))) if pos else None)
        if slot is not None and slot in seen:
            first = header[seen[slot]].strip()
            what = f"column {slot[1]}" if slot[0] == "column" else f"acceptance at position {slot[1]}"
            raise SpecModelError(f"columns '{first}' (column {seen[slot] + 1}) and '{h}' (column {i + 1}) both "
                                 f"give the {what}; keep one of them")
        if slot is not None:
            seen[slot] = i
        if canon:
            headers[canon] = i
        elif pos:
            positions[int(pos.group(1))] = i
        elif h:
            problems.append(Problem(name, None, h, "not a column this reader knows; ignored (known columns and "
                                                   "aliases are listed in docs/formats.md)", "warning"))
    if kept:
        problems.insert(0, Problem(name, None, None, "columns kept for reference and not read: "
                                   + ", ".join(header[i].strip() for i in kept)
                                   + " (the engine is still looked for in their text)", "info"))
    return headers, positions, problems, kept


def _read_plain_csv(name: str, text: str) -> tuple[list[RunRecord], list[Problem]]:
    problems: list[Problem] = []
    delimiter = _sniff_delimiter(text)
    if delimiter != ",":
        shown = {"\t": "tabs", ";": "semicolons", "|": "'|'"}[delimiter]
        problems.append(Problem(name, None, None, f"columns are separated by {shown}, not commas; read them "
                                                  f"with {shown}", "warning"))
    lines = _csv_records(text, delimiter)
    header = next((cells for _, cells in lines if any(c.strip() for c in cells)), None)
    if header is None:
        raise SpecModelError("the file is empty; expected a CSV header and one row per run")
    headers, positions, unknown, kept = _columns(name, header)
    if not headers and not positions:
        if len(header) == 1:
            raise SpecModelError(f"found a single column '{header[0].strip()[:80]}'; expected columns separated by "
                                 "commas, such as workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s")
        raise SpecModelError(f"none of the columns ({', '.join(h.strip()[:40] for h in header[:8])}) is one this "
                             "reader knows; expected a header such as "
                             "workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s (see docs/formats.md for aliases)")
    problems.extend(unknown)
    width = len(header)
    records: list[RunRecord] = []
    rows_seen = 0
    padded_rows: list[int] = []
    header_items = list(headers.items())
    shared_headers = {c: header[i].strip() for c, i in header_items}  # the same for every record: shared
    position_columns = [positions[p] for p in sorted(positions)]
    survival_header = ", ".join(header[i].strip() for i in position_columns)
    for line, cells in lines:
        if not "".join(cells).strip():
            continue  # a blank line is not a run
        rows_seen += 1
        if rows_seen > MAX_ROWS_PER_FILE:
            continue  # counted for the message below, not read
        if len(cells) > width:
            extra = [c for c in cells[width:] if c.strip()]
            if extra:
                problems.append(Problem(name, line, None, f"has {len(cells)} cells where the header has {width} "
                                        f"(extra: '{extra[0].strip()[:40]}'); row not loaded: add the missing "
                                        "header or remove the stray delimiter"))
                continue
            padded_rows.append(line)  # only empty cells past the header: a trailing delimiter
        n_cells = len(cells)  # a short row: the missing cells are empty
        values = {}
        for c, i in header_items:
            if i < n_cells:
                cell = cells[i].strip()
                if cell:
                    values[c] = cell
        hdrs = shared_headers
        if kept:
            context = " | ".join(x for x in (cells[i].strip() for i in kept if i < n_cells) if x)
            if context and values:
                values["_context"] = context  # where an engine may be named ("vLLM V1", "TensorRT-LLM")
        if position_columns and "survival" not in values:
            surv = [cells[i].strip() if i < n_cells else "" for i in position_columns]
            if any(surv):
                values["survival"] = [x for x in surv if x != ""]
                hdrs = {**shared_headers, "survival": survival_header}
        if not values:
            continue
        records.append(RunRecord(name, line, "csv", values, hdrs))
    if padded_rows:
        shown = ", ".join(map(str, padded_rows[:5])) + (" …" if len(padded_rows) > 5 else "")
        problems.append(Problem(name, padded_rows[0], None, f"{len(padded_rows)} row(s) end with empty cells past "
                                f"the header's {width} columns (a trailing delimiter; rows {shown}): the empty "
                                "cells were ignored", "warning"))
    if rows_seen > MAX_ROWS_PER_FILE:
        problems.append(_too_many_rows(name, rows_seen))
    if not records and not rows_seen:
        problems.append(Problem(name, None, None, "has a header but no rows; expected one row per run"))
    return records, problems


def _too_many_rows(name: str, count: int) -> Problem:
    return Problem(name, None, None, f"has {count:,} runs; only the first {MAX_ROWS_PER_FILE:,} were loaded (the "
                                     "limit per file): split the file to read the rest", "warning")


# --- vllm bench serve JSON / guidellm JSON ---------------------------------------------------------

def _read_json(name: str, text: str) -> tuple[list[RunRecord], list[Problem]]:
    try:
        doc = load_json(text)
    except json.JSONDecodeError as exc:
        raise SpecModelError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); expected "
                             "the file `vllm bench serve --save-result` or guidellm writes") from None
    if isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list):
        return _read_guidellm_json(name, doc)
    if isinstance(doc, dict) and "output_throughput" in doc:
        return _read_vllm_bench(name, doc)
    if isinstance(doc, list) and doc and all(isinstance(d, dict) and "output_throughput" in d for d in doc):
        recs, probs = [], []
        if len(doc) > MAX_ROWS_PER_FILE:
            probs.append(_too_many_rows(name, len(doc)))
        for i, d in enumerate(doc[:MAX_ROWS_PER_FILE], start=1):
            r, p = _read_vllm_bench(name, d, index=i)
            recs.extend(r)
            probs.extend(p)
        return recs, probs
    shape = f"a list of {len(doc)} items" if isinstance(doc, list) else (
        f"an object with keys {', '.join(list(doc)[:6])}" if isinstance(doc, dict) else type(doc).__name__)
    raise SpecModelError(f"JSON of an unknown shape ({shape}); expected `vllm bench serve --save-result` output "
                         "(an object with output_throughput, max_concurrency, ...) or guidellm's benchmarks.json "
                         "(an object with a 'benchmarks' list)")


def _num(x):
    if isinstance(x, bool):  # JSON true/false: not a number of anything
        return None
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a JSON integer beyond any float
        return None
    return v if math.isfinite(v) else None


_METHOD_WORDS = (("eagle", "eagle"), ("medusa", "medusa"), ("mtp", "mtp"), ("ngram", "ngram"),
                 ("n-gram", "ngram"), ("prompt_lookup", "ngram"), ("draft", "draft_model"))


def _method_from_label(label) -> str | None:
    text = str(label or "").lower()
    for word, method in _METHOD_WORDS:
        if word in text:
            return method
    return None


def _read_vllm_bench(name: str, d: dict, index: int | None = None) -> tuple[list[RunRecord], list[Problem]]:
    row = index
    problems = []
    throughput = _num(d.get("output_throughput"))
    values: dict = {}
    headers = {"spec_tok_s": "output_throughput", "concurrency": "max_concurrency", "k": "spec_decode_draft_tokens",
               "target_model": "model_id", "gpu": "gpu", "workload": "dataset_name",
               "context_len": "total_input_tokens", "temperature": "temperature"}
    completed = _num(d.get("completed")) or _num(d.get("num_prompts"))
    in_len = out_len = None
    if completed:
        in_len = (_num(d.get("total_input_tokens")) or 0) / completed
        out_len = (_num(d.get("total_output_tokens")) or 0) / completed
        if math.isfinite(in_len + out_len / 2):  # a tiny "completed" makes them overflow: then unknown
            values["context_len"] = round(in_len + out_len / 2)
        else:
            in_len = out_len = None
    dataset = d.get("dataset_name") or d.get("dataset")
    values["workload"] = str(dataset) if dataset else (
        f"{in_len:.0f} in / {out_len:.0f} out tokens" if in_len is not None else Path(name).stem)
    concurrency = _num(d.get("max_concurrency"))
    rate = _num(d.get("request_rate"))
    if concurrency is None:
        little = (_num(d.get("request_throughput")) or 0) * (_num(d.get("mean_e2el_ms")) or 0) / 1e3
        if little > 0:
            concurrency = max(1, round(little))
            problems.append(Problem(name, row, "max_concurrency", f"not set (the run was paced by request rate "
                                    f"{d.get('request_rate')}); concurrency estimated as {concurrency} from "
                                    "request throughput × mean latency", "warning"))
    if concurrency is not None:
        values["concurrency"] = concurrency
    if rate is not None:
        values["request_rate"] = rate
    for key, src in (("target_model", "model_id"), ("gpu", "gpu"), ("draft_model", "draft_model"),
                     ("temperature", "temperature"), ("tp", "tp"), ("notes", "label")):
        if d.get(src) not in (None, ""):
            values[key] = d[src]
    method = d.get("method") or _method_from_label(d.get("label"))
    if method:
        values["method"] = method
    drafts = _num(d.get("spec_decode_num_drafts"))
    is_spec = drafts is not None and drafts > 0 or d.get("spec_decode_acceptance_length") is not None
    if throughput is None or throughput <= 0:
        problems.append(Problem(name, row, "output_throughput", f"{_shown(d.get('output_throughput'))} is not a "
                                "positive number; expected output tokens per second; not loaded"))
        return [], problems
    if is_spec:
        per_pos = d.get("spec_decode_per_position_acceptance_rates")
        if isinstance(per_pos, list) and per_pos:
            values["survival"] = per_pos
            headers["survival"] = "spec_decode_per_position_acceptance_rates"
        for key, src in (("accepted_tokens", "spec_decode_accepted_tokens"), ("drafts", "spec_decode_num_drafts"),
                         ("draft_tokens", "spec_decode_draft_tokens"),
                         ("tokens_per_step", "spec_decode_acceptance_length"),
                         ("acceptance_rate_percent", "spec_decode_acceptance_rate")):
            if d.get(src) is not None:
                values[key] = d[src]
                headers[key] = src
    key = (_model_key(d.get("model_id")), str(dataset or (round(in_len or 0), round(out_len or 0))),
           concurrency if concurrency is not None else ("rate", rate))
    values["spec_tok_s" if is_spec else "baseline_tok_s"] = throughput
    headers["baseline_tok_s"] = "output_throughput"
    return [RunRecord(name, row, "vllm bench serve", values, headers, "spec" if is_spec else "baseline", key)], problems


def _model_key(name) -> str:
    m = presets.match_model(name) if name else None
    return m.name if m else str(name or "").strip().lower()


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
        return _num(streams), None
    return None, _num(rate)


def _shown(raw) -> str:
    """A cell or JSON value as a message quotes it: JSON spelling for true/false/null, at most 40 characters."""
    if isinstance(raw, bool) or raw is None:
        return json.dumps(raw)
    if isinstance(raw, float) and not math.isfinite(raw):
        return "an infinite or out-of-range number" if raw == raw else "NaN"
    text = clean_name(raw, 40)[0]
    return f"'{text}'"


def _read_guidellm_json(name: str, doc: dict) -> tuple[list[RunRecord], list[Problem]]:
    records, problems = [], []
    if len(doc["benchmarks"]) > MAX_ROWS_PER_FILE:
        problems.append(_too_many_rows(name, len(doc["benchmarks"])))
    for i, b in enumerate(doc["benchmarks"][:MAX_ROWS_PER_FILE], start=1):
        if not isinstance(b, dict):
            problems.append(Problem(name, i, None, "benchmark entry is not an object; skipped"))
            continue
        strategy = _dig(b, "config.strategy", "args.strategy", "scheduler.strategy", "strategy") or {}
        kind = strategy.get("type_") or strategy.get("kind") if isinstance(strategy, dict) else str(strategy)
        conc, rate = _strategy_concurrency(kind, strategy.get("streams") if isinstance(strategy, dict) else None,
                                           strategy.get("rate") if isinstance(strategy, dict) else None)
        metric = lambda key: _num(_dig(b, f"metrics.{key}.successful.mean", f"metrics.{key}.mean"))  # noqa: E731, B023 (used at once)
        measured_conc = metric("request_concurrency")
        model = _dig(b, "config.backend.model", "args.backend.model", "backend.model", "worker.backend_model") or \
            _dig(doc, "args.backend.model", "spec.backend.model")
        out = metric("output_token_count") or metric("output_tokens")
        iters = metric("output_tokens_per_iteration")
        tokens_per_chunk = iters if iters else None
        raw_throughput = _dig(b, "metrics.output_tokens_per_second.successful.mean", "metrics.output_tokens_per_second.mean")
        record = _guidellm_record(name, i, "guidellm JSON", conc, rate, measured_conc,
                                  (raw_throughput, "metrics.output_tokens_per_second.successful.mean"),
                                  model, metric("prompt_token_count") or metric("input_tokens"), out,
                                  tokens_per_chunk, None, problems,
                                  formula="tokens per step taken as guidellm's output_tokens_per_iteration (mean "
                                          "output tokens per streamed iteration)")
        if record:
            records.append(record)
    if not doc["benchmarks"]:
        problems.append(Problem(name, None, "benchmarks", "the benchmarks list is empty; nothing to read"))
    return records, problems


def _read_guidellm_csv(name: str, text: str) -> tuple[list[RunRecord], list[Problem]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            frame = pd.read_csv(io.StringIO(text), header=[0, 1, 2], dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, ValueError) as exc:
            raise SpecModelError(f"looks like a guidellm CSV but cannot be read ({exc}); expected the file "
                                 "`guidellm benchmark --outputs csv` writes (three header rows)") from None
    # pandas drops cells beyond the header with only a warning: say so rather than lose them silently.
    dropped = [Problem(name, None, None, "some rows have more cells than the three header rows name; the extra "
                                         "cells were ignored (was the file edited or cut?)", "warning")
               for w in caught if issubclass(w.category, pd.errors.ParserWarning)][:1]

    def col(group: str, label: str, stat: str | None = None):
        for c in frame.columns:
            if c[0] == group and c[1] == label and (stat is None or c[2] == stat):
                return c
        return None

    needed = {"Benchmark/Strategy": col("Benchmark", "Strategy"),
              "Token Throughput/Successful Output Tokens/Sec/Mean":
                  col("Token Throughput", "Successful Output Tokens/Sec", "Mean")}
    missing = [k for k, v in needed.items() if v is None]
    if missing:
        raise SpecModelError(f"guidellm CSV without the column(s) {', '.join(missing)}; expected the CSV "
                             "`guidellm benchmark` writes")
    records, problems = [], dropped
    if len(frame) > MAX_ROWS_PER_FILE:
        problems.append(_too_many_rows(name, len(frame)))
        frame = frame.iloc[:MAX_ROWS_PER_FILE]
    for i, (_, raw) in enumerate(frame.iterrows()):
        row = i + 4  # three header rows
        get = lambda c: raw[c] if c is not None else None  # noqa: E731, B023 (used at once)
        strategy = str(get(needed["Benchmark/Strategy"]) or "")
        kind, _, arg = strategy.partition("@")
        conc, rate = _strategy_concurrency(kind, arg, arg)
        backend = _json_or_none(get(col("Run Info", "Backend")))
        model = backend.get("model") if isinstance(backend, dict) else None
        args = _json_or_none(get(col("Runtime Info", "Arguments"))) or {}
        data = _dig(args, "spec.data") or []
        dataset = data[0].get("path") if isinstance(data, list) and data and isinstance(data[0], dict) else None
        out = _num(get(col("Token Metrics", "Successful Output Tokens", "Mean")))
        iters = _num(get(col("Streaming Iterations", "Successful Count", "Mean")))
        tokens_per_chunk = (out - 1) / (iters - 1) if out and iters and iters > 1 else None
        record = _guidellm_record(name, row, "guidellm CSV", conc, rate,
                                  _num(get(col("Server Throughput", "Successful Concurrency", "Mean"))),
                                  (get(needed["Token Throughput/Successful Output Tokens/Sec/Mean"]),
                                   "Token Throughput: Successful Output Tokens/Sec, Mean"), model,
                                  _num(get(col("Token Metrics", "Successful Input Tokens", "Mean"))), out,
                                  tokens_per_chunk, dataset, problems, strategy_header="Benchmark Strategy")
        if record:
            records.append(record)
    return records, problems


def _json_or_none(text):
    try:
        return load_json(text) if text else None
    except (TypeError, ValueError):  # not JSON, or JSON past the depth limit (SpecModelError is a ValueError)
        return None


def _guidellm_record(name, row, fmt, conc, rate, measured_conc, throughput_cell, model, in_len, out_len,
                     tokens_per_chunk, dataset, problems, strategy_header="strategy",
                     formula="tokens per step estimated from streamed chunks: (output tokens − 1) / (chunks − 1)"):
    raw_throughput, throughput_column = throughput_cell
    throughput = _num(raw_throughput)
    if conc is None and measured_conc:
        conc = max(1, round(measured_conc))
        problems.append(Problem(name, row, strategy_header, f"a rate-paced run (rate {rate}); concurrency taken as "
                                f"the measured mean {measured_conc:.1f} → {conc}", "warning"))
    if throughput is None or throughput <= 0:
        problems.append(Problem(name, row, throughput_column, f"{_shown(raw_throughput)} is not a positive throughput; "
                                "expected output tokens per second; row skipped"))
        return None
    values = {"concurrency": conc, "request_rate": rate, "target_model": model}
    values = {k: v for k, v in values.items() if v is not None}
    if in_len is not None and math.isfinite(in_len + (out_len or 0) / 2):
        values["context_len"] = round(in_len + (out_len or 0) / 2)
    values["workload"] = str(dataset) if dataset else (
        f"{in_len:.0f} in / {out_len:.0f} out tokens" if in_len is not None and out_len else Path(name).stem)
    headers = {"concurrency": strategy_header, "spec_tok_s": throughput_column, "baseline_tok_s": throughput_column,
               "tokens_per_step": "Streaming Iterations"}
    is_spec = tokens_per_chunk is not None and tokens_per_chunk > SPEC_TOKENS_PER_CHUNK
    rec = RunRecord(name, row, fmt, values, headers, "spec" if is_spec else "baseline",
                  (_model_key(model), str(dataset or ""), conc if conc is not None else ("rate", rate)))
    if is_spec:
        values["spec_tok_s"] = throughput
        values["tokens_per_step"] = tokens_per_chunk
        rec.remarks.append(f"{formula} = {tokens_per_chunk:.3f}")
    else:
        values["baseline_tok_s"] = throughput
    return rec


# --- pairing one-arm runs --------------------------------------------------------------------

def _pair_arms(records: list[RunRecord], pairs: dict[str, str]) -> tuple[list[RunRecord], list[Problem]]:
    out = [r for r in records if r.arm == "pair"]
    specs = [r for r in records if r.arm == "spec"]
    bases = [r for r in records if r.arm == "baseline"]
    used: set[int] = set()
    problems = []
    # Baselines indexed by what a speculative run is matched on (file order kept in each list), so a
    # file of many one-arm runs pairs in linear time.
    by_file: dict[str, list] = {}
    by_key: dict[tuple, list] = {}
    by_level: dict[tuple, list] = {}
    for b in bases:
        by_file.setdefault(b.file, []).append(b)
        by_key.setdefault(b.pair_key, []).append(b)
        by_level.setdefault((b.pair_key[0], b.pair_key[2]), []).append(b)

    def first_unused(group: list, fits=lambda b: True) -> list:
        while group and id(group[0]) in used:  # used ones leave the front for good
            group.pop(0)
        return next(([b] for b in group if id(b) not in used and fits(b)), [])

    for s in specs:
        forced = pairs.get(s.file)
        if forced is not None:
            candidates = by_file.get(forced, [])
            same_level = [b for b in candidates if b.pair_key[2] == s.pair_key[2]]
            candidates = same_level or (candidates if len(candidates) == 1 else [])
        else:
            candidates = first_unused(by_key.get(s.pair_key, [])) or first_unused(
                by_level.get((s.pair_key[0], s.pair_key[2]), []), lambda b, s=s: not (b.pair_key[1] and s.pair_key[1]))
        if forced is not None and not candidates:
            problems.append(Problem(s.file, s.row, None, f"the chosen baseline file '{forced}' has no run at "
                                    f"concurrency {s.values.get('concurrency')}; compared with nothing", "warning"))
        if candidates:
            b = candidates[0]
            used.add(id(b))
            s.values["baseline_tok_s"] = b.values["baseline_tok_s"]
            where = b.file if b.row is None else f"{b.file} row {b.row}"
            s.remarks.append(f"baseline from {where}")
        elif forced is None:
            s.remarks.append("no baseline run found for this model, dataset and concurrency: the measured "
                             "speedup is unknown (upload the baseline run or choose it)")
        out.append(s)
    for b in bases:
        if id(b) not in used:
            problems.append(Problem(b.file, b.row, None, "a run without speculation and no speculative run to "
                                    f"compare it with (concurrency {b.values.get('concurrency')}); not used",
                                    "warning"))
    return out, problems


# --- validation: one path for every format ----------------------------------------------------------

# Remarks that change what is predicted, so they are also listed as warnings beside the table.
_WARNING_REMARKS = ("GPU '", "model '", "method '", "no draft model", "no baseline run", "k not in the file",
                    "speedup ", "the per-position list")


class _RowError(Exception):
    def __init__(self, column: str | None, message: str):
        super().__init__(message)
        self.column = column


def _number(rec: RunRecord, key: str, errors: list, *, lo=None, hi=None, strict_lo=False, whole=False,
            what: str = "a number"):
    raw = rec.values.get(key)
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None
    column = rec.headers.get(key, key)
    text = str(raw).strip().rstrip("%") if isinstance(raw, str) else raw
    value = _num(text.replace(",", ".") if isinstance(text, str) and text.count(",") == 1 and "." not in text
                 else text)
    if value is None:
        errors.append(_RowError(column, f"{_shown(raw)} is not a number; expected {what}"))
        return None
    if whole and value != round(value):
        errors.append(_RowError(column, f"{_shown(raw)} is not a whole number; expected {what}"))
        return None
    if lo is not None and (value < lo or (strict_lo and value == lo)):
        errors.append(_RowError(column, f"{_shown(raw)} is {'not above' if strict_lo else 'below'} {lo:g}; expected {what}"))
        return None
    if hi is not None and value > hi:
        errors.append(_RowError(column, f"{_shown(raw)} is above {hi:g}; expected {what}"))
        return None
    return int(round(value)) if whole else value


def _survival_values(raw) -> list[float]:
    """The numbers of a survival cell (acceptance.parse_survival's grammar; checked later, with the
    row's message). Raises ValueError (SpecModelError) for anything that is not a list of numbers."""
    return list(acceptance.parse_survival(raw if isinstance(raw, (list, tuple)) else str(raw), validate=False))


# Acceptance given as one number that needs k, most direct first: (column, low, high, what is
# expected, conversion to acceptance.Acceptance).
_SINGLE_NUMBER_FORMS = (
    ("tokens_per_step", 1, None, "tokens per step E in [1, k + 1]",
     lambda e, k, column: acceptance.from_tokens_per_step(e, k, f"{column} (tokens per step)")),
    ("draft_acceptance_rate", 0, 1, "a fraction of draft tokens accepted, in [0, 1]",
     lambda r, k, column: acceptance.from_draft_acceptance_rate(r, k)),
    ("acceptance_rate_percent", 0, 100, "a percentage of draft tokens accepted, in [0, 100]",
     lambda r, k, column: acceptance.from_vllm_percent(r, k)),
    ("alpha", 0, 1, "the per-token acceptance α, in [0, 1]",
     lambda a, k, column: acceptance.from_alpha(a, k)),
)


@lru_cache(maxsize=65536)
def _convert(form: str, value: float, k: int, column: str):
    """One number and k -> acceptance.Acceptance (frozen, so shared): a large file repeats them."""
    convert = next(c for key, *_, c in _SINGLE_NUMBER_FORMS if key == form)
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
                raise _RowError(col("survival"), f"'{v['survival']}' is not a list of numbers; expected "
                                "p_1;p_2;...;p_k, each in [0, 1]") from None
            return acceptance.from_survival(surv, "per-position acceptance"), col("survival")
        if "drafts" in v and "accepted_tokens" in v:
            drafts = _number(rec, "drafts", errors, lo=0, strict_lo=True, what="a count of drafts > 0")
            accepted = _number(rec, "accepted_tokens", errors, lo=0, what="a count of accepted tokens ≥ 0")
            draft_tokens = _number(rec, "draft_tokens", errors, lo=0, what="a count of draft tokens ≥ 0")
            if drafts is None or accepted is None:
                return None, None
            return acceptance.from_counts(accepted, drafts, draft_tokens, k), col("accepted_tokens")
        for key, lo, hi, what, _ in _SINGLE_NUMBER_FORMS:
            if key not in v:
                continue
            value = _number(rec, key, errors, lo=lo, hi=hi, what=what)
            if value is None:
                return None, None
            return _needs_k(k, col(key), lambda kk, key=key, value=value: _convert(key, value, kk, col(key))), col(key)
    except _RowError as exc:
        errors.append(exc)
        return None, None
    except SpecModelError as exc:
        key = next((c for c in ("survival", "tokens_per_step", "draft_acceptance_rate", "acceptance_rate_percent",
                                "alpha", "accepted_tokens") if c in v), None)
        errors.append(_RowError(col(key) if key else None, str(exc)))
        return None, None
    return None, None


def _needs_k(k, column, make):
    if k is None:
        raise _RowError("k", f"k (draft tokens per step) is needed to read {column} and this file does not "
                             "record it: give it with --k N on the command line or the Past runs page's "
                             "\"k for files that do not record it\" (or add a k column to a CSV)")
    return make(k)


def _preset(kind: str, raw, default: str | None, remarks: list[str], role: str = "model"):
    """(user's text, preset name, the reading): free text matched to a preset (a derivative of a
    known architecture counts, with a remark), else the default with a remark."""
    if raw in (None, ""):
        return None, default, None
    text = str(raw).strip()
    if kind == "GPU":
        hw = _parse_hardware(text)
        found = hw.gpu or _gpu_by_numbers(text)
        if found is not None and hw.gpu is None:
            remarks.append(f"GPU '{text}' matched to {found.name} by its memory and bandwidth")
        elif found is not None:
            assumed = [part for part in hw.how.split("; ")[1:] if ("no variant named" in part or "taken as" in part)
                       and "GPU count (1)" not in part]
            if assumed:
                remarks.append(f"GPU '{text}': " + "; ".join(assumed))
        reading, why = hw, "GPU not stated" if "not stated" in hw.how else "not recognised"
    else:
        reading = _parse_model(text)
        found = reading.model
        if found is not None and (reading.how == "derivative" or ": " in reading.note):
            remarks.append(f"{role} {reading.note}")
        why = "not recognised" if not reading.note.endswith("name") else reading.note.split(": ")[-1]
    if found is not None:
        return text, found.name, reading
    remarks.append(f"{kind} '{text}' is not a preset ({why}): predicted with {default} (the sidebar choice)")
    return text, default, reading


@lru_cache(maxsize=1024)
def _gpu_by_numbers(text: str):
    """A GPU described by numbers ("48GB GPU, ~860 GB/s"): the preset within 10% on both, if one."""
    bw = re.search(r"(\d+(?:\.\d+)?)\s*(T|G)B/s", text, re.I)
    mem = re.search(r"(\d+(?:\.\d+)?)\s*GB(?!/)", text, re.I)
    if not bw or not mem:
        return None
    bandwidth = float(bw.group(1)) * (1000 if bw.group(2).upper() == "T" else 1)
    memory = float(mem.group(1))
    hits = [g for g in map(presets.find_gpu, presets.gpu_names())
            if abs(g.bandwidth_GBps / bandwidth - 1) <= 0.1 and abs(g.memory_GB / memory - 1) <= 0.1]
    return hits[0] if len(hits) == 1 else None


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
    return _number(rec, "temperature", errors, lo=0, what="a sampling temperature ≥ 0")


def _tokens_count(number: str, kilo: str) -> int:
    return round(float(number) * (1024 if kilo else 1))


def _context_from_text(text) -> int | None:
    """Tokens in the KV cache per sequence, from a workload description: "prefill 32000 tokens" ->
    32000; "ISL/OSL=1K/2K" or "1K in / 1K out" -> input + half the output (K = 1024); ">4k tokens
    context" -> 4096. None when the text says nothing of the kind."""
    return _context_from_str(text) if isinstance(text, str) else None


@lru_cache(maxsize=4096)
def _context_from_str(text: str) -> int | None:
    low = text.lower()
    n = r"(\d+(?:\.\d+)?)\s*(k?)"
    m = re.search(r"prefill(?:\s+length)?\s*(?:of\s*|=\s*)?" + n + r"\s*tokens?", low) or \
        re.search(n + r"\s*(?:tokens?\s+)?prefill", low)
    if m:
        return _tokens_count(m.group(1), m.group(2))
    m = re.search(r"isl\s*/\s*osl\s*[=:]?\s*" + n + r"\s*/\s*" + n, low) or \
        re.search(n + r"\s*(?:tokens?\s+)?in\s*/\s*" + n + r"\s*(?:tokens?\s+)?out", low)
    if m:
        return _tokens_count(m.group(1), m.group(2)) + _tokens_count(m.group(3), m.group(4)) // 2
    m = re.search(r">?\s*" + n + r"\s*tokens?\s+(?:of\s+)?context", low)
    if m:
        return _tokens_count(m.group(1), m.group(2))
    return None


def _dtype_cell(rec: RunRecord, remarks: list[str]) -> str | None:
    raw = rec.values.get("weight_dtype")
    if raw in (None, ""):
        return None
    dtype = _parse_dtype(str(raw))
    if dtype is None:
        remarks.append(f"weight dtype '{raw}' is not one of {', '.join(presets.DTYPE_BYTES)}: the model's own used")
    return dtype


def _engine(rec: RunRecord, remarks: list[str]) -> str | None:
    """The serving engine: the engine column, else the first one named in the method, notes or
    reference columns ("vLLM V1", "in SGLang", "TensorRT-LLM")."""
    raw = rec.values.get("engine")
    if raw not in (None, ""):
        engine = _parse_engine(str(raw)) or _parse_engine(str(raw).replace(" ", ""))
        if engine is None:
            remarks.append(f"engine '{raw}' is not one of {', '.join(presets.ENGINES)}: left empty")
        return engine
    for key, where in (("method", "the method"), ("notes", "the notes"), ("_context", "the reference columns")):
        engine = _parse_engine(str(rec.values.get(key) or ""))
        if engine is not None:
            remarks.append(f"engine {engine} named in {where}")
            return engine
    if "tpu" in str(rec.values.get("gpu") or "").lower():
        remarks.append("engine xla: on a TPU decoding runs as one compiled XLA program")
        return "xla"
    return None


def _validate(rec: RunRecord, defaults: RunDefaults) -> tuple[dict | None, list[Problem]]:
    errors: list[_RowError] = []
    remarks = list(rec.remarks)
    problems: list[Problem] = []
    v = rec.values
    conc = _number(rec, "concurrency", errors, lo=1, what="concurrent requests, a number ≥ 1")
    rate = _number(rec, "request_rate", errors, lo=0, strict_lo=True, what="requests per second > 0")
    if conc is not None and conc != round(conc):
        remarks.append(f"concurrency {conc:g} rounded to {round(conc)}")
    conc = round(conc) if conc is not None else None
    if conc is None and "concurrency" not in v and not any(e.column == rec.headers.get("concurrency") for e in errors):
        errors.append(_RowError(rec.headers.get("concurrency", "concurrency"),
                                "missing; the model predicts at a number of concurrent requests, so give it "
                                "(a request rate alone is not enough)"))
    k = _number(rec, "k", errors, lo=1, hi=MAX_K, whole=True,
                what=f"draft tokens per step, a whole number from 1 to {MAX_K}")
    method_text = v.get("method")
    parsed_method = _parse_method(_clean_name(str(method_text), 200)[0]) if method_text not in (None, "") \
        else None
    if k is None and "k" not in v and parsed_method is not None and parsed_method.k is not None \
            and parsed_method.k <= MAX_K:
        k = parsed_method.k
        remarks.append(f"k = {k} read from the method '{method_text}'")
    if k is None and "k" not in v:
        if "survival" in v:
            try:
                k = len(_survival_values(v["survival"]))
            except ValueError:
                k = None
        elif _num(v.get("draft_tokens")) and _num(v.get("drafts")):
            k = round(_num(v["draft_tokens"]) / _num(v["drafts"]))
            if not 1 <= k <= MAX_K:
                errors.append(_RowError(rec.headers.get("draft_tokens", "draft_tokens"),
                                        f"draft tokens ÷ drafts gives k = {k:,}, outside 1..{MAX_K}; check the counts"))
                k = None
        elif defaults.k is not None and any(key in v for key in ("tokens_per_step", "alpha", "draft_acceptance_rate",
                                                                  "acceptance_rate_percent", "accepted_tokens")):
            k = int(defaults.k)
            remarks.append(f"k not in the file: k = {k} from the settings")
    k_refused = any(e.column == rec.headers.get("k", "k") for e in errors)
    # A tree's accepted path is at most its depth long: E and α convert at the depth, not the width.
    tree_depth = parsed_method.draft_depth if parsed_method else None
    if "draft_depth" in v:
        tree_depth = _num(v["draft_depth"]) if _num(v["draft_depth"]) == _num(v["draft_depth"]) else tree_depth
    acc_k = int(min(k, tree_depth)) if k is not None and tree_depth and tree_depth >= 1 else k
    acc, acc_col = _acceptance(rec, acc_k, errors)
    if k_refused:  # one message about k is enough: drop "k is needed to read ..."
        errors[:] = [e for e in errors if not (e.column == "k" and "is needed to read" in str(e))]
    if acc is not None and k is not None and acc.k != acc_k and "survival" in v:
        remarks.append(f"the per-position list has {acc.k} positions but k = {k}; using k = {acc.k}")
        k = acc.k
    base = _number(rec, "baseline_tok_s", errors, lo=0, strict_lo=True, what="tokens per second > 0")
    spec = _number(rec, "spec_tok_s", errors, lo=0, strict_lo=True, what="tokens per second > 0")
    speedup = _number(rec, "speedup", errors, lo=0, strict_lo=True, what="spec / baseline throughput, > 0")
    if speedup is None and base and spec:
        speedup = spec / base
    elif speedup is not None and base and spec and abs(spec / base - speedup) > 0.02 * speedup:
        remarks.append(f"speedup {speedup:g} disagrees with {spec:g} / {base:g} = {spec / base:.3f}; "
                       "using the throughputs")
        speedup = spec / base
    temperature = _temperature(rec, errors, remarks)
    context = _number(rec, "context_len", errors, lo=0, what="tokens in the KV cache per sequence, ≥ 0")
    t_target = _number(rec, "t_target_ms", errors, lo=0, strict_lo=True, what="the plain step time at batch 1, ms > 0")
    t_draft = _number(rec, "t_draft_ms", errors, lo=0, what="the draft step time at batch 1, ms ≥ 0")
    tp = _number(rec, "tp", errors, lo=1, whole=True, what="tensor-parallel GPUs, a whole number ≥ 1")
    ep = _number(rec, "ep", errors, lo=1, whole=True, what="expert-parallel GPUs, a whole number ≥ 1")
    depth = _number(rec, "draft_depth", errors, lo=1, whole=True, what="sequential draft passes, a whole number ≥ 1")
    branching = _number(rec, "branching", errors, lo=1, whole=True, what="children per tree node, a whole number ≥ 1")
    kv_budget = _number(rec, "draft_kv_budget", errors, lo=1, whole=True,
                        what="tokens of KV the draft reads, a whole number ≥ 1")
    if t_draft is not None and t_target is None:
        errors.append(_RowError(rec.headers.get("t_draft_ms", "t_draft_ms"),
                                "given without t_target_ms; measured timings come as a pair"))
    if acc is None and speedup is None and not errors:
        errors.append(_RowError(None, "neither an acceptance (alpha, tokens_per_step, acceptance rate, counts, "
                                      "per-position rates) nor a measured speedup or throughputs; nothing to compare"))
    if k is None and acc is None and speedup is not None and not any(e.column == "k" for e in errors):
        errors.append(_RowError(rec.headers.get("k", "k"), "missing; give the number of draft tokens per step"))
    if errors:
        return None, [Problem(rec.file, rec.row, e.column, str(e) + "; row not loaded") for e in errors]

    names = _names_of(v, rec.fmt, "gpu" in rec.headers, tp, ep, context, defaults)
    for key in names.changed:
        problems.append(Problem(rec.file, rec.row, rec.headers.get(key, key), "control characters (such as NUL, "
                                "escape or text-direction marks) were removed from this name", "warning"))
    v.update(names.cleaned)
    remarks.extend(names.remarks)
    method, gpu_text, gpu, target_text, target = names.method, names.gpu_text, names.gpu, names.target_text, names.target
    draft_text, draft, tp, ep, context = names.draft_text, names.draft, names.tp, names.ep, names.context
    weight_dtype, engine, fallbacks = names.weight_dtype, names.engine, dict(names.fallbacks)
    depth = depth if depth is not None else names.method_depth
    branching = branching if branching is not None else names.method_branching
    if speedup is None:
        remarks.append("no measured speedup: predicted only")
    row = {
        "file": rec.file, "row": rec.row, "format": rec.fmt, "workload": str(v.get("workload") or "(unnamed)"),
        "concurrency": conc, "request_rate": rate, "k": k if k is not None else (acc.k if acc else None),
        "method": method, "temperature": temperature,
        "alpha": acc.alpha if acc else np.nan, "tokens_per_step": acc.tokens_per_step if acc else np.nan,
        "acceptance_from": acc_col or "", "survival": acc.survival if acc else None,
        "baseline_tok_s": base, "spec_tok_s": spec, "measured_speedup": speedup,
        "gpu": gpu_text, "gpu_preset": gpu, "target_model": target_text, "target_preset": target,
        "draft_model": draft_text, "draft_preset": draft, "context_len": int(context),
        "t_target_ms": t_target, "t_draft_ms": t_draft, "tp": tp, "engine": engine, "draft_depth": depth,
        "branching": branching, "ep": ep, "weight_dtype": weight_dtype, "draft_kv_budget": kv_budget,
        "source": str(v["source"]) if v.get("source") not in (None, "") else None,
        "notes": str(v.get("notes") or ""), "remarks": "; ".join(remarks),
        "_fallbacks": {key: name for key, name in fallbacks.items() if name is not None},
        "_same_tree": bool(method_text and re.search(r"same\s+tree", str(method_text), re.I)),
    }
    problems.extend(Problem(rec.file, rec.row, None, r, "warning") for r in remarks
                    if r.startswith(_WARNING_REMARKS) and " matched to " not in r)
    return row, problems


_NAME_KEYS = ("workload", "notes", "gpu", "target_model", "draft_model", "method")
_TEXT_KEYS = (*_NAME_KEYS, "engine", "weight_dtype", "_context")


@dataclass(frozen=True)
class _Names:
    """What a row's names and settings come to (the part of _validate that depends on text only)."""

    cleaned: tuple  # (key, name without control characters) for _NAME_KEYS present
    changed: tuple  # keys whose text had control characters removed
    method: str
    gpu_text: str | None
    gpu: str
    target_text: str | None
    target: str
    draft_text: str | None
    draft: str | None
    tp: int
    ep: int | None
    context: float
    weight_dtype: str | None
    engine: str | None
    method_depth: int | None
    method_branching: int | None
    fallbacks: tuple  # (kind, name as written) for presets that fell back
    remarks: tuple


def _names_of(v: dict, fmt: str, has_gpu_header: bool, tp, ep, context, defaults: RunDefaults) -> _Names:
    """_names for a row's values: each distinct combination is worked out once (a large file repeats
    the same few names on every row); values that cannot be hashed (JSON lists) are worked out as is."""
    key = (tuple(v.get(k) for k in _TEXT_KEYS), fmt, has_gpu_header, tp, ep, context, defaults)
    try:
        hash(key)
    except TypeError:
        return _names.__wrapped__(*key)
    return _names(*key)


@lru_cache(maxsize=8192)
def _names(texts: tuple, fmt: str, has_gpu_header: bool, tp, ep, context, defaults: RunDefaults) -> _Names:
    v = dict(zip(_TEXT_KEYS, texts))
    rec = RunRecord("", None, fmt, v, {"gpu": "gpu"} if has_gpu_header else {})
    remarks: list[str] = []
    changed = []
    cleaned = []
    for key in _NAME_KEYS:
        if v.get(key) not in (None, ""):
            text, was_changed = _clean_name(str(v[key]), 500 if key == "notes" else 200)
            if was_changed:
                changed.append(key)
            v[key] = text
            cleaned.append((key, text))
    method_text = v.get("method")
    parsed_method = _parse_method(method_text) if method_text not in (None, "") else None
    fallbacks = {"gpu": None, "target": None, "draft": None}
    method = defaults.method
    if parsed_method is not None:
        if parsed_method.method is None:
            remarks.append(f"method '{method_text}' is unknown: predicted as {defaults.method} (the sidebar choice)")
        else:
            method = parsed_method.method
            said = parsed_method.note.split("; ", 1)
            if len(said) > 1:
                remarks.append(f"method: {said[1]}")
    gpu_text, gpu, hw = _preset("GPU", v.get("gpu"), defaults.gpu, remarks)
    if gpu_text is not None and (hw is None or hw.gpu is None) and gpu == defaults.gpu and \
            not any(r.startswith(f"GPU '{gpu_text}' matched") for r in remarks):
        fallbacks["gpu"] = gpu_text
    elif gpu_text is None and rec.fmt == "csv" and "gpu" in rec.headers:
        fallbacks["gpu"] = "(empty)"
    target_text, target, target_match = _preset("model", v.get("target_model"), defaults.target, remarks, "target")
    if target_text is not None and (target_match is None or target_match.model is None):
        fallbacks["target"] = target_text
    draft_default = defaults.draft if defaults.method == "draft_model" and defaults.draft else None
    if target != defaults.target or not draft_default:
        draft_default = _default_draft(target)
    draft_named = v.get("draft_model") or (parsed_method.draft_model if parsed_method else None)
    if method == "draft_model":
        draft_text, draft, draft_match = _preset("model", draft_named, draft_default, remarks, "draft")
        if draft_text is not None and (draft_match is None or draft_match.model is None):
            fallbacks["draft"] = draft_text
        elif draft_text is None and draft and parsed_method is not None:
            remarks.append(f"draft not named in '{method_text}': {draft}, the default draft of {target}")
    else:
        draft_text, draft = draft_named, None
    if method == "draft_model" and draft is None:
        remarks.append(f"no draft model named and no default for {target}: predicted as n-gram")
        method = "ngram"
    if gpu_text is None:
        remarks.append(f"no GPU named: {gpu} (the sidebar choice)")
    tp_text = hw.tp if hw is not None else None
    if tp is not None and tp_text is not None and tp != tp_text:
        remarks.append(f"tp column {tp} used; the hardware text says TP {tp_text}")
    tp = tp or tp_text or defaults.tp
    ep = ep if ep is not None else (hw.ep if hw is not None else None)
    if context is None:
        from_text = _context_from_text(v.get("workload"))
        if from_text is not None:
            context = from_text
            remarks.append(f"context {context} tokens read from the workload '{v.get('workload')}'")
        else:
            context = defaults.context_len
    weight_dtype = _dtype_cell(rec, remarks)
    if weight_dtype is None:
        weight_dtype = target_match.weight_dtype if target_match is not None and target_match.model else None
    engine = _engine(rec, remarks)
    return _Names(tuple(cleaned), tuple(changed), method, gpu_text, gpu, target_text, target, draft_text, draft, tp,
                  ep, context, weight_dtype, engine, parsed_method.draft_depth if parsed_method else None,
                  parsed_method.branching if parsed_method else None,
                  tuple((kind, name) for kind, name in fallbacks.items() if name is not None), tuple(remarks))


def _fill_missing_alpha(rows: list[dict]) -> None:
    """A row with a measured speedup but no acceptance (a mixed workload) is predicted with the mean
    α of the rows of the same file, target and draft that do have one, and says so."""
    peers: dict[tuple, list[float]] = {}
    for r in rows:
        if not np.isnan(r["alpha"]):
            peers.setdefault((r["file"], r["target_preset"], r["draft_preset"]), []).append(r["alpha"])
    means: dict[tuple, float] = {}
    for row in rows:
        if not np.isnan(row["alpha"]):
            continue
        group = (row["file"], row["target_preset"], row["draft_preset"])
        found = peers.get(group)
        if found:
            if group not in means:
                means[group] = float(np.mean(found))
            alpha = means[group]
            row["alpha"] = alpha
            row["acceptance_from"] = "mean α of the file's other rows"
            row["remarks"] = "; ".join(filter(None, [row["remarks"], f"no acceptance in this row: predicted with "
                                                      f"α = {alpha:.2f}, the mean of the {len(found)} other rows "
                                                      "of this file with this target and draft"]))
        else:
            row["remarks"] = "; ".join(filter(None, [row["remarks"], "no acceptance in this row and no other row "
                                                      "to borrow it from: not predicted"]))


# --- samples shipped with the app -----------------------------------------------------------------

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_runs"
SAMPLES = {  # label -> files in sample_runs/ (see sample_runs/README.md)
    "Seed runs": ("seed_runs.csv",),
    "Two workloads (illustrative)": ("multi_workload.csv",),
    "vllm bench serve pair": ("vllm_bench_eagle_k3.json", "vllm_bench_baseline.json"),
    "guidellm sweep": ("guidellm_sweep.csv",),
}


def sample_files(label: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of one sample set, ready for read_runs."""
    if label not in SAMPLES:
        raise SpecModelError(f"unknown sample '{label}'; choose one of: {', '.join(SAMPLES)}")
    return [(name, (SAMPLE_DIR / name).read_bytes()) for name in SAMPLES[label]]
