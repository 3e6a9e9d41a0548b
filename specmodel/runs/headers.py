"""A plain CSV's headers as the columns the reader knows: each canonical column's accepted spellings
(ALIASES), the columns kept for people and not read, throughput headers as people write them, and the
known column an unknown header is a typo away from."""

from __future__ import annotations

import difflib
import re

# Plain-CSV headers: canonical name -> accepted spellings (compared after lower-casing and turning
# spaces, dashes and dots into underscores).
ALIASES: dict[str, tuple[str, ...]] = {
    "workload": ("workload", "task", "dataset", "dataset_name", "scenario", "name", "label", "workload_or_dataset"),
    "concurrency": ("concurrency", "max_concurrency", "batch", "batch_size", "concurrent_requests",
                    "num_concurrent", "streams", "users", "max_concurrent", "concurrency_or_batch"),
    "request_rate": ("request_rate", "rate", "qps", "rps", "requests_per_s"),
    "k": ("k", "num_speculative_tokens", "num_spec_tokens", "speculative_tokens", "gamma",
          "draft_tokens_per_step", "spec_k"),
    "method": ("method", "spec_method", "speculative_method", "speculation", "spec_decode_method",
               "draft_model_or_method"),
    "temperature": ("temperature", "temp"),
    "alpha": ("alpha", "per_token_acceptance", "token_acceptance", "acceptance_alpha"),
    "tokens_per_step": ("tokens_per_step", "mean_acceptance_length", "acceptance_length", "accept_len",
                        "accept_length", "spec_decode_acceptance_length", "spec_accept_length",
                        "mean_accept_len"),
    "draft_acceptance_rate": ("draft_acceptance_rate",),
    "acceptance_rate_percent": ("spec_decode_acceptance_rate", "acceptance_rate_percent",
                                "acceptance_rate_pct", "draft_acceptance_rate_percent"),
    "accepted_tokens": ("accepted_tokens", "num_accepted_tokens", "spec_decode_accepted_tokens",
                        "spec_decode_num_accepted_tokens"),
    "drafts": ("drafts", "num_drafts", "spec_decode_num_drafts"),
    "draft_tokens": ("draft_tokens", "num_draft_tokens", "spec_decode_draft_tokens",
                     "spec_decode_num_draft_tokens"),
    "survival": ("survival", "per_position_acceptance", "per_position_acceptance_rates",
                 "spec_decode_per_position_acceptance_rates", "acceptance_per_position"),
    "baseline_tok_s": ("baseline_tok_s", "baseline_throughput", "baseline_output_throughput",
                       "plain_tok_s", "no_spec_tok_s", "tok_s_baseline", "baseline_tokens_per_s"),
    "spec_tok_s": ("spec_tok_s", "spec_throughput", "speculative_tok_s", "spec_output_throughput",
                   "output_throughput", "throughput", "tok_s", "output_tok_s", "tokens_per_s"),
    "speedup": ("speedup", "measured_speedup"),
    "off_tok_s": ("off_tok_s", "spec_off_tok_s", "configured_off_tok_s", "off_throughput", "spec_configured_off_tok_s"),
    "gpu": ("gpu", "hardware", "device", "accelerator"),
    "gpu_bandwidth_gbs": ("gpu_bandwidth_gbs", "bandwidth_gbs"),  # a GPU by its numbers: runs/gpu_columns.py
    "gpu_tflops": ("gpu_tflops", "tflops"),
    "gpu_memory_gb": ("gpu_memory_gb", "memory_gb"),
    "target_model": ("target_model", "model", "model_id", "target"),
    "draft_model": ("draft_model", "draft", "speculative_model", "draft_model_id"),
    "context_len": ("context_len", "context_length", "mean_context_len", "ctx", "context_tokens"),
    "t_target_ms": ("t_target_ms", "target_step_ms", "target_ms"),
    "t_draft_ms": ("t_draft_ms", "draft_step_ms", "draft_ms"),
    "tp": ("tp", "tensor_parallel", "tensor_parallel_size"),
    "engine": ("engine", "server", "backend", "serving_engine", "inference_engine"),
    "draft_depth": ("draft_depth", "depth", "tree_depth", "num_steps"),
    "branching": ("branching", "tree_branching", "branching_factor", "topk", "eagle_topk"),
    "ep": ("ep", "expert_parallel", "expert_parallel_size", "ep_size"),
    "weight_dtype": ("weight_dtype", "dtype", "quantization", "weights_dtype"),
    "draft_kv_budget": ("draft_kv_budget", "kv_budget", "draft_budget"),
    "source": ("source_id", "source", "source_key"),
    "notes": ("notes", "note", "comment", "comments", "description"),
}
# Columns kept for people and not read (a citation, a URL, remarks on how a number was measured):
# named once in one info line, never one warning each. A second column for an already-read field
# (e.g. both `source_id` and `source`) is treated the same way.
IGNORED_COLUMNS = ("url_or_ref", "url", "reference", "ref", "citation", "latency_metric_note", "metric_note",
                   "accept_len_source", "acceptance_source")
ALIAS_INDEX = {alias: canon for canon, names in ALIASES.items() for alias in names}

# Throughput headers as people write them: a throughput word with a speculative or a baseline word, in
# either order ("tok_s_spec", "sd_throughput", "tokens_per_s_nospec", "plain_throughput").
_THROUGHPUT = re.compile(r"(?:^|_)(?:tok_s|tok_per_s|tokens_s|tokens_per_s|tokens_per_sec|tok_sec|tps|throughput)(?:_|$)")
_BASE_WORD = re.compile(r"(?:^|_)(?:base|baseline|plain|nospec|no_spec|non_spec|without_spec|vanilla)(?:_|$)")
_SPEC_WORD = re.compile(r"(?:^|_)(?:spec|speculative|sd|with_spec)(?:_|$)")
_CLOSE_CUTOFF = 0.8  # chosen: difflib ratio above which an unknown header is read as the known one it resembles


def throughput_column(key: str) -> str | None:
    """`baseline_tok_s` or `spec_tok_s` for a normalised header naming a throughput with a baseline or a
    speculative word in either order; None otherwise. A baseline word wins ("no_spec" holds "spec")."""
    if not _THROUGHPUT.search(key):
        return None
    if _BASE_WORD.search(key):
        return "baseline_tok_s"
    return "spec_tok_s" if _SPEC_WORD.search(key) else None


def close_column(key: str) -> tuple[str, str] | None:
    """(canonical column, the known spelling it resembles) for an unknown header a typo away from a
    known one ("concurency", "spec_toks"); None when nothing is close."""
    match = difflib.get_close_matches(key, list(ALIAS_INDEX), n=1, cutoff=_CLOSE_CUTOFF)
    return (ALIAS_INDEX[match[0]], match[0]) if match else None


def norm_header(h: str) -> str:
    h = re.sub(r"\(.*?\)|\[.*?\]", "", str(h)).strip().lower()
    return re.sub(r"[^a-z0-9%]+", "_", h).strip("_").replace("%", "percent")
