"""Calibration files: the fitted parameters written by `runs --calibrate --save-calibration` and the
Past runs page, read back by every command's `--calibration` and the page's upload; every value
checked against the one bounds table (parameters.PARAMETERS) by a JSON Schema (jsonschema) built from
it, each error said in the file's own words. Light on purpose: reading a calibration needs neither the
fit (scipy) nor the run readers (pandas).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from functools import cache

from specmodel.errors import SpecModelError
from specmodel.files import json_validator, load_json, read_file, write_file
from specmodel.text import clean_name
from specmodel.model.parameters import PARAMETERS
from specmodel.model.roofline import Efficiency


@cache
def _parameters_validator():
    """The parameters object's schema: each known parameter a finite number within its hard bounds
    (> 0 for one outside PARAMETERS), any other name refused on its own (path: the name)."""
    properties = {}
    for name in Efficiency().as_dict():
        bound = PARAMETERS.get(name)
        properties[name] = {"type": "number", "format": "finite",
                            **({"minimum": bound.lo, "maximum": bound.hi} if bound else {"exclusiveMinimum": 0})}
    return json_validator({"type": "object", "properties": properties, "additionalProperties": {"not": {}}})


_FIRST = {"not": 0, "type": 1, "format": 2}  # of a parameter's errors, the one its message names (then bounds)


def check_parameters(values: dict, where: str) -> Efficiency:
    """An Efficiency from name -> value, every value checked against PARAMETERS' hard bounds;
    SpecModelError naming `where` and the field otherwise (unknown names too): the first field in the
    file's order with an error."""
    order = {name: i for i, name in enumerate(values)}
    errors = sorted(_parameters_validator().iter_errors(values),
                    key=lambda e: (order[e.path[0]], _FIRST.get(e.validator, 3)))
    if errors:
        name, kind = errors[0].path[0], errors[0].validator
        value = values[name]
        if kind == "not":
            raise SpecModelError(f"{where}: '{clean_name(name, 40)[0]}' is not a model parameter; known: "
                                 f"{', '.join(Efficiency().as_dict())}")
        if kind in ("type", "format"):
            raise SpecModelError(f"{where}: '{name}' must be a finite number, got {clean_name(repr(value), 40)[0]}")
        if kind == "exclusiveMinimum":
            raise SpecModelError(f"{where}: '{name}' must be > 0, got {value:g}")
        bound = PARAMETERS[name]
        raise SpecModelError(f"{where}: '{name}' = {value:g} is outside its allowed range "
                             f"[{bound.lo:g}, {bound.hi:g}] ({bound.words})")
    return replace(Efficiency(), **{name: float(value) for name, value in values.items()})


def outside_physical(eff: Efficiency, names=None) -> tuple[str, ...]:
    """Parameters whose value lies outside the range real systems reach."""
    return tuple(n for n in (names or PARAMETERS)
                 if not PARAMETERS[n].physical_lo <= getattr(eff, n) <= PARAMETERS[n].physical_hi)


def require_physical(eff: Efficiency, where: str) -> Efficiency:
    """eff unchanged when every parameter lies in the range real systems reach; SpecModelError naming
    `where`, each parameter outside, its value and its range otherwise: such a calibration is never
    applied (a fit absorbing a term the model lacks, or a hand-edited file)."""
    outside = outside_physical(eff)
    if outside:
        shown = "; ".join(f"{n} = {getattr(eff, n):.3g} outside {PARAMETERS[n].physical_lo:g}–"
                          f"{PARAMETERS[n].physical_hi:g}{' ' + PARAMETERS[n].unit if PARAMETERS[n].unit else ''} "
                          f"({PARAMETERS[n].words})" for n in outside)
        raise SpecModelError(f"{where}: not applied, {shown}; calibrate again on runs closer to your setup "
                             "or correct the value")
    return eff


# Chosen: a fitted value below this is a bound the optimiser reached, not a measurement (the smallest
# parameter range, 0-0.5, is 10^6 times larger): shown as 0 rather than "2.55e-08".
SHOWN_AS_ZERO = 5e-7


def with_unit(value: float, unit: str) -> str:
    text = f"{0.0 if abs(value) < SHOWN_AS_ZERO else value:.3g}"
    return f"{text}{unit}" if unit == "×" else (f"{text} {unit}" if unit else text)


def parameter_range(name: str) -> str:
    """A parameter's physical range as shown: "0.3–3×", "0–3 ms"."""
    p = PARAMETERS[name]
    unit = "×" if p.unit == "×" else (f" {p.unit}" if p.unit else "")
    return f"{p.physical_lo:g}–{p.physical_hi:g}{unit}"


def parameter_rows(eff: Efficiency, fitted=(), held=()) -> list[dict]:
    """Every model parameter of a calibration, one row each, names whole: its value, its physical range,
    what it means and whether it was fitted, held at its starting value or left at its default (a
    calibration with a value outside its range is never applied: calibration_file.require_physical)."""
    default = Efficiency()
    rows = []
    for name, p in PARAMETERS.items():
        value = getattr(eff, name)
        status = ("fitted" if name in fitted else "held at its starting value" if name in held
                  else "default" if value == getattr(default, name) else "from the calibration")
        rows.append({"parameter": name, "value": with_unit(value, p.unit), "physical range": parameter_range(name),
                     "status": status,
                     "means": p.words})
    return rows


CALIBRATION_FORMAT = "specmodel-calibration"
CALIBRATION_VERSION = 2  # chosen (the file format's version): 2: engine overheads, floors and KV efficiency joined the parameters
# A calibration file's frame; its parameters are checked apart (check_parameters), as the other form's are.
_DOCUMENT = {"type": "object", "required": ["format", "version", "parameters"],
             "properties": {"format": {"const": CALIBRATION_FORMAT}, "version": {"const": CALIBRATION_VERSION},
                            "parameters": {"type": "object"}}}
_FIELDS = (None, "format", "version", "parameters")  # what a file is refused for first (None: not an object)


@cache
def _document_validator():
    return json_validator(_DOCUMENT)


def _check_frame(doc, where: str) -> None:
    """SpecModelError for what is wrong first with a calibration file's frame (format, version, parameters),
    in the order above; nothing when it is right."""
    fields = []
    for error in _document_validator().iter_errors(doc):
        if error.validator == "required":
            fields += [f for f in error.validator_value if f not in error.instance]
        else:
            fields.append(error.path[0] if error.path else None)
    if not fields:
        return
    field = min(fields, key=_FIELDS.index)
    if field in (None, "format"):
        raise SpecModelError(f"{where}: not a specmodel calibration file (field 'format' should be "
                             f"'{CALIBRATION_FORMAT}')")
    if field == "version":
        raise SpecModelError(f"{where}: calibration file version {doc.get('version')!r}, this specmodel reads "
                             f"version {CALIBRATION_VERSION}; calibrate again with `runs ... --calibrate "
                             "--save-calibration`")
    raise SpecModelError(f"{where}: field 'parameters' must be an object of parameter -> number")


def save_calibration(cal, path: str) -> None:
    """Write a calibrate.Calibration (its to_file()) atomically: nothing half-written on failure."""
    save_document(cal.to_file(), path)


def save_document(doc: dict, path: str) -> None:
    """Write a calibration document atomically: nothing half-written on failure."""
    write_file(path, json.dumps(doc, indent=2, allow_nan=False) + "\n", "the calibration")


def calibration_document(eff: Efficiency, message: str) -> dict:
    """A calibration document with the given parameters and nothing fitted (step fits are added to it); `message`
    says why (specmodel.words.calibration.NOTHING_FITTED)."""
    return {"format": CALIBRATION_FORMAT, "version": CALIBRATION_VERSION,
            "parameters": {k: float(v) for k, v in eff.as_dict().items()}, "fitted": [], "held": [],
            "message": message}


def calibration_from_json(text: str, where: str) -> tuple[Efficiency, dict]:
    """(Efficiency, the file's document) from a calibration file's text; SpecModelError naming
    `where` and the field when it is not one, is from another version or has impossible values."""
    try:
        doc = load_json(text)  # depth and integer length bounded; SpecModelError past them
    except ValueError:
        raise SpecModelError(f"{where}: not a JSON calibration file (write one with "
                             f"`runs FILE --calibrate --save-calibration {where}`)") from None
    except SpecModelError as exc:
        raise SpecModelError(f"{where}: {exc}") from None
    if isinstance(doc, dict) and "format" not in doc and isinstance(doc.get("calibration"), dict):
        # the JSON of `runs --calibrate --json`: its calibration object's parameters
        params = doc["calibration"].get("parameters")
        if isinstance(params, dict):
            checked = check_parameters(params, f"{where}, field 'calibration.parameters'")
            return require_physical(checked, f"{where}, field 'calibration.parameters'"), doc
    _check_frame(doc, where)
    params = doc["parameters"]
    return require_physical(check_parameters(params, f"{where}, field 'parameters'"), f"{where}, field 'parameters'"), doc


def load_calibration(path: str) -> tuple[Efficiency, dict]:
    shown = clean_name(path)[0]
    if not os.path.lexists(path):
        raise SpecModelError(f"{shown}: no such calibration file")
    # a folder or a device is named as such (it was "no such calibration file"); the size is checked first
    data = read_file(path, max_bytes=1_000_000, expected="the .json written by `runs --calibrate --save-calibration`")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecModelError(f"{shown}: not a calibration file (not UTF-8 text: byte {exc.start:,} is "
                             f"0x{data[exc.start]:02x})") from None
    return calibration_from_json(text, shown)
