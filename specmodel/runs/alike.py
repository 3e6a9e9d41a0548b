"""validate() of a load's rows, the rows alike but for their numbers checked once: a sweep's rows share their
GPU, models, method and k and differ in their load, throughputs, speedup and acceptance (Alike). The same
rows and problems as validate() row by row (tests/test_runs_alike.py)."""

from __future__ import annotations

import math
import operator
import sys
from dataclasses import dataclass

import numpy as np

from specmodel.numbers import MAX_DIGITS, read_number
from specmodel.errors import SpecModelError
from specmodel.bounds import MAX_CONCURRENCY
from specmodel.runs.records import COLUMNS, RunDefaults, RunRecord
from specmodel.runs.validate import SINGLE_NUMBER_FORMS, convert_single, validate_row

# chosen (validate_row's own checks): the numbers a row's result takes as they are (column: low, low excluded,
# high, as validate_row checks them): its load, throughputs and speedup, and an acceptance given as one number
# (not beside a survival list or counts, which are read before it).
_FREE = {"concurrency": (1, False, MAX_CONCURRENCY), "baseline_tok_s": (0, True, None), "spec_tok_s": (0, True, None),
         "speedup": (0, True, None)}
_FREE_WITH_ACCEPTANCE = {**_FREE, **{key: (lo, False, hi) for key, lo, hi, *_ in SINGLE_NUMBER_FORMS}}
_FORMS = tuple(key for key, *_ in SINGLE_NUMBER_FORMS)
_CELLS = operator.itemgetter(*COLUMNS)  # a row dict -> its cells in COLUMNS order
_AT = {c: i for i, c in enumerate(COLUMNS)}


class Alike:
    """validate_row's results by what a row says apart from its numbers (_FREE): the rows of a sweep (the same
    GPU, models, method and k at many concurrencies) are checked once, each then taking the result with its own
    row number, load, throughputs, speedup and acceptance. A row whose numbers validate_row would say something
    of (unreadable, out of range, a fractional concurrency, a speedup that disagrees with the throughputs, an
    acceptance the conversion refuses), or that has no concurrency, goes through validate_row itself."""

    MAX_KEPT = 4096  # results (and shapes) kept; rows alike none of them are checked one by one

    def __init__(self):
        self.results: dict = {}  # key -> (the row's cells, problems, fallbacks, same tree, validate_row's info)
        self.signatures: dict = {}  # (headers' items, value names) -> _Shape
        self.shapes: dict = {}  # (id(headers), value names) -> (headers, _Shape): the same headers on a file's rows
        self.acceptances: dict = {}  # (form, number, k, column) -> convert_single's Acceptance, or None: refused

    def validate(self, rec: RunRecord, defaults: RunDefaults):
        """(the row's cells in COLUMNS order, or None where it is left out; its problems; the fallbacks it
        used, {kind: name as written}; whether its method says "same tree")."""
        found = self._split(rec)
        if found is None:
            return _alone(rec, defaults)[:4]
        key, numbers, shape = found
        known = self.results.get(key)
        if known is None:
            result = _alone(rec, defaults)
            if result[0] is not None and len(self.results) < self.MAX_KEPT:
                self.results[key] = result
            return result[:4]
        cells = _with_numbers(rec, known[0], known[4], numbers, shape, self.acceptances)
        if cells is None:
            return _alone(rec, defaults)[:4]
        return cells, [p.at_row(rec.row) for p in known[1]] if known[1] else [], known[2], known[3]

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
        """(the key of what the row says but its numbers, its numbers in shape.free's order (None: not given; one
        None after them, read at place -1), its _Shape), or None for a row to check alone."""
        v = rec.values
        names = tuple(v)
        known = self.shapes.get((id(rec.headers), names))
        shape = known[1] if known is not None and known[0] is rec.headers else self._shape(rec.headers, names)
        if shape is None:
            return None
        numbers, blank = _numbers_at_once(v, shape), ()
        if numbers is None:
            found = _numbers_one_by_one(v, shape)
            if found is None:
                return None
            numbers, blank = found
        numbers.append(None)  # numbers[-1]: what a number the shape has not (place -1) reads as
        conc = numbers[shape.at_concurrency]
        if conc is None or conc != round(conc) or (shape.checks_speedup and _disagree(numbers, shape)):
            return None
        keyed = tuple(map(v.__getitem__, shape.keyed))
        try:
            "".join(keyed)  # every value is text (the fast test): else 1, 1.0 and true would be one key
        except TypeError:
            keyed = tuple(x if type(x) is str else _value_key(x) for x in keyed)
        return (shape.number, rec.file, rec.fmt, tuple(rec.remarks), keyed, blank), numbers, shape


def _numbers_at_once(v: dict, shape: _Shape) -> list | None:
    """The row's numbers where every one is text float() reads, finite and in range (a CSV sweep's rows); else None."""
    if not shape.free:
        return []
    raws = shape.pick(v)
    try:
        joined = "".join(raws)  # all text: float() would take true for 1
        if not joined.isascii() or "_" in joined or (len(joined) > MAX_DIGITS and max(map(len, raws)) > MAX_DIGITS):
            return None  # `1_0`, digits of other scripts, long numbers: the one number parser says why
        numbers = list(map(float, raws))
    except (TypeError, ValueError):
        return None
    if all(map(operator.le, shape.lows, numbers)) and all(map(operator.le, numbers, shape.highs)):
        return numbers  # NaN fails both tests, infinity the second
    return None


def _numbers_one_by_one(v: dict, shape: _Shape):
    """(the row's numbers, None where not given; the values read as not given), or None where validate_row
    says something of a number."""
    numbers = []
    blank = ()
    for c, lo, strict_lo, hi in shape.free:
        raw = v[c]
        x = _plain_number(raw, lo, strict_lo, hi)
        if x is None:
            if not (raw is None or (type(raw) is str and not raw.strip())):
                return None
            blank += (c, type(raw).__name__, raw)  # read as not given, without a word
        numbers.append(x)
    return numbers, blank


def _alone(rec: RunRecord, defaults: RunDefaults):
    """validate_row of one row as Alike.validate gives it, and validate_row's info."""
    row, problems, info = validate_row(rec, defaults)
    if row is None:
        return None, problems, None, False, None
    return _CELLS(row), problems, row["_fallbacks"], row["_same_tree"], info


def _disagree(numbers: list, shape: _Shape) -> bool:
    """Whether a speedup disagrees with the throughputs by more than 2% (validate_row says so, with the numbers)."""
    base, spec, speedup = numbers[shape.at_base], numbers[shape.at_spec], numbers[shape.at_speedup]
    return speedup is not None and bool(base) and bool(spec) and abs(spec / base - speedup) > 0.02 * speedup


@dataclass(frozen=True)
class _Shape:
    """What the rows with the same headers and value names share: which values are numbers (_FREE) and where
    each sits among them, which are the key, and the acceptance form validate_row reads where it is a number."""

    free: tuple  # (column, low, low excluded, high) per number
    pick: object  # values -> the numbers' values, a tuple
    lows: tuple  # per number: the lowest value taken (the float just above a low that is excluded)
    highs: tuple  # per number: the highest value taken (the largest float where none: infinity is refused)
    keyed: tuple  # the names of the other values
    number: int
    at_concurrency: int  # the place of each number in `free`, -1 where the row does not give it
    at_base: int
    at_spec: int
    at_speedup: int
    at_form: int
    form: str | None
    checks_speedup: bool  # the row gives throughputs and a speedup (validate_row compares them)


def _shape_of(names: tuple, number: int) -> _Shape:
    counted = "survival" in names or ("drafts" in names and "accepted_tokens" in names)  # read before one number
    bounds = _FREE if counted else _FREE_WITH_ACCEPTANCE
    form = None if counted else next((key for key in _FORMS if key in names), None)
    free = tuple((c, *bounds[c]) for c in names if c in bounds)
    at = {c: i for i, (c, *_) in enumerate(free)}
    picked = tuple(c for c, *_ in free)
    pick = operator.itemgetter(*picked) if len(picked) > 1 else lambda v: tuple(v[c] for c in picked)
    return _Shape(free, pick, tuple(math.nextafter(lo, _INF) if strict else lo for _, lo, strict, _ in free),
                  tuple(sys.float_info.max if hi is None else hi for *_, hi in free),
                  tuple(c for c in names if c not in bounds), number, at.get("concurrency", -1),
                  at.get("baseline_tok_s", -1), at.get("spec_tok_s", -1), at.get("speedup", -1), at.get(form, -1), form,
                  all(c in at for c in ("baseline_tok_s", "spec_tok_s", "speedup")))


def _plain_number(raw, lo, strict_lo, hi) -> float | None:
    """raw as the number validate_row reads, where it reads one without a word (in range); None otherwise."""
    kind = type(raw)
    if kind is str or kind is float or kind is int:  # a decimal comma and a percent sign are no number here
        try:
            x = read_number(raw)
        except (ValueError, OverflowError):
            return None
    else:
        return None
    if not lo <= x < _INF or (strict_lo and x == lo) or (hi is not None and x > hi):  # NaN fails the first
        return None
    return x


_INF = math.inf


def _value_key(raw) -> tuple:
    """A value that is not text as a key telling apart what validation tells apart (1, 1.0, True; lists by items)."""
    return type(raw).__name__, repr(raw)


def _with_numbers(rec: RunRecord, template: tuple, info: tuple, numbers: list, shape: _Shape,
                  acceptances: dict) -> list | None:
    """The cells of a row alike `template` (validate_row's row's cells, `info` its third value) with its own
    numbers, as validate_row writes them; None where its acceptance is refused at the template's k
    (acceptances: the conversions so far)."""
    cells = list(template)
    cells[_ROW] = rec.row
    cells[_CONCURRENCY] = round(numbers[shape.at_concurrency])
    base, spec, speedup = numbers[shape.at_base], numbers[shape.at_spec], numbers[shape.at_speedup]
    if speedup is None and base and spec:
        speedup = spec / base
    scale = info[2]
    if scale > 1:
        base = None if base is None else base * scale
        spec = None if spec is None else spec * scale
    cells[_BASE], cells[_SPEC], cells[_MEASURED] = base, spec, speedup
    value = numbers[shape.at_form]
    if value is not None:
        key = (shape.form, value, info[0], rec.headers.get(shape.form, shape.form))
        acc = acceptances.get(key, acceptances)
        if acc is acceptances:
            try:
                acc = acceptances[key] = convert_single(*key)
            except SpecModelError:
                acc = acceptances[key] = None
        if acc is None:
            return None
        cells[_TOKENS], cells[_SURVIVAL] = acc.tokens_per_step, acc.survival
        if info[1]:  # k assumed: its α is kept out of fits
            cells[_ALPHA_ASSUMED], cells[_ALPHA] = acc.alpha, np.nan
        else:
            cells[_ALPHA] = acc.alpha
    return cells


_ROW, _CONCURRENCY, _BASE, _SPEC, _MEASURED = (_AT[c] for c in ("row", "concurrency", "baseline_tok_s", "spec_tok_s",
                                                                 "measured_speedup"))
_TOKENS, _SURVIVAL, _ALPHA, _ALPHA_ASSUMED = (_AT[c] for c in ("tokens_per_step", "survival", "alpha", "alpha_assumed"))
