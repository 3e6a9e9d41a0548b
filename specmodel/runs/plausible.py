"""Whether a measured speedup is possible at its measured tokens per step E.

A speculative step emits E tokens on average and cannot take less time than a plain step (it runs the
target over at least as many tokens), so two comparable runs cannot measure a speedup S above E: S ≤ E.
A row measuring more (1.73× at E = 1.01: runs taken minutes apart on a busy machine) has lost
comparability between its two arms; it is flagged (`measured_plausible` False, a warning naming its file
and row) and its measurement is not taken as a verdict (runs.review). True where S ≤ E (within
PLAUSIBLE_TOLERANCE), None where either is unknown, or the row is given as a request rate (a latency
ratio), or its E was read from a per-token α (which assumes i.i.d. acceptance) or at an assumed k.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specmodel.runs.records import Problem

# chosen: the share by which a measured speedup may exceed E before it is called impossible (timer and
# counter noise of two separate runs; the real-engine lab's best arm measured S/E ≤ 0.52)
PLAUSIBLE_TOLERANCE = 0.05


def plausibility(frame: pd.DataFrame) -> tuple[list, list[Problem]]:
    """(measured_plausible per row: True, False or None; a warning for each row that is False)."""
    if frame.empty:
        return [], []
    speedup = pd.to_numeric(frame["measured_speedup"], errors="coerce").to_numpy(dtype=float)
    e = pd.to_numeric(frame["tokens_per_step"], errors="coerce").to_numpy(dtype=float)
    known = np.isfinite(speedup) & np.isfinite(e) & (e > 0)
    if "rate_driven" in frame:
        known &= ~frame["rate_driven"].fillna(False).astype(bool).to_numpy()
    if "e_from_alpha" in frame:  # E from a per-token α assumes i.i.d. acceptance: no measured bound
        known &= ~frame["e_from_alpha"].fillna(False).astype(bool).to_numpy()
    if "alpha_assumed" in frame:  # E read at an assumed k is itself assumed
        known &= ~np.isfinite(pd.to_numeric(frame["alpha_assumed"], errors="coerce").to_numpy(dtype=float))
    with np.errstate(invalid="ignore"):
        ok = speedup <= e * (1 + PLAUSIBLE_TOLERANCE)
    flags = [bool(good) if seen else None for seen, good in zip(known.tolist(), ok.tolist())]
    bad = np.flatnonzero(known & ~ok)
    files = frame["file"].to_numpy(dtype=object)[bad].tolist()  # each column read once, not once per row
    rows = frame["row"].to_numpy(dtype=object, na_value=None)[bad].tolist()
    kind = implausible_words()
    return flags, [Problem(str(file), None if row is None else int(row), "measured_speedup",
                           implausible_words(s, tokens), "warning", kind=kind, figures=f"{s:.2f}× at E = {tokens:.2f}")
                   for file, row, s, tokens in zip(files, rows, speedup[bad].tolist(), e[bad].tolist())]


def implausible_words(speedup: float | None = None, e: float | None = None) -> str:
    """Why a measured speedup is not taken as a verdict; without the figures, what every such row shares."""
    figures = (f"measured speedup {speedup:.2f}× is above its tokens per step E = {e:.2f}" if speedup is not None
               else "measured speedup above its tokens per step E")
    return (f"{figures} (+{PLAUSIBLE_TOLERANCE:.0%} "
            "allowed): a speculative step cannot be faster than a plain one, so the two runs are not comparable "
            "(taken apart on a busy machine, another workload or setup); not taken as a verdict — measure both arms "
            "again back to back")
