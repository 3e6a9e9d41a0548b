"""Serving engines' own overheads (data/engines.json, a source per engine): what a step costs beyond
its kernels. Per forward pass of the target (scheduling, input preparation, sampling), per
sequence per step, per draft pass (launch and sampling of the proposer), per speculative step and
per sequence per speculative step (rejection, bookkeeping), and n-gram matching on the CPU."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import SpecModelError

_DATA = Path(__file__).with_name("data") / "engines.json"
DEFAULT_ENGINE = "vllm"
_WORDS = (("tensorrt", "trtllm"), ("trt", "trtllm"), ("sglang", "sglang"), ("vllm", "vllm"),
          ("ideal", "ideal"), ("none", "ideal"), ("kernels", "ideal"))


@dataclass(frozen=True)
class Engine:
    name: str
    label: str
    step_ms: float
    seq_us: float
    draft_pass_ms: float
    draft_seq_us: float
    spec_step_ms: float
    spec_seq_us: float
    ngram_seq_us: float
    source: str
    packed_verify_gpus: tuple[str, ...] = ()  # GPU name words where verify attention packs GQA; ("*",) = all

    def packs_verify(self, gpu_name: str) -> bool:
        low = gpu_name.lower()
        return "*" in self.packed_verify_gpus or any(w.lower() in low for w in self.packed_verify_gpus)


@cache
def _raw() -> dict:
    return {k: v for k, v in json.loads(_DATA.read_text()).items() if not k.startswith("_")}


def engine_names() -> list[str]:
    return list(_raw())


def normalise_engine(text) -> str | None:
    """'vLLM V1', 'SGLang v0.5.9', 'TensorRT-LLM', 'trtllm' -> an engine key; None if none is named."""
    if not isinstance(text, str):
        return None
    low = text.lower().replace("-", "").replace("_", "").replace(" ", "")
    return next((key for word, key in _WORDS if word in low), None)


def find_engine(name: str | None) -> Engine:
    key = normalise_engine(name) if name else DEFAULT_ENGINE
    if key is None or key not in _raw():
        raise SpecModelError(f"unknown engine '{name}'; choose one of: {', '.join(engine_names())}")
    e = _raw()[key]
    return Engine(key, e["label"], *(float(e[f]) for f in ("step_ms", "seq_us", "draft_pass_ms", "draft_seq_us",
                                                            "spec_step_ms", "spec_seq_us", "ngram_seq_us")),
                  e["source"], tuple(e.get("packed_verify_gpus", ("*",))))
