"""Plain CSV runs: one row per run, headers matched to canonical columns through ALIASES.

The header row is the first non-blank line; a column for the acceptance at each position (p1, p2,
...) makes a survival list. Row numbers are the line on which each record starts, counted by the
`csv` module's reader (a quoted cell may span lines): the header is row 1, the first run row 2.
"""

from __future__ import annotations

import csv
import operator
import re
from dataclasses import dataclass

from specmodel import bounds
from specmodel.errors import SpecModelError
from specmodel.text import clean_name
from specmodel.runs.cells import MIXED, number_styles, plain_text
from specmodel.runs.csv_rows import csv_records
from specmodel.runs.headers import ALIAS_INDEX, ALIASES, IGNORED_COLUMNS, close_column, norm_header, throughput_column  # noqa: F401 - re-exported
from specmodel.runs.meanings import READ_AS, ambiguous_column, read_as_of
from specmodel.runs.records import Problem, RunDefaults, RunRecord, stopped_reading, too_many_rows

_REFERENCE_FIELDS = {"source", "notes"}  # a second column for these is kept for reference, not an error
# digits 0-9 only, at most 40 (the one number rule, specmodel.numbers): int() read "p٣" as position 3 and
# raised on a header of 5,000 digits
_POSITION_HEADER = re.compile(r"^(?:p|pos|position|acceptance_pos|accept_pos)_?([0-9]{1,40})$")
def sniff_delimiter(text: str) -> str:
    sample = "\n".join(text[:65_536].splitlines()[:20])  # the sniffer's regexes are slow on long lines
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _columns(name: str, header: list[str], means: str | None = None
             ) -> tuple[dict[str, int], dict[int, int], list[Problem], list[int]]:
    """Canonical column -> index, survival position -> index, warnings for unknown headers, and the
    indices of columns kept for reference (IGNORED_COLUMNS, a second `source` or `notes`: one info
    line for all of them). Two headers meaning the same column are otherwise an error naming both
    (which one is meant is unknowable). An acceptance header whose name does not say which it holds is the
    column `means` names (runs.meanings)."""
    headers: dict[str, int] = {}
    positions: dict[int, int] = {}
    problems = []
    kept: list[int] = []
    seen: dict[tuple, int] = {}
    unknown: list[str] = []
    for i, raw in enumerate(header):
        h = raw.strip()
        key = norm_header(h)
        canon = ALIAS_INDEX.get(key) or throughput_column(key) or ambiguous_column(key, means)
        pos = _POSITION_HEADER.match(key)
        close = None if canon or pos or key in IGNORED_COLUMNS or len(unknown) >= _CLOSE_SEARCHED \
            else close_column(key)
        if close is not None and ("column", close[0]) not in seen and close[0] not in _later_columns(header, i):
            canon = close[0]
            problems.append(Problem(name, None, h, f"not a column this reader knows; did you mean `{close[1]}`? "
                                    f"read as `{canon}` (rename the column to silence this)", "warning"))
        elif close is not None:
            problems.append(Problem(name, None, h, f"not a column this reader knows; did you mean `{close[1]}`? "
                                    f"ignored: another column already gives `{close[0]}`", "warning"))
            continue
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
            unknown.append(h)
    if len(unknown) <= _UNKNOWN_ONE_BY_ONE:
        problems.extend(Problem(name, None, h, "not a column this reader knows; ignored (known columns and aliases "
                                "are listed in docs/formats.md)", "warning") for h in unknown)
    else:  # one message, however many: a file of 10^6 columns gave 10^6 warnings
        problems.append(Problem(name, None, None, f"{len(unknown):,} unknown columns, e.g. "
                                f"{_some(unknown)}: ignored (known columns and aliases are listed in "
                                "docs/formats.md)", "warning"))
    return _finish_columns(name, header, headers, positions, problems, kept)


def _later_columns(header: list[str], i: int) -> set[str]:
    """Canonical columns named exactly by headers after column i (a close name never takes their place)."""
    keys = (norm_header(h) for h in header[i + 1:])
    return {c for c in (ALIAS_INDEX.get(k) or throughput_column(k) for k in keys) if c}


def _finish_columns(name, header, headers, positions, problems, kept):
    if kept:
        problems.insert(0, Problem(name, None, None, "columns kept for reference and not read: "
                                   + _some([header[i].strip() for i in kept], 20)
                                   + " (the engine is still looked for in their text)", "info"))
    return headers, positions, problems, kept


_UNKNOWN_ONE_BY_ONE = 5  # chosen: up to this many unknown columns get a warning each; more get one for all
_CLOSE_SEARCHED = 50  # chosen: unknown headers after this many are not matched against the known ones (bounded work)


def _some(names: list[str], shown: int = 3) -> str:
    """"a, b, c, …" naming the first `shown` names (each cut), "…" when there are more."""
    head = ", ".join(clean_name(n, 40)[0] for n in names[:shown])
    return head + (", …" if len(names) > shown else "")


@dataclass(frozen=True)
class _Layout:
    """Where each field sits in a row, worked out once from the header."""

    width: int  # cells in the header
    columns: tuple  # (canonical name, index)
    headers: dict  # canonical name -> the user's header, the same for every record
    position_columns: tuple  # indices of p1, p2, ... in order
    survival_header: str  # "p1, p2, p3": how a message names the positions
    kept: tuple  # indices of the columns kept for reference
    names: tuple  # the canonical names of `columns`, in order
    used: tuple  # the indices of the cells a record reads: `columns`', then `kept`, then `position_columns`
    pick: object  # a row's cells -> its used cells (a tuple)
    at: dict  # a cell's index -> its place among the used cells
    read_as: tuple | None  # a column whose name does not say: (canonical column, header, meaning, said, said_as)


def _layout(name: str, header: list[str], acceptance: tuple[str | None, str]) -> tuple[_Layout, list[Problem]]:
    """Where each field sits; `acceptance` is (what a column whose name does not say which acceptance it holds
    holds, None: not said; how messages name where it is said: runs.meanings)."""
    headers, positions, problems, kept = _columns(name, header[:bounds.MAX_COLUMNS], acceptance[0])
    read_as, note = read_as_of(name, {c: header[i].strip() for c, i in headers.items()}, norm_header, *acceptance)
    if note is not None:  # never a silent reading: one note for the file, a remark on each row (validate)
        problems.append(note)
    if len(header) > bounds.MAX_COLUMNS:  # every known column fits many times over; the rest is not read
        problems.append(Problem(name, None, None, f"the header has {len(header):,} columns: only the first "
                                f"{bounds.MAX_COLUMNS:,} are read (from '{clean_name(header[bounds.MAX_COLUMNS], 40)[0]}' "
                                "on, nothing is)", "warning"))
    if not headers and not positions:
        if len(header) == 1:
            raise SpecModelError(f"found a single column '{header[0].strip()[:80]}'; expected columns separated by "
                                 "commas, such as workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s")
        raise SpecModelError(f"none of the columns ({', '.join(h.strip()[:40] for h in header[:8])}) is one this "
                             "reader knows; expected a header such as "
                             "workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s (see docs/formats.md for aliases)")
    position_columns = tuple(positions[p] for p in sorted(positions))
    used = (*headers.values(), *kept, *position_columns)
    pick = operator.itemgetter(*used) if len(used) > 1 else lambda cells: tuple(cells[i] for i in used)
    layout = _Layout(len(header), tuple(headers.items()), {c: header[i].strip() for c, i in headers.items()},
                     position_columns, ", ".join(header[i].strip() for i in position_columns), tuple(kept),
                     tuple(headers), used, pick, {i: at for at, i in enumerate(used)}, read_as)
    return layout, problems


def _record(name: str, line: int, cells: list[str], layout: _Layout) -> RunRecord | None:
    """The run on one row (its used cells, stripped: layout.used), or None when it has no value."""
    values = dict(zip(layout.names, cells))  # the first cells are the known columns'
    if "" in values.values():  # an empty cell is no value
        values = {c: cell for c, cell in values.items() if cell}
    hdrs = layout.headers
    at = len(layout.names)
    if layout.kept:
        context = " | ".join(x for x in cells[at:at + len(layout.kept)] if x)
        if context and values:
            values["_context"] = context  # where an engine may be named ("vLLM V1", "TensorRT-LLM")
    if layout.read_as is not None and layout.read_as[0] in values:
        values[READ_AS] = layout.read_as[1:]  # said on the row (validate)
    if layout.position_columns and "survival" not in values:
        surv = cells[at + len(layout.kept):]
        if any(surv):
            values["survival"] = [x for x in surv if x != ""]
            hdrs = {**layout.headers, "survival": layout.survival_header}
    return RunRecord(name, line, "csv", values, hdrs) if values else None


def read_plain_csv(name: str, text: str, defaults: RunDefaults | None = None) -> tuple[list[RunRecord], list[Problem]]:
    """Records and problems of a plain CSV file (see the module docstring): its records read one at a time
    by the csv module (csv_records), blank lines kept by none. `defaults` says what an acceptance column whose
    name does not say holds (acceptance_means) and how to name where that is said."""
    defaults = defaults or RunDefaults()
    problems: list[Problem] = []
    delimiter = sniff_delimiter(text)
    if delimiter != ",":
        shown = {"\t": "tabs", ";": "semicolons", "|": "'|'"}[delimiter]
        problems.append(Problem(name, None, None, f"columns are separated by {shown}, not commas; read them "
                                                  f"with {shown}", "warning"))
    lines = csv_records(text, delimiter)
    header = None
    for line, cells, trouble in lines:
        if trouble is not None:
            problems.append(Problem(name, line, None, trouble))
        elif any(c.strip() for c in cells):
            header = cells
            break
    if header is None:
        if problems:
            raise SpecModelError(f"no header line could be read ({problems[0].message})")
        raise SpecModelError("the file is empty; expected a CSV header and one row per run")
    layout, unknown = _layout(name, header, (defaults.acceptance_means, defaults.acceptance_said_as))
    problems.extend(unknown)
    rows, rows_seen, padded_rows, commas = _rows(name, lines, layout, problems)
    styles = _number_styles(name, header, rows, layout, problems) if commas else {}
    records: list[RunRecord] = []
    for j, (line, cells) in enumerate(rows):
        rows[j] = None  # each row's cells are held once: in its record from here on
        if styles:
            try:
                for i, style in styles.items():
                    column = i
                    cells[layout.at[i]] = plain_text(cells[layout.at[i]], style)
            except ValueError as exc:
                problems.append(Problem(name, line, header[column].strip(), f"{exc}; row not loaded", reason="invalid"))
                continue
        record = _record(name, line, cells, layout)
        if record is not None:
            records.append(record)
        else:  # text only in columns kept for reference or not read: said, never dropped silently
            problems.append(Problem(name, line, None, "has a value only in columns that are not read (kept for "
                                    "reference or unknown), so there is no run on it: row not loaded; fill in its "
                                    "run's columns or remove the row", reason="invalid"))
    problems.extend(_closing_problems(name, layout.width, padded_rows, rows_seen, records))
    return records, problems


_SHARED_CELLS = 65_536  # chosen: distinct cells kept to be shared (a sweep repeats its names and k on every row)


def _rows(name: str, lines, layout: _Layout, problems: list[Problem]):
    """The rows after the header that have the header's cells ((line, the cells a record reads, stripped:
    layout.used)), the rows seen, those with a trailing delimiter and whether a cell has a comma; a row with
    fewer or more cells than the header is a problem naming it and is not loaded (its values would sit under
    the wrong headers)."""
    rows: list[tuple[int, list[str]]] = []
    rows_seen = 0
    padded_rows: list[int] = []
    same: dict = {}  # a cell's text -> the one copy the rows share
    commas = False  # whether a cell has a comma (a number may be written with one)
    width, most, pick, get = layout.width, bounds.MAX_ROWS_PER_FILE, layout.pick, same.get
    for seen, (line, cells, trouble) in enumerate(lines):
        if bounds.stop_due(seen):  # checked every 16,384 records
            problems.append(stopped_reading(name, line))
            break
        if trouble is not None:
            problems.append(Problem(name, line, None, trouble, reason="invalid"))
            continue
        text = "".join(cells)
        if not text.strip():
            continue  # a blank line is not a run
        commas = commas or "," in text
        rows_seen += 1
        if rows_seen > most:
            continue  # counted for the message below, not read
        if len(cells) != width:
            trouble = _ragged(name, line, cells, width)
            if trouble is not None:
                problems.append(trouble)
                continue
            padded_rows.append(line)  # only empty cells past the header: a trailing delimiter
        used = list(map(str.strip, pick(cells)))
        used = list(map(get, used, used))  # a cell an earlier one repeats: that one's copy, held once
        if len(same) < _SHARED_CELLS:
            same.update(zip(used, used))
        rows.append((line, used))
    return rows, rows_seen, padded_rows, commas


def _ragged(name: str, line: int, cells: list[str], width: int) -> Problem | None:
    """The problem with a row of fewer or more cells than the header (None: only empty cells past it)."""
    if len(cells) > width:
        extra = [c for c in cells[width:] if c.strip()]
        if not extra:
            return None
        return Problem(name, line, None, f"has {len(cells)} cells where the header has {width} (extra: "
                       f"'{bounds.clean_name(extra[0].strip(), 40)[0]}'); row not loaded: add the missing header or "
                       "remove the stray delimiter", reason="invalid")
    return Problem(name, line, None, f"has {len(cells)} cells where the header has {width}, so its values would "
                   "sit under the wrong headers: row not loaded; give every column a cell (an empty one between two "
                   "delimiters where a value is unknown)", reason="invalid")


# Columns holding names or lists, never one number: their commas are text
_TEXT_COLUMNS = {"workload", "method", "gpu", "target_model", "draft_model", "engine", "weight_dtype", "source",
                 "notes", "survival"}


def _number_styles(name: str, header: list[str], rows, layout: _Layout, problems: list[Problem]) -> dict:
    """{cell index: cells.NumberStyle} of the number columns written with thousands separators or decimal
    commas, decided per column from all its rows; a note names each such column and how it was read."""
    indices = [i for c, i in layout.columns if c not in _TEXT_COLUMNS] + list(layout.position_columns)
    styles = number_styles({i: [cells[layout.at[i]] for _, cells in rows] for i in indices})
    for i, style in styles.items():
        problems.append(Problem(name, None, header[i].strip(), style.note(), "warning" if style.style == MIXED
                                else "info"))
    return styles


def _closing_problems(name: str, width: int, padded_rows: list[int], rows_seen: int, records: list) -> list[Problem]:
    """What is said once the whole file is read: trailing delimiters, too many rows, no rows."""
    problems = []
    if padded_rows:
        shown = ", ".join(map(str, padded_rows[:5])) + (" …" if len(padded_rows) > 5 else "")
        problems.append(Problem(name, padded_rows[0], None, f"{len(padded_rows)} row(s) end with empty cells past "
                                f"the header's {width} columns (a trailing delimiter; rows {shown}): the empty "
                                "cells were ignored", "warning"))
    if rows_seen > bounds.MAX_ROWS_PER_FILE:
        problems.append(too_many_rows(name, rows_seen))
    if not records and not rows_seen:
        problems.append(Problem(name, None, None, "has a header but no rows; expected one row per run"))
    return problems
