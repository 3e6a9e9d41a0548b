"""Where an off cost comes from, in words: the source and the brief that `predict --json`'s `off_cost` and
`runs --json`'s `off_cost_source` give, from model.off_state's OffCost (its `why` and the values in `about`).

>>> from specmodel.model.off_state import NONE
>>> off_cost_brief(NONE)
'none: no off band in the server'
"""

from __future__ import annotations

from specmodel.model.decide import SWITCH_GAIN
from specmodel.model.off_state import OffCost

_SERVER_WITHOUT = "the off band is a server without speculation"


def off_cost_source(cost: OffCost) -> str:
    """Where the cost comes from, in a sentence (`predict --json`'s off_cost `source`)."""
    a = cost.about
    if cost.why == "engine":
        return cost.source
    if cost.why == "one_k":
        return f"{a[0]} runs {a[1]} with one k at every batch: {_SERVER_WITHOUT}"
    if cost.why == "before_since":
        return f"{a[0]} {a[1]} has no k = 0 band before {a[2]}: {_SERVER_WITHOUT}"
    if cost.why == "runs":
        said = ", ".join(f"{v:.1%} at batch {b:g}" for b, v in cost.points)
        return f"{off_cost_brief(cost)}: {said}"
    if cost.why == "given":
        return off_cost_brief(cost)
    return "no off band inside the server: the schedule's off band is a plain server"


def off_cost_brief(cost: OffCost) -> str:
    """The source in a few words, for a table cell (`runs --json`'s `off_cost_source`)."""
    a = cost.about
    if cost.why == "engine":
        return f"{cost.kind}: {a[0]}'s value, data/engines.json off_cost"
    if cost.why == "one_k":
        return f"none: one k for {a[1]}"
    if cost.why == "before_since":
        return f"none: no k = 0 band before {a[3]} {a[2]}"
    if cost.why == "runs":
        return f"measured: {a[0]} run(s) with speculation configured and off ({a[1]})"
    if cost.why == "given":
        return f"measured: {float(cost.points[0][1]):.1%} of the plain step ({a[0]})"
    return "none: no off band in the server"


def off_cost_dict(cost: OffCost, batch: int) -> dict:
    """`predict --json`'s `off_cost`: the share at `batch`, the points, the kind, the source and its brief."""
    return {"value": round(float(cost.at(batch)), 4), "at_batch": int(batch), "kind": cost.kind,
            "points": [[int(b), round(float(v), 4)] for b, v in cost.points], "source": off_cost_source(cost),
            "brief": off_cost_brief(cost)}


def measured_off_words(points) -> str:
    """What the runs with speculation configured and off measured ([(batch, off ÷ plain throughput)]), for the
    decision of the runs' step fit, whose "off above" compares against a plain server: "Off is not free here:
    configured and off (k = 0), your runs ran at 0.64× of plain at batch 1, 0.60× at 4, 0.73× at 16; where it goes
    off, serve without speculation (a restart or a plain pool), not a k = 0 band." ("" without points)."""
    if not points:
        return ""
    said = ", ".join(f"{v:.2f}× of plain at batch {b:g}" if i == 0 else f"{v:.2f}× at {b:g}"
                     for i, (b, v) in enumerate(sorted(points)))
    if min(v for _, v in points) >= 1.0 - SWITCH_GAIN:  # within the 2% a schedule does not switch k for: free
        return f"Off is free here: configured and off (k = 0), your runs ran at {said}."
    return (f"Off is not free here: configured and off (k = 0), your runs ran at {said}; where it goes off, serve "
            "without speculation (a restart or a plain pool), not a k = 0 band.")
