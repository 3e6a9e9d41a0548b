"""Calibration files: the fitted parameters written by `runs --calibrate --save-calibration` and the
Past runs page, read back by every command's `--calibration` and the page's upload; every value
checked against the one bounds table (parameters.PARAMETERS). Light on purpose: reading a
calibration needs neither the fit (scipy) nor the run readers (pandas).
"""

from __future__ import annotations

import math
from dataclasses import replace

from specmodel.errors import SpecModelError
from specmodel.model.parameters import PARAMETERS
from specmodel.model.roofline import Efficiency


def check_parameters(values: dict, where: str) -> Efficiency:
    """An Efficiency from name -> value, every value checked against PARAMETERS' hard bounds;
    SpecModelError naming `where` and the field otherwise (unknown names too)."""
    known = Efficiency().as_dict()
    clean = {}
    for name, value in values.items():
        if name not in known:
            raise SpecModelError(f"{where}: '{name}' is not a model parameter; known: {', '.join(known)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise SpecModelError(f"{where}: '{name}' must be a finite number, got {value!r}")
        bound = PARAMETERS.get(name)
        if bound is not None and not bound.lo <= value <= bound.hi:
            raise SpecModelError(f"{where}: '{name}' = {value:g} is outside its allowed range "
                                 f"[{bound.lo:g}, {bound.hi:g}] ({bound.words})")
        if bound is None and value <= 0:
            raise SpecModelError(f"{where}: '{name}' must be > 0, got {value:g}")
        clean[name] = float(value)
    return replace(Efficiency(), **clean)


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


def _with_unit(value: float, unit: str) -> str:
    text = f"{value:.3g}"
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
        rows.append({"parameter": name, "value": _with_unit(value, p.unit), "physical range": parameter_range(name),
                     "status": status,
                     "means": p.words})
    return rows


def calibration_line(eff: Efficiency) -> str:
    """The whole calibration in one line: every parameter away from its default with its range, and
    how many are at their defaults (the sidebar and the badges show this, never a subset)."""
    default = Efficiency()
    changed = [n for n in PARAMETERS if getattr(eff, n) != getattr(default, n)]
    shown = [f"{n} {_with_unit(getattr(eff, n), PARAMETERS[n].unit)} (range {parameter_range(n)})" for n in changed]
    rest = len(PARAMETERS) - len(changed)
    tail = (f"the other {rest} parameter{'s' if rest != 1 else ''} at {'their' if rest != 1 else 'its'} default"
            + ("s" if rest != 1 else "")) if rest else ""
    if not shown:
        return "every parameter at its default"
    return "; ".join(shown + ([tail] if tail else []))


CALIBRATION_FORMAT = "specmodel-calibration"
CALIBRATION_VERSION = 2  # 2: engine overheads, floors and KV efficiency joined the parameters


def save_calibration(cal, path: str) -> None:
    """Write a calibrate.Calibration (its to_file()) atomically: nothing half-written on failure."""
    import json

    from specmodel.limits import write_file

    write_file(path, json.dumps(cal.to_file(), indent=2, allow_nan=False) + "\n", "the calibration")


def calibration_from_json(text: str, where: str) -> tuple[Efficiency, dict]:
    """(Efficiency, the file's document) from a calibration file's text; SpecModelError naming
    `where` and the field when it is not one, is from another version or has impossible values."""
    from specmodel.limits import load_json

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
    if not isinstance(doc, dict) or doc.get("format") != CALIBRATION_FORMAT:
        raise SpecModelError(f"{where}: not a specmodel calibration file (field 'format' should be "
                             f"'{CALIBRATION_FORMAT}')")
    version = doc.get("version")
    if version != CALIBRATION_VERSION:
        raise SpecModelError(f"{where}: calibration file version {version!r}, this specmodel reads version "
                             f"{CALIBRATION_VERSION}; calibrate again with `runs ... --calibrate --save-calibration`")
    params = doc.get("parameters")
    if not isinstance(params, dict):
        raise SpecModelError(f"{where}: field 'parameters' must be an object of parameter -> number")
    return require_physical(check_parameters(params, f"{where}, field 'parameters'"), f"{where}, field 'parameters'"), doc


def load_calibration(path: str) -> tuple[Efficiency, dict]:
    import os

    from specmodel.limits import clean_name, read_file

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
