"""/metrics windows as the step fit's points: a server's own timing over a window (metrics/timing.py) is a
point of its arm at the batch it ran, as a benchmark run is (runs/step_points.py), so recorded windows of a
plain and a speculative server at two or three loads fit the step times without a benchmark file.

A window is two recorded /metrics pages of one server, before and after a load (`runs --calibrate --window
NAME=BEFORE,AFTER`). Windows with the same NAME are one speculative setup (NAME is the user's word for it:
"ngram", "eagle3 k=3"; a method name sets the fit's method). A window of a server with speculation off is a
plain window: it feeds the plain arm of every setup of the same served model. The point's batch is the
running batch the timing histograms measured (engine steps counted), its time the decode time per emitted
token and sequence, its E the window's mean acceptance length.
"""

from __future__ import annotations

from dataclasses import dataclass

from specmodel.errors import SpecModelError
from specmodel.fit.steps import Shape, StepPoint, fit_steps
from specmodel.metrics.prom import parse_snapshot, stats_from_window, window_over
from specmodel.model.presets import find_method
from specmodel.runs.step_points import SetupFit

WORKLOAD = "/metrics windows"  # the workload a window fit is named under (the windows' own traffic)


@dataclass(frozen=True)
class Window:
    name: str  # the setup it belongs to, in the user's words
    before: str  # /metrics text at the window's start
    after: str  # and at its end
    where: str  # for messages: the two files


@dataclass(frozen=True)
class _Point:
    name: str
    model: str | None
    k: int | None
    spec: bool
    point: StepPoint


def _point(w: Window) -> _Point:
    """The window's point; SpecModelError naming the files where its pages give none."""
    try:
        stats = stats_from_window(window_over([parse_snapshot(w.before, at=0.0), parse_snapshot(w.after, at=1.0)]))
    except SpecModelError as exc:
        raise SpecModelError(f"{w.where}: {exc}") from None
    t = stats.timing
    if t is None or t.batch is None:
        raise SpecModelError(f"{w.where}: the pages time no decode step with its batch (vLLM's inter-token "
                             "latency and iteration-token histograms, with engine steps counted): no point to fit")
    if stats.spec_enabled:
        p = StepPoint(t.batch, spec_ms_per_token=t.ms_per_token, tokens_per_step=stats.tokens_per_step, where=w.where)
    else:
        p = StepPoint(t.batch, plain_ms=t.ms_per_token, where=w.where)
    return _Point(w.name, stats.model_name, stats.k, stats.spec_enabled, p)


def _method(name: str) -> str | None:
    try:
        return find_method(name.split()[0]).name if name.split() else None
    except SpecModelError:
        return None


def window_fits(windows: list[Window]) -> list[SetupFit]:
    """A step fit per speculative setup (NAME) of the windows, its plain arm from the plain windows of the same
    served model; SpecModelError naming the files of a window without a timed step."""
    points = [_point(w) for w in windows]
    plain = [p for p in points if not p.spec]
    out = []
    for name in dict.fromkeys(p.name for p in points if p.spec):
        mine = [p for p in points if p.spec and p.name == name]
        model = mine[0].model
        own = [p.point for p in mine] + [p.point for p in plain if p.model == model]
        k = next((p.k for p in mine if p.k is not None), None)
        fit = fit_steps(own, Shape(), k)
        out.append(SetupFit(WORKLOAD, name, (), tuple(own), fit, model, _method(name)))
    return out
