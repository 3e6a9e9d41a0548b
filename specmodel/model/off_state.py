"""Speculation configured but switched off: what the off band of a per-batch schedule costs.

An engine that keeps speculation configured and runs k = 0 above a batch (vLLM's
`num_speculative_tokens_per_batch_size` with a 0 range, SGLang's 0 step, TensorRT-LLM above its
`max_concurrency`) still pays for it there: vLLM's V1 runner gives up its full CUDA graphs whenever a
per-batch table is set, the scheduler reserves the configured k lookahead slots per request at every
step, and the draft's weights and KV cache stay loaded (bench/evidence/off_cost.csv has the published
measurements and the engine code behind them). So the off band is not a plain server:

    off band, batch B:  step = plain step × (1 + cost(B)),  sequences = those the speculative arm fits

and `off_row` is its speedup against a plain server at each batch, what decide.py compares every k with
where a schedule may switch off. A server without speculation (a separate pool for the large batches,
or a restart) runs at 1.0 there. The cost is a run's measurement where a run gives one (kind "measured":
a row's `off_tok_s`, or `predict --off-cost`), else the engine's value (data/engines.json `off_cost`:
"published" where measured, "chosen" where not; "none" where the engine version has no in-server off
band: the schedule's off band is then a plain server). Numbers and labels only: specmodel.words.off_cost says
where a cost comes from (`why` and its values `about`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specmodel.bounds import bounded_cache
from specmodel.errors import SpecModelError
from specmodel.model.engines import Engine
from specmodel.model.scenario import Scenario, cleared_with_steps, free_of_acceptance, plain_throughput, predict

KINDS = ("measured", "published", "chosen", "none")


# Why an off cost is what it is (OffCost.why), each said by specmodel.words.off_cost with the values in `about`:
# "engine": the engine's value (about: the engine's name); "no_band": no off band inside the server;
# "one_k": the engine runs the method with one k at every batch (about: engine label, method);
# "before_since": the engine version predates the in-server off band (about: engine label, version text, the
# release, engine name); "runs": runs measured it (about: the run count, where; the shares are the points);
# "given": a user gave it (about: where).
WHYS = ("engine", "no_band", "one_k", "before_since", "runs", "given")


@dataclass(frozen=True)
class OffCost:
    """The extra share of a plain step the off band pays, by batch: `points` (batch, share), interpolated in
    log batch between them and held beyond them; `kind` one of KINDS; `why` one of WHYS and its values `about`;
    `source` the engine's own source text (data/engines.json `source`, for "engine")."""

    points: tuple[tuple[float, float], ...]
    kind: str
    why: str = "no_band"
    about: tuple = ()
    source: str = ""

    def at(self, batch) -> np.ndarray:
        """The share at each batch (≥ 0)."""
        b = np.log(np.maximum(np.asarray(batch, dtype=float), 1.0))
        xs = np.log([max(float(p[0]), 1.0) for p in self.points])
        return np.maximum(np.interp(b, xs, [float(p[1]) for p in self.points]), 0.0)

    @property
    def free(self) -> bool:
        """True where the off band costs nothing (no in-server off band, or a cost of 0)."""
        return all(float(p[1]) <= 0.0 for p in self.points)


NONE = OffCost(((1, 0.0),), "none", "no_band")  # chosen: no off band inside the server costs nothing


def engine_off_cost(engine: Engine, method: str | None = None) -> OffCost:
    """The engine's off cost (data/engines.json `off_cost`); kind "none" for a version named before the
    release that has an off band inside the server (its `since`), for a `method` the engine runs with one k at
    every batch (not in its `methods`), and for an engine without a value."""
    data = engine.off_cost
    if not data:
        return NONE
    if method is not None and "methods" in data and method not in data["methods"]:
        return OffCost(((1, 0.0),), "none", "one_k", (engine.label, method))
    if engine.older_than(data.get("since")):
        return OffCost(((1, 0.0),), "none", "before_since",
                       (engine.label, engine.version_text, data["since"], engine.name))
    return OffCost(tuple((float(b), float(v)) for b, v in data["points"]), data["kind"], "engine", (engine.name,),
                   data["source"])


def scenario_off_cost(s: Scenario) -> OffCost:
    """The off cost of the scenario's engine for its method (engine_off_cost)."""
    return engine_off_cost(s.engine, s.method.name)


def measured_off_cost(concurrency, plain_tok_s, off_tok_s, where: str) -> OffCost | None:
    """The off cost of runs that measured it: at each concurrency, plain ÷ off throughput − 1 (the mean of
    the runs there, never below 0: an off band faster than plain is noise), or None where no run has both."""
    c, plain, off = (np.asarray(x, dtype=float).reshape(-1) for x in (concurrency, plain_tok_s, off_tok_s))
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(c) & (c >= 1) & np.isfinite(plain) & (plain > 0) & np.isfinite(off) & (off > 0)
    if not ok.any():
        return None
    points = []
    for batch in sorted(set(c[ok].tolist())):
        at = ok & (c == batch)
        points.append((batch, max(float(np.mean(plain[at] / off[at])) - 1.0, 0.0)))
    return OffCost(tuple(points), "measured", "runs", (int(ok.sum()), where))


def given_off_cost(share: float, where: str) -> OffCost:
    """An off cost a user measured and gave (`predict --off-cost`): the same share at every batch."""
    if not np.isfinite(share) or share < 0:
        raise SpecModelError(f"{where} must be a share ≥ 0 of the plain step (0.15 for 15%), got {share}")
    return OffCost(((1, float(share)),), "measured", "given", (where,))


def off_row(s: Scenario, batches, cost: OffCost) -> np.ndarray:
    """The off band's speedup against a server without speculation at each batch: plain throughput at the
    sequences the speculative arm fits (the draft's weights and KV stay loaded), divided by 1 + cost(B), over
    plain throughput at B. Ones where the cost is free (nothing of the off band is modelled then). It depends
    on neither α, the profile, k nor the concurrency: computed once per scenario apart from those (read-only)."""
    b = np.asarray(batches, dtype=float)
    if cost.free:
        return np.ones(b.shape)
    return _off_row(free_of_acceptance(s), cost.points, b.shape, b.tobytes(), cost, b)


# Measured (issue 43's What-if rerun, 2-core shared machine): the three predictions it made ran on every α or
# k move (summarize's schedule reads it); with plain_throughput's cache, the page's model work after an α move
# fell from ~8.6 to ~7.6 ms (thread CPU time, p10 of 200 moves, alternated with the parent commit). Keyed by
# the cost's points, all of the cost the row reads (its source text exceeds bounded_cache's key bound).
@cleared_with_steps
@bounded_cache(64, key_args=4)
def _off_row(free: Scenario, points: tuple, shape: tuple, batches_key: bytes, cost: OffCost, b: np.ndarray
             ) -> np.ndarray:
    fits = float(np.asarray(predict(free, alpha=0.5, k=1, concurrency=1).spec.max_concurrency))
    capacity = np.ones(b.shape)
    if fits < float(b.max(initial=1.0)):
        if fits < 1:
            capacity = np.zeros(b.shape)
        else:
            plain, held = plain_throughput(free, b), plain_throughput(free, np.minimum(b, fits))
            with np.errstate(divide="ignore", invalid="ignore"):
                capacity = np.where(plain > 0, held / plain, 1.0)
    row = capacity if fits < 1 else capacity / (1.0 + cost.at(b))
    row.flags.writeable = False  # shared between reruns and sessions
    return row
