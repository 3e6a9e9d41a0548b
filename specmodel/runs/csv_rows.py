"""CSV records as the `csv` module reads them, each with the line it starts on, and the rows it cannot
take named by row instead of failing the file: an unclosed quote (the rows it took into one cell are
read again on their own) and a cell over bounds.MAX_CELL_CHARS. The plain-CSV and guidellm readers
read their files through `csv_records`."""

from __future__ import annotations

import csv
import io
import re

from specmodel import bounds


def _first_line_end(text: str, pos: int) -> int:
    """Where the line starting at `pos` ends, its line break included (\\n, \\r\\n or \\r, as the csv
    module's source splits lines)."""
    ends = [i for i in (text.find("\n", pos), text.find("\r", pos)) if i >= 0]
    if not ends:
        return len(text)
    end = min(ends)
    return end + (2 if text.startswith("\r\n", end) else 1)


def _swallowed(cells: list[str], width: int | None, delimiter: str, at_end: bool) -> bool:
    """Whether a record read over several lines is an unclosed quote that took the rows after it into
    one cell, not a cell with a line break in it: the record has another number of cells than the
    header, a line inside its cell holds as many delimiters as a row, or the quote is still open at
    the end of the file (the cell ends with the file's last line break)."""
    broken = [c for c in cells if "\n" in c or "\r" in c]
    if not broken:
        return False
    if width is not None and len(cells) != width:
        return True
    if width is not None and width > 1 and any(line.count(delimiter) >= width - 1
                                               for c in broken for line in c.splitlines()[1:]):
        return True
    return at_end and cells[-1].endswith(("\n", "\r"))


MAX_BROKEN_ROWS = 100  # chosen: rows refused for an unclosed quote or an over-long cell before the rest of a file is


def csv_records(text: str, delimiter: str = ",", skipinitialspace: bool = True):
    """(first line number, cells, trouble) per CSV record, blank lines included as empty records. The
    line numbers are the lines a record starts on (a quoted cell over several lines counts). `trouble`
    is None, or why the row on that line is not read (its cells are then []): a quote opened and not
    closed (the rows it took in are read again on their own, so only its row is lost), or a cell over
    bounds.MAX_CELL_CHARS (the csv module's field limit). After MAX_BROKEN_ROWS such rows, or once the
    file was read twice over, one last trouble says the rest of the file is not read."""
    buf = io.StringIO(text, newline="")  # newline="": a line break inside a quoted cell stays
    size = len(text)
    width = None  # cells of the header, the first record with a non-blank cell
    base = 0  # lines before the current reader
    record_at, record_line = 0, 1  # the offset where a line starts, and that line's number
    broken, read_again = 0, 0
    while True:
        reader = csv.reader(buf, delimiter=delimiter, skipinitialspace=skipinitialspace, strict=False)
        while True:
            start = base + reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error:  # a cell over the field limit (the only error of a non-strict reader)
                last = base + reader.line_num
                if last > start:
                    trouble = (f"a quote opens on this row and is not closed within {bounds.MAX_CELL_CHARS:,} "
                               f"characters (it runs past row {last}): row not loaded, the rows after it are "
                               "read on their own; close the quote or remove it")
                    read_again += _seek_to_line(buf, text, record_at, record_line, start + 1)
                    base = start
                else:
                    trouble = (f"has a cell longer than {bounds.MAX_CELL_CHARS:,} characters (the cell limit): "
                               "row not loaded; shorten the cell")
                    base = last
                break
            if not cells:  # a blank line: yielded once, the blank lines after it skipped without a record each
                yield start, cells, None
                base += _skip_blank_lines(buf, text)
                record_at, record_line = buf.tell(), base + reader.line_num + 1
                continue
            last = base + reader.line_num
            end = buf.tell()
            if (last > start or end >= size) and _swallowed(cells, width, delimiter, end >= size):
                took = f", so rows {start} to {last} were read as one cell" if last > start else ""
                trouble = (f"a quote opens on this row and is not closed on it{took}: row not loaded, the rows after "
                           "it are read on their own; close the quote or remove it")
                read_again += _seek_to_line(buf, text, record_at, record_line, start + 1)
                base = start
                break
            record_at, record_line = end, last + 1
            if width is None and any(c.strip() for c in cells):
                width = len(cells)
            yield start, cells, None
        record_at, record_line = buf.tell(), base + 1
        broken += 1
        yield start, [], trouble
        if broken >= MAX_BROKEN_ROWS or read_again > size:
            yield base + 1, [], (f"{broken} rows had an unclosed quote or an over-long cell: the file is not "
                                 "read past this row; check its quoting")
            return


_LINE_BREAKS = re.compile(r"[\r\n]+")


def _skip_blank_lines(buf, text: str) -> int:
    """Move `buf` past the blank lines at its position (a file of a million line breaks costs no record per
    line); the lines skipped (\\n, \\r\\n and \\r each end one, as the csv module's source splits lines)."""
    at = buf.tell()
    found = _LINE_BREAKS.match(text, at)
    if found is None:
        return 0
    end = found.end()
    buf.seek(end)
    return text.count("\n", at, end) + text.count("\r", at, end) - text.count("\r\n", at, end)


def _seek_to_line(buf, text: str, at: int, line: int, wanted: int) -> int:
    """Go back to the start of line `wanted`, from the start of line `line` at offset `at` (an earlier
    line: the lines between are skipped one by one); the characters that will be read again."""
    here = buf.tell()
    for _ in range(wanted - line):
        at = _first_line_end(text, at)
    buf.seek(at)
    return max(0, here - at)
