"""Load given as a request rate: the concurrency each arm runs at, and the end-to-end latency ratio.

A benchmark that offers requests at a rate λ (QPS) rather than at a fixed concurrency runs each arm
at the number of requests in flight Little's law gives: c = λ · L(c), where L(c) is one request's
end-to-end latency at that concurrency, prefill (its input through the target once) plus the output
tokens at the arm's per-sequence speed. The speculative arm is faster per request, so it holds fewer
requests in flight than the plain arm at the same λ; each arm is solved on its own.

An arm saturates when λ exceeds the most requests per second it can serve (c / L(c) at the largest
batch that fits, at most the engine's running limit, running_limit): requests queue for as long as the benchmark offers them. Its
latency is then taken as L at that largest batch times λ / capacity (the backlog of a run of fixed
length grows in that proportion), and the result says which arm saturated.

A source that states each arm's measured mean end-to-end latency W at the rate (the vLLM 2024 blog's
"w/o SD 2.56 s, with SD 1.66 s" at QPS 1) gives each arm's concurrency directly, c = λ · W
(littles_law_concurrency: the requests in the system, queued or running), without the output
length. Each arm is then predicted at its own concurrency, as above: its latency is prefill + output
tokens at its per-sequence speed there when the output length is known, else the time per output
token (the ratio is then the per-sequence decode-speed ratio, prefill left out). An arm whose
concurrency exceeds the largest batch that runs saturates: that batch runs and the rest queue, so each
request spends c / batch times its service time in the system (Little's law on the queue and on the
batch alike).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.model.roofline import pass_time_ms
from specmodel.model.scenario import Scenario, compile_scenario, predict

# documented: the most sequences an arm runs where the engine states no limit of its own (vLLM V0's EngineArgs
# max_num_seqs = 256); vLLM V1's default by GPU memory is Engine.default_running_limit (1024 on a GPU of
# 70 GiB or more); SGLang's limit is set from memory, so the KV fit binds first.
MAX_NUM_SEQS = 256


def running_limit(s: Scenario) -> int:
    """The sequences each arm runs at once at a request rate: the engine's default limit on this GPU."""
    gpu = s.gpu
    return s.engine.default_running_limit(gpu.kernel_name, gpu.memory_GB) or MAX_NUM_SEQS


@dataclass(frozen=True)
class ArmAtRate:
    concurrency: float  # requests in flight (Little's law), capped at the largest batch that runs
    latency_s: float  # mean end-to-end request latency
    capacity_rps: float  # most requests per second this arm serves (NaN: not known without the output length)
    saturated: bool
    measured_latency_s: float | None = None  # the measured latency its concurrency was read from (Little's law)
    in_system: float | None = None  # λ · measured latency: requests queued or running (> concurrency: a queue)


@dataclass(frozen=True)
class RatePrediction:
    rate_rps: float
    plain: ArmAtRate
    spec: ArmAtRate
    latency_speedup: float  # plain latency / speculative latency (> 1: speculation is faster)

    @property
    def from_measured(self) -> bool:
        return self.plain.measured_latency_s is not None or self.spec.measured_latency_s is not None


def littles_law_concurrency(rate_rps, latency_s):
    """Little's law, L = λ · W: the mean number of requests in the system (queued or running) at an
    arrival rate λ (requests/s) and a mean time in the system W (s). Numbers or arrays."""
    return rate_rps * latency_s


def prefill_ms(s: Scenario, input_len: int) -> float:
    """One request's input through the target in one pass (batch 1), the same in both arms."""
    if not input_len:
        return 0.0
    c = compile_scenario(s)
    return float(pass_time_ms(c.target, c.hw, s.efficiency, 1, int(input_len), 0))


def _arm(per_seq_tok_s: np.ndarray, fits: float, cs: np.ndarray, rate: float, output_len: int,
         prefill_s: float) -> ArmAtRate:
    latency = prefill_s + output_len / np.maximum(per_seq_tok_s, 1e-12)
    usable = cs <= max(1.0, min(float(fits), float(cs[-1])))
    served = np.where(usable, cs / latency, 0.0)
    top = int(np.flatnonzero(usable)[-1]) if usable.any() else 0
    capacity = float(served.max())
    holds = usable & (littles_law_concurrency(rate, latency) <= cs)
    if holds.any():
        i = int(np.flatnonzero(holds)[0])
        c = float(max(1.0, littles_law_concurrency(rate, latency[i])))
        return ArmAtRate(c, float(latency[i]), capacity, False)
    return ArmAtRate(float(cs[top]), float(latency[top] * rate / max(capacity, 1e-12)), capacity, True)


def _measured_arm(per_seq_tok_s: np.ndarray, fits: float, cs: np.ndarray, rate: float, measured_s: float,
                  output_len: int | None, prefill_s: float) -> ArmAtRate:
    """An arm at the concurrency its measured latency makes (Little's law), predicted there."""
    top = float(cs[cs <= max(1.0, min(float(fits), float(cs[-1])))][-1])
    in_system = float(littles_law_concurrency(rate, measured_s))
    running = min(max(1.0, in_system), top)
    speed = float(np.interp(running, cs, per_seq_tok_s))
    if output_len:  # a request's time: its prefill and its output tokens at this arm's speed
        service = prefill_s + output_len / max(speed, 1e-12)
        capacity = top / (prefill_s + output_len / max(float(np.interp(top, cs, per_seq_tok_s)), 1e-12))
    else:  # no output length: the time per output token stands for it
        service, capacity = 1.0 / max(speed, 1e-12), float("nan")
    saturated = in_system > top
    latency = service * in_system / top if saturated else service
    return ArmAtRate(running, float(latency), float(capacity), saturated, float(measured_s), in_system)


def at_request_rate(s: Scenario, rate_rps: float, output_len: int | None, input_len: int | None = None,
                    measured_latency_s: tuple[float | None, float | None] = (None, None)) -> RatePrediction:
    """Both arms at a request rate: their concurrencies, latencies and the latency ratio. An arm with a
    measured mean end-to-end latency (measured_latency_s = (plain s, speculative s)) runs at the
    concurrency Little's law reads from it; an arm without one at the concurrency the model's own
    latency makes, which needs the output length."""
    if not rate_rps or rate_rps <= 0:
        raise SpecModelError(f"a request rate must be > 0 requests per second, got {rate_rps}")
    measured = tuple(measured_latency_s)
    if any(m is not None and not m > 0 for m in measured):
        raise SpecModelError(f"a measured latency must be > 0 seconds, got {measured}")
    if (not output_len or output_len < 1) and None in measured:
        raise SpecModelError("a request rate needs the output length (tokens per request), or each arm's measured "
                             "end-to-end latency, to find the concurrency")
    cs = np.arange(1, running_limit(s) + 1, dtype=float)  # up to the engine's limit on running sequences
    p = predict(s, concurrency=cs)
    pre = prefill_ms(s, input_len or 0) / 1e3 if output_len else 0.0
    arms = []
    for result, latency in ((p.plain, measured[0]), (p.spec, measured[1])):
        speed, fits = np.asarray(result.per_seq_tok_s, dtype=float), float(np.max(result.max_concurrency))
        arms.append(_arm(speed, fits, cs, rate_rps, int(output_len), pre) if latency is None else
                    _measured_arm(speed, fits, cs, rate_rps, float(latency), int(output_len or 0) or None, pre))
    plain, spec = arms
    return RatePrediction(float(rate_rps), plain, spec, plain.latency_s / spec.latency_s)
