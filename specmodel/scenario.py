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
from .engines import DEFAULT_ENGINE, Engine, find_engine
from .notes import info
from .presets import find_gpu, find_method, find_model
from .roofline import (DTYPES, Efficiency, Hardware, PassShape, bandwidth_scale_for_measured_time,
                       pass_time_ms, unpacked_verify_reads)

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
    engine: str = DEFAULT_ENGINE  # serving engine whose overheads apply (data/engines.json)
    draft_depth: int | None = None  # sequential draft passes per step; None: a chain, = k
    branching: int = 1  # tokens per sequence in each draft pass after the first (tree top-k)
    draft_kv_budget: int | None = None  # tokens of KV a sparse-KV draft reads (self_spec)
    weight_dtype: str | None = None  # target (and head) weights: bf16, fp8, fp4, int4; None: the preset's
    kv_dtype: str = "bf16"  # KV cache dtype: bf16 or fp8
    proposal_rate: float | None = None  # share of sequence-steps with a proposal; None: the method's default

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
        find_engine(self.engine)
        if self.draft_depth is not None:
            if int(self.draft_depth) != self.draft_depth or self.draft_depth < 1:
                raise SpecModelError(f"draft depth must be a whole number ≥ 1, got {self.draft_depth}")
            if self.k and self.draft_depth > self.k:
                raise SpecModelError(f"a tree of {self.k} verified tokens cannot be {self.draft_depth} deep: "
                                     "the verified tokens (k, the tree's width) must be at least its depth")
        if int(self.branching) != self.branching or self.branching < 1:
            raise SpecModelError(f"branching must be a whole number ≥ 1, got {self.branching}")
        if self.draft_kv_budget is not None and self.draft_kv_budget < 1:
            raise SpecModelError(f"draft KV budget must be ≥ 1 token, got {self.draft_kv_budget}")
        for name, dtype, allowed in (("weight dtype", self.weight_dtype, DTYPES),
                                     ("KV dtype", self.kv_dtype, ("bf16", "fp16", "fp8"))):
            if dtype is not None and dtype not in allowed:
                raise SpecModelError(f"{name} '{dtype}' is not one of {', '.join(allowed)}")
        if self.proposal_rate is not None and not (np.isfinite(self.proposal_rate) and 0 < self.proposal_rate <= 1):
            raise SpecModelError(f"proposal rate must lie in (0, 1], got {self.proposal_rate}")
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
    engine: Engine
    draft_context: float  # tokens of KV each draft pass reads
    measured: bool
    verify_kv_reads: float  # KV reads of a target verify pass (1 with GQA-packed kernels)
    draft_verify_kv_reads: float
    step_overhead: tuple[float, float]  # engine cost of a target step: (ms, ms per sequence)
    draft_overhead: tuple[float, float]  # engine cost of a draft pass: (ms, ms per sequence)


MEASURED_OVERHEAD_SHARE = 0.5  # at most this share of a measured batch-1 time is engine overhead


def _overhead(fixed_ms: float, per_seq_us: float, scale: float, measured_ms: float | None) -> tuple[float, float]:
    """(ms, ms per sequence) of an engine overhead. With a measured batch-1 time the overhead is
    inside the measurement: its batch-1 value is capped at MEASURED_OVERHEAD_SHARE of it (the
    engine preset may be faster or slower than the one measured) and only its growth is added."""
    slope = per_seq_us * 1e-3 * scale
    at_one = (fixed_ms * 1.0) * scale + slope
    if measured_ms is not None:
        at_one = min(at_one, MEASURED_OVERHEAD_SHARE * measured_ms)
    return at_one - slope, slope


EAGLE3_DRAFT_VOCAB = 32000  # EAGLE-3 heads predict over a reduced vocabulary (Li et al. 2025, arXiv:2503.01840)


def draft_parts(s: Scenario, method: str):
    """(pass shape per draft token, resident bytes base, resident bytes per k, KV bytes per token)."""
    t = find_model(s.target)
    wd = s.weight_dtype
    if method == "draft_model":
        d = find_model(s.draft)
        shape = PassShape.of_model(d, kv_dtype=s.kv_dtype)
        return shape, d.resident_weight_bytes, 0.0, shape.kv_bytes_per_token
    if method == "self_spec":  # the target drafts for itself over a sparse KV budget
        shape = PassShape.of_model(t, wd, s.kv_dtype)
        return shape, 0.0, 0.0, 0.0
    if method in ("eagle", "eagle3", "mtp"):
        # One decoder layer of the target's shape + a fusion layer (2H->H; EAGLE-3 fuses three
        # hidden states, 3H->H) and an LM head: the target's (EAGLE-1, MTP) or a 32k-token one.
        fusion = (3.0 if method == "eagle3" else 2.0) * t.hidden * t.hidden
        vocab = EAGLE3_DRAFT_VOCAB if method == "eagle3" else None
        head_wd = wd if method == "mtp" else "bf16"
        shape = PassShape.draft_head(t, layers=1, extra_params=fusion, vocab=vocab, weight_dtype=head_wd)
        own = (t.layer_params + fusion + (vocab or 0) * t.hidden) * 2.0
        return shape, own, 0.0, shape.kv_bytes_per_token
    if method == "medusa":
        # Each head: a residual block (H×H) and its own LM head (V×H); all heads in one pass.
        head_params = t.hidden * t.hidden + t.vocab * t.hidden
        return PassShape(head_params * 2.0, head_params, 0.0, 0.0), 0.0, head_params * 2.0, 0.0
    return None, 0.0, 0.0, 0.0  # n-gram: no GPU work, no memory


@lru_cache(maxsize=256)
def compile_scenario(s: Scenario) -> _Compiled:
    """The constants of a scenario that predict() evaluates at any batch, α and k (cached): step-time
    parts of the target, the draft and the engine, memory budget and the fit. Public for bench/."""
    s.validated()
    hw = Hardware(find_gpu(s.gpu), int(s.tp))
    target_model = find_model(s.target)
    method = find_method(s.method)
    engine = find_engine(s.engine)
    target = PassShape.of_model(target_model, s.weight_dtype, s.kv_dtype)
    resident = target_model.resident_weight_bytes * _dtype_ratio(target_model, s.weight_dtype)
    budget = kv_budget_bytes(hw.memory_bytes, resident)
    if budget <= 0 or budget < target.kv_bytes_per_token * s.context_len:
        from .fit import target_does_not_fit  # not even one sequence fits: say what it needs and what fits
        raise target_does_not_fit(s)
    eff = s.efficiency
    measured = s.t_target_ms is not None
    target_bw_scale = 1.0
    step_overhead = _overhead(engine.step_ms, engine.seq_us, eff.overhead_scale, s.t_target_ms)
    draft_overhead = _overhead(engine.draft_pass_ms, engine.draft_seq_us, eff.overhead_scale,
                               s.t_draft_ms if measured else None)
    if measured:
        overhead = sum(step_overhead)
        target_bw_scale = bandwidth_scale_for_measured_time(target, hw, eff, s.t_target_ms, s.context_len,
                                                            extra_ms=overhead)
        if target_bw_scale is None:
            floor = float(pass_time_ms(target, hw, eff, 1, 1, s.context_len, bandwidth_scale=1e12)) + overhead
            raise SpecModelError(
                f"a {s.t_target_ms:g} ms target step is faster than {hw.gpu.name}'s compute and "
                f"{engine.label}'s overheads allow for {target_model.name} ({floor:.2f} ms at infinite "
                "bandwidth): check the measurement, or choose the engine 'ideal'")
    draft, base, per_k, kv_d = draft_parts(s, method.name)
    draft_context = float(s.context_len)
    if method.name == "self_spec":
        draft_context = float(min(s.context_len, s.draft_kv_budget or SELF_SPEC_DEFAULT_BUDGET))
    draft_bw_scale = 1.0
    ngram_ms = 0.0
    if s.t_draft_ms is not None:
        if draft is None:
            ngram_ms = float(s.t_draft_ms)
        elif s.t_draft_ms > 0:
            include_fixed = method.draft_passes == "k"
            overhead = sum(draft_overhead) if include_fixed else 0.0
            draft_bw_scale = bandwidth_scale_for_measured_time(draft, hw, eff, s.t_draft_ms, draft_context,
                                                               include_fixed, extra_ms=overhead)
            if draft_bw_scale is None:  # faster than the preset's floors: growth with batch from compute only
                draft_bw_scale = 1e12
    return _Compiled(hw, target, draft, method.name, method.draft_passes, target_bw_scale, draft_bw_scale,
                     ngram_ms, budget, base, per_k, kv_d, engine, draft_context, measured,
                     *_verify_reads(engine, hw, target_model, s), step_overhead, draft_overhead)


def _verify_reads(engine: Engine, hw: Hardware, target, s: Scenario) -> tuple[float, float]:
    """KV reads of the target's verify pass and of the draft's multi-token first pass."""
    if engine.packs_verify(hw.gpu.name):
        return 1.0, 1.0
    draft = find_model(s.draft) if s.method == "draft_model" and s.draft else target
    return (unpacked_verify_reads(target.heads, target.kv_heads), unpacked_verify_reads(draft.heads, draft.kv_heads))


SELF_SPEC_DEFAULT_BUDGET = 512  # MagicDec's StreamingLLM draft budget (arXiv:2408.11049 blog tables)


def _dtype_ratio(m, weight_dtype: str | None) -> float:
    """Resident weight bytes at weight_dtype relative to the preset's (bf16 = 2 bytes) figure."""
    from .roofline import BYTES_PER_VALUE

    wd = weight_dtype or getattr(m, "weight_dtype", None) or "bf16"
    return BYTES_PER_VALUE[wd] / 2.0


def _draft_time_ms(c: _Compiled, s: Scenario, batch, k, depth):
    """Total draft cost of one speculative step with k verified drafts per sequence drawn in
    `depth` sequential passes: the first pass also takes in the tokens the last verify accepted
    (depth + 1 per sequence, as vLLM's and SGLang's EAGLE and draft-model proposers do), the rest
    `branching` tokens per sequence (1 for a chain)."""
    k = np.asarray(k, dtype=float)
    depth = np.asarray(depth, dtype=float)
    b = np.asarray(batch, dtype=float)
    eng, eff = c.engine, s.efficiency
    if c.draft is None:
        cpu = eng.ngram_seq_us * 1e-3 * b * eff.overhead_scale * (0.0 if c.measured else 1.0)
        return np.where(k > 0, k * c.ngram_ms_per_token + cpu, 0.0)
    if s.t_draft_ms == 0:
        return 0.0 * k * b
    per_pass_overhead = c.draft_overhead[0] + c.draft_overhead[1] * b
    if c.draft_passes == "one":  # Medusa: k heads read in one pass, one fixed overhead
        per_head = pass_time_ms(c.draft, c.hw, eff, b, 1, c.draft_context, c.draft_bw_scale, include_fixed=False)
        return np.where(k > 0, k * per_head + eff.t_fixed_ms + per_pass_overhead, 0.0)
    first = pass_time_ms(c.draft, c.hw, eff, b, depth + 1, c.draft_context, c.draft_bw_scale,
                         verify_kv_reads=c.draft_verify_kv_reads)
    rest = pass_time_ms(c.draft, c.hw, eff, b, float(s.branching), c.draft_context, c.draft_bw_scale)
    return np.where(k > 0, first + (depth - 1) * rest + depth * per_pass_overhead, 0.0)


# n-gram (prompt lookup) proposes only where the last tokens recur in the context; elsewhere the
# sequence decodes one token and its verify pass carries no drafts. Measured from vLLM's counters as
# drafts / (generated − accepted) sequence-steps; the default is the middle of what the fall of
# speedup with batch in SpecDecode-Bench's n-gram curves implies (arXiv:2601.11580, Figure 1).
NGRAM_PROPOSAL_RATE = 0.4


def proposal_rate(s: Scenario) -> float:
    if s.proposal_rate is not None:
        return float(s.proposal_rate)
    return NGRAM_PROPOSAL_RATE if find_method(s.method).name == "ngram" else 1.0


def _step_overhead_ms(c: _Compiled, s: Scenario, batch):
    """The engine's cost of one target forward step beyond its kernels."""
    return c.step_overhead[0] + c.step_overhead[1] * np.asarray(batch, dtype=float)


def _spec_overhead_ms(c: _Compiled, s: Scenario, batch):
    """What a speculative step adds beyond its passes: rejection sampling, proposer bookkeeping.
    With measured timings the batch-1 part is inside the measured draft time: only growth is added."""
    b = np.asarray(batch, dtype=float)
    if c.measured:
        extra = c.engine.spec_seq_us * 1e-3 * (b - 1.0)
    else:
        extra = c.engine.spec_step_ms + c.engine.spec_seq_us * 1e-3 * b
    return extra * s.efficiency.overhead_scale + s.efficiency.t_spec_overhead_ms


def _arm(step_ms, tokens, batch, fits) -> Arm:
    step_ms = np.asarray(step_ms, dtype=float)
    per_seq = np.where(batch > 0, tokens / step_ms * 1e3, 0.0)
    return Arm(step_ms, per_seq, per_seq * batch, np.where(per_seq > 0, 1e3 / np.where(per_seq > 0, per_seq, 1), np.inf),
               fits, batch)


def predict(s: Scenario, alpha=None, k=None, concurrency=None) -> Prediction:
    """Predict both arms. alpha, k and concurrency override the scenario's and may be arrays
    (broadcast together); a survival profile in the scenario is used unless alpha is given.

    The seed's worked example (one sequence, 19 ms target step, 3 ms draft step, k = 4, α = 0.7):

    >>> p = predict(Scenario(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3))
    >>> round(p.speedup, 2), round(p.tokens_per_step, 2), round(p.break_even_tokens_per_step, 2)
    (1.7, 2.77, 1.63)
    >>> predict(Scenario(k=4, t_target_ms=19, t_draft_ms=3), alpha=[0.3, 0.9]).speedup.round(2).tolist()
    [0.87, 2.51]
    """
    c = compile_scenario(s)
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
        # a tree's accepted path is at most its depth long (its width only raises the odds)
        tokens = acceptance.tokens_per_step(a, kk if s.draft_depth is None else np.minimum(kk, s.draft_depth))
    L = s.context_len

    fits_plain = max_sequences(c.budget_bytes, c.target.kv_bytes_per_token, L)
    b_plain = np.minimum(offered, fits_plain)
    b_plain_eval = np.maximum(b_plain, 1.0)
    t_plain = (pass_time_ms(c.target, c.hw, eff, b_plain_eval, 1, L, c.target_bw_scale)
               + _step_overhead_ms(c, s, b_plain_eval))

    spec_on = kk > 0
    spec_budget = c.budget_bytes - c.draft_resident_base - c.draft_resident_per_k * kk
    fits_spec = np.where(spec_on, max_sequences(spec_budget, c.target.kv_bytes_per_token + c.draft_kv_per_token,
                                                 L + kk), fits_plain)
    b_spec = np.minimum(offered, fits_spec)
    b_eval = np.maximum(b_spec, 1.0)  # time a batch of one where nothing fits; throughput is 0 anyway
    depth = np.minimum(kk, s.draft_depth) if s.draft_depth is not None else kk
    rate = proposal_rate(s)
    t_verify = (pass_time_ms(c.target, c.hw, eff, b_eval, 1 + rate * kk, L, c.target_bw_scale,
                             verify_kv_reads=c.verify_kv_reads)
                + _step_overhead_ms(c, s, b_eval))
    t_draft = _draft_time_ms(c, s, b_eval, kk, np.maximum(depth, 1))
    if c.measured:
        # Measured batch-1 times are the anchor: the verify pass costs the measured target step and
        # the drafts k measured draft steps at batch 1 (the textbook E·T_t / (T_t + k·T_d)); the
        # model supplies only how both grow with the batch.
        one = np.ones_like(b_eval)
        t_verify = t_verify - (pass_time_ms(c.target, c.hw, eff, one, 1 + rate * kk, L, c.target_bw_scale,
                                            verify_kv_reads=c.verify_kv_reads)
                               - pass_time_ms(c.target, c.hw, eff, one, 1, L, c.target_bw_scale))
        if c.draft is not None and s.t_draft_ms:
            t_draft = t_draft - _draft_time_ms(c, s, one, kk, np.maximum(depth, 1)) + kk * float(s.t_draft_ms)
    extra_width = np.maximum(kk - depth, 0) if s.draft_depth is not None else 0 * kk
    t_tree = np.where(extra_width > 0, (c.engine.tree_step_ms + c.engine.tree_token_us * 1e-3 * b_eval * extra_width)
                      * eff.overhead_scale, 0.0)
    t_spec = np.where(spec_on, t_draft + t_verify + t_tree + _spec_overhead_ms(c, s, b_eval),
                      pass_time_ms(c.target, c.hw, eff, b_eval, 1, L, c.target_bw_scale) + _step_overhead_ms(c, s, b_eval))
    # E as engines report it counts steps with a proposal; throughput sees 1 + rate · (E − 1) per step.
    tokens = np.where(spec_on, np.asarray(tokens, dtype=float), 1.0)
    emitted = 1.0 + rate * (tokens - 1.0)

    plain = _arm(t_plain, 1.0, b_plain, fits_plain)
    spec = _arm(t_spec, emitted, b_spec, fits_spec)
    speedup = spec.throughput_tok_s / plain.throughput_tok_s
    with np.errstate(divide="ignore", invalid="ignore"):
        be_emitted = np.where(b_spec > 0, plain.throughput_tok_s * t_spec / (np.where(b_spec > 0, b_spec, 1) * 1e3),
                              np.inf)
        be_tokens = 1.0 + (be_emitted - 1.0) / rate  # back in the engines' units (per proposing step)
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
    # The first losing batch, looked for in the first 512 batches before the rest (most scenarios
    # lose early: an eighth of the work); the same answer as one pass over all of them.
    for first, last in ((1, min(512, max_batch)), (513, max_batch)):
        if first > last:
            break
        batches = np.arange(first, last + 1)
        speed = np.asarray(predict(s, k=kk, concurrency=batches).speedup, dtype=float)
        losing = np.flatnonzero(~(speed >= 1.0))
        if losing.size:
            return int(batches[losing[0]] - 1)
    return None


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


# A verdict's label -> how its headline reads (specmodel.notes.TONES); any other label is "neutral".
TONE_OF_LABEL = {"pays off": "good", "borderline": "caution", "loses": "bad"}


def tone_of(label: str) -> str:
    """The tone of a verdict label: "pays off" reads good, "borderline" caution, "loses" bad,
    anything else ("off", "unknown") neutral."""
    return TONE_OF_LABEL.get(label, "neutral")


@dataclass(frozen=True)
class Verdict:
    label: str  # "pays off" | "borderline" | "loses" | "off"
    text: str  # one sentence with the number
    advice: str  # what to deploy

    @property
    def tone(self) -> str:
        return tone_of(self.label)


def off_above(schedule: list[list[int]]) -> int | None:
    """The batch size above which the schedule turns speculation off for good (None if it never
    does within the schedule's range; 0 if it is off from batch 1)."""
    if not schedule or schedule[-1][2] != 0:
        return None
    return schedule[-1][0] - 1


def verdict(speedup: float, best: tuple[int, float], off_above_batch: int | None, k: int,
            concurrency: int, spec_fits: bool = True, off_above_k: int | None = None) -> Verdict:
    """Words for a speedup, and the advice that follows from the best k here and the batch size
    above which the best k is 0 (from k_schedule; `off_above_k` is the schedule's k just below it)."""
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
        # Name the k this batch belongs to: it is the schedule's last k, not necessarily the chosen
        # one (whose own crossover may be far lower).
        parts.append(f"turn it off above batch {off_above_batch}"
                     + (f", where k = {off_above_k} stops paying" if off_above_k else ""))
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
    band: tuple[float, float] | None = None  # speedup_low, speedup_high (speedup_band)

    @property
    def uncertain(self) -> bool:
        """True when the band straddles 1.0: the data leave open whether speculation pays off."""
        return self.band is not None and self.band[0] < 1.0 < self.band[1] and self.scenario.k > 0

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
            "context_len": s.context_len, "tp": s.tp, "engine": find_engine(s.engine).name,
            "draft_depth": s.draft_depth, "weight_dtype": s.weight_dtype, "kv_dtype": s.kv_dtype,
            "timings": "measured" if s.t_target_ms is not None else "hardware",
            "tokens_per_step": _round(p.tokens_per_step), "speedup": _round(p.speedup),
            "verdict": self.verdict.label, "verdict_text": self.verdict.text, "advice": self.verdict.advice,
            "speedup_low": _round(self.band[0]) if self.band else None,
            "speedup_high": _round(self.band[1]) if self.band else None,
            "uncertain": self.uncertain,
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
    """Predict the scenario and derive best k, crossover, schedule, verdict and notes.

    >>> v = summarize(Scenario(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3)).verdict
    >>> v.label, v.text
    ('pays off', 'pays off: 1.70x')
    """
    p = predict(s)
    best = best_k(s, max(k_max, s.k))
    cross = crossover_concurrency(s)
    spec_fits = s.k == 0 or p.spec.max_concurrency >= 1
    schedule = k_schedule(s, max(k_max, s.k))
    last_k = schedule[-2][2] if len(schedule) >= 2 and schedule[-1][2] == 0 else None
    v = verdict(float(p.speedup), best, off_above(schedule), s.k, s.concurrency, spec_fits, last_k)
    if not spec_fits:  # name the real cause for this method and the closest setting that fits
        from .fit import speculation_does_not_fit
        why = speculation_does_not_fit(s)
        if why is not None:
            v = Verdict(v.label, f"{v.label}: {why}", why.closest)
    notes = []  # all "info": the queue shows in the throughput, and the tail is how the model extends a profile
    if s.k > 0 and p.spec.batch < s.concurrency:
        notes.append(info(f"with speculation only {int(p.spec.max_concurrency)} sequences fit in the KV cache; "
                          f"{int(s.concurrency - p.spec.batch)} of {s.concurrency} wait in the queue"))
    if p.plain.batch < s.concurrency:
        notes.append(info(f"without speculation only {int(p.plain.max_concurrency)} sequences fit; "
                          f"{int(s.concurrency - p.plain.batch)} of {s.concurrency} wait in the queue"))
    if s.survival is not None and s.k > len(s.survival):
        notes.append(info(f"k = {s.k} is beyond the measured profile's {len(s.survival)} positions: "
                          "positions past it use a geometric tail fitted to the profile"))
    band = speedup_band(s, speedup=float(p.speedup))
    summary = Summary(s, p, best[0], best[1], cross, schedule, v, tuple(notes), band)
    if summary.uncertain:
        v = replace(v, text=f"{v.text} — uncertain: {band[0]:.2f}x to {band[1]:.2f}x")
        summary = replace(summary, verdict=v)
    return summary


# The spread the published runs leave open in the parameters no single run pins: engine overheads
# within ×0.6-×1.6 of the preset, and achieved FLOPS ±0.1 (GEMMs reach 0.55-0.75 of peak by shape).
BAND_OVERHEAD_SCALE = (0.6, 1.6)
BAND_ETA_FLOPS = 0.1


def speedup_band(s: Scenario, alpha_range: tuple[float, float] | None = None,
                 speedup: float | None = None) -> tuple[float, float]:
    """(low, high) predicted speedup over the parameters the data leave open: engine overheads and
    achieved FLOPS around the scenario's values, the default parameters when the scenario carries
    calibrated ones, and an acceptance interval when one is given (e.g. from counter totals).
    `speedup`: the scenario's own prediction when already known (saves predicting it again)."""
    eff = s.efficiency
    variants = [replace(eff, overhead_scale=eff.overhead_scale * f) for f in BAND_OVERHEAD_SCALE]
    variants += [replace(eff, eta_flops=min(1.0, max(0.05, eff.eta_flops + d))) for d in (-BAND_ETA_FLOPS, BAND_ETA_FLOPS)]
    if eff != Efficiency():
        variants.append(Efficiency())
    values = [float(predict(s).speedup) if speedup is None else float(speedup)]
    for e in variants:
        try:
            values.append(float(predict(replace(s, efficiency=e)).speedup))
        except SpecModelError:
            continue
    if alpha_range is not None and s.survival is None:
        for a in alpha_range:
            values.append(float(predict(s, alpha=a).speedup))
    values = [v for v in values if np.isfinite(v)]
    return (min(values), max(values)) if values else (float("nan"), float("nan"))


def with_changes(s: Scenario, **changes) -> Scenario:
    """A copy of the scenario with some inputs changed (dataclasses.replace, re-exported)."""
    return replace(s, **changes)
