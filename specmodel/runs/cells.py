"""One cell or JSON value as the run readers take it: a finite number or nothing, quoted for a message,
and the model name a one-arm run is paired on."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from specmodel.numbers import number_or_none, refusal
from specmodel.text import clean_name
from specmodel.model import presets


def number(x) -> float | None:
    """x as a finite float, or None (text that is no number, true/false, NaN, infinities, `1_0`, digits
    of other scripts, hundreds of digits): the one number parser, specmodel.numbers. `refusal(x)` says why."""
    return number_or_none(x)


def not_a_number(raw) -> str:
    """Why a cell or value that `number` refuses is none, quoted: "'1_0' has an underscore between digits: ..."."""
    return f"{shown(raw)} {refusal(raw) or 'is not a number'}"


def shown(raw) -> str:
    """A cell or JSON value as a message quotes it: JSON spelling for true/false/null, at most 40 characters."""
    if isinstance(raw, bool) or raw is None:
        return json.dumps(raw)
    if isinstance(raw, float) and not math.isfinite(raw):
        return "an infinite or out-of-range number" if raw == raw else "NaN"
    text = clean_name(raw, 40)[0]
    return f"'{text}'"


def model_key(name) -> str:
    """The preset a model name matches, else the name lower-cased: what one-arm runs are paired on."""
    m = presets.match_model(name) if name else None
    return m.name if m else str(name or "").strip().lower()


# --- how a column writes its numbers: thousands separators or decimal commas ----------------------
# Decided per column from all its cells (a CSV reader sees the whole column before reading a row): a
# cell like "1,500" is 1500 in a column that also holds "1,234,567" or "2,500.5", and 1.5 in one that
# also holds "0,75". A column of such cells only is read with thousands separators unless another
# column of the file shows decimal commas (a file written in a decimal-comma locale).
_GROUPED = re.compile(r"[-+]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?")  # 1,500 / 1,234,567 / 2,500.5
_DECIMAL_COMMA = re.compile(r"[-+]?\d*,\d+|[-+]?[1-9]\d{0,2}(?:\.\d{3})+,\d+")  # 0,75 / 1,5 / 1.234,5
_DOT_GROUPED = re.compile(r"[1-9]\d{0,2}(?:\.\d{3})+")  # 1.500: 1.5, or 1500 written with dot groups

THOUSANDS, DECIMAL, MIXED = "thousands", "decimal comma", "mixed"


def _cell_evidence(text: str) -> str | None:
    """'thousands', 'decimal comma', 'either' (one group of three: "1,500") or None (no comma number)."""
    t = text.strip().rstrip("%").strip()
    if "," not in t:
        return None
    if _GROUPED.fullmatch(t):
        return THOUSANDS if t.count(",") > 1 or "." in t else "either"
    return DECIMAL if _DECIMAL_COMMA.fullmatch(t) else None


@dataclass(frozen=True)
class NumberStyle:
    """How one column writes its numbers, and a cell of the column that shows it (for the note)."""

    style: str  # THOUSANDS, DECIMAL or MIXED
    example: str  # a cell as written, e.g. "1,500"
    other: str = ""  # MIXED: a cell written the other way
    by_file: bool = False  # the column's cells fit both ways ("1,500"): the file's other columns decided

    def note(self) -> str:
        """The note a reader gives for the column: what was read and how."""
        if self.style == MIXED:
            return (f"mixes thousands separators ({shown(self.other)}) and decimal commas ({shown(self.example)}), "
                    "so a number with a comma cannot be read either way")
        why = (" (other columns of the file have decimal commas)" if self.style == DECIMAL else
               " (no column of the file has decimal commas)") if self.by_file else ""
        return (f"read with {'thousands separators' if self.style == THOUSANDS else 'decimal commas'}{why}: "
                f"{shown(self.example)} as {plain_text(self.example, self)}")


def number_styles(columns: dict) -> dict:
    """{key: NumberStyle} for the columns ({key: the column's cells}) that write numbers with commas;
    a column without a comma number is left out."""
    found: dict = {}
    for key, cells in columns.items():
        seen: dict = {}
        if "," not in "".join(cells):  # no comma in the whole column: nothing to look at cell by cell
            continue
        for cell in cells:
            if "," in cell:
                kind = _cell_evidence(cell)
                if kind is not None and kind not in seen:
                    seen[kind] = cell.strip()
                    if THOUSANDS in seen and DECIMAL in seen:
                        break
        if seen:
            found[key] = seen
    file_decimal = any(DECIMAL in seen and THOUSANDS not in seen for seen in found.values())
    styles = {}
    for key, seen in found.items():
        if THOUSANDS in seen and DECIMAL in seen:
            styles[key] = NumberStyle(MIXED, seen[DECIMAL], seen[THOUSANDS])
        elif THOUSANDS in seen or DECIMAL in seen:
            style = THOUSANDS if THOUSANDS in seen else DECIMAL
            styles[key] = NumberStyle(style, seen[style])
        else:  # only "1,500"-like cells: the file's other columns decide
            styles[key] = NumberStyle(DECIMAL if file_decimal else THOUSANDS, seen["either"], by_file=True)
    return styles


def plain_text(text: str, style: NumberStyle | None) -> str:
    """A number cell of a column written in `style` as Python reads numbers ("1,500" -> "1500",
    "0,75" -> "0.75", "1.234,5" -> "1234.5"). Raises ValueError naming the cell where the column's
    style leaves it ambiguous (a comma in a MIXED column, "1.500" in a decimal-comma column). Without a
    style, the one rule for a single cell: one comma and no dot is a decimal comma ("0,75")."""
    t = text.strip()
    if style is None:
        return t.replace(",", ".") if t.count(",") == 1 and "." not in t else t
    if style.style == MIXED and "," in t:
        raise ValueError(f"{shown(text)}: its column {style.note()}; write the numbers without thousands "
                         "separators")
    if style.style == THOUSANDS:
        bare = t.rstrip("%").strip()
        return t.replace(",", "") if _GROUPED.fullmatch(bare) else t
    if style.style == DECIMAL:
        bare = t.rstrip("%").strip()
        if _DOT_GROUPED.fullmatch(bare):
            raise ValueError(f"{shown(text)} in a column written with decimal commas: {bare.replace('.', '')} "
                             f"or {bare}? write it without the dots, or with a decimal comma")
        if _DECIMAL_COMMA.fullmatch(bare):
            return t.replace(".", "").replace(",", ".")
    return t
