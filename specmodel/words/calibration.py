"""A calibration in words: the one line the sidebar, the badges and the report show for it."""

from __future__ import annotations

from specmodel.model.calibration_file import parameter_range, with_unit
from specmodel.model.parameters import PARAMETERS
from specmodel.model.roofline import Efficiency

# A calibration file's `message` where no model parameter was fitted (calibration_file.calibration_document).
NOTHING_FITTED = "no model parameter fitted: the runs name no preset the model can describe"


def calibration_line(eff: Efficiency) -> str:
    """The whole calibration in one line: every parameter away from its default with its range, and
    how many are at their defaults (the sidebar and the badges show this, never a subset)."""
    default = Efficiency()
    changed = [n for n in PARAMETERS if getattr(eff, n) != getattr(default, n)]
    shown = [f"{n} {with_unit(getattr(eff, n), PARAMETERS[n].unit)} (range {parameter_range(n)})" for n in changed]
    rest = len(PARAMETERS) - len(changed)
    tail = (f"the other {rest} parameter{'s' if rest != 1 else ''} at {'their' if rest != 1 else 'its'} default"
            + ("s" if rest != 1 else "")) if rest else ""
    if not shown:
        return "every parameter at its default"
    return "; ".join(shown + ([tail] if tail else []))
