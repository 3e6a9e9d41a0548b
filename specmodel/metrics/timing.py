"""The server's own step timing over a window: what a decode step took at the load the server ran.

vLLM writes, besides its speculative-decoding counters, the histograms (schemas.Engine.timing)

- `inter_token_latency_seconds` (older builds and V0: `time_per_output_token_seconds`): one observation per
  request and engine step that brought that request tokens, after its first; the time since its previous
  tokens. A verify step brings E tokens at once and is observed once;
- `time_to_first_token_seconds`: one observation per request's first token (prefill);
- `iteration_tokens_total`: one observation per engine step.

Over a window (their `_sum` and `_count` increases):

    decode tokens          = Δgeneration tokens − Δfirst tokens (each request's first token is prefill's)
    time per token         = Δlatency sum / decode tokens        (ms per emitted token and sequence: the step
                                                                   fit's spec_ms_per_token, or the plain step)
    step                   = Δlatency sum / Δlatency count       (what one decode step took, as a request saw it)
    running batch          = Δlatency count / Δengine steps      (sequences decoding per engine step, measured)

The time per token needs no assumption on how often an engine observes the latency (per step or per token):
the latencies of one request add up to its decode time either way. The batch does (one observation per
request and step, as vLLM V1 does), and is only given where engine steps are counted.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class StepTiming:
    """What the server's timing histograms say about one window. Units in the names."""

    ms_per_token: float  # decode time per emitted token and sequence (1000 · Δlatency / decode tokens)
    step_ms: float  # one decode step as a request saw it (1000 · Δlatency / Δobservations)
    tokens_per_request_step: float  # decode tokens / Δobservations (E where every step verifies a draft)
    batch: float | None  # sequences decoding per engine step (Δobservations / Δengine steps); None: not counted
    decode_tokens: float
    observations: float  # request steps observed (Δlatency count)
    engine_steps: float | None
    series: str  # the latency histogram read ("vllm:inter_token_latency_seconds")

    def to_dict(self) -> dict:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


# chosen: the relative slack in "every observed step brought at least one token". A plain server's decode tokens
# equal its observations exactly (one token a request and step), and a Prometheus gives each series' increase
# times one extrapolation factor per target: (Δgenerated − Δfirst)·f came out below Δobservations·f by float
# rounding for 12.6% of factors (fleet: a plain instance judged on presets instead of its own timing). Rounding is
# ~1e-16 relative; a step that truly brought no token is off by a whole token in thousands (≥ 1e-4).
ROUNDING = 1e-9


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def step_timing(timing: dict, generation_tokens: float | None, series: str) -> StepTiming | None:
    """The window's step timing from the increases of the timing series (canonical names of
    schemas.Engine.timing) and of the generated tokens; None where the window timed no decode step (an idle
    window, a server without the histograms) or its numbers do not belong together."""
    latency = timing.get("decode_latency_s")
    count = timing.get("decode_observations")
    first = timing.get("first_tokens") or 0.0
    steps = timing.get("engine_steps")
    if not all(_finite(x) for x in (latency, count, generation_tokens, first)):
        return None
    decode = generation_tokens - first
    if not (latency > 0 and count > 0 and decode >= count * (1 - ROUNDING)):  # each observed step brought a token
        return None
    batch = count / steps if _finite(steps) and steps > 0 else None
    return StepTiming(ms_per_token=1000.0 * latency / decode, step_ms=1000.0 * latency / count,
                      tokens_per_request_step=decode / count, batch=batch, decode_tokens=float(decode),
                      observations=float(count), engine_steps=float(steps) if _finite(steps) else None,
                      series=series)
