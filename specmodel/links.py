"""Values that arrive in a page link, checked against the model's own bounds (one table:
`calibrate.PARAMETERS`, the ranges calibration fits within), so a link can never set what a
calibration could not have produced. An invalid value is dropped with a note, never used."""

from __future__ import annotations

import math
from urllib.parse import urlencode

from .parameters import PARAMETERS
from .errors import SpecModelError
from .roofline import Efficiency

# The order of the values in the `cal` link parameter (the last may be missing: an older link).
CAL_FIELDS = ("eta_bw", "eta_flops", "t_fixed_ms", "t_spec_overhead_ms", "small_model_exponent", "overhead_scale")
OLDEST_LINK_FIELDS = 4  # links written before small_model_exponent and overhead_scale joined


def efficiency_from_link(raw: str) -> Efficiency:
    """The calibrated parameters a `cal=0.8,0.6,0.1,0.2[,0.18]` link carries, each within its
    calibration bounds; SpecModelError naming the first value that is not."""
    parts = [p.strip() for p in str(raw).split(",")]
    if not OLDEST_LINK_FIELDS <= len(parts) <= len(CAL_FIELDS):
        raise SpecModelError(f"the link's calibration has {len(parts)} values; expected {OLDEST_LINK_FIELDS} "
                             f"to {len(CAL_FIELDS)} ({', '.join(CAL_FIELDS)})")
    values = {}
    for name, text in zip(CAL_FIELDS, parts):
        lo, hi, unit, words = PARAMETERS[name][:4]
        try:
            value = float(text)
        except ValueError:
            raise SpecModelError(f"the link's calibration value for {name} ({words}) is not a number") from None
        if not math.isfinite(value) or not lo <= value <= hi:
            raise SpecModelError(f"the link's calibration value for {name} ({words}) is outside its range "
                                 f"[{lo:g}, {hi:g}]{' ' + unit if unit else ''}")
        values[name] = value
    return Efficiency(**values)


def efficiency_to_link(eff: Efficiency) -> str:
    return ",".join(f"{getattr(eff, f):.4g}" for f in CAL_FIELDS)


def view_link(page_url: str | None, params: dict) -> str:
    """The full link to a page with its query parameters (`page_url` is the page's address without
    them, as the browser reports it; a placeholder when unknown, e.g. in a test)."""
    base = (page_url or "http://localhost:8501/").split("?", 1)[0]
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")}, doseq=True)
    return f"{base}?{query}" if query else base


def number_problems(params: dict, bounds: dict[str, tuple[float, float, str]]) -> list[str]:
    """What is wrong with the numbers a link carries: `bounds` maps a parameter to (lowest,
    highest, what it is); "whole" in what it is asks for a whole number. A parameter absent from
    the link is fine; each bad one gets a sentence saying the default is used instead.

    >>> bounds = {"users": (1, 100, "users (a whole number)"), "rps": (0.01, 50, "requests per second")}
    >>> [p.split(":")[0] for p in number_problems({"users": "2.5", "rps": "4"}, bounds)]
    ["The link's users=2.5 is not a valid number of users (a whole number) between 1 and 100"]
    """
    problems = []
    for key, (lo, hi, what) in bounds.items():
        raw = params.get(key)
        if raw is None:
            continue
        try:
            value = float(raw)
            ok = lo <= value <= hi and ("whole" not in what or value == int(value))
        except (ValueError, OverflowError):
            ok = False
        if not ok:
            problems.append(f"The link's {key}={raw} is not a valid number of {what} between {lo:g} and {hi:,.10g}: "
                            "the default is used instead; set the value above.")
    return problems
