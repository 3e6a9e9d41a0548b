"""How every command prints: JSON indented and never NaN (a number that is not known is null), and every
character through the one terminal-safety function (SafeStream: cli.router.main wraps stdout and stderr).

A command with a large table (`runs` on 200,000 rows) prints it with print_json_table: the same
document as print_json would print of {table_key: [row dicts], **rest}, with each row on one line,
encoded a column at a time and written a chunk of rows at a time, so neither per-row Python dicts
nor the whole text are ever held (print_json's text of 200,000 rows was 300 MB, its dicts 2 GB)."""

from __future__ import annotations

import json
import math
import numbers
import sys
from itertools import repeat

import numpy as np

from specmodel.limits import terminal_text

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


def _encode(value, whole: bool) -> str:
    return json.dumps(_whole(value) if whole else json_value(value), allow_nan=False)


class _Column:
    """One column's JSON text, '"key": value', for any slice of rows; made from the column's values
    in bulk (numbers formatted as arrays, repeated text encoded once per distinct value)."""

    def __init__(self, key: str, values, whole: bool, before: str = ""):
        self.prefix = before + json.dumps(key) + ": "
        self.whole = whole
        self.kind, self.data = self._prepare(values)

    def _prepare(self, values):
        import pandas as pd

        if values is None:
            return "constant", self.prefix + "null"
        dtype = values.dtype
        if pd.api.types.is_bool_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype) and not values.hasnans:
            return "codes", (values.to_numpy(dtype=bool).astype(np.int8),
                             np.array([self.prefix + "false", self.prefix + "true"], dtype=object))
        if pd.api.types.is_float_dtype(dtype):
            data = values.to_numpy(dtype=float, na_value=np.nan)
            if not ((data == 0) & np.signbit(data)).any():  # -0.0 and 0.0 are one value to factorize
                codes, uniques = pd.factorize(data, use_na_sentinel=True)
                if 2 * len(uniques) < len(data):  # few distinct numbers: each formatted once
                    texts = _float_texts(np.asarray(uniques, dtype=float), self.prefix, self.whole)
                    return "codes", (np.where(codes < 0, len(texts), codes),
                                     np.array([*texts, self.prefix + "null"], dtype=object))
            return "float", data
        if pd.api.types.is_integer_dtype(dtype):
            mask = values.isna().to_numpy()
            return "int", (values.to_numpy(dtype="int64", na_value=0), mask)
        cells = values.to_numpy(dtype=object)
        numeric_types = {t for t in set(map(type, cells))
                         if issubclass(t, (numbers.Number, np.generic)) and not issubclass(t, str)}
        if len(numeric_types) <= 1:  # equal numbers of two types (1, 1.0, True) would share one code
            try:
                codes, uniques = pd.factorize(cells, use_na_sentinel=True)
            except TypeError:  # unhashable cells (lists): each encoded as it is
                pass
            else:
                texts = [self.prefix + _encode(u, self.whole) for u in uniques]
                return "codes", (np.where(codes < 0, len(texts), codes),
                                 np.array([*texts, self.prefix + "null"], dtype=object))
        return "cells", cells

    def texts(self, lo: int, hi: int) -> list[str]:
        kind, data, prefix = self.kind, self.data, self.prefix
        if kind == "constant":
            return [data] * (hi - lo)
        if kind == "codes":
            codes, texts = data
            return texts[codes[lo:hi]].tolist()
        if kind == "cells":
            return [prefix + _encode(v, self.whole) for v in data[lo:hi]]
        if kind == "int":
            values, mask = data
            out = [prefix + str(v) for v in values[lo:hi].tolist()]
            for i in np.flatnonzero(mask[lo:hi]):
                out[i] = prefix + "null"
            return out
        return _float_texts(data[lo:hi], prefix, self.whole)


def _float_texts(values: np.ndarray, prefix: str, whole: bool) -> list[str]:
    """'"key": value' of floats: Python's round() and repr(), as json.dumps of round(x, 4); null where
    not finite."""
    finite = np.isfinite(values)
    kept = values[finite].tolist()
    rounded = map(round, kept, repeat(4))
    if whole:
        encoded = [prefix + str(int(v)) for v in rounded]
    else:
        encoded = [prefix + r for r in map(float.__repr__, rounded)]
    if finite.all():
        return encoded
    out = np.full(len(values), prefix + "null", dtype=object)
    out[finite] = encoded
    return out.tolist()


def print_json_table(table_key: str, frame, keys: list[str], whole: frozenset = frozenset(), rest=None,
                     renamed: dict | None = None, out=None) -> None:
    """Print {table_key: rows, **rest} as print_json would (indented; rows' values as json_value
    makes them, `whole` keys as int), where rows are frame's columns `keys` (a key the frame lacks is
    null; renamed maps an output key to the frame column it reads), one row per line."""
    out = out or sys.stdout
    renamed = renamed or {}
    n = len(frame)
    # each column's texts carry what goes before them in a row ("{" or ", "), so a chunk is one join of
    # its columns' texts interleaved (no per-row tuple or join)
    columns = [_Column(key, frame[renamed.get(key, key)] if renamed.get(key, key) in frame.columns else None,
                       key in whole, "{" if at == 0 else ", ") for at, key in enumerate(keys)]
    out.write("{\n  " + json.dumps(table_key) + ": [")
    width = len(columns) + 1
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(n, lo + CHUNK_ROWS)
        cells: list = [None] * ((hi - lo) * width)
        for at, column in enumerate(columns):
            cells[at::width] = column.texts(lo, hi)
        cells[len(columns)::width] = [_ROW_END if columns else "{" + _ROW_END] * (hi - lo)
        text = "".join(cells)[:-len(_ROW_END) + 1]  # the last row's ",\n    " goes
        out.write(("\n    " if lo == 0 else ",\n    ") + text)
    out.write("\n  ]" if n else "]")
    for key, value in (rest or {}).items():  # a list one item per line, anything else indented
        if isinstance(value, list) and value:
            text = "[\n    " + ",\n    ".join(json.dumps(item, allow_nan=False) for item in value) + "\n  ]"
        else:
            text = json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n  ")
        out.write(",\n  " + json.dumps(key) + ": " + text)
    out.write("\n}\n")
    out.flush()
