"""Memory, the one place it is counted: resident weights at their dtype, KV cache bytes per token at
the KV dtype (multi-head latent attention included), a draft's weights and KV, the KV budget, how
many sequences fit, and every "does not fit" message. The roofline's pass shapes and predict() read
the same functions, so a message's numbers are the numbers the prediction used.

The budget: the serving engine may use memory × utilisation (vLLM's --gpu-memory-utilization, 0.9);
the target's weights, a fixed reserve and, with speculation, the draft's weights come first; what is
left holds the KV cache, (kv_target + kv_draft) bytes per token for L (+ k with speculation) tokens
per sequence. When not even one sequence fits:

    target_does_not_fit(...)       -> DoesNotFit: nothing runs (predict raises it)
    speculation_does_not_fit(...)  -> DoesNotFit: plain decoding fits, speculation does not; its
                                      message names the real cause for the method (a draft model's
                                      weights, a draft head, Medusa heads, or for n-gram only the k
                                      extra tokens), and `closest` the nearest setting that fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from specmodel.errors import DoesNotFit
from specmodel.model.presets import Model, find_gpu, find_method, find_model, gpu_names

GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default --gpu-memory-utilization
RESERVE_GB = 2.0  # activations, CUDA graphs and allocator slack, per replica (a round estimate)

# Bytes per weight or KV value by dtype. The 4-bit formats carry one scale per group: MXFP4 an 8-bit
# scale per 32 values (OCP Microscaling Formats v1.0: 4.25 bits), AWQ/GPTQ INT4 a 16-bit scale and
# zero per 128 (~4.25 bits); NVFP4's FP8 scale per 16 is 4.5 bits. 0.53 bytes is taken for all.
BYTES_PER_VALUE = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.53, "int4": 0.53}
DTYPES = tuple(BYTES_PER_VALUE)
KV_DTYPES = ("bf16", "fp16", "fp8")
EAGLE3_DRAFT_VOCAB = 32000  # EAGLE-3 heads predict over a reduced vocabulary (Li et al. 2025, arXiv:2503.01840)
TP_CHOICES = (1, 2, 4, 8)


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


def kv_bytes_per_token(m: Model, kv_dtype: str | None = "bf16", layers: int | None = None) -> float:
    """KV cache bytes per token of context over `layers` layers (all of the model's by default): K and
    V per KV head and layer, or for multi-head latent attention the compressed latent plus the rotary
    key per layer.

    >>> kv_bytes_per_token(find_model("Llama 3.1 8B")), kv_bytes_per_token(find_model("DeepSeek-V3"), layers=1)
    (131072.0, 1152.0)
    """
    n = m.layers if layers is None else layers
    b = BYTES_PER_VALUE[kv_dtype or "bf16"]
    if getattr(m, "attention", "gqa") == "mla":
        return n * (float(m.kv_lora_rank) + float(m.qk_rope_head_dim)) * b
    return 2.0 * n * m.kv_heads * m.head_dim * b


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


def draft_memory(target: Model, method: str, draft: str | None = None, weight_dtype: str | None = None,
                 kv_dtype: str | None = "bf16") -> DraftMemory:
    """The draft's resident weights and KV bytes per token for a method (n-gram and self-speculation: none).

    >>> m = draft_memory(find_model("DeepSeek-V3"), "mtp")
    >>> round(m.weights_bytes / 1e9, 1), m.kv_bytes_per_token
    (11.6, 1152.0)
    """
    if method == "draft_model":
        d = find_model(draft)
        return DraftMemory(resident_weight_bytes(d), 0.0, kv_bytes_per_token(d, kv_dtype))
    if method in ("eagle", "eagle3", "mtp"):
        params = (head_layer_params(target, head_is_moe(target, method)) + head_fusion_params(target, method)
                  + (head_vocab(method) or 0) * target.hidden)
        weights = params * BYTES_PER_VALUE[head_weight_dtype(target, method, weight_dtype)]
        return DraftMemory(weights, 0.0, kv_bytes_per_token(target, kv_dtype, layers=1))
    if method == "medusa":
        return DraftMemory(0.0, medusa_head_params(target) * BYTES_PER_VALUE["bf16"], 0.0)
    return DraftMemory(0.0, 0.0, 0.0)


# --- the budget --------------------------------------------------------------------------------------

def kv_budget_bytes(memory_bytes: float, weight_bytes: float, utilization: float = GPU_MEMORY_UTILIZATION,
                    reserve_bytes: float = RESERVE_GB * 1e9) -> float:
    """Memory left for the KV cache after weights and a reserve; negative when weights do not fit."""
    return memory_bytes * utilization - weight_bytes - reserve_bytes


def max_sequences(budget_bytes: float, kv_bytes_per_token, tokens_per_sequence):
    """Whole sequences of `tokens_per_sequence` KV entries that fit in the budget (0 if none)."""
    per_seq = np.asarray(kv_bytes_per_token, dtype=float) * np.asarray(tokens_per_sequence, dtype=float)
    fits = np.floor(np.maximum(budget_bytes, 0.0) / np.where(per_seq > 0, per_seq, np.inf))
    return np.where(per_seq > 0, fits, np.inf)


# --- "does not fit" ------------------------------------------------------------------------------------

def _gb(x: float) -> str:
    return f"{x / 1e9:.3g} GB"


def _usable(gpu_name: str, tp: int) -> tuple[float, float]:
    """(memory of tp GPUs, the part the engine may use), bytes."""
    memory = find_gpu(gpu_name).memory_GB * 1e9 * tp
    return memory, memory * GPU_MEMORY_UTILIZATION


def _who(gpu: str, tp: int) -> str:
    return f"{tp} × {gpu}" if tp > 1 else f"one {gpu}"


def _has(memory: float, usable: float) -> str:
    return (f"has {_gb(memory)} ({_gb(usable)} usable at vLLM's {GPU_MEMORY_UTILIZATION:g} memory "
            "utilisation)")


def _longest_context(budget: float, kv_per_token: float, extra_tokens: int = 0) -> int | None:
    """The longest context whose sequence (plus `extra_tokens`) fits in `budget` bytes of KV cache."""
    if kv_per_token <= 0 or budget <= 0:
        return None
    tokens = math.floor(budget / kv_per_token) - extra_tokens
    return tokens if tokens >= 1 else None


def target_does_not_fit(gpu: str, tp: int, target: str, context_len: int, weight_dtype: str | None = None,
                        kv_dtype: str | None = "bf16") -> DoesNotFit | None:
    """DoesNotFit when the target's weights (at weight_dtype), the reserve and one sequence at the
    context (KV at kv_dtype) do not fit on tp GPUs; None when they do."""
    model = find_model(target)
    gpu = find_gpu(gpu).name
    tp = int(tp)
    weights = resident_weight_bytes(model, weight_dtype)
    kv_per_token = kv_bytes_per_token(model, kv_dtype)
    reserve = RESERVE_GB * 1e9
    memory, usable = _usable(gpu, tp)
    needed = weights + reserve + kv_per_token * context_len
    if needed <= usable and weights + reserve < usable:
        return None
    longest = _longest_context(usable - weights - reserve, kv_per_token)
    options = []
    if longest is not None:
        options.append(f"context ≤ {longest:,} tokens")
    more_tp = next((t for t in TP_CHOICES if t > tp and needed <= _usable(gpu, t)[1]), None)
    if more_tp:
        options.append(f"{more_tp} × {gpu} (tensor parallel)")
    bigger = sorted((find_gpu(g) for g in gpu_names()), key=lambda g: g.memory_GB)
    other = next((g.name for g in bigger if g.name != gpu and needed <= _usable(g.name, tp)[1]), None)
    if other:
        options.append(_who(other, tp))
    closest = ("the closest setting that fits: " + ", or ".join(options)) if options else \
        "no GPU preset holds it at this context: shorten the context"
    dtype = weight_dtype_of(model, weight_dtype)
    if weights + reserve >= usable:
        what = (f"{model.name} needs {_gb(weights)} for its weights alone ({dtype}; {_gb(needed)} with one "
                f"sequence at context {context_len:,} and the {RESERVE_GB:g} GB reserve)")
    else:
        what = (f"{model.name} needs {_gb(needed)} for one sequence at context {context_len:,} (weights "
                f"{_gb(weights)} in {dtype}, KV cache {_gb(needed - weights - reserve)} in {kv_dtype or 'bf16'}, "
                f"reserve {RESERVE_GB:g} GB)")
    message = f"does not fit: {what}; {_who(gpu, tp)} {_has(memory, usable)}; {closest}"
    return DoesNotFit(message, needed_GB=needed / 1e9, available_GB=usable / 1e9, gpu_GB=memory / 1e9,
                      closest=closest, closest_context_len=longest, part="target")


def speculation_does_not_fit(gpu: str, tp: int, target: str, context_len: int, method: str, k: int,
                             draft: str | None = None, weight_dtype: str | None = None,
                             kv_dtype: str | None = "bf16") -> DoesNotFit | None:
    """DoesNotFit when plain decoding fits one sequence but speculation (its draft's weights and KV
    cache, and the k extra tokens per sequence) does not; None when it fits or k = 0."""
    if k <= 0 or target_does_not_fit(gpu, tp, target, context_len, weight_dtype, kv_dtype) is not None:
        return None
    method = find_method(method).name
    model = find_model(target)
    gpu = find_gpu(gpu).name
    tp = int(tp)
    memory, usable = _usable(gpu, tp)
    base = resident_weight_bytes(model, weight_dtype) + RESERVE_GB * 1e9
    extra = draft_memory(model, method, draft, weight_dtype, kv_dtype)
    resident = base + extra.weights_at(k)
    kv_target = kv_bytes_per_token(model, kv_dtype)
    kv_per_token = kv_target + extra.kv_bytes_per_token
    needed = resident + kv_per_token * (context_len + k)
    if needed <= usable:
        return None
    draft_weights = extra.weights_at(k)
    if method == "draft_model":
        cause = f"the {draft} draft ({_gb(draft_weights)} of weights and its own KV cache)"
    elif method in ("eagle", "eagle3", "mtp"):
        cause = f"the {find_method(method).label} draft head ({_gb(draft_weights)} of weights and its KV cache)"
    elif method == "medusa":
        cause = f"{k} Medusa heads ({_gb(draft_weights)} of weights, one head per draft token)"
    else:  # n-gram: no draft weights; only the k extra tokens verification keeps per sequence
        cause = f"the k = {k} extra tokens per sequence that verification keeps in the KV cache"
    options = []
    longest = _longest_context(usable - resident, kv_per_token, k)
    if longest is not None:
        options.append(f"context ≤ {longest:,} tokens")
    if method == "medusa":
        heads = next((h for h in range(k - 1, 0, -1)
                      if base + extra.weights_at(h) + kv_per_token * (context_len + h) <= usable), None)
        if heads:
            options.append(f"k = {heads} heads")
    if method == "ngram":
        fewer = next((h for h in range(k - 1, 0, -1) if resident + kv_per_token * (context_len + h) <= usable), None)
        if fewer:
            options.append(f"k = {fewer}")
    elif base + kv_target * (context_len + k) <= usable:
        options.append("n-gram drafting (no draft weights)")
    if method == "draft_model":
        default = model.default_draft
        if default and default != draft:
            smaller = draft_memory(model, "draft_model", default, weight_dtype, kv_dtype)
            if base + smaller.weights_at(k) + (kv_target + smaller.kv_bytes_per_token) * (context_len + k) <= usable:
                options.append(f"the smaller {default} draft")
    closest = ("the closest setting that fits: " + ", or ".join(options)) if options else \
        "turn speculation off here, or use a GPU with more memory"
    message = (f"does not fit: speculation needs {_gb(needed)} for one sequence at context {context_len:,} "
               f"because of {cause}; {_who(gpu, tp)} {_has(memory, usable)}")
    return DoesNotFit(message, needed_GB=needed / 1e9, available_GB=usable / 1e9, gpu_GB=memory / 1e9,
                      closest=closest, closest_context_len=longest, part="speculation")
