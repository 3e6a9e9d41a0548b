"""The Live page's step times: the inputs that give the server's own timing a plain step to be set against (a
calibration with step fits, a measured batch-1 plain step) and the verdict box that says what it rests on
(specmodel.metrics.live.judged, metrics/timed.py)."""

from __future__ import annotations

from pages.parts.calibration import step_fits
from pages.parts.display import show_verdict
from pages.parts.text import no_links
from specmodel import SpecModelError
from specmodel.metrics import live, timed
from specmodel.show import readouts
from specmodel.text import safe_text
from specmodel.words.served import figures_line

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


def show_judged(stats, verdict, fits, plain_ms: float | None, method: str) -> tuple[str, ...]:
    """The verdict box, led by what it rests on: the step times' verdict where they decide (then the figures
    measured and modelled, the step fit's and the model's own answers under it), else the model's with its
    band. Returns the judgement's notes, for the page's notes."""
    j = live.judged(stats, verdict, fits, method, t_target_ms=plain_ms)
    _label, text, advice = live.headline(verdict, j)
    under = [figures_line(list(j.measured), list(j.modelled))]
    if j.fit is not None and j.rests_on != "step fit":
        under.append(f"The step fit alone ({j.fit['setup']}): {j.fit['words']}")
    under.append(f"The model alone, on presets: {verdict.text}" if j.decides else readouts.live_band_line(verdict) or "")
    show_verdict(j.tone or verdict.tone, no_links(f"Right now: {text}"), no_links(advice), under=". ".join(
        u.rstrip(".") for u in under if u) + ".")
    return j.notes
