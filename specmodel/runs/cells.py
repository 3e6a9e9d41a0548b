"""One cell or JSON value as the run readers take it: a finite number or nothing, quoted for a message,
and the model name a one-arm run is paired on."""

from __future__ import annotations

import json
import math

from specmodel.limits import clean_name
from specmodel.model import presets


def number(x) -> float | None:
    """x as a finite float, or None (text that is no number, true/false, NaN, infinities)."""
    if isinstance(x, bool):  # JSON true/false: not a number of anything
        return None
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a JSON integer beyond any float
        return None
    return v if math.isfinite(v) else None


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
