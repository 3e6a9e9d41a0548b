"""The Live page's step times: the inputs that give the server's own timing a plain step to be set against (a
calibration with step fits, a measured batch-1 plain step; specmodel.metrics.live.judged, metrics/timed.py say
what the verdict then rests on: pages/parts/live_answer.py)."""

from __future__ import annotations

from pages.parts.calibration import step_fits
from pages.parts.text import no_links
from specmodel import SpecModelError
from specmodel.metrics import timed
from specmodel.text import safe_text

UPLOAD_HELP = ("Written by `runs FILES --calibrate --save-calibration FILE`: each setup's plain and speculative step "
               "against the batch. The server's own step timing is set against the plain step the fit gives at the "
               "window's batch; the fit is chosen by the served model, k and the sidebar's method.")
PLAIN_HELP = ("The plain step (no speculation) you measured at batch 1, in ms: the model grows it to the window's "
              "batch, and the server's own step timing is set against it.")


def step_time_inputs(cols) -> tuple[tuple, float | None]:
    """(the step fits of an uploaded calibration, else the session's, and a measured batch-1 plain step in ms or
    None) from two columns."""
    upload = cols[0].file_uploader("Calibration with step fits (JSON)", type=["json"], key="live_step_fits",
                                   help=UPLOAD_HELP)
    plain_ms = cols[1].number_input("Plain step at batch 1, ms (measured; 0 = none)", 0.0, 10_000.0, 0.0, 0.1,
                                    key="live_plain_ms", bind="query-params", help=PLAIN_HELP)
    fits = tuple(step_fits())  # the session's (Past runs' "Use these step fits", or a calibration file there)
    if upload is not None:
        try:
            fits = tuple(timed.fits_from_text(upload.getvalue().decode("utf-8", errors="replace"), safe_text(upload.name)))
        except SpecModelError as exc:
            cols[0].error(no_links(str(exc)))
    return fits, (float(plain_ms) or None)
