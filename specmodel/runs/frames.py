"""A table's columns (lists or arrays, one per column) as one DataFrame, each column as pandas infers it:
text as TEXT, plain numbers made by numpy; and a test of a column's cells that looks only at the given ones."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specmodel.model.decide import band_text


# Text columns keep their cells as the Python strings they are (pandas' "str" dtype, python storage): a
# sweep's repeated remark is one string shared by 200,000 rows, where pyarrow storage copies it into each
# (78 MB for one column of the 200,000-row bench file) and takes ~20x as long to build.
TEXT = pd.StringDtype("python", na_value=np.nan)


def frame_of(columns: dict, order: list[str], numeric=()) -> pd.DataFrame:
    """A DataFrame of {column: list} (as pd.DataFrame(columns, columns=order) makes it, `numeric` columns
    through pd.to_numeric(errors="coerce")), each list dropped from `columns` once its column is made, so
    a large table is never held twice; text columns as TEXT."""
    if not any(map(len, columns.values())):  # no rows: the empty table as it always was
        frame = pd.DataFrame(columns, columns=order)
        if len(numeric):
            frame[list(numeric)] = frame[list(numeric)].apply(pd.to_numeric, errors="coerce")
        columns.clear()
        return frame
    made = {}
    for c in order:
        values = columns.pop(c)
        # no row gives it (count() compares each cell with None: look at it only when the first cell is None)
        nones = isinstance(values, list) and (not values or values[0] is None) and values.count(None) == len(values)
        if nones:  # NaN or None without pandas' inference
            made[c] = pd.Series(np.full(len(values), np.nan if c in numeric else None))
        else:
            found = _plain_numbers(values)
            if found is None:
                found = pd.to_numeric(pd.Series(values), errors="coerce") if c in numeric else column_of(values)
            made[c] = found
    return pd.DataFrame(made, columns=order, copy=False)


def column_of(values) -> pd.Series:
    """One column of a table (a list or 1-d array; its positions the index) as pandas infers it, text as
    TEXT."""
    found = _plain_numbers(values)
    if found is not None:
        return found
    if pd.api.types.infer_dtype(values, skipna=True) == "string":
        return pd.Series(values, dtype=TEXT)
    return pd.Series(values)


_PLAIN = {int, float, type(None)}


def _plain_numbers(values) -> pd.Series | None:
    """pd.Series(values) of a list of Python ints (int64), or of ints, floats and Nones (float64, NaN for None),
    made by numpy without pandas' inference (200,000 cells in milliseconds, not a tenth of a second); None for
    any other list (or an int beyond int64)."""
    if not isinstance(values, list) or not values or type(values[0]) not in _PLAIN:  # text: no walk of every cell
        return None
    kinds = set(map(type, values))
    if not kinds <= _PLAIN or kinds == {type(None)}:
        return None
    try:
        return pd.Series(np.array(values, dtype=np.int64 if kinds == {int} else float))
    except OverflowError:
        return None


def cells_that(column: pd.Series, test) -> np.ndarray:
    """test(cell) for every cell of a column as a bool array, looking only at the cells that are not
    None or NaN (a column of 200,000 Nones is not walked)."""
    out = np.zeros(len(column), dtype=bool)
    given = np.flatnonzero(column.notna().to_numpy())
    if given.size:
        cells = column.to_numpy(dtype=object)[given]
        out[given] = np.fromiter(map(test, cells), dtype=bool, count=len(cells))
    return out


def preset_names(column: pd.Series) -> pd.Series:
    """A column of preset names, where some rows hold the preset itself (a GPU or model given by its numbers
    or config.json: runs.gpu_columns, --gpu-spec), as names only: what a table shows and a grid can hold."""
    if column.dtype != object:
        return column
    codes, distinct = pd.factorize(column, use_na_sentinel=True)
    if all(isinstance(v, str) for v in distinct.tolist()):
        return column
    names = np.array([getattr(v, "name", v) for v in distinct.tolist()] + [None], dtype=object)
    return pd.Series(names[codes], index=column.index, dtype=object)


def with_band_text(table: pd.DataFrame) -> pd.DataFrame:
    """The table with "speedup_band": each run's speedup_low–high as shown ("0.68–1.38"; "" without a band)."""
    if "speedup_low" not in table or "speedup_high" not in table:
        return table
    ends = zip(pd.to_numeric(table["speedup_low"], errors="coerce"), pd.to_numeric(table["speedup_high"], errors="coerce"))
    return table.assign(speedup_band=[band_text(lo, hi) if lo == lo and hi == hi else "" for lo, hi in ends])
