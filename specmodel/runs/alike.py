"""validate() of many rows, the rows alike but for their numbers checked once: a sweep's rows share their GPU,
models, method and k and differ in their load, throughputs, speedup and acceptance (Alike). The same rows and
problems as validate() row by row."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.limits import MAX_CONCURRENCY
from specmodel.runs.records import Problem, RunDefaults, RunRecord
from specmodel.runs.validate import SINGLE_NUMBER_FORMS, convert_single, validate_row

# The numbers a row's result takes as they are (column: low, low excluded, high, as validate_row checks them):
# its load, throughputs and speedup, and an acceptance given as one number (not beside a survival list or
# counts, which are read before it).
_FREE = {"concurrency": (1, False, MAX_CONCURRENCY), "baseline_tok_s": (0, True, None), "spec_tok_s": (0, True, None),
         "speedup": (0, True, None)}
_FREE_WITH_ACCEPTANCE = {**_FREE, **{key: (lo, False, hi) for key, lo, hi, *_ in SINGLE_NUMBER_FORMS}}
_FORMS = tuple(key for key, *_ in SINGLE_NUMBER_FORMS)


class Alike:
    """validate_row's results by what a row says apart from its numbers (_FREE): the rows of a sweep (the same
    GPU, models, method and k at many concurrencies) are checked once, each then taking the result with its own
    row number, load, throughputs, speedup and acceptance. A row whose numbers validate_row would say something
    of (unreadable, out of range, a fractional concurrency, a speedup that disagrees with the throughputs, an
    acceptance the conversion refuses), or that has no concurrency, goes through validate_row itself."""

    MAX_KEPT = 4096  # results (and shapes) kept; rows alike none of them are checked one by one

    def __init__(self):
        self.results: dict = {}
        self.signatures: dict = {}  # (headers' items, value names) -> _Shape
        self.shapes: dict = {}  # (id(headers), value names) -> (headers, _Shape): the same headers on a file's rows
        self.acceptances: dict = {}  # (form, number, k, column) -> convert_single's Acceptance, or None: refused

    def validate(self, rec: RunRecord, defaults: RunDefaults) -> tuple[dict | None, list[Problem]]:
        found = self._split(rec)
        if found is None:
            return validate_row(rec, defaults)[:2]
        key, numbers, form = found
        known = self.results.get(key)
        if known is None:
            row, problems, info = validate_row(rec, defaults)
            if row is not None and len(self.results) < self.MAX_KEPT:
                self.results[key] = (row.copy(), problems, info)
            return row, problems
        row = _with_numbers(rec, known[0], known[2], numbers, form, self.acceptances)
        if row is None:
            return validate_row(rec, defaults)[:2]
        return row, [Problem(p.file, rec.row, p.column, p.message, p.severity, p.reason) for p in known[1]]

    def _shape(self, headers: dict, names: tuple):
        """The _Shape of rows with these headers and value names (None once MAX_KEPT shapes are known)."""
        signature = (tuple(headers.items()), names)
        shape = self.signatures.get(signature)
        if shape is None:
            if len(self.signatures) >= self.MAX_KEPT:
                return None
            shape = self.signatures[signature] = _shape_of(names, len(self.signatures))
        if len(self.shapes) < self.MAX_KEPT:  # the headers kept with it, so that their id names no other dict
            self.shapes[(id(headers), names)] = (headers, shape)
        return shape

    def _split(self, rec: RunRecord):
        """(the key of what the row says but its numbers, {column: number}, the acceptance form read as a number),
        or None for a row to check alone."""
        v = rec.values
        names = tuple(v)
        known = self.shapes.get((id(rec.headers), names))
        shape = known[1] if known is not None and known[0] is rec.headers else self._shape(rec.headers, names)
        if shape is None:
            return None
        numbers: dict = {}
        blank = ()
        for c, lo, strict_lo, hi in shape.free:
            raw = v[c]
            x = _plain_number(raw, lo, strict_lo, hi)
            if x is not None:
                numbers[c] = x
            elif raw is None or (type(raw) is str and not raw.strip()):  # read as not given, without a word
                blank += (c, _value_key(raw))
            else:
                return None
        conc = numbers.get("concurrency")
        base, spec, speedup = numbers.get("baseline_tok_s"), numbers.get("spec_tok_s"), numbers.get("speedup")
        if conc is None or conc != round(conc) or (speedup is not None and base and spec
                                                   and abs(spec / base - speedup) > 0.02 * speedup):
            return None
        keyed = tuple(map(v.__getitem__, shape.keyed))
        if tuple(map(type, keyed)).count(str) != len(keyed):
            keyed = tuple(x if type(x) is str else _value_key(x) for x in keyed)
        return (shape.number, rec.file, rec.fmt, tuple(rec.remarks), keyed, blank), numbers, shape.form


@dataclass(frozen=True)
class _Shape:
    """What the rows with the same headers and value names share: which values are numbers (_FREE) and which
    are the key, and the acceptance form validate_row reads (where it is one of the numbers)."""

    free: tuple  # (column, low, low excluded, high) per number
    keyed: tuple  # the names of the other values
    form: str | None
    number: int


def _shape_of(names: tuple, number: int) -> _Shape:
    counted = "survival" in names or ("drafts" in names and "accepted_tokens" in names)  # read before one number
    bounds = _FREE if counted else _FREE_WITH_ACCEPTANCE
    form = None if counted else next((key for key in _FORMS if key in names), None)
    return _Shape(tuple((c, *bounds[c]) for c in names if c in bounds),
                  tuple(c for c in names if c not in bounds), form, number)


def _plain_number(raw, lo, strict_lo, hi) -> float | None:
    """raw as the number _number reads, where it reads one without a word (in range); None otherwise."""
    kind = type(raw)
    if kind is str:
        if "," in raw or "%" in raw:  # a decimal comma or a percent sign: read by _number itself
            return None
        try:
            x = float(raw)
        except ValueError:
            return None
    elif kind is float or kind is int:
        try:
            x = float(raw)
        except OverflowError:
            return None
    else:
        return None
    if not math.isfinite(x) or x < lo or (strict_lo and x == lo) or (hi is not None and x > hi):
        return None
    return x


def _value_key(raw) -> tuple:
    """A value that is not text as a key telling apart what validation tells apart (1, 1.0, True; lists by items)."""
    return type(raw).__name__, repr(raw)


def _with_numbers(rec: RunRecord, template: dict, info: tuple, numbers: dict, form: str | None,
                  acceptances: dict) -> dict | None:
    """A row alike `template` (validate_row's row, `info` its third value) with its own numbers, as validate_row
    writes them; None where its acceptance is refused at the template's k (acceptances: the conversions so far)."""
    row = template.copy()
    row["row"] = rec.row
    row["concurrency"] = round(numbers["concurrency"])
    base, spec, speedup = numbers.get("baseline_tok_s"), numbers.get("spec_tok_s"), numbers.get("speedup")
    if speedup is None and base and spec:
        speedup = spec / base
    scale = info[2]
    if scale > 1:
        base = None if base is None else base * scale
        spec = None if spec is None else spec * scale
    row["baseline_tok_s"], row["spec_tok_s"], row["measured_speedup"] = base, spec, speedup
    if form in numbers:
        key = (form, numbers[form], info[0], rec.headers.get(form, form))
        acc = acceptances.get(key, acceptances)
        if acc is acceptances:
            try:
                acc = acceptances[key] = convert_single(*key)
            except SpecModelError:
                acc = acceptances[key] = None
        if acc is None:
            return None
        row["tokens_per_step"], row["survival"] = acc.tokens_per_step, acc.survival
        if info[1]:  # k assumed: its α is kept out of fits
            row["alpha_assumed"], row["alpha"] = acc.alpha, np.nan
        else:
            row["alpha"] = acc.alpha
    return row
