"""Memory, the one place it is counted: resident weights at their dtype, KV cache bytes per token at
the KV dtype (multi-head latent attention included), a draft's weights and KV, the KV budget, how
many sequences fit, and every "does not fit" reason (Misfit). The roofline's pass shapes and predict() read
the same functions, so a message's numbers are the numbers the prediction used.

The budget: the serving engine may use memory × utilisation (vLLM's --gpu-memory-utilization, 0.9);
the target's weights, a fixed reserve and, with speculation, the draft's weights come first; what is
left holds the KV cache, (kv_target + kv_draft) bytes per token for L (+ k with speculation) tokens
per sequence, where windowed layers hold at most their window and linear-attention layers a
recurrent state of fixed size instead (one snapshot per draft position and one more with
speculation: kv_layout). When not even one sequence fits:

    target_misfit(...)       -> Misfit: nothing runs (predict raises target_does_not_fit's DoesNotFit)
    speculation_misfit(...)  -> Misfit: plain decoding fits, speculation does not; its cause is the
                                real one for the method (a draft model's weights, a draft head,
                                Medusa heads, or for n-gram only the k extra tokens), its options
                                the nearest settings that fit.

A Misfit holds numbers and labels; its sentence is the message of errors.DoesNotFit, the one error
type, which `*_does_not_fit` return (words.summarize puts it in the verdict).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specmodel.errors import DoesNotFit
from specmodel.model.presets import GPU, Method, Model, find_gpu, find_model, gpu_names

GPU_MEMORY_UTILIZATION = 0.9  # documented: vLLM's default --gpu-memory-utilization (vllm/engine/arg_utils.py)
# chosen (no measurement found): activations, CUDA graphs and allocator slack, per replica (a round estimate)
RESERVE_GB = 2.0

# Bytes per weight or KV value by dtype (published: the formats' widths). The 4-bit formats carry one scale per group: MXFP4
# an 8-bit scale per 32 values (OCP Microscaling Formats v1.0: 4.25 bits), AWQ/GPTQ INT4 a 16-bit scale and zero per 128
# (~4.25 bits); NVFP4's FP8 scale per 16 is 4.5 bits. 0.53 bytes is taken for all (chosen).
BYTES_PER_VALUE = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.53, "int4": 0.53}
DTYPES = tuple(BYTES_PER_VALUE)
KV_DTYPES = ("bf16", "fp16", "fp8")
# published: EAGLE-3 heads predict over a reduced vocabulary (Li et al. 2025, arXiv:2503.01840)
EAGLE3_DRAFT_VOCAB = 32000  # EAGLE-3 heads predict over a reduced vocabulary (Li et al. 2025, arXiv:2503.01840)
TP_CHOICES = (1, 2, 4, 8)  # chosen: the tensor-parallel sizes of one 8-GPU node


def weight_dtype_of(m: Model, weight_dtype: str | None = None) -> str:
    """The dtype a model's weights are served in: the one asked for, else the released checkpoint's."""
    return weight_dtype or getattr(m, "weight_dtype", None) or "bf16"


def resident_weight_bytes(m: Model, weight_dtype: str | None = None) -> float:
    """Bytes the model's weights take in GPU memory (every parameter, embedding table included).

    >>> llama = find_model("Llama 3.1 8B")
    >>> resident_weight_bytes(llama) / 1e9, resident_weight_bytes(llama, "fp8") / 1e9
    (16.06, 8.03)
    """
    return m.params_B * 1e9 * BYTES_PER_VALUE[weight_dtype_of(m, weight_dtype)]


def _kv_values_per_layer(m: Model, kv_heads: int | None = None) -> float:
    """Values one layer caches per token: K and V per KV head (values may be narrower than keys), or
    for multi-head latent attention the compressed latent plus the rotary key."""
    if getattr(m, "attention", "gqa") == "mla":
        return float(m.kv_lora_rank) + float(m.qk_rope_head_dim)
    heads = kv_heads or m.kv_heads
    return float(heads * (m.head_dim + (getattr(m, "v_head_dim", 0) or m.head_dim)))


def kv_bytes_per_token(m: Model, kv_dtype: str | None = "bf16", layers: int | None = None) -> float:
    """KV cache bytes per token of context over `layers` full-attention layers (by default every layer
    whose cache grows with the context: windowed and linear-attention layers hold a fixed amount, see
    kv_layout): K and V per KV head and layer, or for multi-head latent attention the compressed latent
    plus the rotary key per layer; a sparse-attention model's indexer keys are counted too.

    >>> kv_bytes_per_token(find_model("Llama 3.1 8B")), kv_bytes_per_token(find_model("DeepSeek-V3"), layers=1)
    (131072.0, 1152.0)
    """
    b = BYTES_PER_VALUE[kv_dtype or "bf16"]
    if layers is not None:
        return layers * _kv_values_per_layer(m) * b
    return kv_layout(m, kv_dtype).bytes_per_token


# documented: DeepSeek Sparse Attention's indexer caches one FP8 key of index_head_dim values and an FP32 scale
# per token and layer whatever the KV dtype (vLLM's DeepseekV32IndexerCache; DeepSeek-V3.2-Exp's
# inference/model.py keeps the indexer keys in FP8 with per-block scales).
INDEX_KEY_SCALE_BYTES = 4.0
# Gated DeltaNet states are kept in the model's dtype (vLLM's --mamba-ssm-cache-dtype 'auto'), so
# BF16: Qwen3.5-397B-A17B's 45 linear layers × 64 heads × 128 × 128 values = 90 MiB per sequence per
# snapshot, the figure vLLM issue #54080 gives (https://github.com/vllm-project/vllm/issues/54080).
STATE_DTYPE = "bf16"


@dataclass(frozen=True)
class AttentionGroup:
    """Layers that cache and read the context alike."""

    bytes_per_token: float  # cache bytes per token of context, over the group's layers
    width: float  # Σ over the group's layers of heads × head_dim: attention FLOPs = 4 × width × q × tokens read
    reads_at_most: int = 0  # tokens a query reads per layer (a window, or sparse attention's top-k); 0: all
    holds_at_most: int = 0  # tokens a sequence keeps cached (a window); 0: all of its context


@dataclass(frozen=True)
class KVLayout:
    """What one sequence caches and what one pass reads of it, by group of layers, plus a recurrent
    state of fixed size for linear-attention layers (one snapshot per position a verify pass may roll
    back to, so speculation with k drafts keeps k + 1 of them)."""

    groups: tuple[AttentionGroup, ...]
    state_bytes: float = 0.0  # recurrent (and convolution) state of one sequence, one snapshot
    state_flops_per_token: float = 0.0  # linear-attention FLOPs per query token (state update and read)

    @property
    def bytes_per_token(self) -> float:
        """Bytes per context token of the groups whose cache grows with the whole context."""
        return sum(g.bytes_per_token for g in self.groups if not g.holds_at_most)

    def resident_bytes(self, tokens, snapshots=1):
        """Bytes one sequence of `tokens` cached tokens holds, with `snapshots` recurrent states."""
        n = np.asarray(tokens, dtype=float)
        held = sum(g.bytes_per_token * (np.minimum(n, g.holds_at_most) if g.holds_at_most else n)
                   for g in self.groups)
        return held + self.state_bytes * np.asarray(snapshots, dtype=float)

    def read_bytes(self, tokens, query_tokens):
        """Bytes one pass of `query_tokens` per sequence reads of one sequence's cache of `tokens`
        tokens: each group up to what it reads, and the recurrent state read once and written once
        per query position (the snapshots a verify pass leaves for rollback)."""
        n = np.asarray(tokens, dtype=float)
        q = np.asarray(query_tokens, dtype=float)
        read = sum(g.bytes_per_token * (np.minimum(n, g.reads_at_most) if g.reads_at_most else n)
                   for g in self.groups)
        return read + self.state_bytes * (1.0 + q)

    def attention_flops(self, tokens, query_tokens):
        """Attention FLOPs of one sequence's pass: 4 × width × q × the tokens each group reads."""
        n = np.asarray(tokens, dtype=float)
        q = np.asarray(query_tokens, dtype=float)
        per_query = sum(g.width * (np.minimum(n, g.reads_at_most) if g.reads_at_most else n) for g in self.groups)
        return 4.0 * q * per_query + q * self.state_flops_per_token


def linear_state_bytes(m: Model) -> float:
    """One sequence's recurrent state over the linear-attention layers: the delta-rule state of
    value heads × key dim × value dim, and the short convolution's last kernel − 1 inputs of Q, K and V."""
    if not getattr(m, "linear_attention_layers", 0):
        return 0.0
    state = m.linear_value_heads * m.linear_key_head_dim * m.linear_value_head_dim
    conv_width = 2 * m.linear_key_heads * m.linear_key_head_dim + m.linear_value_heads * m.linear_value_head_dim
    conv = conv_width * max(m.linear_conv_kernel - 1, 0)
    return m.linear_attention_layers * (state + conv) * BYTES_PER_VALUE[STATE_DTYPE]


def kv_layout(m: Model, kv_dtype: str | None = "bf16") -> KVLayout:
    """The cache of one sequence by group of layers (see KVLayout).

    >>> q = kv_layout(find_model("Qwen3.5-397B-A17B"))
    >>> round(q.bytes_per_token), round(q.state_bytes / 2**20, 1)
    (30720, 93.2)
    """
    b = BYTES_PER_VALUE[kv_dtype or "bf16"]
    mla = getattr(m, "attention", "gqa") == "mla"
    per_head = float(getattr(m, "kv_lora_rank", 0) or 512) if mla else float(m.head_dim)
    full = m.full_attention_layers
    groups = []
    if m.index_topk:  # sparse attention: the main attention reads the top-k, the indexer every key
        groups.append(AttentionGroup(full * _kv_values_per_layer(m) * b, full * m.heads * per_head, m.index_topk))
        index_bytes = full * (m.index_head_dim * BYTES_PER_VALUE["fp8"] + INDEX_KEY_SCALE_BYTES)
        groups.append(AttentionGroup(index_bytes, 0.5 * full * m.index_heads * m.index_head_dim))  # scores only
    elif full:
        groups.append(AttentionGroup(full * _kv_values_per_layer(m) * b, full * m.heads * per_head))
    if m.sliding_window_layers:
        w = m.sliding_window_layers
        groups.append(AttentionGroup(w * _kv_values_per_layer(m, m.sliding_window_kv_heads) * b,
                                     w * m.heads * per_head, m.sliding_window, m.sliding_window))
    flops = (4.0 * m.linear_attention_layers * m.linear_value_heads * m.linear_key_head_dim * m.linear_value_head_dim
             if m.linear_attention_layers else 0.0)
    return KVLayout(tuple(groups), linear_state_bytes(m), flops)


def head_kv_layout(target: Model, kv_dtype: str | None = "bf16") -> KVLayout:
    """A draft head's cache: one full-attention layer of the target's shape."""
    per_head = float(getattr(target, "kv_lora_rank", 0) or 512) if target.attention == "mla" else float(target.head_dim)
    return KVLayout((AttentionGroup(kv_bytes_per_token(target, kv_dtype, layers=1), target.heads * per_head),))


# --- a draft head's layer (EAGLE, EAGLE-3, MTP) ----------------------------------------------------

def head_is_moe(target: Model, method: str) -> bool:
    """Whether a draft head's decoder layer is a mixture-of-experts layer. A native MTP module is a
    full layer of the target, routed experts included (DeepSeek-V3 technical report, arXiv:2412.19437,
    Section 2.2); EAGLE heads trained for MoE targets are dense layers of the target's width."""
    return method == "mtp" and int(getattr(target, "experts", 0) or 0) > 0


def head_layer_params(target: Model, moe: bool) -> float:
    """Parameters of one draft-head decoder layer of the target's shape: attention projections plus
    either the dense gated MLP or, for an MoE layer, its shared and routed experts and the router."""
    if moe:
        experts = target.shared_experts + target.experts
        return (target.attention_params_per_layer + experts * target.expert_params_per_layer
                + target.hidden * target.experts)
    return target.layer_params


def head_fusion_params(target: Model, method: str) -> float:
    """The fusion layer in front of a head: 2H -> H (EAGLE, MTP), 3H -> H for EAGLE-3's three hidden states."""
    return (3.0 if method == "eagle3" else 2.0) * target.hidden * target.hidden


def head_vocab(method: str) -> int | None:
    """An own LM head's vocabulary (EAGLE-3's reduced one), or None: the head shares the target's."""
    return EAGLE3_DRAFT_VOCAB if method == "eagle3" else None


def head_weight_dtype(target: Model, method: str, weight_dtype: str | None = None) -> str:
    """MTP modules ship in the target's checkpoint and dtype; EAGLE heads are released in BF16."""
    return weight_dtype_of(target, weight_dtype) if method == "mtp" else "bf16"


def medusa_head_params(target: Model) -> float:
    """One Medusa head: a residual block (H×H) and its own LM head (V×H)."""
    return target.hidden * target.hidden + target.vocab * target.hidden


@dataclass(frozen=True)
class DraftMemory:
    """What speculation adds to memory beside the target's weights."""

    weights_bytes: float  # resident whatever k is
    weights_per_k_bytes: float  # resident per draft token (Medusa: one head each)
    kv_bytes_per_token: float  # the draft's own KV cache per token of context

    def weights_at(self, k):
        return self.weights_bytes + self.weights_per_k_bytes * k


def draft_memory(target: Model, method: str, draft: Model | None = None, weight_dtype: str | None = None,
                 kv_dtype: str | None = "bf16") -> DraftMemory:
    """The draft's resident weights and KV bytes per token for a method (n-gram and self-speculation: none).

    >>> m = draft_memory(find_model("DeepSeek-V3"), "mtp")
    >>> round(m.weights_bytes / 1e9, 1), m.kv_bytes_per_token
    (11.6, 1152.0)
    """
    if method == "draft_model":
        return DraftMemory(resident_weight_bytes(draft), 0.0, kv_bytes_per_token(draft, kv_dtype))
    if method in ("eagle", "eagle3", "mtp"):
        params = (head_layer_params(target, head_is_moe(target, method)) + head_fusion_params(target, method)
                  + (head_vocab(method) or 0) * target.hidden)
        weights = params * BYTES_PER_VALUE[head_weight_dtype(target, method, weight_dtype)]
        return DraftMemory(weights, 0.0, kv_bytes_per_token(target, kv_dtype, layers=1))
    if method == "medusa":
        return DraftMemory(0.0, medusa_head_params(target) * BYTES_PER_VALUE["bf16"], 0.0)
    return DraftMemory(0.0, 0.0, 0.0)


# --- the budget --------------------------------------------------------------------------------------

def kv_budget_bytes(memory_bytes: float, weight_bytes: float) -> float:
    """Memory left for the KV cache after weights and a reserve; negative when weights do not fit."""
    return memory_bytes * GPU_MEMORY_UTILIZATION - weight_bytes - RESERVE_GB * 1e9


def sequences_that_fit(budget_bytes, per_sequence_bytes):
    """Whole sequences of `per_sequence_bytes` each that fit in the budget (0 if none; inf if free)."""
    per_seq = np.asarray(per_sequence_bytes, dtype=float)
    fits = np.floor(np.maximum(budget_bytes, 0.0) / np.where(per_seq > 0, per_seq, np.inf))
    return np.where(per_seq > 0, fits, np.inf)


# --- "does not fit" ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Misfit:
    """Why one sequence does not fit, in numbers and labels (bytes; errors.DoesNotFit words it).

    part "target": nothing runs; "speculation": plain decoding fits, the speculative arm does not.
    cause (speculation): ("draft_model", draft name, draft weight bytes) | ("head", method label, bytes) |
    ("medusa", heads, bytes) | ("states", k, snapshot bytes) | ("tokens", k).
    options, the closest settings that fit, nearest first: ("context", tokens) | ("tp", tp, gpu) |
    ("gpu", gpu, tp) | ("heads", n) | ("k", n) | ("ngram",) | ("draft", name)."""
    part: str
    model: str
    gpu: str
    tp: int
    context_len: int
    needed: float  # weights + reserve + one sequence's cache
    usable: float  # memory × utilisation
    memory: float  # the tp GPUs' memory
    utilization: float
    weights: float = 0.0  # the target's resident weights (part "target")
    reserve_GB: float = RESERVE_GB
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    weights_alone: bool = False  # the weights and the reserve alone exceed what the engine may use
    cause: tuple = ()
    options: tuple = ()
    longest: int | None = None  # the longest context that fits here (None: none does)


def _usable(gpu: GPU, tp: int) -> tuple[float, float]:
    """(memory of tp GPUs, the part the engine may use), bytes."""
    memory = gpu.memory_GB * 1e9 * tp
    return memory, memory * GPU_MEMORY_UTILIZATION


def _longest_context(budget: float, bytes_at, extra_tokens: int = 0, limit: int = 1 << 34) -> int | None:
    """The longest context whose sequence (plus `extra_tokens`) fits in `budget` bytes of cache, where
    bytes_at(tokens) is one sequence's cache at that many tokens (it grows with them)."""
    if budget <= 0 or float(bytes_at(1 + extra_tokens)) > budget:
        return None
    if float(bytes_at(limit + extra_tokens)) <= budget:  # a cache that stops growing (windows, states)
        return limit
    lo, hi = 1, limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if float(bytes_at(mid + extra_tokens)) <= budget else (lo, mid)
    return lo


def target_misfit(gpu: GPU, tp: int, target: Model, context_len: int, weight_dtype: str | None = None,
                  kv_dtype: str | None = "bf16") -> Misfit | None:
    """Misfit when the target's weights (at weight_dtype), the reserve and one sequence at the
    context (KV at kv_dtype) do not fit on tp GPUs; None when they do."""
    model = target
    tp = int(tp)
    weights = resident_weight_bytes(model, weight_dtype)
    layout = kv_layout(model, kv_dtype)
    reserve = RESERVE_GB * 1e9
    memory, usable = _usable(gpu, tp)
    cache = float(layout.resident_bytes(context_len))
    needed = weights + reserve + cache
    if cache <= usable - weights - reserve and weights + reserve < usable:  # the test _longest_context makes
        return None
    longest = _longest_context(usable - weights - reserve, layout.resident_bytes)
    options = []
    if longest is not None:
        options.append(("context", longest))
    more_tp = next((t for t in TP_CHOICES if t > tp and needed <= _usable(gpu, t)[1]), None)
    if more_tp:
        options.append(("tp", more_tp, gpu.name))
    bigger = sorted((find_gpu(g) for g in gpu_names()), key=lambda g: g.memory_GB)
    other = next((g for g in bigger if g.name != gpu.name and needed <= _usable(g, tp)[1]), None)
    if other:
        options.append(("gpu", other.name, tp))
    return Misfit("target", model.name, gpu.name, tp, context_len, needed, usable, memory, GPU_MEMORY_UTILIZATION,
                  weights=weights, weight_dtype=weight_dtype_of(model, weight_dtype), kv_dtype=kv_dtype or "bf16",
                  weights_alone=weights + reserve >= usable, options=tuple(options), longest=longest)


def target_does_not_fit(gpu: GPU, tp: int, target: Model, context_len: int, weight_dtype: str | None = None,
                        kv_dtype: str | None = "bf16") -> DoesNotFit | None:
    """DoesNotFit (the error predict raises) for target_misfit; None when one sequence fits."""
    why = target_misfit(gpu, tp, target, context_len, weight_dtype, kv_dtype)
    return None if why is None else DoesNotFit(why)


def _speculation_cause(method: str, label: str, draft: Model | None, draft_weights: float, heads: int, k: int,
                       layout: KVLayout) -> tuple:
    if method == "draft_model":
        return ("draft_model", draft.name, draft_weights)
    if method in ("eagle", "eagle3", "mtp"):
        return ("head", label, draft_weights)
    if method == "medusa":
        return ("medusa", heads, draft_weights)
    if layout.state_bytes:  # n-gram on a hybrid model: the k extra state snapshots dominate
        return ("states", k, k * layout.state_bytes)
    return ("tokens", k)  # n-gram: no draft weights; only the k extra tokens verification keeps per sequence


def speculation_misfit(gpu: GPU, tp: int, target: Model, context_len: int, method: Method, k: int,
                       draft: Model | None = None, weight_dtype: str | None = None,
                       kv_dtype: str | None = "bf16", draft_depth: int | None = None) -> Misfit | None:
    """Misfit when plain decoding fits one sequence but speculation (its draft's weights and KV
    cache, and the k extra tokens per sequence) does not; None when it fits or k = 0. A Medusa tree
    `draft_depth` deep holds one head per level, not one per tree token."""
    if k <= 0 or target_misfit(gpu, tp, target, context_len, weight_dtype, kv_dtype) is not None:
        return None
    label, method = method.label, method.name
    model = target
    tp = int(tp)
    memory, usable = _usable(gpu, tp)
    base = resident_weight_bytes(model, weight_dtype) + RESERVE_GB * 1e9
    extra = draft_memory(model, method, draft, weight_dtype, kv_dtype)
    heads = min(k, draft_depth) if draft_depth else k
    resident = base + extra.weights_at(heads)
    layout = kv_layout(model, kv_dtype)

    def cache(tokens, drafts=k):  # one sequence with `drafts` tokens beyond its context: k + 1 state snapshots
        return float(layout.resident_bytes(tokens, drafts + 1)) + extra.kv_bytes_per_token * tokens

    needed = resident + cache(context_len + k)
    if cache(context_len + k) <= usable - resident:  # the test _longest_context makes
        return None
    cause = _speculation_cause(method, label, draft, extra.weights_at(heads), heads, k, layout)
    options = []
    longest = _longest_context(usable - resident, cache, k)
    if longest is not None:
        options.append(("context", longest))
    if method == "medusa":
        fewer = next((h for h in range(heads - 1, 0, -1)
                      if base + extra.weights_at(h) + cache(context_len + h, h) <= usable), None)
        if fewer:
            options.append(("heads", fewer))
    if method == "ngram":
        fewer = next((h for h in range(k - 1, 0, -1) if resident + cache(context_len + h, h) <= usable), None)
        if fewer:
            options.append(("k", fewer))
    elif base + float(layout.resident_bytes(context_len + k, k + 1)) <= usable:
        options.append(("ngram",))
    if method == "draft_model":
        default = model.default_draft
        if default and default != draft.name:
            smaller = draft_memory(model, "draft_model", find_model(default), weight_dtype, kv_dtype)
            if (base + smaller.weights_at(k) + float(layout.resident_bytes(context_len + k, k + 1))
                    + smaller.kv_bytes_per_token * (context_len + k) <= usable):
                options.append(("draft", default))
    return Misfit("speculation", model.name, gpu.name, tp, context_len, needed, usable, memory,
                  GPU_MEMORY_UTILIZATION, cause=cause, options=tuple(options), longest=longest)


def speculation_does_not_fit(gpu: GPU, tp: int, target: Model, context_len: int, method: Method, k: int,
                             draft: Model | None = None, weight_dtype: str | None = None,
                             kv_dtype: str | None = "bf16", draft_depth: int | None = None) -> DoesNotFit | None:
    """DoesNotFit for speculation_misfit (its message names the real cause for the method); None when it fits."""
    why = speculation_misfit(gpu, tp, target, context_len, method, k, draft, weight_dtype, kv_dtype, draft_depth)
    return None if why is None else DoesNotFit(why)
