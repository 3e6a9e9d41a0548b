"""A plain CSV file read at once, and its rows as one RecordBlock of columns (what csv_plain._record gives
row by row), for 200,000 rows in seconds. A file without quotes whose every row has the header's cells is
read a column at a time by pandas' C reader (frame_rows: the cells as the csv module reads them); one with
blank or ragged rows in one pass of the csv module (plain_records, each record one line); csv_plain reads
any other file record by record, with the same rows and messages."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd

from specmodel import limits
from specmodel.runs.cells import plain_text
from specmodel.runs.records import Problem, RecordBlock

HEADER_WITHIN = 100  # lines a plain file's header is looked for in (blank lines before it) before frame_rows gives up


def _is_plain(text: str) -> bool:
    """No quotes, carriage returns or NUL characters: each line is one record, its cells split at the delimiter."""
    return '"' not in text and "\r" not in text and "\x00" not in text


def plain_header(text: str, delimiter: str):
    """(its line number, its cells, where the next line starts) of a plain file's header, the first line with a
    non-blank cell, as plain_records reads it; None for any other file or a header past HEADER_WITHIN lines."""
    if not _is_plain(text):
        return None
    at = 0
    for line in range(1, HEADER_WITHIN + 1):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if end - at > limits.MAX_CELL_CHARS:  # the csv module's field limit: named by csv_records
            return None
        cells = next(csv.reader([text[at:end]], delimiter=delimiter, skipinitialspace=True, strict=False), [])
        if any(c.strip() for c in cells):
            return line, cells, end + 1
        if end >= len(text):
            return None
        at = end + 1
    return None


_ASCII_SPACE = np.zeros(256, dtype=bool)
_ASCII_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True  # what str.strip() strips of ASCII
_CONTENT_BYTE = (~_ASCII_SPACE & (np.arange(256) < 128)).astype(np.uint8)  # 1: an ASCII byte a cell's text counts


def frame_rows(name: str, text: str, at: int, header_line: int, layout, delimiter: str, problems: list[Problem],
               min_rows: int = 1):
    """The rows after a plain file's header (text[at:], the header on line header_line) read by pandas' C reader:
    (their line numbers, {cell index: the rows' cells} for the layout's columns, rows seen), as plain_rows gives
    them; None unless every line holds the header's cells (as many delimiters), a cell that is not blank in ASCII
    and fewer characters than the cell limit, and there are min_rows rows (plain_rows or csv_records then read it)."""
    width = layout.width
    if width < 2 or at >= len(text) or text.startswith("\ufeff", at):  # pandas would drop a byte-order mark there
        return None
    try:
        data = text[at:].encode("utf-8")  # what pandas reads (a str it would copy at 4 bytes a character)
    except UnicodeEncodeError:  # a lone surrogate: not text pandas reads
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(raw == 10)
    starts = np.concatenate(([0], breaks[breaks < len(raw) - 1] + 1))
    del breaks
    if int(np.diff(starts, append=len(raw)).max()) > limits.MAX_CELL_CHARS or len(starts) < min_rows:
        return None
    delimiter_code = ord(delimiter)
    # delimiters per line: where each line's start falls among the delimiters' positions (no per-byte sum)
    delimiters = np.diff(np.searchsorted(np.flatnonzero(raw == delimiter_code), np.append(starts, len(raw))))
    if (delimiters != width - 1).any():
        return None
    content = _CONTENT_BYTE.copy()
    content[delimiter_code] = 0
    if not np.maximum.reduceat(content[raw], starts).all():  # a byte per line that is content, in uint8
        return None
    del raw, delimiters, content
    total = len(starts)
    kept = min(total, limits.MAX_ROWS_PER_FILE)
    for seen in range(CHECK_EVERY, total, CHECK_EVERY):  # where plain_rows looks at the clock
        if limits.out_of_time():
            problems.append(stopped_reading(name, header_line + 1 + seen))
            total = kept = min(seen, kept)
            break
    used = sorted({i for _, i in layout.columns} | set(layout.kept))
    frame = pd.read_csv(io.BytesIO(data), encoding="utf-8", sep=delimiter, header=None, names=range(width),
                        usecols=used, nrows=kept, dtype=object, na_filter=False, skipinitialspace=True,
                        skip_blank_lines=False, engine="c")
    del data
    columns = {i: frame[i].to_numpy().tolist() for i in used}
    return list(range(header_line + 1, header_line + 1 + kept)), columns, total


def plain_records(text: str, delimiter: str):
    """The records of a file without quotes, carriage returns or NUL characters, as csv_records gives
    them (each record one line: its number, its cells, no trouble), read in one pass; None for any other
    file (csv_records then reads it record by record)."""
    if not _is_plain(text):
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
