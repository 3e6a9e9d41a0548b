"""A plain CSV file read at once: the records of a file without quotes in one pass of the csv module (each
record one line), the rows checked at once, and the rows as one RecordBlock of columns (what
csv_plain._record gives row by row), for 200,000 rows in seconds. csv_plain reads any other file record
by record, with the same rows and messages."""

from __future__ import annotations

import csv

from specmodel import limits
from specmodel.runs.cells import plain_text
from specmodel.runs.records import Problem, RecordBlock


def plain_records(text: str, delimiter: str):
    """The records of a file without quotes, carriage returns or NUL characters, as csv_records gives
    them (each record one line: its number, its cells, no trouble), read in one pass; None for any other
    file (csv_records then reads it record by record)."""
    if '"' in text or "\r" in text or "\x00" in text:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        records = list(csv.reader(lines, delimiter=delimiter, skipinitialspace=True, strict=False))
    except csv.Error:  # a cell over the field limit: named by csv_records
        return None
    return _PlainLines([(i, cells, None) for i, cells in enumerate(records, start=1)])


class _PlainLines:
    """_plain_records' records, read like csv_records' generator (the header loop stops part way)."""

    def __init__(self, records: list):
        self.records, self.at = records, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.at >= len(self.records):
            raise StopIteration
        self.at += 1
        return self.records[self.at - 1]

    def rest(self) -> list:
        """The records not read yet (all of them are then read)."""
        rest, self.at = self.records[self.at:], len(self.records)
        return rest


def plain_rows(name: str, records: list, width: int, problems: list[Problem]):
    """_rows of records that all have the header's cells (blank lines aside), at once: (rows, rows seen,
    no padded rows); None for any other file (_rows then names its rows)."""
    rows = [(line, cells) for line, cells, _ in records
            if (cells and cells[0].strip()) or "".join(cells).strip()]
    if set(map(len, (cells for _, cells in rows))) - {width}:
        return None
    for seen in range(CHECK_EVERY, len(records), CHECK_EVERY):  # where _rows looks at the clock
        if limits.out_of_time():
            line = records[seen][0]
            problems.append(stopped_reading(name, line))
            rows = [row for row in rows if row[0] < line]
            break
    return rows[:limits.MAX_ROWS_PER_FILE], len(rows), []


CHECK_EVERY = 0x4000  # records between two looks at the clock while rows are read


def stopped_reading(name: str, line: int) -> Problem:
    return Problem(name, line, None, f"not read from this row on: reading stopped after the {limits.MAX_LOAD_S:g} s "
                   "limit on processing one load; split the file", "warning")


def block_of(name: str, header: list[str], lines: list, columns: dict, layout, styles: dict,
             problems: list[Problem]) -> RecordBlock:
    """The rows as one RecordBlock: what _record gives row by row (number styles applied, a row whose
    style leaves a cell ambiguous named and left out, rows without a value left out). columns: the
    rows' cells by column index."""
    failed: dict[int, Problem] = {}
    for i, style in styles.items():
        memo: dict = {}
        converted = []
        for j, cell in enumerate(columns[i]):
            if cell not in memo:
                try:
                    memo[cell] = (plain_text(cell, style), None)
                except ValueError as exc:
                    memo[cell] = (cell, f"{exc}; row not loaded")
            value, trouble = memo[cell]
            if trouble is not None and j not in failed:
                failed[j] = Problem(name, lines[j], header[i].strip(), trouble, reason="invalid")
            converted.append(value)
        columns[i] = converted
    problems.extend(failed[j] for j in sorted(failed))
    cells = {c: stripped(columns[i]) for c, i in layout.columns}
    context = None
    if layout.kept:
        kept = [stripped(columns[i]) for i in layout.kept]
        context = [" | ".join(x for x in texts if x) for texts in zip(*kept)]
    if not failed and any("" not in v for v in cells.values()):  # a column with a value on every row
        keep = [True] * len(lines)
    else:
        keep = [j not in failed and any(texts) for j, texts in enumerate(zip(*cells.values()))] if cells else []
    if not all(keep):
        lines = [x for x, k in zip(lines, keep) if k]
        cells = {c: [x for x, k in zip(v, keep) if k] for c, v in cells.items()}
        context = None if context is None else [x for x, k in zip(context, keep) if k]
    return RecordBlock(name, lines, cells, dict(layout.headers), context)


def stripped(cells) -> list[str]:
    """A column's cells stripped (str.strip gives back the very cell where there is nothing to strip: no
    copy; 200,000 cells in hundredths of a second)."""
    return list(map(str.strip, cells))
