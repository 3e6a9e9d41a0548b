"""A scenario (every input, frozen) -> predict() -> Prediction. The decisions built on it (best k,
crossover, schedule, verdict, band) are in specmodel.model.decide; memory in specmodel.model.memory.

Speedup is speculative throughput over plain throughput at the same offered concurrency B:

    plain:  b_p = min(B, fits_plain),  throughput = b_p / T_t(b_p)
    spec:   b_s = min(B, fits_spec),   throughput = b_s · E / (k·T_d(b_s) + T_v(b_s, k) + t_spec)

T_t and T_v come from the roofline of the target (1 and k+1 query tokens per sequence), T_d from
the draft method's own pass. Everything broadcasts over α, k and B, so a heatmap is one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.bounds import MAX_BRANCHING, MAX_CONCURRENCY, MAX_CONTEXT, MAX_K, MAX_TP, bounded_cache, check_setting
from specmodel.model import acceptance, memory
from specmodel.model.distinct import per_distinct
from specmodel.model.engines import DEFAULT_ENGINE, Engine, find_engine
from specmodel.model.memory import DTYPES, KV_DTYPES, kv_budget_bytes, sequences_that_fit
from specmodel.model.presets import GPU, Method, Model, find_gpu, find_method, find_model, stated_tp
from specmodel.model.roofline import (Efficiency, Hardware, PassShape, bandwidth_scale_for_measured_time,
                                      pass_time_ms, unpacked_verify_reads)

_NAMED = {"gpu": GPU, "target": Model, "method": Method, "draft": Model, "engine": Engine}


@dataclass(frozen=True)
class Scenario:
    """Every input of one what-if question. Units are in the names. The GPU, models, method and engine
    are resolved presets (hashable, frozen; str() gives the name they print as): a name people write
    is read once, where it is given, by Scenario.from_names (CLI, run files, links, the sidebar), and
    the model only reads these objects."""

    gpu: GPU = field(default_factory=lambda: resolved_gpu("L40S"))
    target: Model = field(default_factory=lambda: resolved_model("Llama 3.1 8B"))
    method: Method = field(default_factory=lambda: resolved_method("draft_model"))
    draft: Model | None = field(default_factory=lambda: resolved_model("Llama 3.2 1B"))  # only for "draft_model"
    alpha: float = 0.7
    survival: tuple[float, ...] | None = None  # measured p_1..p_k; overrides α when given
    k: int = 4
    concurrency: int = 1
    context_len: int = 1024  # mean tokens in each sequence's KV cache
    t_target_ms: float | None = None  # measured plain step at batch 1 ("measured" timings)
    t_draft_ms: float | None = None  # measured draft cost per draft token at batch 1
    tp: int = 1  # tensor-parallel GPUs per replica
    efficiency: Efficiency = field(default_factory=Efficiency)
    engine: Engine = field(default_factory=lambda: resolved_engine(DEFAULT_ENGINE))  # whose overheads apply
    draft_depth: int | None = None  # sequential draft passes per step; None: a chain, = k
    branching: int = 1  # tokens per sequence in each draft pass after the first (tree top-k)
    draft_kv_budget: int | None = None  # tokens of KV a sparse-KV draft reads (self_spec)
    weight_dtype: str | None = None  # target (and head) weights: bf16, fp8, fp4, int4; None: the preset's
    kv_dtype: str = "bf16"  # KV cache dtype: bf16 or fp8
    proposal_rate: float | None = None  # share of sequence-steps with a proposal; None: the method's default
    parallel_draft: bool = False  # one draft pass proposes all k tokens (P-EAGLE, PARD, DFlash): a chain in one pass

    def __post_init__(self):
        for name, kind in _NAMED.items():
            value = getattr(self, name)
            if not isinstance(value, kind) and not (value is None and name == "draft"):
                raise TypeError(f"Scenario.{name} takes a resolved {kind.__name__}, got {value!r}: "
                                "read names with Scenario.from_names")

    @classmethod
    def from_names(cls, gpu="L40S", target="Llama 3.1 8B", method="draft_model", draft="Llama 3.2 1B",
                   engine=DEFAULT_ENGINE, tp: int | None = None, **inputs) -> "Scenario":
        """The scenario whose GPU, models, method and engine are given as people write them (or as
        resolved presets, kept as they are): each name is read here, once. A GPU written with a count or
        a TP ("8x H100 (TP=8)") sets tp; a tp that disagrees with it is refused rather than one of them
        silently ignored. Unknown names raise SpecModelError naming the choices."""
        stated = stated_tp(gpu) if isinstance(gpu, str) else None
        if stated is not None and tp not in (None, 1, stated):
            raise SpecModelError(f"GPU '{gpu}' says TP {stated} but tp is {tp}: give one of them")
        tp = stated if stated is not None else 1 if tp is None else tp
        return cls(gpu=resolved_gpu(gpu), target=resolved_model(target), method=resolved_method(method),
                   draft=None if draft is None or draft == "" else resolved_model(draft),
                   engine=resolved_engine(engine), tp=tp, **inputs)

    def with_names(self, **changes) -> "Scenario":
        """A copy with some inputs changed, names among them read as from_names reads them."""
        names = {k: getattr(self, k) for k in (*_NAMED, "tp")}
        names.update(changes)
        rest = {f: getattr(self, f) for f in self.__dataclass_fields__ if f not in names}
        return Scenario.from_names(**names, **rest)

    def names(self) -> dict[str, str | None]:
        """The GPU, models and method as their names (what a Scenario held before it held the presets)."""
        return {"gpu": self.gpu.name, "target": self.target.name, "method": self.method.name,
                "draft": self.draft.name if self.draft else None}

    def validated(self) -> "Scenario":
        """Raise SpecModelError with a message for a person if any input is impossible."""
        a = np.asarray(self.alpha, dtype=float)
        if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
            raise SpecModelError(f"α (per-token acceptance) must lie in [0, 1], got {self.alpha}")
        if self.survival is not None:
            acceptance.validate_survival(self.survival)
        check_setting(self.k, "k (draft tokens per step)", 0, MAX_K)
        check_setting(self.concurrency, "concurrency", 1, MAX_CONCURRENCY)
        check_setting(self.context_len, "context length (tokens)", 0, MAX_CONTEXT)
        for name, value in (("target step time", self.t_target_ms), ("draft step time", self.t_draft_ms)):
            if value is not None and (not np.isfinite(value) or value < 0):
                raise SpecModelError(f"{name} must be a number of milliseconds ≥ 0, got {value}")
        if self.t_target_ms is not None and self.t_target_ms <= 0:
            raise SpecModelError("target step time must be > 0 ms")
        check_setting(self.tp, "tensor parallelism", 1, MAX_TP)
        if self.method.name == "draft_model" and not self.draft:
            raise SpecModelError("method 'draft_model' needs a draft model; name one or pick another method")
        if self.draft_depth is not None:
            check_setting(self.draft_depth, "draft depth", 1, MAX_K)
            if self.k and self.draft_depth > self.k:
                raise SpecModelError(f"a tree of {self.k} verified tokens cannot be {self.draft_depth} deep: "
                                     "the verified tokens (k, the tree's width) must be at least its depth")
        check_setting(self.branching, "branching", 1, MAX_BRANCHING)
        if self.draft_kv_budget is not None:
            check_setting(self.draft_kv_budget, "draft KV budget (tokens)", 1, MAX_CONTEXT)
        for name, dtype, allowed in (("weight dtype", self.weight_dtype, DTYPES),
                                     ("KV dtype", self.kv_dtype, KV_DTYPES)):
            if dtype is not None and dtype not in allowed:
                raise SpecModelError(f"{name} '{dtype}' is not one of {', '.join(allowed)}")
        if self.proposal_rate is not None and not (np.isfinite(self.proposal_rate) and 0 < self.proposal_rate <= 1):
            raise SpecModelError(f"proposal rate must lie in (0, 1], got {self.proposal_rate}")
        return self


# The readers from_names uses: a resolved preset passes through; a name is read once per distinct text
# (a run file names the same few presets on every row); anything else (None, a number) goes to find_*,
# whose message says what is wrong with it. Measured (issue 43, 2-core shared dev machine, CPU time,
# interleaved): a calibration's fit reads each row's names on every step (24,000 reads, 6 distinct, in 4
# fixture fits); these caches save ~8% of it (1.57 s with, 1.70 s without). Text keys: bounded_cache.
@bounded_cache(256)
def _gpu_named(text: str) -> GPU:
    return find_gpu(text)


@bounded_cache(256)
def _model_named(text: str) -> Model:
    return find_model(text)


@bounded_cache(64)
def _method_named(text: str) -> Method:
    return find_method(text)


@bounded_cache(64)
def _engine_named(text: str | None) -> Engine:
    return find_engine(text)


def resolved_gpu(gpu) -> GPU:
    return gpu if isinstance(gpu, GPU) else _gpu_named(gpu) if isinstance(gpu, str) else find_gpu(gpu)


def resolved_model(model) -> Model:
    return model if isinstance(model, Model) else _model_named(model) if isinstance(model, str) else find_model(model)


def resolved_method(method) -> Method:
    return method if isinstance(method, Method) else _method_named(method) if isinstance(method, str) else \
        find_method(method)


def resolved_engine(engine) -> Engine:
    return engine if isinstance(engine, Engine) else _engine_named(engine) if isinstance(engine, str) else \
        find_engine(engine)


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
    verify_query_tile: int  # query rows an unpacked verify kernel computes per program (0: the pass's own)
    draft_verify_query_tile: int
    step_overhead: tuple[float, float]  # engine cost of a target step: (ms, ms per sequence)
    serial_cpu: tuple[float, float]  # CPU work a spec step pays in series where plain overlaps it (ms, ms/seq)
    draft_overhead: tuple[float, float]  # engine cost of a draft pass: (ms, ms per sequence)
    eager_first_ms: float  # what the first draft pass costs more where the version runs it outside CUDA graphs
    target_layout: memory.KVLayout  # what one sequence of the target caches (windows, recurrent state)


# chosen (no measurement found): at most this share of a batch-1 time the user measured (--t-target-ms,
# --t-draft-ms) is taken as engine overhead; a round cap so that an engine preset slower than the measured
# engine cannot eat the whole measured time. Not itself measured or fitted.
MEASURED_OVERHEAD_SHARE = 0.5


def _overhead(fixed_ms: float, per_seq_us: float, scale: float, measured_ms: float | None) -> tuple[float, float]:
    """(ms, ms per sequence) of an engine overhead. With a measured batch-1 time the overhead is
    inside the measurement: its batch-1 value is capped at MEASURED_OVERHEAD_SHARE of it (the
    engine preset may be faster or slower than the one measured) and only its growth is added."""
    slope = per_seq_us * 1e-3 * scale
    at_one = (fixed_ms * 1.0) * scale + slope
    if measured_ms is not None:
        at_one = min(at_one, MEASURED_OVERHEAD_SHARE * measured_ms)
    return at_one - slope, slope


def draft_shape(s: Scenario, method: str) -> PassShape | None:
    """The pass one draft step runs (Medusa: all heads in one pass; n-gram: none, no GPU work)."""
    t = s.target
    if method == "draft_model":
        return PassShape.of_model(s.draft, kv_dtype=s.kv_dtype)
    if method == "self_spec":  # the target drafts for itself over a sparse KV budget
        return PassShape.of_model(t, s.weight_dtype, s.kv_dtype)
    if method in ("eagle", "eagle3", "mtp"):
        return PassShape.draft_head(t, method, s.weight_dtype, s.kv_dtype)
    if method == "medusa":
        head_params = memory.medusa_head_params(t)
        return PassShape(head_params * memory.BYTES_PER_VALUE["bf16"], head_params, 0.0, 0.0)
    return None


def compile_scenario(s: Scenario) -> _Compiled:
    """The constants of a scenario that predict() evaluates at any batch, α and k: step-time parts of the
    target, the draft and the engine, memory budget and the fit. Public for bench/. They depend on
    neither α, the profile, k nor the concurrency: compiled once per predict() call for every value of
    those. Not cached: what reads the presets (_layout) is; the rest is a few overheads and, with measured
    times, two bandwidth scales, each re-derived per efficiency (a calibration's fit moves it every call)."""
    s.validated()
    lay = _layout(_layout_key(s))
    hw, target_model, method, engine, target = lay.hw, lay.target_model, lay.method, lay.engine, lay.target
    eff = s.efficiency
    measured = s.t_target_ms is not None
    target_bw_scale = 1.0
    step_overhead = _overhead(engine.step_ms, engine.seq_us, eff.overhead_scale, s.t_target_ms)
    draft_overhead = _overhead(engine.draft_pass_ms, engine.draft_seq_us * eff.spec_seq_scale, eff.overhead_scale,
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
    draft, extra, draft_context = lay.draft, lay.extra, lay.draft_context
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
                     ngram_ms, lay.budget_bytes, extra.weights_bytes, extra.weights_per_k_bytes,
                     extra.kv_bytes_per_token, engine, draft_context, measured, *lay.verify_reads, step_overhead,
                     _serial_cpu(engine, method.name, eff), draft_overhead,
                     0.0 if measured else engine.eager_first_pass_ms(method.name) * eff.overhead_scale,
                     lay.target_layout)


@dataclass(frozen=True)
class _Layout:
    """The part of _Compiled that the efficiency parameters do not change: presets, pass shapes, memory."""

    hw: Hardware
    target_model: object
    method: object
    engine: Engine
    target: PassShape
    budget_bytes: float
    draft: PassShape | None
    extra: object  # memory.draft_memory
    draft_context: float
    verify_reads: tuple[float, float, int, int]
    target_layout: memory.KVLayout


def _layout_key(s: Scenario) -> Scenario:
    """The scenario with the inputs a layout does not depend on (α, the profile, k, the concurrency and
    the efficiency) set to fixed values: an α move and every step of a calibration's fit share one entry."""
    return replace(s, alpha=_PROBE_ALPHA, k=0, concurrency=1, survival=None, efficiency=_DEFAULT_EFFICIENCY)


# Measured (issue 43, as above): saves ~7% of a calibration's fit (4 fixture fits: 1.60 s without it, 1.49 s
# with; it answers 1,750 of the fits' 1,755 compiles). On the What-if page it is the only compile cache
# (~0.8 ms of a ~22 ms rerun). The cache on compile_scenario and one on the rest of the compile (keyed with
# the efficiency) saved nothing measurable on the page or in fits, and are gone. Keys: validated scenarios.
@bounded_cache(64)
def _layout(s: Scenario) -> _Layout:
    """Presets, pass shapes and memory of a scenario whose α, k, concurrency, profile and efficiency are
    fixed ones (_layout_key): none of those changes what the presets say."""
    hw = Hardware(s.gpu, int(s.tp))
    target_model, method, engine = s.target, s.method, s.engine
    target = PassShape.of_model(target_model, s.weight_dtype, s.kv_dtype)
    why = memory.target_does_not_fit(s.gpu, s.tp, s.target, s.context_len, s.weight_dtype, s.kv_dtype)
    if why is not None:  # not even one sequence fits: say what it needs and what fits
        raise why
    budget = kv_budget_bytes(hw.memory_bytes, memory.resident_weight_bytes(target_model, s.weight_dtype))
    draft = draft_shape(s, method.name)
    extra = memory.draft_memory(target_model, method.name, s.draft, s.weight_dtype, s.kv_dtype)
    draft_context = float(s.context_len)
    if method.name == "self_spec":
        draft_context = float(min(s.context_len, s.draft_kv_budget or SELF_SPEC_DEFAULT_BUDGET))
    return _Layout(hw, target_model, method, engine, target, budget, draft, extra, draft_context,
                   _verify_reads(engine, hw, target_model, s), memory.kv_layout(target_model, s.kv_dtype))


_DEFAULT_EFFICIENCY = Efficiency()


def _serial_cpu(engine: Engine, method: str, eff: Efficiency) -> tuple[float, float]:
    fixed, per_seq = engine.serial_cpu(method)
    return fixed * eff.overhead_scale, per_seq * eff.overhead_scale * eff.spec_seq_scale


def _verify_reads(engine: Engine, hw: Hardware, target, s: Scenario) -> tuple[float, float, int, int]:
    """KV reads of the target's verify pass and of the draft's multi-token first pass, then the query
    tile each one's kernel computes (Engine.verify_query_tile; 0: none)."""
    draft = s.draft if s.method.name == "draft_model" and s.draft else target
    tiles = (engine.verify_query_tile(hw.gpu.kernel_name, target.attention),
             engine.verify_query_tile(hw.gpu.kernel_name, draft.attention))
    if engine.packs_verify(hw.gpu.kernel_name, target.attention):
        return 1.0, 1.0, *tiles
    return (unpacked_verify_reads(target.heads, target.kv_heads), unpacked_verify_reads(draft.heads, draft.kv_heads),
            *tiles)


SELF_SPEC_DEFAULT_BUDGET = 512  # published: MagicDec's StreamingLLM draft budget (arXiv:2408.11049 blog tables)


def _draft_time_ms(c: _Compiled, s: Scenario, batch, k, depth):
    """Total draft cost of one speculative step with k verified drafts per sequence drawn in
    `depth` sequential passes: the first pass also takes in the tokens the last verify accepted
    (depth + 1 per sequence, as vLLM's and SGLang's EAGLE and draft-model proposers do), the rest
    `branching` tokens per sequence (1 for a chain). Where the engine version runs that first pass
    outside CUDA graphs (Engine.eager_first_pass_ms: SGLang before v0.4.7) it costs that much more."""
    k = np.asarray(k, dtype=float)
    depth = np.asarray(depth, dtype=float)
    b = np.asarray(batch, dtype=float)
    eng, eff = c.engine, s.efficiency
    if c.draft is None:
        cpu = eng.ngram_seq_us * 1e-3 * b * eff.overhead_scale * eff.spec_seq_scale * (0.0 if c.measured else 1.0)
        return np.where(k > 0, k * c.ngram_ms_per_token + cpu, 0.0)
    if s.t_draft_ms == 0:
        return 0.0 * k * b
    per_pass_overhead = c.draft_overhead[0] + c.draft_overhead[1] * b
    if c.draft_passes == "one":  # Medusa: one head per draft position (tree level), all in one pass
        per_head = pass_time_ms(c.draft, c.hw, eff, b, 1, c.draft_context, c.draft_bw_scale, include_fixed=False)
        return np.where(k > 0, depth * per_head + eff.t_fixed_ms + per_pass_overhead, 0.0)
    if s.parallel_draft:  # one pass over the accepted token and k mask positions per sequence
        one_pass = pass_time_ms(c.draft, c.hw, eff, b, k + 1, c.draft_context, c.draft_bw_scale,
                                verify_kv_reads=c.draft_verify_kv_reads, verify_query_tile=c.draft_verify_query_tile)
        return np.where(k > 0, one_pass + per_pass_overhead + c.eager_first_ms, 0.0)
    first = pass_time_ms(c.draft, c.hw, eff, b, depth + 1, c.draft_context, c.draft_bw_scale,
                         verify_kv_reads=c.draft_verify_kv_reads, verify_query_tile=c.draft_verify_query_tile)
    rest = pass_time_ms(c.draft, c.hw, eff, b, float(s.branching), c.draft_context, c.draft_bw_scale)
    return np.where(k > 0, first + (depth - 1) * rest + depth * per_pass_overhead + c.eager_first_ms, 0.0)


# n-gram (prompt lookup) proposes only where the last tokens recur in the context; elsewhere the
# sequence decodes one token and its verify pass carries no drafts. Measured from vLLM's counters as
# drafts / (generated − accepted) sequence-steps; the default is the middle of what the fall of
# speedup with batch in SpecDecode-Bench's n-gram curves implies (arXiv:2601.11580, Figure 1).
NGRAM_PROPOSAL_RATE = 0.4


def default_proposal_rate(method: Method, engine: Engine) -> float:
    """Share of sequence-steps whose verify carries drafts where none is measured: n-gram's default
    where the engine verifies only matched sequences (vLLM), 1 where it pads every sequence to k
    drafts every step (SGLang: Engine.ngram_drafts_every_step, with the file it comes from) and for
    every other method."""
    if method.name != "ngram" or engine.ngram_drafts_every_step:
        return 1.0
    return NGRAM_PROPOSAL_RATE


def proposal_rate(s: Scenario) -> float:
    """The scenario's own proposal rate, else the method's and engine's default."""
    if s.proposal_rate is not None:
        return float(s.proposal_rate)
    return default_proposal_rate(s.method, s.engine)


def _step_overhead_ms(c: _Compiled, s: Scenario, batch):
    """The engine's cost of one target forward step beyond its kernels."""
    return c.step_overhead[0] + c.step_overhead[1] * np.asarray(batch, dtype=float)


def _spec_overhead_ms(c: _Compiled, s: Scenario, batch):
    """What a speculative step adds beyond its passes: rejection sampling, proposer bookkeeping, and
    the CPU work the engine version overlaps in plain decoding but not here (Engine.serial_cpu;
    measured timings of plain steps do not contain it). With measured timings the batch-1 part of
    the rest is inside the measured draft time: only growth is added."""
    b = np.asarray(batch, dtype=float)
    per_seq = c.engine.spec_seq_us * 1e-3 * s.efficiency.spec_seq_scale
    if c.measured:
        extra = per_seq * (b - 1.0)
    else:
        extra = c.engine.spec_step_ms + per_seq * b
    serial = c.serial_cpu[1] * (b - 1.0) if c.measured else c.serial_cpu[0] + c.serial_cpu[1] * b
    return extra * s.efficiency.overhead_scale + serial + s.efficiency.t_spec_overhead_ms


def _arm(step_ms, tokens, batch, fits) -> Arm:
    step_ms = np.asarray(step_ms, dtype=float)
    per_seq = np.where(batch > 0, tokens / step_ms * 1e3, 0.0)
    return Arm(step_ms, per_seq, per_seq * batch, np.where(per_seq > 0, 1e3 / np.where(per_seq > 0, per_seq, 1), np.inf),
               fits, batch)


def _acceptance(s: Scenario, alpha, kk):
    """(α, tokens per proposing step E) of a scenario at whole k values `kk`; `alpha` overrides the
    scenario's α and profile."""
    if alpha is None and s.survival is not None:
        return (np.asarray(acceptance.from_survival(s.survival).alpha),
                acceptance.tokens_per_step_at_k(kk, survival=s.survival))
    a = np.asarray(s.alpha if alpha is None else alpha, dtype=float)
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        raise SpecModelError("α (per-token acceptance) must lie in [0, 1]")
    # a tree's accepted path is at most its depth long (its width only raises the odds)
    return a, acceptance.tokens_per_step(a, kk if s.draft_depth is None else np.minimum(kk, s.draft_depth))


def _per_step(tokens, spec_on, rate: float):
    """(E, tokens a step emits per sequence). E as engines report it counts steps with a proposal;
    throughput sees 1 + rate · (E − 1) per step; both are 1 with speculation off."""
    tokens = np.where(spec_on, np.asarray(tokens, dtype=float), 1.0)
    return tokens, acceptance.emitted_per_step(tokens, rate)


def _emitted(s: Scenario, kk, alpha=None):
    """Tokens a step emits per sequence at whole k values `kk`, as predict() counts them."""
    return _per_step(_acceptance(s, alpha, kk)[1], kk > 0, proposal_rate(s))[1]


_PROBE_ALPHA = 0.5  # chosen: any α works: predict at it, then scale by the emitted tokens (speedup_grid)


# Measured (issue 43, as above): saves ~3.7 ms of a ~22 ms What-if rerun after an α move (the schedule,
# crossover and best-k grids reused); without it the page is ~1.7x the page without the model (goal 1.5x).
@bounded_cache(128, key_args=3)
def _per_emitted(free: Scenario, ks_key: bytes, batches_key: bytes, ks: np.ndarray, batches: np.ndarray):
    """predict()'s speedup over ks × batches at _PROBE_ALPHA over the tokens a step emits there (read-only),
    keyed by the whole numbers' bytes (a tuple of 4096 ints cost more to build and check than the rest)."""
    kk = ks[:, None]
    speed = np.asarray(predict(free, alpha=_PROBE_ALPHA, k=kk, concurrency=batches[None, :]).speedup, dtype=float)
    ratio = speed / np.asarray(_emitted(free, kk, _PROBE_ALPHA), dtype=float)
    ratio.flags.writeable = False
    return ratio


def clear_caches() -> None:
    """Forget every cached step-time grid, layout and what is derived from them (for code that swaps the
    model's functions, e.g. a test)."""
    for cache in (_per_emitted, _steps_cached, _layout, _plain_throughput, *_CLEARED_WITH):
        cache.cache_clear()


def _whole(values) -> np.ndarray:
    return np.array([int(v) for v in values] if not isinstance(values, np.ndarray) else values, dtype=np.int64).ravel()


def emitted_tokens(s: Scenario, ks, alpha=None) -> np.ndarray:
    """Tokens a step emits per sequence at whole k values `ks` (1 at k = 0), as predict() counts them;
    `alpha` (broadcast against ks) overrides the scenario's α and profile."""
    return np.asarray(_emitted(s, np.asarray(ks), alpha), dtype=float)


def speedup_per_emitted_token(s: Scenario, ks, batches) -> np.ndarray:
    """predict(s, k=ks[:, None], concurrency=batches[None, :]).speedup over emitted_tokens(s, ks[:, None]),
    the same at every α and profile: those change only the tokens a step emits (step times, the batches
    that fit and so the tokens at which speculation breaks even do not depend on them). Computed once per
    scenario apart from its α and profile (cached), so moving α, the profile, k or the concurrency reuses it."""
    kk, bb = _whole(ks), _whole(batches)
    return _per_emitted(free_of_acceptance(s), kk.tobytes(), bb.tobytes(), kk, bb)


def speedup_grid(s: Scenario, ks, batches) -> np.ndarray:
    """predict(s, k=ks[:, None], concurrency=batches[None, :]).speedup (ks, batches: whole numbers): the
    tokens a step emits times speedup_per_emitted_token."""
    kk = _whole(ks)
    return emitted_tokens(s, kk[:, None]) * speedup_per_emitted_token(s, kk, batches)


# Step times, the sequences that fit and the batches that run depend on neither α nor the profile (those
# change only the tokens a step emits): predict() computes them once per scenario apart from those, k and
# the concurrency, so a rerun after an α move (the What-if page predicts a dozen times per rerun) skips the
# rooflines. Grids of more cells than this (a file's runs, a k × batch grid) are computed each time, never
# kept (speedup_grid keeps those).
_STEPS_MAX_CELLS = 2048  # chosen (memory only): 6 arrays of 8-byte cells: at most 100 kB an entry, 13 MB for 128


def free_of_acceptance(s: Scenario) -> Scenario:
    """The scenario with α, the profile, k and the concurrency fixed: the key of work done once apart from those."""
    return replace(s, alpha=_PROBE_ALPHA, k=0, concurrency=1, survival=None)


def _steps_of(s: Scenario, c: _Compiled, kk: np.ndarray, offered: np.ndarray):
    """_steps(...) of the scenario at whole k values kk and offered batches, cached for small arrays
    (copies of the cached arrays: a caller may write into a prediction's arrays)."""
    if kk.size * offered.size > _STEPS_MAX_CELLS:  # at most the cells of the broadcast result
        return _steps(s, c, kk, offered)
    key = (kk.shape, kk.dtype.str, kk.tobytes(), offered.shape, offered.dtype.str, offered.tobytes())
    return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in _steps_cached(free_of_acceptance(s), key, c, kk, offered))


# Measured (issue 43, as above): saves ~2 ms of a ~22 ms What-if rerun after an α move (without it the page
# is ~1.6x the page without the model, goal 1.5x). It costs a calibration's fit ~6% (its efficiency moves
# every step, so entries hardly recur: 64 hits of 1,755), a price paid for the page.
@bounded_cache(128, key_args=2)
def _steps_cached(free: Scenario, key: tuple, c: _Compiled, kk: np.ndarray, offered: np.ndarray):
    return _steps(free, c, kk, offered)


def _steps(s: Scenario, c: _Compiled, kk: np.ndarray, offered: np.ndarray):
    """(fits_plain, b_plain, t_plain, fits_spec, b_spec, t_spec, proposal rate) at whole k values kk and
    offered batches: everything of predict() that α and the profile do not change."""
    L = s.context_len

    fits_plain = sequences_that_fit(c.budget_bytes, c.target_layout.resident_bytes(L))
    b_plain = np.minimum(offered, fits_plain)
    t_plain = per_distinct(lambda b: _plain_step_ms(s, c, b), b_plain)  # once per distinct batch

    spec_on = kk > 0
    depth = np.minimum(kk, s.draft_depth) if s.draft_depth is not None else kk
    # per-draft-position weights (Medusa heads): one per tree level, not per tree token
    spec_budget = c.budget_bytes - c.draft_resident_base - c.draft_resident_per_k * depth
    # a sequence keeps k more tokens and, on a hybrid model, one recurrent-state snapshot per draft position
    spec_seq = c.target_layout.resident_bytes(L + kk, kk + 1) + c.draft_kv_per_token * (L + kk)
    fits_spec = np.where(spec_on, sequences_that_fit(spec_budget, spec_seq), fits_plain)
    b_spec = np.minimum(offered, fits_spec)
    rate = proposal_rate(s)
    t_spec = per_distinct(lambda k, b: _spec_step_ms(s, c, k, b, rate), kk, b_spec)  # per (k, batch)
    return fits_plain, b_plain, t_plain, fits_spec, b_spec, t_spec, rate


def _plain_step_ms(s: Scenario, c: _Compiled, b_plain):
    """Milliseconds of a plain decode step at batch b_plain (a batch of one where nothing fits)."""
    b_plain_eval = np.maximum(b_plain, 1.0)
    return (pass_time_ms(c.target, c.hw, s.efficiency, b_plain_eval, 1, s.context_len, c.target_bw_scale)
            + _step_overhead_ms(c, s, b_plain_eval))


def _spec_step_ms(s: Scenario, c: _Compiled, kk, b_spec, rate: float):
    """Milliseconds of a speculative step (drafts, verify, tree, overheads) at k kk and batch b_spec; a plain
    step where k = 0."""
    eff = s.efficiency
    L = s.context_len
    spec_on = kk > 0
    depth = np.minimum(kk, s.draft_depth) if s.draft_depth is not None else kk
    b_eval = np.maximum(b_spec, 1.0)  # time a batch of one where nothing fits; throughput is 0 anyway
    t_verify = (pass_time_ms(c.target, c.hw, eff, b_eval, 1 + rate * kk, L, c.target_bw_scale,
                             verify_kv_reads=c.verify_kv_reads, verify_query_tile=c.verify_query_tile)
                + _step_overhead_ms(c, s, b_eval))
    t_draft = _draft_time_ms(c, s, b_eval, kk, np.maximum(depth, 1))
    if c.measured:
        # Measured batch-1 times are the anchor: the verify pass costs the measured target step and
        # the drafts k measured draft steps at batch 1 (the textbook E·T_t / (T_t + k·T_d)); the
        # model supplies only how both grow with the batch.
        one = np.ones_like(b_eval)
        t_verify = t_verify - (pass_time_ms(c.target, c.hw, eff, one, 1 + rate * kk, L, c.target_bw_scale,
                                            verify_kv_reads=c.verify_kv_reads,
                                            verify_query_tile=c.verify_query_tile)
                               - pass_time_ms(c.target, c.hw, eff, one, 1, L, c.target_bw_scale))
        if c.draft is not None and s.t_draft_ms:
            t_draft = t_draft - _draft_time_ms(c, s, one, kk, np.maximum(depth, 1)) + kk * float(s.t_draft_ms)
    extra_width = np.maximum(kk - depth, 0) if s.draft_depth is not None else 0 * kk
    t_tree = np.where(extra_width > 0, (c.engine.tree_step_ms
                                        + c.engine.tree_token_us * 1e-3 * eff.spec_seq_scale * b_eval * extra_width)
                      * eff.overhead_scale, 0.0)
    t_spec = np.where(spec_on, t_draft + t_verify + t_tree + _spec_overhead_ms(c, s, b_eval),
                      pass_time_ms(c.target, c.hw, eff, b_eval, 1, L, c.target_bw_scale) + _step_overhead_ms(c, s, b_eval))
    return t_spec


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
    kk = np.asarray(s.k if k is None else k)
    if np.any(kk < 0) or np.any(kk != np.round(kk)):
        raise SpecModelError(f"k must be whole numbers ≥ 0, got {k}")
    kk = kk.astype(int)
    offered = np.asarray(s.concurrency if concurrency is None else concurrency, dtype=float)
    if np.any(offered < 1):
        raise SpecModelError(f"concurrency must be ≥ 1, got {concurrency}")
    a, tokens = _acceptance(s, alpha, kk)
    fits_plain, b_plain, t_plain, fits_spec, b_spec, t_spec, rate = _steps_of(s, c, kk, offered)
    spec_on = kk > 0
    tokens, emitted = _per_step(tokens, spec_on, rate)

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


def with_changes(s: Scenario, **changes) -> Scenario:
    """A copy of the scenario with some inputs changed (dataclasses.replace; a name given as text is read
    as Scenario.from_names reads it)."""
    if any(isinstance(changes.get(name), str) for name in _NAMED):
        return s.with_names(**changes)
    return replace(s, **changes)


def plain_throughput(s: Scenario, batches) -> np.ndarray:
    """predict(s, concurrency=batches).plain.throughput_tok_s (read-only): a server without speculation, the
    same at every α, profile and k, so computed once per scenario apart from those (cached)."""
    b = np.asarray(batches, dtype=float)
    return _plain_throughput(free_of_acceptance(s), b.shape, b.tobytes(), b)


# Measured (issue 43's What-if rerun, as off_state._off_row's): the deploy-options chart and the off band each
# predicted it on every α or k move, ~0.3 ms a prediction on the loaded 2-core machine.
@bounded_cache(128, key_args=3)
def _plain_throughput(free: Scenario, shape: tuple, batches_key: bytes, b: np.ndarray) -> np.ndarray:
    through = np.array(predict(free, concurrency=b).plain.throughput_tok_s, dtype=float)
    through.flags.writeable = False
    return through


_CLEARED_WITH: list = []  # caches of work derived from predict() kept in modules above this one (off_state)


def cleared_with_steps(cache):
    """Register a cache of work derived from predict() (keyed by free_of_acceptance) so that clear_caches
    forgets it too; returns it (a decorator)."""
    _CLEARED_WITH.append(cache)
    return cache
