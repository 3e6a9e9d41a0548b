"""Which reader a file is for: its bytes decoded to text, then told apart by their content (per-request
spec-decode JSON, vLLM log lines, a benchmark JSON, guidellm's CSV, else a plain CSV)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from specmodel.text import safe_text
from specmodel import bounds
from specmodel.errors import SpecModelError
from specmodel.files import load_json, read_file
from specmodel.runs import logs, spec_json
from specmodel.runs.csv_plain import read_plain_csv
from specmodel.runs.guidellm import read_guidellm_csv, read_guidellm_json
from specmodel.runs.records import Problem, RunDefaults, RunRecord
from specmodel.runs.vllm_bench import read_vllm_bench, read_vllm_bench_list


def name_and_bytes(item) -> tuple[str, bytes]:
    """(name, bytes) of a path or of a (name, bytes or text) pair; the name as it may be shown (the one
    text-safety function: one line, at most 200 characters: an uploaded file's name is the user's text)."""
    if isinstance(item, (str, Path)):
        path = Path(item)
        return safe_text(path.name), read_file(path)
    name, data = item
    if isinstance(data, str):
        data = data.encode()
    return safe_text(name), bytes(data)


def _fail(name: str, message: str) -> tuple[list[RunRecord], list[Problem]]:
    """No records, and one Problem naming the file."""
    return [], [Problem(name, None, None, message)]


def read_one(name: str, data: bytes, defaults: RunDefaults) -> tuple[list[RunRecord], list[Problem]]:
    """The records and problems of one file; a file no reader takes is one Problem naming it."""
    if len(data) > bounds.MAX_FILE_BYTES:
        return _fail(name, f"the file is {len(data) / 1e6:.1f} MB, over the {bounds.MAX_FILE_BYTES / 1e6:.0f} MB limit; "
                           "split it or keep only the summary rows")
    if not data.strip():
        return _fail(name, "the file is empty; expected a CSV header and one row per run, or a JSON benchmark result")
    text, problem, warning = decode_bytes(data)
    if text is None:
        return _fail(name, problem)
    records, problems = _read_text(name, text, defaults)
    if warning is not None:
        problems.insert(0, Problem(name, warning[0], None, warning[1], "warning"))
    return records, problems


def _read_text(name: str, text: str, defaults: RunDefaults) -> tuple[list[RunRecord], list[Problem]]:
    stripped = text.lstrip()
    try:
        if spec_json.looks_like_spec_json(stripped):
            return spec_json.read(name, stripped, defaults)
        if logs.looks_like_log(stripped):
            return logs.read(name, text, defaults)
        if stripped[:1] in "{[":
            return read_json(name, stripped)
        head = stripped[:65_536].splitlines()  # the first line, without splitting a 13 MB file into lines
        first_line = head[0] if len(head) > 1 or len(stripped) <= 65_536 else stripped.splitlines()[0]
        if first_line.startswith("Run Info") or ("Benchmark" in first_line and "Token Throughput" in first_line):
            return read_guidellm_csv(name, text)
        return read_plain_csv(name, text, defaults)
    except SpecModelError as exc:
        return _fail(name, str(exc))


# Byte-order marks of the Unicode encodings a spreadsheet may save (longest first: UTF-32 LE
# starts with UTF-16 LE's mark).
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"), (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"),
         (b"\xff\xfe", "utf-16-le", "UTF-16"), (b"\xfe\xff", "utf-16-be", "UTF-16"))


MAX_BAD_BYTES = 100  # chosen: bytes that are not UTF-8 in a UTF-8 file, read as '�' and named; more: not text


def _row_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode_bytes(data: bytes) -> tuple[str | None, str | None, tuple[int, str] | None]:
    """(text, None, warning), or (None, why it is not text, None). UTF-8 (with or without a byte-order
    mark), UTF-16/32 with a byte-order mark; a UTF-8 file with a few bytes that are not UTF-8 is read with
    '�' for them and a warning (row, message) naming the first one's byte offset and row; a file with no
    UTF-8 character beyond ASCII is read as Windows-1252 (spreadsheets on Windows) with a warning naming
    the first byte that is not UTF-8. Never silently: one bad byte no longer turned a UTF-8 file with
    accents into Windows-1252 mojibake."""
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(codec), None, None
            except UnicodeDecodeError as exc:
                return None, (f"starts with a {label} byte-order mark but byte {exc.start + len(bom)} is not "
                              f"{label}; save it again as UTF-8 CSV or JSON"), None
    if b"\x00" in data[:8192]:
        return None, "this is not a text file (it contains binary data); expected CSV or JSON", None
    try:
        return data.decode("utf-8-sig"), None, None
    except UnicodeDecodeError as exc:
        first = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
    where = f"byte {first:,}, row {_row_of(data, first):,}"
    replaced = data.decode("utf-8-sig", "replace")
    if re.search("[^\x00-\x7f\ufffd]", replaced):  # UTF-8 beyond ASCII is there: a UTF-8 file with bad bytes
        bad = replaced.count("\ufffd") - data.count("\ufffd".encode())
        if bad > MAX_BAD_BYTES or _unreadable(replaced):
            return None, (f"this is not UTF-8 text ({bad:,} places cannot be decoded, the first at {where}); "
                          "save it again as UTF-8 CSV or JSON"), None
        return replaced, None, (_row_of(data, first), f"is UTF-8 but for {bad:,} place(s) that are not (the first at "
                                f"{where}): read as '�' there; save the file again as UTF-8")
    try:
        text = data.decode("cp1252")  # spreadsheets on Windows; still text
    except UnicodeDecodeError:
        return None, f"this is not UTF-8 text (byte {first:,} cannot be decoded, row {_row_of(data, first):,}); " \
                     "expected CSV or JSON", None
    if _unreadable(text):
        return None, "this is not a text file (unreadable characters); expected CSV or JSON", None
    return text, None, (_row_of(data, first), f"is not UTF-8 (the first byte that is not is at {where}): read as "
                        "Windows-1252, as spreadsheets on Windows save; check accented names, or save the file "
                        "again as UTF-8")


def _unreadable(text: str) -> bool:
    return sum(not (c.isprintable() or c.isspace()) for c in text[:4096]) > 8


def read_json(name: str, text: str) -> tuple[list[RunRecord], list[Problem]]:
    """A benchmark JSON: guidellm's benchmarks.json, or `vllm bench serve` results (one or a list)."""
    try:
        doc = load_json(text)
    except json.JSONDecodeError as exc:
        raise SpecModelError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); expected "
                             "the file `vllm bench serve --save-result` or guidellm writes") from None
    if isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list):
        return read_guidellm_json(name, doc)
    if spec_json.is_aiperf_summary(doc):
        return spec_json.read_aiperf_summary(name, doc)
    if isinstance(doc, dict) and "output_throughput" in doc:
        return read_vllm_bench(name, doc)
    if isinstance(doc, list) and doc and all(isinstance(d, dict) and "output_throughput" in d for d in doc):
        return read_vllm_bench_list(name, doc)
    shape = f"a list of {len(doc)} items" if isinstance(doc, list) else (
        f"an object with keys {', '.join(list(doc)[:6])}" if isinstance(doc, dict) else type(doc).__name__)
    raise SpecModelError(f"JSON of an unknown shape ({shape}); expected `vllm bench serve --save-result` output "
                         "(an object with output_throughput, max_concurrency, ...), guidellm's benchmarks.json "
                         "(an object with a 'benchmarks' list) or AIPerf's profile_export_aiperf.json")
