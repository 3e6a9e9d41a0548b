"""A row's numbers as validate() reads them: the value of one column within its range, or the error that says why
not (RowError, with what every row whose value is out of range the same way shares: Problem.kind)."""

from __future__ import annotations

from specmodel.runs.cells import not_a_number, number, plain_text, shown
from specmodel.runs.records import RunRecord


class RowError(Exception):
    """Why a row is not loaded: its column, the message, the reason code and what rows of its kind share."""

    def __init__(self, column: str | None, message: str, reason: str = "invalid", kind: str | None = None,
                 figures: str | None = None):
        super().__init__(message)
        self.column = column
        self.reason = reason
        self.kind, self.figures = kind, figures  # Problem.kind and .figures: the message without the row's value


def _out_of_range(column: str | None, raw, said: str, what: str) -> RowError:
    """"'0.5' is below 1; expected …", grouped with every row whose value is out of range the same way."""
    return RowError(column, f"{shown(raw)} is {said}; expected {what}", kind=f"a value {said}; expected {what}",
                    figures=shown(raw))


def number_of(rec: RunRecord, key: str, errors: list, *, lo=None, hi=None, strict_lo=False, whole=False,
              what: str = "a number"):
    """The number in column `key` of the row (None where it gives none), or None with a RowError in `errors`."""
    raw = rec.values.get(key)
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None
    column = rec.headers.get(key, key)
    text = str(raw).strip().rstrip("%") if isinstance(raw, str) else raw
    value = number(plain_text(text, None) if isinstance(text, str) else text)
    if value is None:
        errors.append(RowError(column, f"{not_a_number(raw)}; expected {what}", kind=f"not a number; expected {what}",
                               figures=not_a_number(raw)))
        return None
    if whole and value != round(value):
        errors.append(_out_of_range(column, raw, "not a whole number", what))
        return None
    if lo is not None and (value < lo or (strict_lo and value == lo)):
        errors.append(_out_of_range(column, raw, f"{'not above' if strict_lo else 'below'} {lo:g}", what))
        return None
    if hi is not None and value > hi:
        errors.append(_out_of_range(column, raw, f"above {hi:g}", what))
        return None
    return int(round(value)) if whole else value
