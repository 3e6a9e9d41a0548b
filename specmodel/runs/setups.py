"""What tells one run's setup apart from the other setups of the same workload, in a few words.

A file often holds one workload under several setups (a method comparison, two models, two engines, a
k sweep). Lines and chart rows named by workload and concurrency alone then read alike ("GSM8K @ 128"
twelve times); each is named here by the setup columns that differ within its workload, in the user's
own words: "Qwen3-8B, EAGLE-3, k=6, sglang 0.5.9". A workload with one setup gets no name."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specmodel.errors import SpecModelError
from specmodel.model.presets import find_method

# The columns that make a setup, in the order a name lists them (concurrency is the sweep, not the
# setup). Each is read from the user's column where the row has it, else from the preset it matched.
SETUP_COLUMNS = (("target_model", "target_preset"), ("method", None), ("draft_model", "draft_preset"),
                 ("k", None), ("temperature", None), ("gpu", "gpu_preset"), ("tp", None), ("engine", None))
PART_CHARS = 28  # chosen: one column's words are cut to this many characters ("…"); the full text is in the table


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PART_CHARS else text[:PART_CHARS - 1].rstrip() + "…"


def _method_words(value) -> str:
    try:
        return find_method(str(value)).label
    except SpecModelError:
        return str(value)


def _words(column: str, value) -> str:
    """One setup column's value as a name shows it ("" where the row leaves it empty)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)) or str(value).strip() == "":
        return ""
    if column == "method":
        return _method_words(value)
    number = pd.to_numeric(value, errors="coerce") if column in ("k", "temperature", "tp") else None
    if number is not None and pd.notna(number):  # the reader gives numbers here; a text stays as written
        return {"k": f"k={float(number):g}", "temperature": f"temperature {float(number):g}",
                "tp": f"TP={float(number):g}"}[column]
    return _cut(str(value))


def _column_values(table: pd.DataFrame, column: str, preset: str | None) -> pd.Series:
    values = table[column] if column in table else pd.Series([None] * len(table), index=table.index)
    if preset and preset in table:
        empty = values.isna() | values.astype(str).str.strip().eq("")
        values = values.where(~empty, table[preset])
    return values


def _pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One code per distinct (a, b) pair of two non-negative code arrays."""
    return pd.factorize(a.astype(np.int64) * (int(b.max(initial=0)) + 1) + b)[0]


def _word_codes(table: pd.DataFrame, column: str, preset: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(per row a code, the words of each code) of one setup column; each distinct value worded once."""
    codes, distinct = pd.factorize(_column_values(table, column, preset), use_na_sentinel=False)
    worded = np.array([_words(column, v) for v in distinct.tolist()] or [""], dtype=object)
    word_codes, words = pd.factorize(worded[codes] if len(codes) else np.array([], dtype=object))
    return word_codes, np.asarray(words, dtype=object)


def setup_names(table: pd.DataFrame) -> pd.Series:
    """Per row, the setup columns that tell the setups of its workload apart, joined with ", ": in
    SETUP_COLUMNS' order, each column that splits them further than the ones before it ("Qwen3-8B, k=6";
    a GPU that goes with the model is left out). "" where the workload has one setup, or the table has
    no workload column. Columns at a time over the distinct setups, never row by row (a file of 200,000 runs)."""
    if table.empty or "workload" not in table:
        return pd.Series([""] * len(table), index=table.index, dtype=object)
    group = pd.factorize(table["workload"], use_na_sentinel=False)[0]  # an empty workload is a group of its own
    columns = [_word_codes(table, column, preset) for column, preset in SETUP_COLUMNS]
    combo = group
    for codes, _ in columns:
        combo = _pairs(combo, codes)
    first = np.unique(combo, return_index=True)[1]  # one row of each distinct setup of each group
    g = group[first]
    n_groups = int(g.max(initial=-1)) + 1
    key, kinds = g.copy(), np.ones(n_groups, dtype=np.int64)
    name = np.full(len(first), "", dtype=object)
    for codes, words in columns:
        candidate = _pairs(key, codes[first])
        distinct = np.unique(candidate, return_index=True)[1]
        more = np.bincount(g[distinct], minlength=n_groups)
        takes = (more > kinds)[g]  # this column splits the group's setups further
        key = np.where(takes, candidate + len(first), key)  # codes of two ranges: never equal
        key = pd.factorize(key)[0]
        kinds = np.maximum(kinds, more)
        part = np.where(takes, words[codes[first]], "")
        name = np.where(name == "", part, np.where(part == "", name, name + ", " + part))
    return pd.Series(name[np.searchsorted(np.unique(combo), combo)], index=table.index, dtype=object)


def setups_of(table: pd.DataFrame) -> pd.Series:
    """The table's own "setup" column (review.evaluate_runs names them over the whole file), else named here."""
    if "setup" in table:
        return table["setup"].fillna("").astype(str)
    return setup_names(table)
