"""Step fits in a calibration file (`runs --calibrate --save-calibration`, key "step_fits"): written, read
back and checked, and the one a question is about chosen.

Each entry is one setup's fit (fit.steps.StepFit.to_dict) with what names the setup: its workload,
its setup words, the target and method as the runs named them, and k. A file without the key (one
saved before step fits, or from runs that pinned none) has none; a malformed entry is refused with the
field it fails on, never half applied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from specmodel.errors import SpecModelError
from specmodel.files import json_validator
from specmodel.fit.steps import StepFit
from specmodel.text import clean_name

_NUMBER = {"type": "number"}
_ARM = {"type": ["object", "null"], "required": ["kind", "terms", "cov", "pinned", "defaults", "points"],
        "properties": {"kind": {"enum": ["linear", "model"]}, "terms": {"type": "object", "additionalProperties": _NUMBER},
                       "cov": {"type": "array", "minItems": 2, "maxItems": 2,
                               "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": _NUMBER}},
                       "pinned": {"type": "array", "items": {"type": "string"}},
                       "defaults": {"type": "array", "items": {"type": "string"}},
                       "points": {"type": "integer", "minimum": 0}}}
MAX_SHAPE_POINTS = 256  # chosen: a saved model shape has 49 points (fit.steps.Shape.of_model); more is not a saved fit
MAX_SAVED_FITS = 1000  # chosen: one fit per setup; a thousand setups is more than any review loads
_ENTRY = {"type": "object", "required": ["fit"],
          "properties": {"workload": {"type": "string"}, "setup": {"type": "string"},
                         "target": {"type": ["string", "null"]}, "method": {"type": ["string", "null"]},
                         "fit": {"type": "object", "required": ["shape", "plain", "spec", "batches"],
                                 "properties": {"plain": _ARM, "spec": _ARM,
                                                "batches": {"type": "array", "items": _NUMBER, "minItems": 1,
                                                            "maxItems": MAX_SHAPE_POINTS},
                                                "shape_batches": {"type": "array", "items": _NUMBER,
                                                                  "maxItems": MAX_SHAPE_POINTS},
                                                "shape_plain_ms": {"type": "array", "items": _NUMBER,
                                                                   "maxItems": MAX_SHAPE_POINTS},
                                                "shape_spec_ms_per_token": {"type": "array", "items": _NUMBER,
                                                                            "maxItems": MAX_SHAPE_POINTS},
                                                "off_measured": {"type": "array", "maxItems": MAX_SHAPE_POINTS,
                                                                 "items": {"type": "array", "minItems": 2,
                                                                           "maxItems": 2, "items": _NUMBER}}}}}}
_LIST = {"type": "array", "maxItems": MAX_SAVED_FITS, "items": _ENTRY}


@dataclass(frozen=True)
class SavedFit:
    """A step fit and the setup it was fitted on, as the file names it."""

    workload: str
    setup: str
    target: str | None
    method: str | None
    fit: StepFit

    @property
    def label(self) -> str:
        parts = [p for p in (self.target, self.workload, self.setup) if p]
        return ", ".join(parts) or "the runs' setup"

    def to_dict(self) -> dict:
        return {"workload": self.workload, "setup": self.setup, "target": self.target, "method": self.method,
                "fit": self.fit.to_dict()}


@cache
def _validator():
    return json_validator(_LIST)


def saved_fits(doc, where: str) -> list[SavedFit]:
    """The step fits of a calibration document ([] where it has none); SpecModelError naming the field."""
    if not isinstance(doc, dict) or doc.get("step_fits") is None:
        return []
    entries = doc["step_fits"]
    for error in _validator().iter_errors(entries):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
        raise SpecModelError(f"{where}: field 'step_fits{path}' is not a saved step fit ({error.message[:120]}); "
                             "save it again with `runs ... --calibrate --save-calibration`")
    out = []
    for i, e in enumerate(entries):
        try:
            fit = StepFit.from_dict(e["fit"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SpecModelError(f"{where}: field 'step_fits[{i}].fit' is not a saved step fit ({exc})") from None
        values = [v for arm in (fit.plain, fit.spec) if arm for v in (*arm.mean, *sum(arm.cov, ()))]
        if not all(math.isfinite(v) for v in values):
            raise SpecModelError(f"{where}: field 'step_fits[{i}].fit' has a number that is not finite")
        out.append(SavedFit(clean_name(e.get("workload") or "")[0], clean_name(e.get("setup") or "")[0],
                            e.get("target"), e.get("method"), fit))
    return out


def of_served_model(fits: list[SavedFit], model_name: str | None) -> list[SavedFit]:
    """The usable fits whose runs' target is the served model as a server names it (`--served-model-name`, the
    `model_name` label), letter case aside."""
    name = (model_name or "").casefold()
    return [f for f in fits if f.fit.usable and name and (f.target or "").casefold() == name]


def fits_across_k(fits: list[SavedFit], k: int | None, method: str | None,
                  model_name: str | None = None) -> dict[int, StepFit]:
    """{k: fit} of one server's usable fits at two or more k, where the question's k is one of them and its method
    theirs (the same workload, target and method: runs at several k of one server); {} where no server has them or
    several do. `model_name`: a scraped server's model; the fits of runs that name it come first
    (of_served_model), as the fit of its own k is chosen (metrics.timed.fit_for_server)."""
    servers: dict = {}
    for f in of_served_model(fits, model_name) or fits:
        if f.fit.usable and f.fit.k and (method is None or f.method in (None, method)):
            servers.setdefault((f.workload, f.target, f.method), []).append(f)
    found = [group for group in servers.values() if len(group) >= 2 and len({f.fit.k for f in group}) == len(group)
             and (k is None or k in {f.fit.k for f in group})]
    return {f.fit.k: f.fit for f in found[0]} if len(found) == 1 else {}


def chosen_fit(fits: list[SavedFit], k: int | None = None, method: str | None = None) -> SavedFit | None:
    """The usable fit a question (k, method) is about: the only one, or the only one with that k and
    method; None where there is none or several would do (the caller says which to pick)."""
    usable = [f for f in fits if f.fit.usable]
    if k is not None:
        usable = [f for f in usable if f.fit.k is None or f.fit.k == k]
    if method is not None and len(usable) > 1:
        usable = [f for f in usable if f.method is None or f.method == method] or usable
    return usable[0] if len(usable) == 1 else None
