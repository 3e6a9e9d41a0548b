"""KV-cache budget and how many sequences fit, with and without speculation (its memory tax)."""

from __future__ import annotations

import numpy as np

GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default --gpu-memory-utilization
RESERVE_GB = 2.0  # activations, CUDA graphs and allocator slack, per replica (a round estimate)


def kv_budget_bytes(memory_bytes: float, weight_bytes: float, utilization: float = GPU_MEMORY_UTILIZATION,
                    reserve_bytes: float = RESERVE_GB * 1e9) -> float:
    """Memory left for the KV cache after weights and a reserve; negative when weights do not fit."""
    return memory_bytes * utilization - weight_bytes - reserve_bytes


def max_sequences(budget_bytes: float, kv_bytes_per_token, tokens_per_sequence):
    """Whole sequences of `tokens_per_sequence` KV entries that fit in the budget (0 if none)."""
    per_seq = np.asarray(kv_bytes_per_token, dtype=float) * np.asarray(tokens_per_sequence, dtype=float)
    fits = np.floor(np.maximum(budget_bytes, 0.0) / np.where(per_seq > 0, per_seq, np.inf))
    return np.where(per_seq > 0, fits, np.inf)
