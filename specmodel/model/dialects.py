"""How each serving engine names the model's speculation methods, and which draft it loads: one home
for the deploy configs (export/deploy.py) and the measurement plan's servers (plan/measure.py).

Sources: vLLM `--speculative-config` `method` values (vllm/config/speculative.py, release wheels
0.8.5-0.33.0); SGLang `--speculative-algorithm` (python/sglang/srt/server_args.py; MTP heads run through
its EAGLE path); TensorRT-LLM `decoding_type` (tensorrt_llm/llmapi/llm_args.py, main 2026: DraftTarget,
NGram, Eagle3, MTP on the PyTorch backend)."""

from __future__ import annotations

VLLM_METHODS = ("draft_model", "ngram", "eagle", "eagle3", "mtp", "medusa")
SGLANG_ALGORITHM = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "EAGLE", "draft_model": "STANDALONE",
                    "ngram": "NGRAM"}
TRTLLM_DECODING_TYPE = {"draft_model": "DraftTarget", "ngram": "NGram", "eagle": "Eagle3", "eagle3": "Eagle3",
                        "mtp": "MTP"}
EAGLE_PLACEHOLDER = "YOUR_EAGLE_DRAFT"
MEDUSA_PLACEHOLDER = "YOUR_MEDUSA_HEADS"


def draft_path(s) -> str | None:
    """The draft the engine loads for a Scenario: the draft model's Hugging Face id, a placeholder for
    an EAGLE or Medusa head (trained for the target; the presets do not name one), None for n-gram and MTP."""
    if s.method.name == "draft_model" and s.draft:
        return s.draft.hf_id
    if s.method.name in ("eagle", "eagle3"):
        return EAGLE_PLACEHOLDER
    if s.method.name == "medusa":
        return MEDUSA_PLACEHOLDER
    return None
