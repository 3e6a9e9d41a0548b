"""How every command prints: JSON indented and never NaN (a number that is not known is null), and every
character through the one terminal-safety function (SafeStream: cli.router.main wraps stdout and stderr).

A command with a large table (`runs` on 200,000 rows) prints it with print_json_table: the same
document as print_json would print of {table_key: [row dicts], **rest}, with each row on one line,
encoded a column at a time and written a chunk of rows at a time, so neither per-row Python dicts
nor the whole text are ever held (print_json's text of 200,000 rows was 300 MB, its dicts 2 GB).
Every cell's text is an entry of a small table picked by a code per row: each distinct text is
encoded once, a float is its head ('"key": 12') and its four decimals ('.5') from numpy integer
arithmetic (no number formatted one at a time), and neighbouring columns of few combinations share
one table, so a chunk is one join of a few strings a row. The tables hold bytes, each table's text
passed through limits.terminal_text once (JSON's ASCII text never changes there), so the rows go to
the stream's byte buffer as they are: 300 MB are never checked or encoded again a chunk at a time."""

from __future__ import annotations

import codecs
import json
import math
import numbers
import sys

import numpy as np

from specmodel.limits import PRINTABLE_ASCII, terminal_text

CHUNK_ROWS = 5000  # rows encoded and written at a time
_ROW_END = "},\n    "  # after each row of a chunk (the last one's comma and indent cut)


class SafeStream:
    """A text stream whose every write passes through limits.terminal_text: no label, file name or server
    text can move the cursor, clear a line or reverse the text of the terminal it is printed on."""

    def __init__(self, inner):
        self._inner = inner

    def write(self, text: str) -> int:
        return self._inner.write(terminal_text(text))

    def __getattr__(self, name):
        return getattr(self._inner, name)


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, allow_nan=False))


def json_value(value):
    """A cell as JSON reads it: NaN, ±inf and pandas' NA -> None, floats to 4 decimals, numpy scalars
    as Python's, tuples as lists."""
    if value is None or type(value).__name__ == "NAType":
        return None
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


_quoted = json.encoder.encode_basestring_ascii  # what json.dumps does with a str (ensure_ascii, the default)


def _encode(value, whole: bool) -> str:
    if type(value) is int:  # json.dumps of an int, and of json_value's and _whole's of it
        return str(value)
    return json.dumps(_whole(value) if whole else json_value(value), allow_nan=False)


_CODE = np.int32  # a row's code into a table (tables hold at most a few entries a row)


class _Piece:
    """Part of every row's text: row i's text is table[codes[i]] (the tables hold whole '"key": value'
    texts, or a number's head and tail, as terminal-safe bytes); adjacent pieces of few combinations
    merge into one."""

    __slots__ = ("codes", "table", "longest")

    def __init__(self, codes: np.ndarray, table):
        self.codes = codes.astype(_CODE, copy=False)
        self.table = table if isinstance(table, np.ndarray) else _objects(_safe_bytes(table))
        self.longest = max(map(len, self.table.tolist()), default=0)

    def texts(self, lo: int, hi: int) -> list[str]:
        return self.table[self.codes[lo:hi]].tolist()


class _Cells:
    """A column whose cells are encoded one at a time (unhashable values: lists)."""

    def __init__(self, prefix: str, cells: np.ndarray, whole: bool):
        self.prefix, self.cells, self.whole = prefix, cells, whole

    def texts(self, lo: int, hi: int) -> list[bytes]:
        return _safe_bytes([self.prefix + _encode(v, self.whole) for v in self.cells[lo:hi]])


def _safe_bytes(texts: list[str]) -> list[bytes]:
    """Each text as terminal_text leaves it, in bytes (UTF-8): JSON's texts, ASCII without a control character,
    looked at once for the whole list, not one by one."""
    whole = "".join(texts)
    if whole.isascii() and not whole.encode("ascii").translate(None, PRINTABLE_ASCII):
        return [t.encode("ascii") for t in texts]
    return [terminal_text(t).encode("utf-8") for t in texts]


def _objects(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def _compact(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct keys ascending): keys[i] == distinct[codes[i]]; a table over the key range
    where it is short, a sort otherwise."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.intp), keys[:0]
    low = int(keys.min())
    span = int(keys.max()) - low + 1
    if span <= max(4 * keys.size, 1 << 16):
        present = np.zeros(span, dtype=bool)
        shifted = keys - low
        present[shifted] = True
        remap = np.cumsum(present, dtype=np.intp) - 1
        return remap[shifted], np.flatnonzero(present) + low
    distinct, codes = np.unique(keys, return_inverse=True)
    return codes.reshape(-1).astype(np.intp, copy=False), distinct


_TAILS: list = []  # ".0", ".0001" ... ".9999" (a number's four decimals, trailing zeros cut), then "" (no tail)


def _tails() -> np.ndarray:
    if not _TAILS:
        _TAILS.append(_objects([b"." + ((b"%04d" % i).rstrip(b"0") or b"0") for i in range(10_000)] + [b""]))
    return _TAILS[0]


_NO_TAIL = 10_000
_EXACT_BELOW = 1e11  # |x| · 10^4 < 2^53 with four decimals in 15 digits: the digits below are round()'s


def _float_pieces(values: np.ndarray, prefix: str, whole: bool) -> list[_Piece]:
    """'"key": value' of floats as json.dumps(round(x, 4)) writes them (int(round(x, 4)) for whole
    keys), null where not finite, as pieces: a head ('"key": -12') and, but for whole keys, the tail
    ('.5', '.0625'), so no number is formatted one at a time.

    round(x, 4) is the double nearest q / 10^4, q the integer nearest x · 10^4 (ties to even), and
    its repr() is q's digits with the point four from the right and the trailing zeros cut (15
    digits at most below _EXACT_BELOW). x · 10^4 in floating point is within half an ulp of the exact
    product, so its rounding is q unless it lies within two ulps of a half: those cells, and any
    beyond _EXACT_BELOW, go through round() and repr() themselves."""
    n = len(values)
    finite = np.isfinite(values)
    with np.errstate(invalid="ignore"):
        scaled = np.where(finite & (np.abs(values) < _EXACT_BELOW), values, 0.0) * 1e4
    size = np.abs(scaled)
    floor = np.floor(size)
    fraction = size - floor  # exact
    exact = finite & (np.abs(values) < _EXACT_BELOW) & (np.abs(fraction - 0.5) > 2 * np.spacing(size))
    q = (floor + (fraction > 0.5)).astype(np.int64)
    negative = np.signbit(scaled)
    units, tail = np.divmod(q, 10_000)
    if whole:  # int() of the rounded number: no "-0"
        keys = np.where(negative & (units != 0), -units, units)
        words = lambda key: str(key)  # noqa: E731
    else:  # -0.0 apart from 0.0
        keys = np.where(negative, -units - 1, units)
        words = lambda key: str(key) if key >= 0 else "-" + str(-key - 1)  # noqa: E731
    codes = np.empty(n, dtype=np.intp)
    at = np.flatnonzero(exact)
    codes[at], distinct = _compact(keys[at])
    table = [prefix + words(key) for key in distinct.tolist()]
    codes[~finite] = len(table)
    table.append(prefix + "null")
    alone = np.flatnonzero(finite & ~exact)
    if alone.size:
        codes[alone] = np.arange(len(table), len(table) + alone.size)
        table.extend(prefix + _encode(v, whole) for v in values[alone].tolist())
    head = _Piece(codes, table)
    if whole:
        return [head]
    tails = np.full(n, _NO_TAIL, dtype=np.intp)
    tails[at] = tail[at]
    return [head, _Piece(tails, _tails())]


def _column_pieces(key: str, values, whole: bool, before: str, rows: int) -> list:
    """One column's pieces: its '"key": value' text for each of `rows` rows (values None: null)."""
    import pandas as pd

    prefix = before + json.dumps(key) + ": "
    n = rows
    if values is None:
        return [_Piece(np.zeros(rows, dtype=np.intp), [prefix + "null"])]
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype) and not values.hasnans:
        return [_Piece(values.to_numpy(dtype=bool).astype(np.intp), [prefix + "false", prefix + "true"])]
    if pd.api.types.is_float_dtype(dtype):
        return _float_pieces(values.to_numpy(dtype=float, na_value=np.nan), prefix, whole)
    if pd.api.types.is_integer_dtype(dtype):
        mask = values.isna().to_numpy()
        numbers_ = values.to_numpy(dtype="int64", na_value=0)
        codes = np.empty(n, dtype=np.intp)
        codes[~mask], distinct = _compact(numbers_[~mask])
        codes[mask] = len(distinct)
        return [_Piece(codes, [prefix + str(v) for v in distinct.tolist()] + [prefix + "null"])]
    cells = values.to_numpy(dtype=object)
    by_id, objects = _by_identity(cells)
    numeric_types = {t for t in set(map(type, objects.tolist()))
                     if issubclass(t, (numbers.Number, np.generic)) and not issubclass(t, str)}
    if len(numeric_types) <= 1:  # equal numbers of two types (1, 1.0, True) would share one code
        try:
            codes, uniques = pd.factorize(objects, use_na_sentinel=True)
        except TypeError:  # unhashable cells (lists): each encoded as it is
            pass
        else:
            table = [prefix + (_quoted(u) if type(u) is str and not whole else _encode(u, whole)) for u in uniques]
            table.append(prefix + "null")
            codes = np.where(codes < 0, len(uniques), codes)
            return [_Piece(codes if by_id is None else codes[by_id], table)]
    return [_Cells(prefix, cells, whole)]


def _by_identity(cells: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(codes, distinct objects) of long texts by object identity, so that a text many rows share (a
    remark on 200,000 rows) is hashed once, not once a row; (None, cells) for short ones, which hash
    faster than their identities are read."""
    import pandas as pd

    sample = cells[:: max(1, len(cells) // 64)].tolist()
    if sum(len(v) for v in sample if isinstance(v, str)) <= 48 * len(sample):
        return None, cells
    by_id, distinct = pd.factorize(np.fromiter(map(id, cells.tolist()), dtype=np.int64, count=len(cells)))
    first = np.empty(len(distinct), dtype=np.intp)
    first[by_id[::-1]] = np.arange(len(cells) - 1, -1, -1)  # each object's first row
    return by_id, cells[first]


def _merge_into(pieces: list, piece, rows: int) -> None:
    """Append piece to a row's pieces, joined into the last one where the combinations present are few
    (at most an eighth of the rows, 32 MB of text) and the pairs possible at most 4 a row: fewer,
    longer strings for each row's join."""
    last = pieces[-1] if pieces else None
    width = len(piece.table) if isinstance(piece, _Piece) else 0
    if isinstance(last, _Piece) and width and len(last.table) * width <= max(4 * rows, 1 << 16):
        pairs, combos = _compact(last.codes.astype(np.int64) * width + piece.codes)  # a table over the pairs
        if len(combos) <= max(1024, rows // 8) and len(combos) * (last.longest + piece.longest) <= 32_000_000:
            left, right = np.divmod(combos, width)
            pieces[-1] = _Piece(pairs, _objects(list(map(bytes.__add__, last.table[left].tolist(),
                                                         piece.table[right].tolist()))))
            return
    pieces.append(piece)


def print_json_table(table_key: str, frame, keys: list[str], whole: frozenset = frozenset(), rest=None,
                     renamed: dict | None = None, out=None) -> None:
    """Print {table_key: rows, **rest} as print_json would (indented; rows' values as json_value
    makes them, `whole` keys as int), where rows are frame's columns `keys` (a key the frame lacks is
    null; renamed maps an output key to the frame column it reads), one row per line. A list in rest
    is printed one item per line (json.dumps of each); a long list of flat records (a file's problems,
    one a row) is encoded a column at a time as the rows are, to the same text."""
    out = out or sys.stdout
    renamed = renamed or {}
    columns = [(key, frame[renamed.get(key, key)] if renamed.get(key, key) in frame.columns else None) for key in keys]
    out.write("{\n  " + json.dumps(table_key) + ": [")
    _write_rows(_byte_writer(out), columns, whole, len(frame))
    out.write("\n  ]" if len(frame) else "]")
    for key, value in (rest or {}).items():  # a list one item per line, anything else indented
        records = _flat_records(value)
        if records is not None:
            out.write(",\n  " + json.dumps(key) + ": [")
            _write_rows(_byte_writer(out), records, frozenset(), len(value))
            out.write("\n  ]")
            continue
        if isinstance(value, list) and value:
            text = "[\n    " + ",\n    ".join(json.dumps(item, allow_nan=False) for item in value) + "\n  ]"
        else:
            text = json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n  ")
        out.write(",\n  " + json.dumps(key) + ": " + text)
    out.write("\n}\n")
    out.flush()


_RECORDS_AT = 1000  # items from which a list of flat records is encoded a column at a time
_RECORD_VALUES = (str, int, type(None))  # what json.dumps and json_value write alike (no float, no bool)


def _flat_records(value) -> list | None:
    """[(key, object Series)] of a long list of dicts with the same string keys in the same order and
    only strings, ints and None as values (json_value leaves them as json.dumps has them); None for
    anything else."""
    import pandas as pd

    if not isinstance(value, list) or len(value) < _RECORDS_AT or type(value[0]) is not dict:
        return None
    keys = list(value[0])
    if not all(type(k) is str for k in keys):
        return None
    if not all(type(item) is dict and list(item) == keys for item in value):
        return None
    columns = []
    for key in keys:
        cells = [item[key] for item in value]
        if not all(type(v) in _RECORD_VALUES for v in cells):
            return None
        columns.append((key, pd.Series(cells, dtype=object)))
    return columns


def _byte_writer(out):
    """write(bytes) onto `out`: its byte buffer where it has one that takes UTF-8 (its text written so far
    flushed first), else the bytes decoded and written as text."""
    buffer, encoding = getattr(out, "buffer", None), getattr(out, "encoding", None)
    if buffer is not None and encoding and codecs.lookup(encoding).name in ("utf-8", "ascii"):
        out.flush()
        return buffer.write
    return lambda data: out.write(data.decode("utf-8"))


def _write_rows(write, columns: list, whole: frozenset, n: int) -> None:
    """The rows of a table, one per line ('\n    {"key": value, ...}', ',\n    ' between them), from
    (key, values or None) columns, written a chunk at a time through write(bytes)."""
    # each column's texts carry what goes before them in a row ("{" or ", "), and the row's end is one more
    # piece, so a chunk is one join of its pieces' texts interleaved (no per-row tuple, dict or join)
    pieces: list = []  # merged as they are made: the codes of a piece merged away are freed at once
    for at, (key, values) in enumerate(columns):
        for piece in _column_pieces(key, values, key in whole, "{" if at == 0 else ", ", n):
            _merge_into(pieces, piece, n)
    _merge_into(pieces, _Piece(np.zeros(n, dtype=_CODE), [_ROW_END if columns else "{" + _ROW_END]), n)
    width = len(pieces)
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(n, lo + CHUNK_ROWS)
        cells: list = [None] * ((hi - lo) * width)
        for at, piece in enumerate(pieces):
            cells[at::width] = piece.texts(lo, hi)
        text = b"".join(cells)[:-len(_ROW_END) + 1]  # the last row's ",\n    " goes
        write((b"\n    " if lo == 0 else b",\n    ") + text)
