"""Does one sequence fit in memory? What it needs, what the GPU has, and the closest setting that fits.

Memory as the model counts it (specmodel.capacity): the serving engine may use memory × utilisation
(vLLM's --gpu-memory-utilization, 0.9); the target's weights, a fixed reserve and, with speculation,
the draft's weights come first; what is left holds the KV cache, (kv_target + kv_draft) bytes per
token for L (+ k with speculation) tokens per sequence. When not even one sequence fits:

    target_does_not_fit(s)        -> DoesNotFit: nothing runs (scenario.predict raises it)
    speculation_does_not_fit(s)   -> DoesNotFit: plain decoding fits, speculation does not; its
                                     message names the real cause for the method (a draft model's
                                     weights, a draft head, Medusa heads, or for n-gram only the k
                                     extra tokens), and `closest` the nearest setting that fits.
"""

from __future__ import annotations

import math

from .capacity import GPU_MEMORY_UTILIZATION, RESERVE_GB
from .errors import DoesNotFit
from .presets import find_gpu, find_method, find_model, gpu_names

TP_CHOICES = (1, 2, 4, 8)


def _gb(x: float) -> str:
    return f"{x / 1e9:.3g} GB"


def _usable(gpu_name: str, tp: int) -> tuple[float, float]:
    """(memory of tp GPUs, the part the engine may use), bytes."""
    memory = find_gpu(gpu_name).memory_GB * 1e9 * tp
    return memory, memory * GPU_MEMORY_UTILIZATION


def _target_needs(target, context_len: int) -> float:
    return target.resident_weight_bytes + RESERVE_GB * 1e9 + target.kv_bytes_per_token * context_len


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


def target_does_not_fit(s) -> DoesNotFit | None:
    """DoesNotFit when the target's weights, the reserve and one sequence at the scenario's context
    do not fit on its GPUs (None when they do)."""
    target = find_model(s.target)
    tp = int(s.tp)
    memory, usable = _usable(s.gpu, tp)
    needed = _target_needs(target, s.context_len)
    if needed <= usable and target.resident_weight_bytes + RESERVE_GB * 1e9 < usable:
        return None
    longest = _longest_context(usable - target.resident_weight_bytes - RESERVE_GB * 1e9, target.kv_bytes_per_token)
    options = []
    if longest is not None:
        options.append(f"context ≤ {longest:,} tokens")
    more_tp = next((t for t in TP_CHOICES if t > tp and _target_needs(target, s.context_len) <= _usable(s.gpu, t)[1]),
                   None)
    if more_tp:
        options.append(f"{more_tp} × {s.gpu} (tensor parallel)")
    bigger = sorted((find_gpu(g) for g in gpu_names()), key=lambda g: g.memory_GB)
    gpu = next((g.name for g in bigger if g.name != s.gpu and needed <= _usable(g.name, tp)[1]), None)
    if gpu:
        options.append(f"{_who(gpu, tp)}")
    closest = ("the closest setting that fits: " + ", or ".join(options)) if options else \
        "no GPU preset holds it at this context: shorten the context"
    weights = target.resident_weight_bytes
    if weights + RESERVE_GB * 1e9 >= usable:
        what = (f"{target.name} needs {_gb(weights)} for its weights alone ({_gb(needed)} with one sequence at "
                f"context {s.context_len:,} and the {RESERVE_GB:g} GB reserve)")
    else:
        what = (f"{target.name} needs {_gb(needed)} for one sequence at context {s.context_len:,} (weights "
                f"{_gb(weights)}, KV cache {_gb(needed - weights - RESERVE_GB * 1e9)}, reserve {RESERVE_GB:g} GB)")
    message = f"does not fit: {what}; {_who(s.gpu, tp)} {_has(memory, usable)}; {closest}"
    return DoesNotFit(message, needed_GB=needed / 1e9, available_GB=usable / 1e9, gpu_GB=memory / 1e9,
                      closest=closest, closest_context_len=longest, part="target")


def speculation_does_not_fit(s) -> DoesNotFit | None:
    """DoesNotFit when plain decoding fits one sequence but speculation (its draft's weights and KV
    cache, and the k extra tokens per sequence) does not; None when it fits or k = 0."""
    from .scenario import draft_parts  # the scenario's own memory terms per method, not a copy

    if s.k <= 0 or target_does_not_fit(s) is not None:
        return None
    method = find_method(s.method).name
    target = find_model(s.target)
    tp = int(s.tp)
    memory, usable = _usable(s.gpu, tp)
    _shape, base, per_k, kv_d = draft_parts(s, method)
    resident = target.resident_weight_bytes + RESERVE_GB * 1e9 + base + per_k * s.k
    kv_per_token = target.kv_bytes_per_token + kv_d
    needed = resident + kv_per_token * (s.context_len + s.k)
    if needed <= usable:
        return None
    draft_weights = base + per_k * s.k
    if method == "draft_model":
        cause = f"the {s.draft} draft ({_gb(draft_weights)} of weights and its own KV cache)"
    elif method in ("eagle", "mtp"):
        cause = f"the {find_method(method).label} draft head ({_gb(draft_weights)} of weights and its KV cache)"
    elif method == "medusa":
        cause = f"{s.k} Medusa heads ({_gb(draft_weights)} of weights, one head per draft token)"
    else:  # n-gram: no draft weights; only the k extra tokens verification keeps per sequence
        cause = f"the k = {s.k} extra tokens per sequence that verification keeps in the KV cache"
    options = []
    longest = _longest_context(usable - resident, kv_per_token, s.k)
    if longest is not None:
        options.append(f"context ≤ {longest:,} tokens")
    if method == "medusa":
        heads = next((k for k in range(s.k - 1, 0, -1)
                      if resident - per_k * (s.k - k) + kv_per_token * (s.context_len + k) <= usable), None)
        if heads:
            options.append(f"k = {heads} heads")
    if method == "ngram":
        fewer = next((k for k in range(s.k - 1, 0, -1) if resident + kv_per_token * (s.context_len + k) <= usable),
                     None)
        if fewer:
            options.append(f"k = {fewer}")
    else:
        ngram_needs = target.resident_weight_bytes + RESERVE_GB * 1e9 + target.kv_bytes_per_token * (s.context_len + s.k)
        if ngram_needs <= usable:
            options.append("n-gram drafting (no draft weights)")
    if method == "draft_model":
        default = target.default_draft
        if default and default != s.draft:
            d = find_model(default)
            if resident - base + d.resident_weight_bytes + (target.kv_bytes_per_token + d.kv_bytes_per_token) * (
                    s.context_len + s.k) <= usable:
                options.append(f"the smaller {default} draft")
    closest = ("the closest setting that fits: " + ", or ".join(options)) if options else \
        "turn speculation off here, or use a GPU with more memory"
    message = (f"does not fit: speculation needs {_gb(needed)} for one sequence at context {s.context_len:,} "
               f"because of {cause}; {_who(s.gpu, tp)} {_has(memory, usable)}")
    return DoesNotFit(message, needed_GB=needed / 1e9, available_GB=usable / 1e9, gpu_GB=memory / 1e9,
                      closest=closest, closest_context_len=longest, part="speculation")
