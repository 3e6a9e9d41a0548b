"""How every command prints: JSON indented and never NaN (a number that is not known is null), and every
character through the one terminal-safety function (SafeStream: cli.router.main wraps stdout and stderr).

A command with a large table (`runs` on 200,000 rows) prints it with print_json_table: the
document print_json would print of {table_key: [row dicts], **rest}, but with each row
on one line (json.dumps of its dict). The json module's own encoder writes every value, a chunk of
CHUNK_ROWS rows of a column at a time, and each chunk's rows are written as they are made, so neither
every row's dict nor the whole text (300 MB) is ever held."""

from __future__ import annotations

import codecs
import contextlib
import functools
import itertools
import json
import math
import sys

import numpy as np

from specmodel.model.presets import NamedPreset
from specmodel.text import MAX_MESSAGE_CHARS, encodable, terminal_text

# chosen: rows encoded and written at a time, so memory stays bounded whatever the row count (writing by
# chunks took 200,000 rows from a 3.4 GB to a 1.1 GB peak, commit 455b321). Measured (bench runs_large's file,
# 2-core machine): 1,000 rows a chunk (~2 MB of text) took the page faults of `runs --json` from ~430,000 to
# ~190,000 and its system time from ~1.1 s to ~0.6 s against 5,000; 250 to 2,000 fault the same.
CHUNK_ROWS = 1000
_ROW_SEP = ",\n    "  # between the rows of the table (and the items of a long list in rest)


class SafeStream:
    """A text stream whose every write passes through text.terminal_text: no label, file name or server
    text can move the cursor, clear a line or reverse the text of the terminal it is printed on. Each line
    is cut at MAX_MESSAGE_CHARS characters with "…" (a 5 MB label or a header of a million columns printed
    a line of megabytes), except inside `document()` (JSON, YAML: a cut would break it; their text from
    users and servers is cut where it is read). A character the stream's encoding cannot write is spelled
    in ASCII (text.encodable: α -> alpha, ≠ -> !=), so the command prints on any locale."""

    def __init__(self, inner):
        self._inner = inner
        self._column = 0  # characters written on the current line
        self.whole_lines = False  # inside document(): lines are written whole
        try:
            encoding = codecs.lookup(getattr(inner, "encoding", None) or "utf-8").name
        except LookupError:
            encoding = "ascii"
        self._encoding = None if encoding.startswith("utf") else encoding  # None: writes any character

    def write(self, text: str) -> int:
        text = terminal_text(text)
        if not self.whole_lines:
            text = self._cut(text)
        if self._encoding is not None and not text.isascii():
            text = encodable(text, self._encoding)
        return self._inner.write(text)

    def _cut(self, text: str) -> str:
        limit = MAX_MESSAGE_CHARS
        if "\n" not in text and self._column + len(text) <= limit:  # the common case: nothing to cut
            self._column += len(text)
            return text
        lines = text.split("\n")
        for i, line in enumerate(lines):
            column = 0 if i else self._column
            if column + len(line) > limit:  # the line is cut once: "…" at its end, nothing after it
                lines[i] = line[:max(0, limit - 1 - column)] + "…" if column < limit else ""
                self._column = limit
            else:
                self._column = column + len(line)
        return "\n".join(lines)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@contextlib.contextmanager
def document(stream=None):
    """Inside this block the stream (sys.stdout by default) writes lines whole: a JSON or YAML document."""
    stream = stream or sys.stdout
    was = getattr(stream, "whole_lines", None)
    if was is not None:
        stream.whole_lines = True
    try:
        yield stream
    finally:
        if was is not None:
            stream.whole_lines = was


def print_json(obj) -> None:
    with document():
        print(json.dumps(obj, indent=2, allow_nan=False))


def print_or_write(text: str, path: str | None) -> None:
    """A document (rules YAML, dashboard JSON) written to `path` (whole or not at all), else printed, its lines whole."""
    if path:
        from specmodel.files import write_file

        write_file(path, text)
        return
    with document():
        print(text, end="")


def json_value(value):
    """A cell as JSON reads it: NaN, ±inf and pandas' NA -> None, floats to 4 decimals, numpy scalars
    as Python's, tuples as lists, a resolved preset (a GPU given by its numbers in a run's column) as its name."""
    if value is None or type(value).__name__ == "NAType":
        return None
    if isinstance(value, NamedPreset):
        return value.name
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else round(value, 4)
    if hasattr(value, "item"):  # numpy scalars
        return json_value(value.item())
    if isinstance(value, tuple):
        return [json_value(v) for v in value]
    return value


def _whole(value):
    value = json_value(value)
    return None if value is None else int(value)


# chosen (derived from float precision, not measured):
_EXACT_BELOW = 1e11  # |x| · 10^4 < 2^53: numpy's rounding of x · 10^4 is round()'s but within two ulps of a half


def _rounded(values: np.ndarray, whole: bool) -> list:
    """[json_value(x)] of a float array (int(...) of it for whole keys), rounded in bulk.

    round(x, 4) is the double nearest q / 10^4, q the integer nearest x · 10^4 (ties to even): the same
    as np.rint(x * 1e4) / 1e4 unless x · 10^4 lies within two ulps of a half (its floating-point product
    may round the other way) or beyond _EXACT_BELOW: those cells go through json_value; NaN and ±inf are None."""
    finite = np.isfinite(values)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = values * 1e4
        size = np.abs(scaled)
        bulk = (np.abs(values) < _EXACT_BELOW) & (np.abs(size - np.floor(size) - 0.5) > 2 * np.spacing(size))
        rounded = np.where(bulk, np.rint(scaled) / 1e4, 0.0)
    out = (np.trunc(rounded).astype(np.int64) if whole else rounded).astype(object)
    out[~finite] = None
    one = _whole if whole else json_value
    for at in np.flatnonzero(finite & ~bulk).tolist():  # ties and the very large: one at a time
        out[at] = one(float(values[at]))
    return out.tolist()


def _column(values, whole: bool) -> tuple:
    """(cells, whether every cell is a scalar): a float array (rounded a chunk at a time), the cells coded
    (_coded: a column of few distinct values) or a list of the cells as JSON reads them; None for a key the
    frame lacks (null)."""
    import pandas as pd

    if values is None:
        return None, True
    dtype = values.dtype
    if pd.api.types.is_float_dtype(dtype):
        cells = values.to_numpy(dtype=float, na_value=np.nan)
        codes, distinct = pd.factorize(cells.view(np.int64))  # by their bits: -0.0 is not 0.0
        if len(distinct) > _few(len(cells)):
            return cells, True
        return _coded(codes, _rounded(distinct.view(float), whole)), True
    plain_bool = pd.api.types.is_bool_dtype(dtype) and not whole  # a whole key's booleans print as 0 and 1
    if (pd.api.types.is_integer_dtype(dtype) or plain_bool) and not values.hasnans \
            and not isinstance(dtype, pd.CategoricalDtype):
        cells = values.to_numpy(dtype=bool if plain_bool else np.int64)
        codes, distinct = pd.factorize(cells)
        return (_coded(codes, distinct.tolist()) if len(distinct) <= _few(len(cells)) else cells.tolist()), True
    if not whole and isinstance(dtype, pd.StringDtype):
        return _coded(*_factorized(values.to_numpy(dtype=object))), True
    cells = values.to_numpy(dtype=object).tolist()
    if set(map(type, cells)) <= {type(None), float, type(pd.NA)} and values.isna().all():  # null on every row
        return _coded(np.full(len(cells), -1), []), True
    if whole:
        cells = list(map(_whole, cells))
    else:  # what json_value leaves as it is, left; the rest through it
        cells = [v if type(v) in _AS_IS else json_value(v) for v in cells]
    kinds = set(map(type, cells))
    if kinds <= {str, type(None)} or kinds <= {bool, type(None)}:  # (never both: factorize takes True for 1)
        codes, distinct = pd.factorize(np.array(cells, dtype=object))
        return _coded(codes, distinct.tolist()), True
    return cells, not any(issubclass(t, (list, tuple, dict)) for t in kinds)


def _factorized(cells: np.ndarray) -> tuple:
    """pd.factorize of an object array, by object first where its cells are few objects (a review's remark: a few
    hundred copies of one long text on 200,000 rows, each compared whole when factorized by value)."""
    import pandas as pd

    by_id, ids = pd.factorize(np.fromiter(map(id, cells), dtype=np.int64, count=len(cells)))
    if len(ids) > _few(len(cells)):
        return pd.factorize(cells)
    first = np.empty(len(ids), dtype=np.int64)
    first[by_id[::-1]] = np.arange(len(cells) - 1, -1, -1)  # each object's first row
    codes, distinct = pd.factorize(cells[first])
    return codes[by_id], distinct


def _few(rows: int) -> int:
    """chosen (speed only, the same text): distinct values (or pairs of them) a column may hold to be coded."""
    return max(64, rows // 4)


def _coded(codes: np.ndarray, distinct: list) -> tuple:
    """A column of few distinct values (texts, booleans, whole numbers, numbers as json_value rounds them, None)
    as (the code of each cell, -1 for None; each distinct value): (the codes, the JSON text of each value, "null"
    last, where -1 points): a column repeats a few values (a workload, a remark, k) on many rows, each encoded
    once for the whole table."""
    texts = np.array(_each("", list(distinct) + [None]), dtype=object)
    codes = codes.astype(np.int32)
    codes[codes < 0] = len(texts) - 1
    return codes, texts


_AS_IS = {str, int, bool, type(None)}


# The json module's encoder writes every value. A chunk of a column of scalars is one call whose item separator
# is a NUL character, which no scalar's text holds (strings come out ASCII with control characters escaped) and
# no head (keys come out escaped too), followed by what goes before each cell in its row (`head`); a column
# with lists or dicts in it is encoded a cell at a time.
_ONE = json.JSONEncoder(allow_nan=False, check_circular=False).encode


@functools.lru_cache(maxsize=256)  # chosen: the heads of one table's columns, a few dozen
def _scalars(head: str):
    """An encoder of a list of scalars whose items are separated by a NUL character and `head`."""
    return json.JSONEncoder(allow_nan=False, check_circular=False, separators=("\0" + head, ": ")).encode


def _each(head: str, cells: list) -> list[str]:
    """head + the JSON text of each scalar of `cells`."""
    return (head + _scalars(head)(cells)[1:-1]).split("\0")


def _texts(column: tuple, whole: bool, lo: int, hi: int, head: str) -> list[str] | str:
    """head + the JSON text of each cell of rows lo..hi of a column (as _joined gives it: a coded column's texts
    hold what goes before them), or head + the one text where every cell of the chunk has it."""
    cells, scalars = column
    if isinstance(cells, tuple):  # _coded
        codes, texts = cells[0][lo:hi], cells[1]
        if (codes == codes[0]).all():
            return head + texts[codes[0]]
        picked = texts[codes].tolist()
        return list(map(head.__add__, picked)) if head else picked
    if not isinstance(cells, list):
        if not np.isfinite(cells[lo:hi]).any():
            return head + "null"
        return _each(head, _rounded(cells[lo:hi], whole))
    if not scalars:
        return [head + t for t in map(_ONE, cells[lo:hi])]
    return _each(head, cells[lo:hi])


def _joined(keys: list[str], columns: list, whole: frozenset, n: int) -> list[tuple]:
    """(the text before the key's value in a row, ', "k": ', the column, whether whole) per key, where a coded
    column's texts hold that text (the head is then "") and keys next to each other whose columns are coded (a key
    the frame lacks: null on every row) are one coded column with the text from the first one's key to the last
    one's value (', "a": "x", "k": 4'), while their pairs of values stay few (_few): fewer values per row to put
    in its line. `columns` is emptied as they are taken (each table held once)."""
    import pandas as pd

    out: list[tuple] = []
    for j, key in enumerate(keys):
        column, columns[j] = columns[j], None
        head = (", " if j else "") + json.dumps(key) + ": "
        cells = column[0]
        if cells is None:
            cells = (np.zeros(n, dtype=np.int32), np.array(["null"], dtype=object))
        if not isinstance(cells, tuple):
            out.append((head, column, key in whole))
            continue
        texts = np.array([head + t for t in cells[1].tolist()], dtype=object)
        before = out[-1][1][0] if out else None
        if isinstance(before, tuple):
            pairs = before[0].astype(np.int64) * len(texts) + cells[0]
            codes, distinct = pd.factorize(pairs)
            if len(distinct) <= _few(n):
                width = len(texts)
                merged = list(map(str.__add__, before[1][distinct // width].tolist(), texts[distinct % width].tolist()))
                out[-1] = ("", ((codes.astype(np.int32), np.array(merged, dtype=object)), True), False)
                continue
        out.append(("", ((cells[0], texts), True), False))
    return out


def _write_rows(out, keys: list[str], columns: list, whole: frozenset, n: int) -> None:
    """The rows, one per line ('\n    {"key": value, ...}', ',\n    ' between them), a chunk of
    CHUNK_ROWS at a time: each row the text json.dumps gives its dict, one join of the texts of the cells that
    differ in the chunk, each holding the text of the row before it (the cells that do not differ among them)."""
    joined = _joined(keys, columns, whole, n)
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(n, lo + CHUNK_ROWS)
        varying, before = [], _ROW_SEP + "{"  # the text before the next cell that differs
        for head, column, whole_key in joined:
            texts = _texts(column, whole_key, lo, hi, before + head)
            if isinstance(texts, str):
                before = texts
            else:
                varying.append(texts)
                before = ""
        tail = before + "}"
        chunk = "".join(itertools.chain.from_iterable(zip(*varying, itertools.repeat(tail)))) if varying \
            else tail * (hi - lo)
        out.write(chunk[1:] if lo == 0 else chunk)  # the first row after "[": no comma before it


def print_json_table(table_key: str, frame, keys: list[str], whole: frozenset = frozenset(), rest=None,
                     out=None) -> None:
    """Print {table_key: rows, **rest} as print_json would (indented; rows' values as json_value
    makes them, `whole` keys as int), where rows are frame's columns `keys` (a key the frame lacks is
    null), one row per line. A list in rest is printed one item per line (json.dumps of each), a chunk of
    items at a time."""
    out = out or sys.stdout
    with document(out):
        _print_table(out, table_key, frame, keys, whole, rest or {})


def _print_table(out, table_key: str, frame, keys: list[str], whole: frozenset, rest: dict) -> None:
    columns = [_column(frame[key] if key in frame.columns else None, key in whole) for key in keys]
    out.write("{\n  " + json.dumps(table_key) + ": [")
    _write_rows(out, list(keys), columns, whole, len(frame))
    out.write("\n  ]" if len(frame) else "]")
    for key, value in rest.items():  # a list one item per line, anything else indented
        out.write(",\n  " + json.dumps(key) + ": ")
        if isinstance(value, list) and value:
            for lo in range(0, len(value), CHUNK_ROWS):
                out.write(("[\n    " if lo == 0 else _ROW_SEP) + _ROW_SEP.join(map(_ONE, value[lo:lo + CHUNK_ROWS])))
            out.write("\n  ]")
        else:
            out.write(json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n  "))
    out.write("\n}\n")
    out.flush()


def across_k_lines(across: dict | None, label: str, indent: str) -> list[str]:
    """A schedule across k (show.decisions.Decided.to_dict) under a command's decision: `label` then its line, and the
    runs that would pin its switch at `indent`; [] where there is none (`predict`, `scrape`, `fleet`, `plan`)."""
    if not across:
        return []
    return [f"{label}{across['decision_line']}"] + ([f"{indent}{across['pin']}"] if across.get("pin") else [])
