"""Serving engines' own overheads (data/engines.json, a source per engine): what a step costs beyond
its kernels. Per forward pass of the target (scheduling, input preparation, sampling), per
sequence per step, per draft pass (launch and sampling of the proposer), per speculative step and
per sequence per speculative step (rejection, bookkeeping), and n-gram matching on the CPU."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from specmodel.errors import SpecModelError

_DATA = Path(__file__).with_name("data") / "engines.json"
DEFAULT_ENGINE = "vllm"
# How texts name each engine ("vLLM V1", "in SGLang", "TensorRT-LLM", "T5X"): the first match wins.
PATTERNS = (("trtllm", r"tensorrt[\s_-]*llm|\btrt[\s_-]*llm\b|\btrtllm\b"), ("sglang", r"\bsglang\b"),
            ("vllm", r"\bvllm\b"), ("xla", r"\bt5x\b|\bjax\b|\bxla\b|jetstream|maxtext"),
            ("ideal", r"^\s*(ideal|none|kernels?)\s*$"))


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
    tree_step_ms: float = 0.0  # a tree step beyond its passes: top-k expansion, masks, path selection
    tree_token_us: float = 0.0  # per sequence and per verified tree token beyond the depth

    def packs_verify(self, gpu_name: str) -> bool:
        low = gpu_name.lower()
        return "*" in self.packed_verify_gpus or any(w.lower() in low for w in self.packed_verify_gpus)


@cache
def _raw() -> dict:
    return {k: v for k, v in json.loads(_DATA.read_text()).items() if not k.startswith("_")}


def engine_names() -> list[str]:
    return list(_raw())


def parse_engine(text) -> str | None:
    """The engine key of the first serving engine a text names, else None.

    >>> parse_engine("EAGLE-2 in SGLang + torch.compile"), parse_engine("vLLM V1"), parse_engine("TensorRT-LLM")
    ('sglang', 'vllm', 'trtllm')
    """
    if not isinstance(text, str) or not text.strip():
        return None
    low = text.lower()
    hits = [(m.start(), key) for key, pat in PATTERNS for m in [re.search(pat, low)] if m]
    return min(hits)[1] if hits else None


def normalise_engine(text) -> str | None:
    """An engine key from a key or a text naming it; None if none is named."""
    if isinstance(text, str) and text.strip().lower() in _raw():
        return text.strip().lower()
    return parse_engine(text)


def find_engine(name: str | None) -> Engine:
    key = normalise_engine(name) if name else DEFAULT_ENGINE
    if key is None or key not in _raw():
        raise SpecModelError(f"unknown engine '{name}'; choose one of: {', '.join(engine_names())}")
    e = _raw()[key]
    return Engine(key, e["label"], *(float(e[f]) for f in ("step_ms", "seq_us", "draft_pass_ms", "draft_seq_us",
                                                            "spec_step_ms", "spec_seq_us", "ngram_seq_us")),
                  e["source"], tuple(e.get("packed_verify_gpus", ("*",))), float(e.get("tree_step_ms", 0.0)),
                  float(e.get("tree_token_us", 0.0)))
