"""A scenario (every input, frozen) -> predict() -> Prediction; break-even, best k, crossover, schedule.

Speedup is speculative throughput over plain throughput at the same offered concurrency B:

    plain:  b_p = min(B, fits_plain),  throughput = b_p / T_t(b_p)
    spec:   b_s = min(B, fits_spec),   throughput = b_s · E / (k·T_d(b_s) + T_v(b_s, k) + t_spec)

T_t and T_v come from the roofline of the target (1 and k+1 query tokens per sequence), T_d from
the draft method's own pass. Everything broadcasts over α, k and B, so a heatmap is one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np

from . import acceptance
from .capacity import kv_budget_bytes, max_sequences
from .errors import SpecModelError
from .presets import find_gpu, find_method, find_model
from .roofline import (Efficiency, Hardware, PassShape, bandwidth_scale_for_measured_time,
                       pass_time_ms)

BORDERLINE = 0.05  # |speedup − 1| within this is "borderline": inside run-to-run noise
MAX_CROSSOVER_BATCH = 4096
K_MAX = 8


@dataclass(frozen=True)
class Scenario:
    """Every input of one what-if question. Units are in the names."""

    gpu: str = "L40S"
    target: str = "Llama 3.1 8B"
    method: str = "draft_model"
    draft: str | None = "Llama 3.2 1B"  # only for method "draft_model"
    alpha: float = 0.7
    survival: tuple[float, ...] | None = None  # measured p_1..p_k; overrides α when given
    k: int = 4
    concurrency: int = 1
    context_len: int = 1024  # mean tokens in each sequence's KV cache
    t_target_ms: float | None = None  # measured plain step at batch 1 ("measured" timings)
    t_draft_ms: float | None = None  # measured draft cost per draft token at batch 1
    tp: int = 1  # tensor-parallel GPUs per replica
    efficiency: Efficiency = field(default_factory=Efficiency)

    def validated(self) -> "Scenario":
        """Raise SpecModelError with a message for a person if any input is impossible."""
        a = np.asarray(self.alpha, dtype=float)
        if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
            raise SpecModelError(f"α (per-token acceptance) must lie in [0, 1], got {self.alpha}")
        if self.survival is not None:
            acceptance.validate_survival(self.survival)
        if int(self.k) != self.k or self.k < 0:
            raise SpecModelError(f"k (draft tokens per step) must be a whole number ≥ 0, got {self.k}")
        if int(self.concurrency) != self.concurrency or self.concurrency < 1:
            raise SpecModelError(f"concurrency must be a whole number ≥ 1, got {self.concurrency}")
        if self.context_len < 0:
            raise SpecModelError(f"context length must be ≥ 0 tokens, got {self.context_len}")
        for name, value in (("target step time", self.t_target_ms), ("draft step time", self.t_draft_ms)):
            if value is not None and (not np.isfinite(value) or value < 0):
                raise SpecModelError(f"{name} must be a number of milliseconds ≥ 0, got {value}")
        if self.t_target_ms is not None and self.t_target_ms <= 0:
            raise SpecModelError("target step time must be > 0 ms")
        if int(self.tp) != self.tp or self.tp < 1:
            raise SpecModelError(f"tensor parallelism must be a whole number ≥ 1, got {self.tp}")
        method = find_method(self.method)
        if method.name == "draft_model" and not self.draft:
            raise SpecModelError("method 'draft_model' needs a draft model; name one or pick another method")
        return self


@dataclass(frozen=True)
class Arm:
    """One way of serving (plain or speculative) at the offered concurrency."""

    step_ms: np.ndarray | float  # one decode step (spec: drafts + verify + overhead)
    per_seq_tok_s: np.ndarray | float  # tokens per second each running sequence sees
    throughput_tok_s: np.ndarray | float  # aggregate generated tokens per second
    itl_ms: np.ndarray | float  # mean inter-token latency
    max_concurrency: np.ndarray | float  # sequences that fit in the KV cache
    batch: np.ndarray | float  # sequences actually running: min(offered, max_concurrency)


@dataclass(frozen=True)
class Prediction:
    alpha: np.ndarray | float
    k: np.ndarray | int
    concurrency: np.ndarray | float
    tokens_per_step: np.ndarray | float
    plain: Arm
    spec: Arm
    speedup: np.ndarray | float
    break_even_tokens_per_step: np.ndarray | float  # E at which spec throughput = plain

    @cached_property
    def break_even_alpha(self) -> np.ndarray | float:
        """α giving the break-even E at this k (NaN when k = 0 or the E needed exceeds k + 1).
        Computed on first use: grids rarely need it and the inversion is a bisection."""
        kk = np.asarray(self.k)
        be = np.asarray(self.break_even_tokens_per_step, dtype=float)
        reachable = (be <= kk + 1) & (kk > 0)
        alpha = acceptance.alpha_from_tokens_per_step(np.minimum(be, kk + 1), np.maximum(kk, 1))
        return _scalar(np.where(reachable, alpha, np.nan))


@dataclass(frozen=True)
class _Compiled:
    """Scenario-wide quantities that do not depend on α, k or B."""

    hw: Hardware
    target: PassShape
    draft: PassShape | None
    method: str
    draft_passes: str
    target_bw_scale: float  # bandwidth scale: 1 from hardware, pinned by a measured step time
    draft_bw_scale: float
    ngram_ms_per_token: float
    budget_bytes: float
    draft_resident_base: float
    draft_resident_per_k: float
    draft_kv_per_token: float


def _draft_parts(s: Scenario, method: str):
    """(pass shape per draft token, resident bytes base, resident bytes per k, KV bytes per token)."""
    t = find_model(s.target)
    if method == "draft_model":
        d = find_model(s.draft)
        return PassShape.of_model(d), d.resident_weight_bytes, 0.0, d.kv_bytes_per_token
    if method in ("eagle", "mtp"):
        # One decoder layer of the target's shape + a 2H->H fusion layer; LM head shared.
        shape = PassShape.draft_head(t, layers=1, extra_params=2.0 * t.hidden * t.hidden)
        own = (t.layer_params + 2.0 * t.hidden * t.hidden) * 2.0
        return shape, own, 0.0, shape.kv_bytes_per_token
    if method == "medusa":
        # Each head: a residual block (H×H) and its own LM head (V×H); all heads in one pass.
        head_params = t.hidden * t.hidden + t.vocab * t.hidden
        return PassShape(head_params * 2.0, head_params, 0.0, 0.0), 0.0, head_params * 2.0, 0.0
    return None, 0.0, 0.0, 0.0  # n-gram: no GPU work, no memory


@lru_cache(maxsize=256)
def _compile(s: Scenario) -> _Compiled:
    s.validated()
    hw = Hardware(find_gpu(s.gpu), int(s.tp))
    target_model = find_model(s.target)
    method = find_method(s.method)
    target = PassShape.of_model(target_model)
    budget = kv_budget_bytes(hw.memory_bytes, target_model.resident_weight_bytes)
    if budget <= 0 or budget < target.kv_bytes_per_token * s.context_len:
        from .fit import target_does_not_fit  # not even one sequence fits: say what it needs and what fits
        raise target_does_not_fit(s)
    eff = s.efficiency
    target_bw_scale = 1.0
    if s.t_target_ms is not None:
        target_bw_scale = bandwidth_scale_for_measured_time(target, hw, eff, s.t_target_ms, s.context_len)
        if target_bw_scale is None:
            floor = float(pass_time_ms(target, hw, eff, 1, 1, s.context_len, bandwidth_scale=1e12))
            raise SpecModelError(
                f"a {s.t_target_ms:g} ms target step is faster than {hw.gpu.name}'s compute allows "
                f"for {target_model.name} ({floor:.2f} ms at infinite bandwidth): check the measurement")
    draft, base, per_k, kv_d = _draft_parts(s, method.name)
    draft_bw_scale = 1.0
    ngram_ms = 0.0
    if s.t_draft_ms is not None:
        if draft is None:
            ngram_ms = float(s.t_draft_ms)
        elif s.t_draft_ms > 0:
            include_fixed = method.draft_passes == "k"
            draft_bw_scale = bandwidth_scale_for_measured_time(draft, hw, eff, s.t_draft_ms, s.context_len, include_fixed)
            if draft_bw_scale is None:
                raise SpecModelError(
                    f"a {s.t_draft_ms:g} ms draft step is faster than {hw.gpu.name}'s compute allows: "
                    "check the measurement")
    return _Compiled(hw, target, draft, method.name, method.draft_passes, target_bw_scale, draft_bw_scale,
                     ngram_ms, budget, base, per_k, kv_d)


def _draft_time_ms(c: _Compiled, s: Scenario, batch, k):
    """Total draft cost of one speculative step with k drafts per sequence."""
    k = np.asarray(k, dtype=float)
    if c.draft is None:
        return k * c.ngram_ms_per_token + 0.0 * np.asarray(batch, dtype=float)
    if s.t_draft_ms == 0:
        return 0.0 * k * np.asarray(batch, dtype=float)
    eff = s.efficiency
    if c.draft_passes == "one":  # Medusa: k heads read in one pass, one fixed overhead
        per_head = pass_time_ms(c.draft, c.hw, eff, batch, 1, s.context_len, c.draft_bw_scale, include_fixed=False)
        return np.where(k > 0, k * per_head + eff.t_fixed_ms, 0.0)
    return k * pass_time_ms(c.draft, c.hw, eff, batch, 1, s.context_len, c.draft_bw_scale)


def _arm(step_ms, tokens, batch, fits) -> Arm:
    step_ms = np.asarray(step_ms, dtype=float)
    per_seq = np.where(batch > 0, tokens / step_ms * 1e3, 0.0)
    return Arm(step_ms, per_seq, per_seq * batch, np.where(per_seq > 0, 1e3 / np.where(per_seq > 0, per_seq, 1), np.inf),
               fits, batch)


def predict(s: Scenario, alpha=None, k=None, concurrency=None) -> Prediction:
    """Predict both arms. alpha, k and concurrency override the scenario's and may be arrays
    (broadcast together); a survival profile in the scenario is used unless alpha is given."""
    c = _compile(s)
    eff = s.efficiency
    kk = np.asarray(s.k if k is None else k)
    if np.any(kk < 0) or np.any(kk != np.round(kk)):
        raise SpecModelError(f"k must be whole numbers ≥ 0, got {k}")
    kk = kk.astype(int)
    offered = np.asarray(s.concurrency if concurrency is None else concurrency, dtype=float)
    if np.any(offered < 1):
        raise SpecModelError(f"concurrency must be ≥ 1, got {concurrency}")
    if alpha is None and s.survival is not None:
        a = np.asarray(acceptance.from_survival(s.survival).alpha)
        tokens = acceptance.tokens_per_step_at_k(kk, survival=s.survival)
    else:
        a = np.asarray(s.alpha if alpha is None else alpha, dtype=float)
        if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
            raise SpecModelError("α (per-token acceptance) must lie in [0, 1]")
        tokens = acceptance.tokens_per_step(a, kk)
    L = s.context_len

    fits_plain = max_sequences(c.budget_bytes, c.target.kv_bytes_per_token, L)
    b_plain = np.minimum(offered, fits_plain)
    t_plain = pass_time_ms(c.target, c.hw, eff, b_plain, 1, L, c.target_bw_scale)

    spec_on = kk > 0
    spec_budget = c.budget_bytes - c.draft_resident_base - c.draft_resident_per_k * kk
    fits_spec = np.where(spec_on, max_sequences(spec_budget, c.target.kv_bytes_per_token + c.draft_kv_per_token,
                                                 L + kk), fits_plain)
    b_spec = np.minimum(offered, fits_spec)
    b_eval = np.maximum(b_spec, 1.0)  # time a batch of one where nothing fits; throughput is 0 anyway
    t_verify = pass_time_ms(c.target, c.hw, eff, b_eval, kk + 1, L, c.target_bw_scale)
    t_draft = _draft_time_ms(c, s, b_eval, kk)
    t_spec = np.where(spec_on, t_draft + t_verify + eff.t_spec_overhead_ms,
                      pass_time_ms(c.target, c.hw, eff, b_eval, 1, L, c.target_bw_scale))
    tokens = np.where(spec_on, tokens, 1.0)

    plain = _arm(t_plain, 1.0, b_plain, fits_plain)
    spec = _arm(t_spec, tokens, b_spec, fits_spec)
    speedup = spec.throughput_tok_s / plain.throughput_tok_s
    with np.errstate(divide="ignore", invalid="ignore"):
        be_tokens = np.where(b_spec > 0, plain.throughput_tok_s * t_spec / (np.where(b_spec > 0, b_spec, 1) * 1e3),
                             np.inf)
    return Prediction(_scalar(a), _scalar(kk), _scalar(offered), _scalar(tokens),
                      Arm(*map(_scalar, plain.__dict__.values())), Arm(*map(_scalar, spec.__dict__.values())),
                      _scalar(speedup), _scalar(be_tokens))


def _scalar(x):
    x = np.asarray(x)
    return x.item() if x.ndim == 0 else x


# --- decisions built on predict ------------------------------------------------------------------

def best_k(s: Scenario, k_max: int = K_MAX, concurrency=None):
    """(best k in 0..k_max, its speedup) at the scenario's concurrency (or an array of them).
    k = 0 means speculation off (speedup 1); ties go to the smaller k."""
    ks = np.arange(0, k_max + 1)
    b = np.asarray(s.concurrency if concurrency is None else concurrency, dtype=float)
    grid = np.asarray(predict(s, k=ks[:, None], concurrency=np.atleast_1d(b)[None, :]).speedup, dtype=float)
    grid = np.nan_to_num(grid, nan=0.0)
    grid[0] = 1.0
    idx = np.argmax(grid > grid.max(axis=0) - 1e-12, axis=0)  # first (smallest) k reaching the max
    best = ks[idx]
    speed = grid[idx, np.arange(grid.shape[1])]
    if b.ndim == 0:
        return int(best[0]), float(speed[0])
    return best, speed


def crossover_concurrency(s: Scenario, k: int | None = None, max_batch: int = MAX_CROSSOVER_BATCH) -> int | None:
    """Largest batch B such that speculation does not lose (speedup ≥ 1) at any batch up to B.

    None when it never loses up to max_batch; 0 when it loses already at one sequence.
    """
    kk = s.k if k is None else k
    if kk == 0:
        return None
    batches = np.arange(1, max_batch + 1)
    speed = np.asarray(predict(s, k=kk, concurrency=batches).speedup, dtype=float)
    losing = np.flatnonzero(~(speed >= 1.0))
    if losing.size == 0:
        return None
    return int(batches[losing[0]] - 1)


def k_schedule(s: Scenario, k_max: int = K_MAX, max_batch: int = 512) -> list[list[int]]:
    """vLLM's `num_speculative_tokens_per_batch_size`: [[min_batch, max_batch, k], ...], the best k
    for every batch size in 1..max_batch, merged into ranges (k = 0: speculation off)."""
    batches = np.arange(1, max_batch + 1)
    best, _ = best_k(s, k_max, concurrency=batches)
    ranges: list[list[int]] = []
    for b, kb in zip(batches.tolist(), best.tolist()):
        if ranges and ranges[-1][2] == kb:
            ranges[-1][1] = b
        else:
            ranges.append([b, b, kb])
    return ranges


@dataclass(frozen=True)
class Verdict:
    label: str  # "pays off" | "borderline" | "loses"
    text: str  # one sentence with the number
    advice: str  # what to deploy


def off_above(schedule: list[list[int]]) -> int | None:
    """The batch size above which the schedule turns speculation off for good (None if it never
    does within the schedule's range; 0 if it is off from batch 1)."""
    if not schedule or schedule[-1][2] != 0:
        return None
    return schedule[-1][0] - 1


def verdict(speedup: float, best: tuple[int, float], off_above_batch: int | None, k: int,
            concurrency: int, spec_fits: bool = True) -> Verdict:
    """Words for a speedup, and the advice that follows from the best k here and the batch size
    above which the best k is 0 (from k_schedule)."""
    best_k_value, best_speed = best
    if not spec_fits:
        return Verdict("loses", "loses: the draft and its KV cache do not fit beside the target",
                       "turn speculation off, or use n-gram or a smaller draft, or a GPU with more memory")
    if k == 0:
        label, text = "off", "speculation is off (k = 0)"
    elif speedup >= 1 + BORDERLINE:
        label, text = "pays off", f"pays off: {speedup:.2f}x"
    elif speedup >= 1 - BORDERLINE:
        label, text = "borderline", f"borderline: {speedup:.2f}x, within run-to-run noise"
    else:
        label, text = "loses", f"loses: {speedup:.2f}x"
    parts = []
    if best_k_value == 0:
        parts.append(f"turn speculation off at batch {concurrency}")
    elif best_k_value != k and best_speed > max(speedup, 1.0) + 1e-3:
        verb = "lower" if best_k_value < k else "raise"
        parts.append(f"{verb} k to {best_k_value} ({best_speed:.2f}x)")
    elif k > 0:
        parts.append(f"keep k = {k}")
    if off_above_batch is not None and off_above_batch >= concurrency and best_k_value > 0:
        parts.append(f"turn it off above batch {off_above_batch}")
    return Verdict(label, text, "; ".join(parts))


@dataclass(frozen=True)
class Summary:
    """Everything a reviewer reads off one scenario (scalars), for the CLI and the pages."""

    scenario: Scenario
    prediction: Prediction
    best_k: int
    best_k_speedup: float
    crossover_concurrency: int | None
    schedule: list[list[int]]
    verdict: Verdict
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        p = self.prediction

        def arm(a: Arm) -> dict:
            return {"step_ms": _round(a.step_ms), "throughput_tok_s": _round(a.throughput_tok_s),
                    "per_sequence_tok_s": _round(a.per_seq_tok_s), "itl_ms": _round(a.itl_ms),
                    "max_concurrency": _int_or_none(a.max_concurrency), "running": _int_or_none(a.batch)}

        s = self.scenario
        return {
            "gpu": s.gpu, "target": s.target, "method": s.method,
            "draft": s.draft if s.method == "draft_model" else None,
            "alpha": _round(p.alpha), "k": int(p.k), "concurrency": int(p.concurrency),
            "context_len": s.context_len, "tp": s.tp,
            "timings": "measured" if s.t_target_ms is not None else "hardware",
            "tokens_per_step": _round(p.tokens_per_step), "speedup": _round(p.speedup),
            "verdict": self.verdict.label, "verdict_text": self.verdict.text, "advice": self.verdict.advice,
            "break_even_tokens_per_step": _round(p.break_even_tokens_per_step),
            "break_even_alpha": _round(p.break_even_alpha),
            "best_k": self.best_k, "best_k_speedup": _round(self.best_k_speedup),
            "crossover_concurrency": self.crossover_concurrency,
            "num_speculative_tokens_per_batch_size": self.schedule,
            "off_above_batch": off_above(self.schedule),
            "plain": arm(p.plain), "spec": arm(p.spec),
            "vllm_speculative_config": self.vllm_speculative_config(),
            "notes": list(self.notes),
        }

    def vllm_speculative_config(self) -> dict | None:
        """What to put in vLLM's --speculative-config: the best k here and the per-batch schedule.
        None when speculation should be off at every batch size."""
        if all(k == 0 for _, _, k in self.schedule) and self.best_k == 0:
            return None
        s = self.scenario
        config: dict = {"method": s.method}
        if s.method == "draft_model":
            config["model"] = find_model(s.draft).hf_id
        config["num_speculative_tokens"] = max(self.best_k, max(k for _, _, k in self.schedule))
        config["num_speculative_tokens_per_batch_size"] = self.schedule
        return config


def _round(x, digits: int = 4):
    x = float(x)
    return round(x, digits) if np.isfinite(x) else None


def _int_or_none(x):
    x = float(x)
    return int(x) if np.isfinite(x) else None


def summarize(s: Scenario, k_max: int = K_MAX) -> Summary:
    """Predict the scenario and derive best k, crossover, schedule, verdict and notes."""
    p = predict(s)
    best = best_k(s, max(k_max, s.k))
    cross = crossover_concurrency(s)
    spec_fits = s.k == 0 or p.spec.max_concurrency >= 1
    schedule = k_schedule(s, max(k_max, s.k))
    v = verdict(float(p.speedup), best, off_above(schedule), s.k, s.concurrency, spec_fits)
    if not spec_fits:  # name the real cause for this method and the closest setting that fits
        from .fit import speculation_does_not_fit
        why = speculation_does_not_fit(s)
        if why is not None:
            v = Verdict(v.label, f"{v.label}: {why}", why.closest)
    notes = []
    if s.k > 0 and p.spec.batch < s.concurrency:
        notes.append(f"with speculation only {int(p.spec.max_concurrency)} sequences fit in the KV cache; "
                     f"{int(s.concurrency - p.spec.batch)} of {s.concurrency} wait in the queue")
    if p.plain.batch < s.concurrency:
        notes.append(f"without speculation only {int(p.plain.max_concurrency)} sequences fit; "
                     f"{int(s.concurrency - p.plain.batch)} of {s.concurrency} wait in the queue")
    if s.survival is not None and s.k > len(s.survival):
        notes.append(f"k = {s.k} is beyond the measured profile's {len(s.survival)} positions: "
                     "positions past it use a geometric tail fitted to the profile")
    return Summary(s, p, best[0], best[1], cross, schedule, v, tuple(notes))


def with_changes(s: Scenario, **changes) -> Scenario:
    """A copy of the scenario with some inputs changed (dataclasses.replace, re-exported)."""
    return replace(s, **changes)
