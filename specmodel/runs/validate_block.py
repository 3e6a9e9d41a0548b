"""validate() of a plain CSV file's rows, or of a JSON reader's alike runs (records.blocks_of), a column at a
time (a RecordBlock): what validate() gives row by row, for 200,000 rows in seconds.

Rows that agree in every cell but their load, throughput, speedup and single-number acceptance cells
(a sweep: the same GPU, models, method and k at many concurrencies) validate alike: one of them goes
through validate(), the others take its row with their own numbers, checked and converted a column at
a time. A row whose numbers would make validate() say something of them (an unreadable or
out-of-range number, a fractional concurrency, a speedup that disagrees with the throughputs, an
acceptance the conversion refuses, no concurrency) goes through validate() itself.
tests/test_runs_block.py (CSV) and tests/test_runs_json_block.py (vllm bench serve lists, vLLM logs) compare
both ways on files that mix good and bad rows.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from specmodel.errors import SpecModelError
from specmodel.runs.records import COLUMNS, Problem, RunDefaults
from specmodel.runs.validate import SINGLE_NUMBER_FORMS, convert_single, validate, validate_row

_BLOCK_NUMBERS = {  # column: (low, low excluded) as validate() checks it
    "concurrency": (1, False), "baseline_tok_s": (0, True), "spec_tok_s": (0, True), "speedup": (0, True),
    **{key: (lo, False) for key, lo, *_ in SINGLE_NUMBER_FORMS},
}
_ACCEPTANCE_FORMS = tuple(key for key, *_ in SINGLE_NUMBER_FORMS)
MOSTLY_DISTINCT_ROWS = 256  # a part of at least this many rows, more than half of them unlike, goes row by row
_HIGH = {key: hi for key, _, hi, *_ in SINGLE_NUMBER_FORMS}


def _block_numbers(cells: list, lo: float, strict_lo: bool, hi, every_value: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the numbers, NaN where empty; which cells validate() takes as they are: empty, or a plain number
    in range; which cells are empty). every_value (a JSON reader's values): no cell is empty, a number is
    taken as it is, text as a CSV cell."""
    if every_value:
        values = np.fromiter(map(_plain_value, cells), dtype=float, count=len(cells))
        empty = np.zeros(len(cells), dtype=bool)
    else:  # a cell float() reads, finite, is the number _number() reads (styles are applied; no '%')
        try:
            values = np.fromiter(map(float, cells), dtype=float, count=len(cells))
            empty = np.zeros(len(cells), dtype=bool)
        except ValueError:  # some cell is empty or no number: NaN there
            values = np.fromiter(map(_float_or_nan, cells), dtype=float, count=len(cells))
            empty = ~np.fromiter(map(bool, cells), dtype=bool, count=len(cells))
    with np.errstate(invalid="ignore"):
        fine = np.isfinite(values) & ((values > lo) if strict_lo else (values >= lo))
        if hi is not None:
            fine &= values <= hi
    return values, empty | fine, empty


def _float_or_nan(cell: str) -> float:
    if not cell:
        return np.nan
    try:
        return float(cell)
    except ValueError:
        return np.nan


def _plain_value(value) -> float:
    """A JSON value as validate() reads it when it is a plain number (an int or float, or text a CSV cell
    would be read from); NaN for anything else (true/false, lists, ints beyond a float), which then goes
    through validate() itself."""
    kind = type(value)
    if kind is float:
        return value
    if kind is int:
        return float(value) if -2 ** 63 < value < 2 ** 63 else np.nan
    return _float_or_nan(value) if kind is str else np.nan


def validate_block(block, defaults: RunDefaults, templates_seen: dict | None = None):
    """validate() of every row of a RecordBlock: ({column: values of the rows kept, in row order},
    problems in row order, [(row position, the rows' _fallbacks, rows)], the kept rows' same-tree flags).
    templates_seen: the groups' validate() results, kept between the parts of one file."""
    n = len(block)
    cells = block.cells
    acceptance_free = "survival" not in cells and not ("drafts" in cells and "accepted_tokens" in cells)
    free = [c for c in _BLOCK_NUMBERS if c in cells and (acceptance_free or c not in _ACCEPTANCE_FORMS)]
    keyed = [block.key_cells(c) for c in cells if c not in free]
    if block.context is not None:
        keyed.append(block.context)
    if block.remarks is not None:  # a JSON reader's remarks (a baseline found or not) make rows differ
        keyed.append(list(map(repr, block.remarks)))
    numbers, present, eligible = {}, {}, np.ones(n, dtype=bool)
    for c in free:
        lo, strict_lo = _BLOCK_NUMBERS[c]
        numbers[c], fine, empty = _block_numbers(cells[c], lo, strict_lo, _HIGH.get(c), block.every_value)
        present[c] = ~empty
        eligible &= fine
    if "concurrency" in present:
        conc = numbers["concurrency"]
        with np.errstate(invalid="ignore"):
            eligible &= present["concurrency"] & (conc == np.round(conc)) & (conc < 2 ** 53)
    else:
        eligible[:] = False  # validate() reads such a row's latencies against its speedup
    if all(c in present for c in ("baseline_tok_s", "spec_tok_s", "speedup")):
        base, spec, speedup = numbers["baseline_tok_s"], numbers["spec_tok_s"], numbers["speedup"]
        with np.errstate(invalid="ignore", divide="ignore"):
            eligible &= ~(np.abs(spec / base - speedup) > 0.02 * speedup)
    form = np.full(n, -1)  # the acceptance form validate() reads: the first one present
    if acceptance_free:
        for f, key in reversed(list(enumerate(_ACCEPTANCE_FORMS))):
            if key in present:
                form[present[key]] = f
    pattern = [present[c] for c in free]
    gid = np.zeros(n, dtype=np.int64)  # rows alike in every keyed cell and in which numbers they give
    for column in [*keyed, *pattern]:
        codes, uniques = pd.factorize(np.asarray(column, dtype=object)) if not isinstance(column, np.ndarray) \
            else (column.astype(np.int64), (0, 1))
        gid = np.unique(gid * (len(uniques) + 1) + codes, return_inverse=True)[1].reshape(-1)
    if n >= MOSTLY_DISTINCT_ROWS and int(gid.max()) + 1 > n // 2:  # rows mostly unlike one another (a log's
        eligible[:] = False  # lines, each naming its line): validate() each, templates would only add work

    # one validate() per group, on its first eligible row
    seen = {} if templates_seen is None else templates_seen
    known = seen.setdefault("templates", {})  # key -> (validate()'s result, its number among the good ones)
    good: list = seen.setdefault("good", [])  # the groups' rows that validate() kept, in that order
    templates: dict[int, tuple] = {}
    number_of = np.full(int(gid.max()) + 1 if n else 0, -1, dtype=np.int64)
    candidates = np.flatnonzero(eligible)
    _, first = np.unique(gid[candidates], return_index=True)
    for i in candidates[first].tolist():
        key = (*(column[i] for column in keyed), *(bool(p[i]) for p in pattern))
        if key not in known:
            found = validate_row(block.record(i), defaults)
            known[key] = (found, len(good) if found[0] is not None else -1)
            if found[0] is not None:
                good.append(found[0])
        templates[int(gid[i])], number_of[gid[i]] = known[key]
    bad_groups = [g for g, (row, *_) in templates.items() if row is None]
    if bad_groups:
        eligible &= ~np.isin(gid, bad_groups)

    # each eligible row's acceptance at its group's k, converted once per distinct number
    acc_of = np.full(n, -1, dtype=np.int64)  # a row's acceptance: its place in `accs`, -1 where none
    accs: list = []
    if acceptance_free:
        todo = np.flatnonzero(eligible & (form >= 0))
        values = np.full(n, np.nan)
        for f, key in enumerate(_ACCEPTANCE_FORMS):
            if key in numbers:
                values = np.where(form == f, numbers[key], values)
        acc_k = np.array([None] * (int(gid.max()) + 1 if n else 0), dtype=object)
        for g, (_, _, info) in templates.items():
            acc_k[g] = info[0] if info is not None else None
        if todo.size:
            acc_of[todo], refused = _acceptances(block, seen.setdefault("acceptance", {}), form[todo],
                                                 values[todo], acc_k[gid[todo]], accs)
            eligible[todo[refused]] = False

    slow: dict[int, tuple] = {}
    for i in np.flatnonzero(~eligible).tolist():
        slow[i] = validate(block.record(i), defaults)
    fast = np.flatnonzero(eligible)
    kept = np.ones(n, dtype=bool)
    for i, (row, _) in slow.items():
        kept[i] = row is not None

    fast_group = number_of[gid[fast]]
    if len(good) > n:  # many groups so far: only the rows of this part's groups, a column at a time
        used, fast_group = np.unique(fast_group, return_inverse=True)
        group_columns = {c: _objects([good[u][c] for u in used.tolist()], scalars=c != "survival") for c in COLUMNS}
    else:  # each group's row, a column at a time, kept between the parts while no group is added
        if len(fast) and seen.get("good_columns", (None, -1))[1] != len(good):
            seen["good_columns"] = ({c: _objects([row[c] for row in good], scalars=c != "survival")
                                     for c in COLUMNS}, len(good))
        group_columns = seen.get("good_columns", ({},))[0]
    columns = {}
    for c in COLUMNS:
        out = np.empty(n, dtype=object)
        if len(fast):
            out[fast] = group_columns[c][fast_group.reshape(-1)]
        for i, (row, _) in slow.items():
            if row is not None:
                out[i] = row[c]
        columns[c] = out
    if len(fast):
        scale = np.ones(int(gid.max()) + 1)  # throughputs given per GPU: x the row's GPUs, as validate() reads them
        for g, (_, _, info) in templates.items():
            scale[g] = info[2] if info is not None else 1
        _fast_numbers(columns, fast, numbers, present, block.lines, scale[gid[fast]])
        at = fast[acc_of[fast] >= 0]
        if at.size:
            found = acc_of[at]
            columns["tokens_per_step"][at] = _objects([a.tokens_per_step for a in accs])[found]
            columns["survival"][at] = _objects([a.survival for a in accs], scalars=False)[found]
            assumed_by_group = np.zeros(int(gid.max()) + 1, dtype=bool)
            for g, (_, _, info) in templates.items():
                assumed_by_group[g] = bool(info[1]) if info is not None else False
            assumed_k = assumed_by_group[gid[at]]
            alphas = _objects([a.alpha for a in accs])[found]
            columns["alpha"][at[~assumed_k]] = alphas[~assumed_k]
            columns["alpha_assumed"][at[assumed_k]] = alphas[assumed_k]
            columns["alpha"][at[assumed_k]] = np.nan
    columns = {c: v[kept].tolist() for c, v in columns.items()}
    return (columns, *_block_notes(block, templates, gid, fast, slow, kept))


def _acceptances(block, converted: dict, forms: np.ndarray, values: np.ndarray, ks: np.ndarray, accs: list):
    """convert_single of each row's (form, number, k), once per distinct one (`converted` keeps them between
    the parts of a file): (each row's place in `accs`, which the distinct ones are appended to; which rows
    the conversion refuses)."""
    k_codes, _ = pd.factorize(ks, use_na_sentinel=False)
    value_codes = np.unique(values, return_inverse=True)[1].reshape(-1)
    dims = (len(_ACCEPTANCE_FORMS), int(value_codes.max()) + 1, int(k_codes.max()) + 1)
    _, first, inverse = np.unique(np.ravel_multi_index((forms, value_codes, k_codes), dims), return_index=True,
                                  return_inverse=True)
    place = np.empty(len(first), dtype=np.int64)
    for j, (f, value, kk) in enumerate(zip(forms[first].tolist(), values[first].tolist(), ks[first].tolist())):
        found = converted.get((f, value, kk), converted)
        if found is converted:
            key = _ACCEPTANCE_FORMS[f]
            try:
                found = convert_single(key, value, kk, block.headers.get(key, key))
            except SpecModelError:
                found = None
            converted[(f, value, kk)] = found
        place[j] = -1 if found is None else len(accs)
        if found is not None:
            accs.append(found)
    rows = place[inverse.reshape(-1)]
    return rows, rows < 0


def _block_notes(block, templates: dict, gid: np.ndarray, fast: np.ndarray, slow: dict, kept: np.ndarray):
    """validate_block's problems (in row order), fallbacks ((first row, the fallbacks, rows) per group
    and per row that went alone) and the kept rows' same-tree flags."""
    said = [g for g, (_, probs, _) in templates.items() if probs]  # each template's problems, on its rows
    noted = fast[np.isin(gid[fast], said)] if said else fast[:0]
    told = {g: [(p.file, p.column, p.message, p.severity, p.reason) for p in templates[g][1]] for g in said}
    lines = block.lines
    per_row = zip(noted.tolist(), gid[noted].tolist())
    alone = [(i, probs) for i, (_, probs) in slow.items() if probs]
    if alone:
        per_row = sorted([*per_row, *alone], key=lambda item: item[0])
    problems: list[Problem] = []
    for i, found in per_row:
        if type(found) is int:  # its group's template: the same problems at its own row
            line = lines[i]
            problems.extend([Problem(file, line, column, message, severity, reason)
                             for file, column, message, severity, reason in told[found]])
        else:
            problems.extend(found)
    groups, first, counts = np.unique(gid[fast], return_index=True, return_counts=True)
    fallbacks = [(int(fast[at]), templates[g][0].get("_fallbacks") or {}, int(count))
                 for g, at, count in zip(groups.tolist(), first.tolist(), counts.tolist())]
    fallbacks += [(i, row.get("_fallbacks") or {}, 1) for i, (row, _) in slow.items() if row is not None]
    flags = np.zeros(len(gid), dtype=bool)
    if len(fast):
        by_group = np.zeros(int(gid.max()) + 1, dtype=bool)
        for g, (row, _, _) in templates.items():
            by_group[g] = bool(row is not None and row.get("_same_tree", False))
        flags[fast] = by_group[gid[fast]]
    for i, (row, _) in slow.items():
        if row is not None:
            flags[i] = bool(row.get("_same_tree", False))
    return problems, fallbacks, flags[kept].tolist()


def _fast_numbers(columns: dict, fast: np.ndarray, numbers: dict, present: dict, lines: list,
                  scale: np.ndarray) -> None:
    """The rows' own numbers into the columns of the rows that took their group's row, as validate()
    writes them: row, concurrency (int), throughputs (x scale) and the measured speedup (of the
    throughputs as given; floats, None where none)."""
    columns["row"][fast] = np.array(lines, dtype=object)[fast]
    if "concurrency" in numbers:
        columns["concurrency"][fast] = _objects(numbers["concurrency"][fast].astype(np.int64).tolist())
    for c in ("baseline_tok_s", "spec_tok_s"):
        if c in numbers:
            columns[c][fast] = _floats_or_none(numbers[c][fast] * scale, present[c][fast])
    measured = np.full(len(fast), None, dtype=object)
    if "baseline_tok_s" in numbers and "spec_tok_s" in numbers:
        both = present["baseline_tok_s"][fast] & present["spec_tok_s"][fast]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = numbers["spec_tok_s"][fast] / numbers["baseline_tok_s"][fast]
        measured[both] = _objects(ratio[both].tolist())
    if "speedup" in numbers:
        given = present["speedup"][fast]
        measured[given] = _objects(numbers["speedup"][fast][given].tolist())
    columns["measured_speedup"][fast] = measured


def _objects(values: list, scalars: bool = True) -> np.ndarray:
    """A list as a 1-d object array of its items (scalars=False: items that may be tuples, kept whole)."""
    out = np.empty(len(values), dtype=object)
    if scalars:
        out[:] = values
    else:
        for j, v in enumerate(values):
            out[j] = v
    return out


def _floats_or_none(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Python floats where present, None elsewhere (what validate() writes), as an object array."""
    out = np.full(len(values), None, dtype=object)
    out[present] = _objects(values[present].tolist())
    return out
