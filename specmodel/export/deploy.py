"""What to deploy, in the serving engine's own terms: the best k per batch-size range (scenario.k_schedule)
written as that engine takes it.

- vLLM: `--speculative-config` JSON with `num_speculative_tokens_per_batch_size` (vllm_speculative_config).
- SGLang: launch flags (`--speculative-algorithm`, `--speculative-num-steps`, `--speculative-eagle-topk`,
  `--speculative-num-draft-tokens`, `--speculative-draft-model-path`; SGLang's speculative decoding
  docs, https://docs.sglang.ai/advanced_features/speculative_decoding.html). A chain of k drafts is
  k steps, top-k 1 and k + 1 verified tokens. SGLang runs one k at every batch size, so the batch
  above which speculation loses is said beside the flags.
- Other engines: the numbers in words (k, and the batch to turn speculation off above).
"""

from __future__ import annotations

from dataclasses import dataclass

from specmodel.model.decide import Summary, off_above
from specmodel.model.presets import find_model

# The model's method -> SGLang's --speculative-algorithm (MTP heads run through SGLang's EAGLE path).
SGLANG_ALGORITHM = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "EAGLE", "draft_model": "STANDALONE",
                    "ngram": "NGRAM"}


def vllm_speculative_config(summary: Summary) -> dict | None:
    """What to put in vLLM's --speculative-config: the best k here and the per-batch schedule.
    None when speculation should be off at every batch size."""
    schedule = summary.schedule
    if all(k == 0 for _, _, k in schedule) and summary.best_k == 0:
        return None
    s = summary.scenario
    config: dict = {"method": s.method}
    if s.method == "draft_model":
        config["model"] = find_model(s.draft).hf_id
    config["num_speculative_tokens"] = max(summary.best_k, max(k for _, _, k in schedule))
    config["num_speculative_tokens_per_batch_size"] = schedule
    return config


@dataclass(frozen=True)
class DeployAdvice:
    engine: str
    intro: str  # one sentence for a person (Markdown: code in backticks)
    code: str | None  # what to paste, or None
    language: str | None  # "json" or "bash"
    note: str | None  # what the engine cannot express, or None

    @property
    def one_line(self) -> str | None:
        """The code on one line (flags continued with backslashes joined)."""
        return None if self.code is None else self.code.replace(" \\\n  ", " ")

    def to_dict(self) -> dict:
        return {"engine": self.engine, "intro": self.intro, "code": self.code, "language": self.language,
                "note": self.note}


def deploy_advice(summary: Summary) -> DeployAdvice:
    """The deployment advice for the summary's scenario, in its engine's terms."""
    s = summary.scenario
    schedule = summary.schedule
    k_run = summary.best_k or max((k for _, _, k in schedule), default=0)
    off = off_above(schedule)
    if k_run == 0 and all(k == 0 for _, _, k in schedule):
        return DeployAdvice(s.engine, "Speculation does not pay off at any batch size up to 512 here: leave it off.",
                            None, None, None)
    if s.engine == "vllm":
        import json

        return DeployAdvice("vllm", "vLLM `--speculative-config` with the best k for each batch-size range "
                            "(`[min batch, max batch, k]`, k = 0 turns speculation off):",
                            json.dumps(vllm_speculative_config(summary)), "json", None)
    off_text = f"above batch {off} speculation loses here" if off else None
    tokens = f"{k_run} draft token{'s' if k_run != 1 else ''}"
    if s.engine == "sglang" and s.method in SGLANG_ALGORITHM:
        flags = [f"--speculative-algorithm {SGLANG_ALGORITHM[s.method]}"]
        if s.method == "draft_model" and s.draft:
            flags.append(f"--speculative-draft-model-path {find_model(s.draft).hf_id}")
        elif s.method in ("eagle", "eagle3"):
            flags.append("--speculative-draft-model-path YOUR_EAGLE_DRAFT")
        if s.method != "ngram":
            flags += [f"--speculative-num-steps {k_run}", "--speculative-eagle-topk 1"]
        flags.append(f"--speculative-num-draft-tokens {k_run + 1}")
        note = _one_k_note("SGLang", schedule, off_text)
        return DeployAdvice("sglang", f"SGLang launch flags for a chain of k = {tokens}:",
                            " \\\n  ".join(flags), "bash", note)
    return DeployAdvice(s.engine, f"Run k = {tokens} per step"
                        + (f"; {off_text}: turn it off there." if off_text else "."), None, None, None)


def _one_k_note(engine: str, schedule: list[list[int]], off_text: str | None) -> str | None:
    """For an engine that runs one k at every batch size: how the best k changes with the batch
    (pick the k of the usual batch), and the batch above which speculation loses."""
    ranges = [(lo, hi, k) for lo, hi, k in schedule if k > 0]
    parts = []
    if len({k for _, _, k in ranges}) > 1:
        steps = ", ".join(f"{k} up to batch {hi}" for _lo, hi, k in ranges[:-1]) + f" and {ranges[-1][2]} above that"
        parts.append(f"the best k here is {steps}: pick the k of your usual batch")
    if off_text:
        parts.append(f"{off_text}, so serve larger batches from a server without these flags")
    return f"{engine} runs one k at every batch size: " + "; ".join(parts) + "." if parts else None

