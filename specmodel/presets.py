"""GPU, model and speculation-method presets, loaded from data/presets.json (a source per entry).

Names match loosely: case, spaces, dashes and an org prefix or "-Instruct" suffix do not matter,
so `h100`, `H100 SXM`, `llama-3.1-8b` and `meta-llama/Llama-3.1-8B-Instruct` all resolve.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import SpecModelError

_DATA = Path(__file__).with_name("data") / "presets.json"
METHODS = ("draft_model", "ngram", "eagle", "medusa", "mtp")
BYTES_PER_PARAM = 2.0  # bf16 weights
KV_BYTES_PER_VALUE = 2.0  # bf16 KV cache


@dataclass(frozen=True)
class GPU:
    name: str
    dense_bf16_TFLOPS: float
    bandwidth_GBps: float
    memory_GB: float
    source: str


@dataclass(frozen=True)
class Model:
    name: str
    params_B: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    default_draft: str | None
    source: str

    @property
    def hf_id(self) -> str:
        """The Hugging Face repository id of this preset (its first alias with an org prefix)."""
        entry = _raw()["models"][self.name]
        return next((a for a in entry.get("aliases", []) if "/" in a), self.name)

    @property
    def matmul_params(self) -> float:
        """Parameters read and multiplied per token: all but an untied input embedding table
        (a lookup reads only one row); the LM head is included."""
        embed = 0.0 if self.tied_embeddings else self.vocab * self.hidden
        return self.params_B * 1e9 - embed

    @property
    def weight_bytes(self) -> float:
        return self.matmul_params * BYTES_PER_PARAM

    @property
    def resident_weight_bytes(self) -> float:
        """Bytes the weights take in GPU memory (embedding table included)."""
        return self.params_B * 1e9 * BYTES_PER_PARAM

    @property
    def kv_bytes_per_token(self) -> float:
        return 2.0 * self.layers * self.kv_heads * self.head_dim * KV_BYTES_PER_VALUE

    @property
    def layer_params(self) -> float:
        """Parameters of one decoder layer (attention projections + gated MLP)."""
        q_out = self.heads * self.head_dim
        kv_out = 2 * self.kv_heads * self.head_dim
        attention = self.hidden * (q_out + kv_out) + q_out * self.hidden
        return attention + 3.0 * self.hidden * self.intermediate


@dataclass(frozen=True)
class Method:
    name: str
    label: str
    description: str
    draft_passes: str  # "k": one pass per draft token; "one": one pass for all; "none": no GPU work
    source: str


def _norm(name: str) -> str:
    s = name.strip().lower()
    s = s.split("/")[-1]
    s = re.sub(r"-?(instruct|chat|it)$", "", s)
    s = s.replace("meta-llama-", "llama-")
    return re.sub(r"[^a-z0-9.]", "", s).replace(".", "")


@cache
def _raw() -> dict:
    return json.loads(_DATA.read_text())


@cache
def _index(kind: str) -> dict[str, str]:
    index: dict[str, str] = {}
    for name, entry in _raw()[kind].items():
        for alias in [name, *entry.get("aliases", [])]:
            index.setdefault(_norm(alias), name)
    return index


def _resolve(kind: str, name: str, label: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SpecModelError(f"no {label} named; choose one of: {', '.join(_raw()[kind])}")
    found = _index(kind).get(_norm(name))
    if found is None:
        raise SpecModelError(f"unknown {label} '{name}'; choose one of: {', '.join(_raw()[kind])}")
    return found


def find_gpu(name: str) -> GPU:
    key = _resolve("gpus", name, "GPU")
    e = _raw()["gpus"][key]
    return GPU(key, e["dense_bf16_TFLOPS"], e["bandwidth_GBps"], e["memory_GB"], e["source"])


def find_model(name: str) -> Model:
    key = _resolve("models", name, "model")
    e = {k: v for k, v in _raw()["models"][key].items() if k != "aliases"}
    return Model(name=key, **e)


def find_method(name: str) -> Method:
    key = (name or "").strip().lower().replace("-", "_").replace(" ", "_")
    key = {"draft": "draft_model", "prompt_lookup": "ngram", "n_gram": "ngram",
           "eagle3": "eagle", "eagle_3": "eagle"}.get(key, key)
    if key not in _raw()["methods"]:
        raise SpecModelError(f"unknown method '{name}'; choose one of: {', '.join(METHODS)}")
    e = _raw()["methods"][key]
    return Method(key, e["label"], e["description"], e["draft_passes"], e["source"])


def match_gpu(name) -> GPU | None:
    """Loose lookup that returns None for an unknown name (for free-text columns in run files)."""
    try:
        return find_gpu(name)
    except SpecModelError:
        return None


def match_model(name) -> Model | None:
    try:
        return find_model(name)
    except SpecModelError:
        return None


def gpu_names() -> list[str]:
    return list(_raw()["gpus"])


def model_names() -> list[str]:
    return list(_raw()["models"])
