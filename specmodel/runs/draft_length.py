"""A run whose drafts are shorter on average than the longest (vLLM's n-gram proposes fewer tokens where the prompt
has no match) judged at its mean draft length, for every run reader that can tell it (`vllm bench serve` JSON, vLLM
log lines): the same rule as the live and Fleet readers and the recording rules (model.acceptance.mean_length_k)."""

from __future__ import annotations

import math

from specmodel.model import acceptance


def at_mean_draft_length(values: dict, headers: dict, drafts, draft_tokens, accepted, longest,
                         read_from: str, how: str = "draft tokens ÷ drafts") -> str | None:
    """Judge the run in `values` at its mean draft length (draft tokens ÷ drafts, rounded half up), not at the
    longest draft (`longest`: the per-position list's length, else the server's k), with E = 1 + accepted ÷ drafts
    (at most k + 1); the longest is kept as max_draft_length. `read_from` names the columns the k came from (the
    row's header for k), `how` how the mean was read, for the remark. Returns the remark, or None
    (values untouched) where the drafts are all as long or a count is missing."""
    counts = (drafts, draft_tokens, accepted, longest)
    if any(c is None or not math.isfinite(c) for c in counts) or drafts <= 0 or draft_tokens <= 0 or accepted < 0 \
            or longest < 1:
        return None
    mean = draft_tokens / drafts
    judged = acceptance.mean_length_k(mean)
    if judged >= longest:
        return None
    e = 1 + accepted / drafts
    values.update(k=judged, tokens_per_step=min(e, judged + 1.0), max_draft_length=int(longest))
    headers["k"] = read_from
    for key in ("survival", "drafts", "accepted_tokens"):  # E and k above, not the longest draft's survival
        values.pop(key, None)
    return (f"judged at its mean draft length {mean:.2f} ({how}), k = {judged}, not at the "
            f"longest draft {int(longest)}: E = 1 + accepted ÷ drafts = {e:.3f}"
            + (f", read as {judged + 1} (k + 1)" if e > judged + 1 else ""))


def k_words(k, configured=None, mean=None) -> str:
    """A run's k as a label says it: "k = 4"; where the run is judged at its mean draft length below the configured
    (longest) draft, what k means, with the mean where it is known: "k = 3 (4 configured, 3.20 drafted on average)",
    else "k = 2 (the mean draft length; 4 configured)". A mean that rounds to the configured k is said beside it."""
    said = f"k = {float(k):g}"
    if configured is None or not math.isfinite(configured) or configured <= k:
        shorter = mean is not None and math.isfinite(mean) and round(mean, 2) < k
        return said + (f" ({mean:.2f} drafted on average)" if shorter else "")
    if mean is None or not math.isfinite(mean):
        return f"{said} (the mean draft length; {float(configured):g} configured)"
    return f"{said} ({float(configured):g} configured, {mean:.2f} drafted on average)"
