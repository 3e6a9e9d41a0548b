"""Load given as a request rate: the concurrency each arm runs at, and the end-to-end latency ratio.

A benchmark that offers requests at a rate λ (QPS) rather than at a fixed concurrency runs each arm
at the number of requests in flight Little's law gives: c = λ · L(c), where L(c) is one request's
end-to-end latency at that concurrency, prefill (its input through the target once) plus the output
tokens at the arm's per-sequence speed. The speculative arm is faster per request, so it holds fewer
requests in flight than the plain arm at the same λ; each arm is solved on its own.

An arm saturates when λ exceeds the most requests per second it can serve (c / L(c) at the largest
batch that fits, at most MAX_NUM_SEQS): requests queue for as long as the benchmark offers them. Its
latency is then taken as L at that largest batch times λ / capacity (the backlog of a run of fixed
length grows in that proportion), and the result says which arm saturated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.model.roofline import pass_time_ms
from specmodel.model.scenario import Scenario, compile_scenario, predict

# vLLM's default scheduler limit on running sequences (EngineArgs max_num_seqs = 256,
# vllm/engine/arg_utils.py, v0.6-v0.11); SGLang's is set from memory, so the KV fit binds first.
MAX_NUM_SEQS = 256


@dataclass(frozen=True)
class ArmAtRate:
    concurrency: float  # requests in flight (Little's law), capped at the largest batch that runs
    latency_s: float  # mean end-to-end request latency
    capacity_rps: float  # most requests per second this arm serves
    saturated: bool


@dataclass(frozen=True)
class RatePrediction:
    rate_rps: float
    plain: ArmAtRate
    spec: ArmAtRate
    latency_speedup: float  # plain latency / speculative latency (> 1: speculation is faster)

    def remark(self) -> str:
        said = (f"request rate {self.rate_rps:g}/s: by Little's law the plain arm runs at concurrency "
                f"{self.plain.concurrency:.0f}, the speculative arm at {self.spec.concurrency:.0f}; end-to-end "
                f"latency {self.plain.latency_s:.2f} s vs {self.spec.latency_s:.2f} s")
        for name, arm in (("plain", self.plain), ("speculative", self.spec)):
            if arm.saturated:
                said += (f"; the {name} arm saturates (it serves at most {arm.capacity_rps:.2f} requests/s), so its "
                         "requests queue")
        return said


def prefill_ms(s: Scenario, input_len: int) -> float:
    """One request's input through the target in one pass (batch 1), the same in both arms."""
    if not input_len:
        return 0.0
    c = compile_scenario(s)
    return float(pass_time_ms(c.target, c.hw, s.efficiency, 1, int(input_len), 0))


def _arm(per_seq_tok_s: np.ndarray, fits: float, cs: np.ndarray, rate: float, output_len: int,
         prefill_s: float) -> ArmAtRate:
    latency = prefill_s + output_len / np.maximum(per_seq_tok_s, 1e-12)
    usable = cs <= max(1.0, min(float(fits), MAX_NUM_SEQS))
    served = np.where(usable, cs / latency, 0.0)
    top = int(np.flatnonzero(usable)[-1]) if usable.any() else 0
    capacity = float(served.max())
    holds = usable & (rate * latency <= cs)
    if holds.any():
        i = int(np.flatnonzero(holds)[0])
        c = float(max(1.0, rate * latency[i]))
        return ArmAtRate(c, float(latency[i]), capacity, False)
    return ArmAtRate(float(cs[top]), float(latency[top] * rate / max(capacity, 1e-12)), capacity, True)


def at_request_rate(s: Scenario, rate_rps: float, output_len: int, input_len: int | None = None) -> RatePrediction:
    """Both arms at a request rate: their concurrencies, latencies and the latency ratio."""
    if not rate_rps or rate_rps <= 0:
        raise SpecModelError(f"a request rate must be > 0 requests per second, got {rate_rps}")
    if not output_len or output_len < 1:
        raise SpecModelError("a request rate needs the output length (tokens per request) to find the concurrency")
    cs = np.arange(1, MAX_NUM_SEQS + 1, dtype=float)
    p = predict(s, concurrency=cs)
    pre = prefill_ms(s, input_len or 0) / 1e3
    plain = _arm(np.asarray(p.plain.per_seq_tok_s, dtype=float), float(np.max(p.plain.max_concurrency)), cs,
                 rate_rps, int(output_len), pre)
    spec = _arm(np.asarray(p.spec.per_seq_tok_s, dtype=float), float(np.max(p.spec.max_concurrency)), cs,
                rate_rps, int(output_len), pre)
    return RatePrediction(float(rate_rps), plain, spec, plain.latency_s / spec.latency_s)
