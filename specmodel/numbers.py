"""The one number parser: every number read from a file, a log line, a label, a flag or a link goes
through `read_number` (or `number_or_none`, `whole_number`), never straight into `int()` / `float()`.

It accepts what spreadsheets and engines write: `12`, ` -0.75 `, `.5`, `1.`, `1.5E+03`, `1e-05`, and the
NaN and ±Inf spellings Prometheus and JSON writers use (`NaN`, `+Inf`, `-inf`, `Infinity`); a caller that
needs a finite number refuses those itself, naming its input. It refuses, saying why:

- underscores (`1_0`: Python's `float()` reads 10; no spreadsheet writes it),
- digits of other scripts (Arabic-Indic `٤`, full-width `４`: `float()` reads them as 4),
- more than MAX_DIGITS digits (a 5,000-digit count: `int()` raises past 4,300 digits, `float()` is
  infinite; either was a traceback or a silent infinity),
- anything else that is not a number (`1,5` is the CSV reader's business: cells.plain_text first).

Thousands separators and decimal commas are decided per column by the CSV reader (runs/cells.py), which
hands this parser the number as Python writes it; a percent sign is the caller's to strip.
"""

from __future__ import annotations

import math
import re

from specmodel.errors import SpecModelError
from specmodel.text import clean_name

# chosen: a double holds 17 significant digits; spreadsheets write at most 15-17 and engines 17 (plus an
# exponent), so 40 leaves room for leading zeros and long exponents and refuses a 400-digit field by name
MAX_DIGITS = 40

_NUMBER = re.compile(r"[ \t\r\n]*[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?[ \t\r\n]*", re.ASCII)
_SPECIAL = {"nan": math.nan, "+nan": math.nan, "-nan": math.nan, "inf": math.inf, "+inf": math.inf,
            "-inf": -math.inf, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}
_LONGEST_SPECIAL = max(map(len, _SPECIAL))


def quoted(value) -> str:
    """A value as a message quotes it: cleaned, at most 40 characters."""
    return f"'{clean_name(value, 40)[0]}'"


def refusal(value) -> str | None:
    """Why `value` is not a number as this parser reads them ("has an underscore ..."), None if it is one."""
    if isinstance(value, bool):
        return "is true/false, not a number"
    if isinstance(value, (int, float)) or _is_numpy_number(value):
        return None
    if not isinstance(value, str):
        return "is not a number"
    if _NUMBER.fullmatch(value):
        digits = sum(map(str.isdigit, value)) if len(value) > MAX_DIGITS else 0
        return (f"has {digits:,} digits, more than the {MAX_DIGITS} a number read here may have: check the value"
                if digits > MAX_DIGITS else None)
    if len(value) <= _LONGEST_SPECIAL + 8 and value.strip(" \t\r\n").lower() in _SPECIAL:
        return None
    return _why_not(value)


def _why_not(text: str) -> str:
    head = text[:100_000]
    if "_" in head and re.search(r"[0-9]_[0-9]", head):
        return "has an underscore between digits: write the number without one"
    if any(c.isdigit() and not c.isascii() for c in head):
        return "has digits other than 0-9: write the number with 0-9"
    if not head.strip():
        return "is empty, not a number"
    return "is not a number"


def _is_numpy_number(value) -> bool:
    kind = type(value).__module__
    return kind == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iuf"


def read_number(value, what: str | None = None) -> float:
    """`value` (text or a number) as a float, NaN and ±inf included where spelled so; SpecModelError
    ("'1_0' has an underscore between digits ...", prefixed by `what` if given) where it is none."""
    why = refusal(value)
    if why is not None:
        raise SpecModelError(f"{what + ': ' if what else ''}{quoted(value)} {why}")
    if isinstance(value, str):
        special = value.strip(" \t\r\n").lower()
        return _SPECIAL[special] if special in _SPECIAL else float(value)
    try:
        return float(value)
    except OverflowError:  # an int beyond any float (a JSON integer of 300 digits): infinite
        return math.inf if value > 0 else -math.inf


def number_or_none(value) -> float | None:
    """`value` as a finite float, or None (no number, NaN, ±inf): for readers that say themselves what
    they expected."""
    try:
        number = read_number(value)
    except SpecModelError:
        return None
    return number if math.isfinite(number) else None


def whole_number(value, what: str, lo: int | None = None, hi: int | None = None) -> int:
    """`value` as an int in [lo, hi]; SpecModelError naming `what` and the bound otherwise (never a
    traceback for a 5,000-digit count)."""
    number = read_number(value, what)
    if not math.isfinite(number) or number != int(number):
        raise SpecModelError(f"{what}: {quoted(value)} is not a whole number")
    if lo is not None and number < lo:
        raise SpecModelError(f"{what}: {quoted(value)} is below {lo:,}")
    if hi is not None and number > hi:
        raise SpecModelError(f"{what}: {quoted(value)} is above {hi:,}: check the value")
    return int(number)
