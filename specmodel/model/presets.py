"""GPU, model and speculation-method presets, loaded from data/presets.json (a source per entry),
and the readers that map what people write ("8x B200 (TP=8)", "Llama-3-70B-Instruct",
"EAGLE-3, tree depth 3, branching 4") to them.

Names match loosely: case, spaces, dashes and an org prefix or "-Instruct" suffix do not matter,
so `h100`, `H100 SXM`, `llama-3.1-8b` and `meta-llama/Llama-3.1-8B-Instruct` all resolve.
`parse_hardware`, `parse_model` and `parse_method` read free text and always record what they did
(`remarks`: labels with their values, which specmodel.words.names writes as sentences); `find_*` raise
`SpecModelError` for an unknown name, `match_*` return None.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import ClassVar, NamedTuple

from specmodel.errors import OutOfRange, SpecModelError
from specmodel.bounds import bounded_cache, reads_name
from specmodel.model.engines import engine_names, parse_engine  # noqa: F401 (parse_engine: re-exported for readers)

_DATA = Path(__file__).with_name("data") / "presets.json"
METHODS = ("draft_model", "ngram", "eagle", "eagle3", "medusa", "mtp", "self_spec")
ENGINES = tuple(engine_names())


class NamedPreset:
    """A resolved preset prints as its name (a Scenario's JSON and words print that; a test's failure prints
    no source texts), and only its name counts as text in a cache key (bounds.bounded_cache): the rest is the
    preset's own data, shared."""

    KEY_FIELDS: ClassVar[tuple[str, ...]] = ("name",)
    name: str

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


@dataclass(frozen=True, repr=False)
class GPU(NamedPreset):
    name: str
    dense_bf16_TFLOPS: float
    bandwidth_GBps: float
    memory_GB: float
    source: str
    dense_fp8_TFLOPS: float | None = None  # None: no FP8 tensor cores
    dense_fp4_TFLOPS: float | None = None  # None: no FP4 tensor cores
    interconnect: str = ""  # "NVLink 4", "PCIe 4.0", "Infinity Fabric", "ICI", ...
    interconnect_GBps: float = 0.0  # per GPU, one direction, usable by all-reduce within a replica
    interconnect_topology: str = ""  # "switch" (NVSwitch), "mesh" (n-1 of 7 links used), "bridge", "pcie", "torus"
    vendor: str = ""
    # A GPU given by its numbers: the preset whose engine kernel choices it shares (which verify kernel an
    # engine runs, its default running limit: data/engines.json matches these by GPU name); "": its own name.
    kernels_like: str = ""

    def __hash__(self) -> int:  # a few identifying fields (equal presets agree on them): hashed on every cache lookup
        return hash((self.name, self.bandwidth_GBps, self.dense_bf16_TFLOPS, self.memory_GB))

    @property
    def kernel_name(self) -> str:
        """The name engines match their per-GPU kernel choices against (data/engines.json)."""
        return self.kernels_like or self.name


@dataclass(frozen=True, repr=False)
class Model(NamedPreset):
    name: str
    params_B: float  # total parameters (every expert of an MoE model)
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int  # dense FFN width (gated MLP); for MoE models see moe_intermediate
    vocab: int
    tied_embeddings: bool
    default_draft: str | None
    source: str
    family: str = ""  # architecture family: "llama3", "qwen3", "deepseek_v3", ...
    weight_dtype: str = "bf16"  # dtype of the released checkpoint: "bf16", "fp8", "fp4", "int4"
    max_context: int = 0  # max_position_embeddings
    active_params_B: float | None = None  # MoE: activated parameters per token (model card); None for dense
    experts: int = 0  # routed experts per MoE layer (0: dense model)
    experts_per_token: int = 0  # top-k routing
    shared_experts: int = 0  # always-active experts per MoE layer, each moe_intermediate wide
    moe_intermediate: int = 0  # FFN width of one expert
    moe_layers: int = 0  # layers whose FFN is MoE; the other layers - moe_layers use the dense FFN
    attention: str = "gqa"  # "gqa" (MHA/MQA included) or "mla" (multi-head latent attention)
    q_lora_rank: int = 0  # MLA only
    kv_lora_rank: int = 0  # MLA: latent KV width cached per token and layer
    qk_rope_head_dim: int = 0  # MLA: rotary part of each key, cached beside the latent
    qk_nope_head_dim: int = 0  # MLA only
    v_head_dim: int = 0  # MLA only
    mtp_layers: int = 0  # native multi-token-prediction layers shipped with the model
    sliding_window: int = 0  # tokens a windowed (or chunked) attention layer reads; 0: none
    sliding_window_layers: int = 0  # how many of the layers are windowed
    sliding_window_kv_heads: int = 0  # KV heads of a windowed layer where they differ (MiMo-V2-Flash); 0: kv_heads
    attention_output_gate: bool = False  # gated attention: the query projection is twice as wide (Qwen3-Next)
    # Hybrid linear attention (Gated DeltaNet): these layers keep a recurrent state of
    # linear_value_heads × linear_key_head_dim × linear_value_head_dim values per sequence (plus a
    # short convolution window) instead of a KV cache; the remaining layers are full attention.
    linear_attention_layers: int = 0
    linear_key_heads: int = 0
    linear_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel: int = 0
    # Sparse attention (DeepSeek Sparse Attention): a lightning indexer of index_heads × index_head_dim
    # scores every cached token, the main attention reads only the index_topk best per query token.
    index_topk: int = 0
    index_heads: int = 0
    index_head_dim: int = 0

    def __hash__(self) -> int:  # a few identifying fields (equal presets agree on them): hashed on every cache lookup
        return hash((self.name, self.params_B, self.layers, self.hidden, self.kv_heads))

    @property
    def hf_id(self) -> str:
        """The Hugging Face repository id of this preset (its first alias with an org prefix)."""
        entry = _raw()["models"].get(self.name)
        if entry is None:  # a model given by its config.json: its name is the config's _name_or_path or file
            return self.name
        return next((a for a in entry.get("aliases", []) if "/" in a), self.name)

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def active_params(self) -> float:
        """Activated parameters per token (the model card's figure; all of them for a dense model)."""
        return (self.active_params_B if self.active_params_B is not None else self.params_B) * 1e9

    @property
    def matmul_params(self) -> float:
        """Parameters read and multiplied per token: all but an untied input embedding table
        (a lookup reads only one row); the LM head is included. For an MoE model this counts every
        expert (an upper bound on what one pass reads)."""
        embed = 0.0 if self.tied_embeddings else self.vocab * self.hidden
        return self.params_B * 1e9 - embed

    @property
    def full_attention_layers(self) -> int:
        """Layers that attend over the whole context (neither windowed nor linear attention)."""
        return max(self.layers - self.sliding_window_layers - self.linear_attention_layers, 0)

    @property
    def linear_attention_params_per_layer(self) -> float:
        """Parameters of one Gated DeltaNet layer: the fused Q/K/V/gate projection (keys twice, values
        twice), the per-head decay and beta projections, and the output projection."""
        keys = self.linear_key_heads * self.linear_key_head_dim
        values = self.linear_value_heads * self.linear_value_head_dim
        return float(self.hidden * (2 * keys + 2 * values + 2 * self.linear_value_heads) + values * self.hidden)

    @property
    def attention_params_all_layers(self) -> float:
        """Attention parameters summed over the layers: full, windowed (their own KV heads) and linear."""
        windowed = self.sliding_window_layers * self._attention_params(self.sliding_window_kv_heads or self.kv_heads)
        return (self.full_attention_layers * self.attention_params_per_layer + windowed
                + self.linear_attention_layers * self.linear_attention_params_per_layer)

    @property
    def attention_params_per_layer(self) -> float:
        """Parameters of one full-attention layer's projections (Q, K, V, O; MLA: its low-rank factors)."""
        return self._attention_params(self.kv_heads)

    def _attention_params(self, kv_heads: int) -> float:
        if self.attention == "mla":
            qk_head = self.qk_nope_head_dim + self.qk_rope_head_dim
            q = (self.hidden * self.q_lora_rank + self.q_lora_rank * self.heads * qk_head if self.q_lora_rank
                 else self.hidden * self.heads * qk_head)
            kv = (self.hidden * (self.kv_lora_rank + self.qk_rope_head_dim)
                  + self.kv_lora_rank * self.heads * (self.qk_nope_head_dim + self.v_head_dim))
            indexer = (self.q_lora_rank * self.index_heads * self.index_head_dim
                       + self.hidden * (self.index_head_dim + self.index_heads)) if self.index_heads else 0
            return float(q + kv + self.heads * self.v_head_dim * self.hidden + indexer)
        v_dim = self.v_head_dim or self.head_dim  # MiMo-V2-Flash: values narrower than keys
        q_out = self.heads * self.head_dim * (2 if self.attention_output_gate else 1)
        kv_out = kv_heads * (self.head_dim + v_dim)
        return float(self.hidden * (q_out + kv_out) + self.heads * v_dim * self.hidden)

    @property
    def layer_params(self) -> float:
        """Parameters of one decoder layer (attention projections + gated MLP of the dense width
        `intermediate`): the shape of an EAGLE/MTP draft layer."""
        return self.attention_params_per_layer + 3.0 * self.hidden * self.intermediate

    @property
    def expert_params_per_layer(self) -> float:
        """Parameters of ONE expert in one MoE layer (gated MLP: 3 × hidden × moe_intermediate)."""
        return 3.0 * self.hidden * self.moe_intermediate

    @property
    def routed_expert_params(self) -> float:
        """Parameters of every routed expert of every MoE layer (what a pass may read at most)."""
        return self.moe_layers * self.experts * self.expert_params_per_layer

    @property
    def always_read_params(self) -> float:
        """Parameters every pass reads whatever the routing, computed from the architecture:
        attention of every layer, the dense FFN of the non-MoE layers, shared experts and routers
        of the MoE layers, and the LM head (an untied input embedding is a lookup, not read).
        For a dense model this is every matmul parameter. The routed experts come on top: one
        token reads moe_layers × experts_per_token × expert_params_per_layer more, so
        always_read_params + that ≈ active_params (checked against model cards in tests)."""
        dense_ffn_layers = self.layers - self.moe_layers
        per_moe_layer = self.shared_experts * self.expert_params_per_layer + self.hidden * self.experts
        return (self.attention_params_all_layers
                + dense_ffn_layers * 3.0 * self.hidden * self.intermediate
                + self.moe_layers * per_moe_layer + self.vocab * self.hidden)


@dataclass(frozen=True, repr=False)
class Method(NamedPreset):
    name: str
    label: str
    description: str
    draft_passes: str  # "k": one pass per draft token; "one": one pass for all; "none": no GPU work
    source: str

    def __hash__(self) -> int:
        return hash((self.name, self.draft_passes))


def _norm(name: str, kind: str = "gpus") -> str:
    """A name as its index key: case, the org prefix, an -Instruct/-Chat suffix and separators do not matter.
    For a model, a separator between two letters parts two words: 'tiny-llama' (the real-engine lab's
    3 M-parameter model) does not name the preset whose alias is 'tinyllama', as parse_model reads it too;
    'Llama-3.1-8B' and 'llama 3.1 8b' still meet."""
    s = name.strip().lower()
    s = s.split("/")[-1]
    s = re.sub(r"-?(instruct|chat|it)$", "", s)
    s = s.replace("meta-llama-", "llama-")
    if kind == "models":
        words = [w for w in re.split(r"[^a-z0-9]+", s) if w]
        return "".join(w if not i or not (words[i - 1][-1].isalpha() and w[0].isalpha()) else f" {w}"
                       for i, w in enumerate(words))
    return re.sub(r"[^a-z0-9.]", "", s).replace(".", "")


@cache
def _raw() -> dict:
    return json.loads(_DATA.read_text())


@cache
def _index(kind: str) -> dict[str, str]:
    index: dict[str, str] = {}
    for name, entry in _raw()[kind].items():
        for alias in [name, *entry.get("aliases", [])]:
            index.setdefault(_norm(alias, kind), name)
    return index


def _resolve(kind: str, name: str, label: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SpecModelError(f"no {label} named; choose one of: {', '.join(_raw()[kind])}")
    found = _index(kind).get(_norm(name, kind))
    if found is None:
        raise SpecModelError(f"unknown {label} '{name}'; choose one of: {', '.join(_raw()[kind])}")
    return found


_GPU_FIELDS = {f.name for f in fields(GPU)}
_MODEL_FIELDS = {f.name for f in fields(Model)}


@cache
def _gpu(key: str) -> GPU:
    return build_gpu(key, _raw()["gpus"][key], f"GPU preset {key}")


@cache
def _model(key: str) -> Model:
    return build_model(key, _raw()["models"][key], f"model preset {key}")


@reads_name
def find_gpu(name: str) -> GPU:
    try:
        return _gpu(_resolve("gpus", name, "GPU"))
    except SpecModelError:
        hit = parse_hardware(name).gpu if isinstance(name, str) and name.strip() else None
        if hit is None:
            raise
        return hit


@reads_name
def find_model(name: str) -> Model:
    try:
        return _model(_resolve("models", name, "model"))
    except SpecModelError:
        hit = parse_model(name) if isinstance(name, str) and name.strip() else None
        if hit is None or hit.model is None or hit.how == "derivative":
            raise
        return hit.model


_METHOD_KEYS = {"draft": "draft_model", "prompt_lookup": "ngram", "n_gram": "ngram", "eagle_3": "eagle3",
                "eagle_2": "eagle", "eagle_1": "eagle", "selfspec": "self_spec", "self_speculation": "self_spec"}


@reads_name
def find_method(name: str) -> Method:
    key = (name or "").strip().lower().replace("-", "_").replace(" ", "_")
    key = _METHOD_KEYS.get(key, key)
    if key not in _raw()["methods"]:
        parsed = parse_method(name) if isinstance(name, str) else None
        if parsed is None or parsed.method is None:
            raise SpecModelError(f"unknown method '{name}'; choose one of: {', '.join(METHODS)}")
        key = parsed.method
    e = _raw()["methods"][key]
    return Method(key, e["label"], e["description"], e["draft_passes"], e["source"])


def match_model(name) -> Model | None:
    try:
        return find_model(name)
    except SpecModelError:
        return None


def gpu_names() -> list[str]:
    return list(_raw()["gpus"])


def model_names() -> list[str]:
    return list(_raw()["models"])


# A draft model is at most this fraction of its target's size: the pairings the presets and the
# published runs name are 6.5x to 140x smaller (Llama 3.2 1B for Llama 3.1 8B, Qwen3-0.6B for Qwen3-8B,
# Qwama-0.5B for Llama-3-70B), so a sixth keeps every one and leaves out same-size models.
DRAFT_SIZE_RATIO = 6


def draft_candidates(target: str) -> list[str]:
    """The draft models a run of `target` that names none may have used: dense presets of the target's
    family (so its tokenizer) at most 1/DRAFT_SIZE_RATIO of its parameters, and its default draft, one per architecture (a
    fine-tune costs what its base does), the target's default draft first, then by size."""
    try:
        t = find_model(target)
    except SpecModelError:
        return []
    if not t.family:
        return []
    found, shapes = [], set()
    for name in model_names():
        m = _model(name)
        shape = (m.layers, m.hidden, m.intermediate, m.heads, m.kv_heads, m.vocab)
        small = m.params_B <= t.params_B / DRAFT_SIZE_RATIO or name == t.default_draft
        if m.family != t.family or m.is_moe or not small or name == t.name or shape in shapes:
            continue
        shapes.add(shape)
        found.append(m)
    found.sort(key=lambda m: (m.name != t.default_draft, m.params_B))
    return [m.name for m in found]


# --- reading what people write ---------------------------------------------------------------------

@dataclass(frozen=True)
class Remark:
    """One thing a name reader assumed, dropped or read, as a label and its values; specmodel.words.names
    writes it for a person (model/ writes no sentence)."""
    code: str
    args: tuple = ()


@dataclass(frozen=True)
class HardwareMatch:
    gpu: GPU | None
    count: int | None  # GPUs named ("8x B200" -> 8, "single" -> 1)
    tp: int | None  # tensor-parallel degree (stated, or the GPU count when only that is given)
    ep: int | None  # expert-parallel degree, when stated
    raw: str | None  # the text as read (stripped); None when no hardware was named
    said: str = "gpu"  # "gpu": a preset read | "not stated": the text says so | "unknown": no preset recognised
    tp_stated: bool = False
    ep_stated: bool = False
    remarks: tuple[Remark, ...] = ()  # what was assumed (words.names.hardware_note says it)


@dataclass(frozen=True)
class ModelMatch:
    model: Model | None
    how: str  # "preset" | "alias" | "derivative" | "unknown"
    weight_dtype: str | None  # from the text when it says (FP8, AWQ, ...), else the preset's checkpoint
    raw: str | None  # the text as read (stripped); None when no model was named
    remarks: tuple[Remark, ...] = ()  # what was assumed or dropped (words.names.model_note says it)


@dataclass(frozen=True)
class MethodMatch:
    method: str | None  # one of METHODS, None when nothing is recognised
    draft_model: str | None  # a draft model named in the text, as written
    k: int | None  # draft tokens verified per step, when stated
    draft_depth: int | None  # sequential draft passes of a tree (or a stated chain depth)
    branching: int | None  # children per tree node (EAGLE topk)
    raw: str | None  # the text as read (stripped); None when no method was named
    remarks: tuple[Remark, ...] = ()  # how it is costed, what was assumed (words.names.method_note says it)
    parallel: bool = False  # one draft pass proposes all k tokens (P-EAGLE, PARD, block-diffusion drafters)


def _tokens(text: str) -> list[str]:
    """Lower-case tokens, with a letter run split from the number after it ("h100" -> h, 100;
    "qwen2.5" -> qwen, 2.5) so "Llama3-8B" and "Llama-3-8B" read alike; "80gb" and "7b" stay whole."""
    text = text.lower().replace("×", "x")
    out = []
    for raw in re.split(r"[^a-z0-9.]+", text):
        raw = raw.strip(".")
        out.extend(t for t in re.split(r"(?<=[a-z])(?=\d)", raw) if t)
    return out


def _find_run(needle: list[str], hay: list[str]) -> int:
    """Index of the first contiguous occurrence of needle in hay, or -1."""
    n = len(needle)
    for i in range(len(hay) - n + 1):
        if hay[i:i + n] == needle:
            return i
    return -1


def _strip_parens(text: str) -> tuple[str, list[str]]:
    """Text without its (...) and [...] groups, and the groups' contents."""
    groups = re.findall(r"\(([^()]*)\)|\[([^\[\]]*)\]", text)
    inside = [a or b for a, b in groups]
    return re.sub(r"\([^()]*\)|\[[^\[\]]*\]", " ", text), inside


# GPU ------------------------------------------------------------------------------------------------

_GPU_NOISE = {"nvidia", "amd", "instinct", "geforce", "tesla", "google", "cloud", "gpu", "gpus", "hbm", "hbm3",
              "hbm3e", "hbm2e"}


@cache
def _gpu_patterns() -> list[tuple[list[str], str, str]]:
    """(alias tokens, preset, alias as written) for every GPU name and alias, longest first (most tokens,
    then the longer alias: "TPU v5e-4" holds the tokens of both "TPU v5e" and "TPU v4")."""
    pats = []
    for name, entry in _raw()["gpus"].items():
        for alias in [name, *entry.get("aliases", [])]:
            toks = [t for t in _tokens(alias) if t not in _GPU_NOISE]
            if toks:
                pats.append((toks, name, alias))
    return sorted(pats, key=lambda p: (-len(p[0]), -len("".join(p[0]))))


_COUNT_DIGITS = 12  # chosen: digits a GPU count in a name may have (a bound on the input)
# chosen, to cover datasheet rounding: a memory size written beside a GPU name that is this far from the
# preset's names another variant
# (datasheets round: the TPU v4's 32 GiB is 34.4 GB, the B200's "192 GB" is 180 GB usable).
MEMORY_TOLERANCE = 0.12


def _count(digits: str) -> int | None:
    """A GPU count, TP, EP or k as written; more than 12 digits (int() refuses 4,300) reads as 10^12, which
    every bound refuses with its message (a TP of 5,000 digits was a traceback); digits of another script
    ('٨', which int() reads as 8) are no number here, as for the one number parser (specmodel.numbers)."""
    if not digits.isascii():
        return None
    return int(digits) if len(digits) <= _COUNT_DIGITS else 10 ** _COUNT_DIGITS


@reads_name
def parse_hardware(text) -> HardwareMatch:
    """GPU preset, GPU count, TP and EP from what people write about hardware.

    >>> m = parse_hardware("8x B200 (MLA TP=8, MoE EP=2)")
    >>> (m.gpu.name, m.count, m.tp, m.ep)
    ('B200', 8, 8, 2)
    >>> parse_hardware("4x H100 80GB (TP=4)").gpu.name
    'H100 SXM'
    """
    if not isinstance(text, str) or not text.strip():
        return HardwareMatch(None, None, None, None, None)
    raw = text.strip()
    low = raw.lower().replace("×", "x")
    notes = []
    tp_m = re.search(r"\b(?:mla\s+)?(?:tp|tensor[\s_-]*parallel(?:ism|[\s_-]*size)?)\s*[=:]?\s*(\d+)\b", low) \
        or re.search(r"\btp(\d+)\b", low)
    tp = _count(tp_m.group(1)) if tp_m else None
    ep_m = re.search(r"\b(?:moe\s+)?(?:ep|expert[\s_-]*parallel(?:ism|[\s_-]*size)?)\s*[=:]?\s*(\d+)\b", low) \
        or re.search(r"\bep(\d+)\b", low)
    ep = _count(ep_m.group(1)) if ep_m else None
    count_m = re.search(r"(?:^|[\s,(;])(\d+)\s*x\s*(?=[a-z])", low) or re.search(r"(?:^|\s)x\s*(\d+)\b", low) \
        or re.search(r"\b(\d+)\s*(?:-|\s)?gpus?\b", low)
    count = _count(count_m.group(1)) if count_m else (1 if re.search(r"\b(single|one)\b", low) else None)
    # the GPU: drop counts, parallelism and parenthesised remarks (driver versions), then match names
    body, _ = _strip_parens(low)
    body = re.sub(r"(?:^|[\s,;])\d+\s*x\s*(?=[a-z])", " ", body)
    body = re.sub(r"\b(?:tp|ep)\s*[=:]?\s*\d+\b|(?:^|\s)x\s*\d+\b", " ", body)
    toks = [t for t in _tokens(body) if t not in _GPU_NOISE]
    gpu = None
    for pat, name, _alias in _gpu_patterns():  # longest first; every token of the name, in any order
        if all(toks.count(t) >= pat.count(t) for t in pat):
            gpu = _gpu(name)
            siblings = [n for n in _raw()["gpus"] if n != name
                        and all(t in [u for u in _tokens(n) if u not in _GPU_NOISE] for t in pat)]
            if siblings:
                notes.append(Remark("variant", (name, tuple(siblings))))
            break
    stated_gb = re.search(r"(?<![0-9.])([0-9]{1,12}(?:\.[0-9]{1,12})?)\s*gb\b", body)  # digits 0-9 (the one number rule)
    if gpu is not None and stated_gb and abs(float(stated_gb.group(1)) / gpu.memory_GB - 1) > MEMORY_TOLERANCE:
        # a memory size no preset of that name has ("H20 141GB" is not the 96 GB H20): not silently the preset
        notes = [Remark("memory_variant", (stated_gb.group(1), gpu.name, gpu.memory_GB))]
        gpu = None
    if ep is None and re.search(r"\bep\b|expert[\s_-]*parallel", low):
        ep = tp or count
        notes.append(Remark("ep_unsized", (ep,)))
    if tp is None and count is not None:
        tp = count
        notes.append(Remark("tp_from_count", (count,)))
    said = "gpu" if gpu is not None else \
        "not stated" if re.search(r"not\s+stated|unknown|n/?a\b", low) else "unknown"
    return HardwareMatch(gpu, count, tp, ep, raw, said, tp is not None and bool(tp_m), ep is not None and bool(ep_m),
                         tuple(notes))


_GPU_ALTERNATIVES = re.compile(r";|\|| or | vs\.? | versus |, per |\bper another\b", re.I)


def gpus_named(text) -> list[str]:
    """Every GPU preset a hardware text names in its separate parts ("RTX 3090 per one version; A100
    per another" -> ['RTX 3090', 'A100 80GB']): two or more mean the text does not say which one ran."""
    if not isinstance(text, str) or not text.strip():
        return []
    found: list[str] = []
    for part in _GPU_ALTERNATIVES.split(text):
        gpu = parse_hardware(part).gpu if part.strip() else None
        if gpu is not None and gpu.name not in found:
            found.append(gpu.name)
    return found


def nearest_presets(kind: str, text, n: int = 3) -> list[str]:
    """The presets whose names or aliases share the most tokens with a text that matched none
    (kind "gpus" or "models"), best first: what a refusal suggests."""
    want = set(_tokens(str(text or ""))) - _GPU_NOISE - _SUFFIX_WORDS
    scored = []
    for name, entry in _raw()[kind].items():
        best = 0.0
        for alias in [name, *entry.get("aliases", []), *entry.get("derivatives", [])]:
            toks = set(_tokens(re.sub(r"^[\w.-]+/", "", alias))) - _GPU_NOISE - _SUFFIX_WORDS
            if toks:
                best = max(best, len(want & toks) / len(toks | want))
        if best > 0:
            scored.append((-best, name))
    return [name for _, name in sorted(scored)[:n]]


def stated_tp(text) -> int | None:
    """The tensor-parallel degree a GPU text states ("8x H100 (TP=8)" -> 8, "4x A100" -> 4), else None.
    Short texts are cached (Scenario.from_names asks for every run row); a long one is read afresh, never kept."""
    if not isinstance(text, str) or not any(ch.isdigit() for ch in text):
        return None
    return _stated_tp(text) if len(text) <= 100 else parse_hardware(text).tp


@bounded_cache(512)
def _stated_tp(text: str) -> int | None:
    return parse_hardware(text).tp


# Model ----------------------------------------------------------------------------------------------

_DTYPE_WORDS = (("nvfp4", "fp4"), ("mxfp4", "fp4"), ("fp4", "fp4"), ("w4a16", "int4"), ("awq", "int4"),
                ("gptq", "int4"), ("int4", "int4"), ("w8a8", "fp8"), ("fp8", "fp8"), ("int8", "int8"),
                ("bf16", "bf16"), ("fp16", "bf16"))
_DTYPE_RE = re.compile(r"(?<![a-z0-9])(?:" + "|".join(w for w, _ in _DTYPE_WORDS) + r")(?![a-z0-9])", re.I)
_SUFFIX_WORDS = {"instruct", "chat", "it", "base", "hf", "hf.", "moe", "thinking", "mode", "enc", "dec", "arch"}
_SIZE = re.compile(r"^\d+(?:\.\d+)?[bmt]$|^\d+x\d+(?:\.\d+)?b$")


@cache
def _model_patterns() -> list[tuple[list[str], str, str]]:
    """(tokens, preset, kind) for every model name ("name"), alias ("alias") and known derivative
    ("derivative"), longest first."""
    pats = []
    for name, entry in _raw()["models"].items():
        for kind, names in (("name", [name]), ("alias", entry.get("aliases", [])),
                            ("derivative", entry.get("derivatives", []))):
            for alias in names:
                toks = _model_tokens(alias)
                if toks:
                    pats.append((toks, name, kind))
    return sorted(pats, key=lambda p: -len(p[0]))


def _model_tokens(text: str) -> list[str]:
    """Tokens of a model name without its org prefix, chat/instruct suffixes and dtype words."""
    text = re.sub(r"^[\w.-]+/", "", text.strip())
    text = re.sub(_DTYPE_RE, " ", text)
    out = [t for t in _tokens(text) if t not in _SUFFIX_WORDS]
    if out[:2] == ["meta", "llama"]:
        out = out[1:]
    while out and (out[-1] in ("v", "it") or re.fullmatch(r"\d{4}", out[-1])):  # "-2507", "-0528" dates
        out.pop()
    return out


@reads_name
def parse_dtype(text: str) -> str | None:
    """The weight dtype a name or cell states ("FP8", "MXFP4", "AWQ" -> int4), else None."""
    words = set(re.split(r"[^a-z0-9]+", str(text).lower()))
    return next((d for w, d in _DTYPE_WORDS if w in words), None)


_dtype_in = parse_dtype


def _sizes(tokens) -> set[str]:
    return {t for t in tokens if _SIZE.match(t)}


@reads_name
def parse_model(text) -> ModelMatch:
    """A model preset from what people write: org prefixes, -Instruct/-Chat suffixes, quantisation
    words (FP8, AWQ, ...), remarks in parentheses, and derivatives of a known architecture.

    >>> m = parse_model("Kimi-K2.5 (MXFP4, MoE)")
    >>> (m.model.name, m.how, m.weight_dtype)
    ('Kimi-K2', 'derivative', 'fp4')
    >>> parse_model("Llama-3-70B-Instruct").model.name
    'Llama 3 70B'
    """
    if not isinstance(text, str) or not text.strip():
        return ModelMatch(None, "unknown", None, None)
    raw = text.strip()
    body, groups = _strip_parens(raw)
    dtype = _dtype_in(raw)
    toks = _model_tokens(body)
    # a context-extended variant ("-32K", "(-32K)"): the same architecture with a longer context
    ctx = [t for t in toks + [t for g in groups for t in _tokens(g)] if re.fullmatch(r"\d+k", t)]
    toks = [t for t in toks if not re.fullmatch(r"\d+k", t)]
    found = _match_model_tokens(toks) if toks else None
    restated = None
    if found is None and len(toks) > 1 and _SIZE.match(toks[-1]):  # "T5-XXL 11B", "DeepSeek-R1 671B MoE"
        found = _match_model_tokens(toks[:-1])
        if found is not None and found[1] == "exact":
            restated = toks[-1]
        else:
            found = None
    if found is None:
        size_only = re.search(r"\d+(\.\d+)?b[- ]param", raw.lower())
        return ModelMatch(None, "unknown", dtype, raw, (Remark("size_only"),) if size_only else ())
    name, match, kind, extra = found
    model = _model(name)
    notes = []
    if kind == "derivative" or match == "contains" or ctx:
        how = "derivative"
    else:
        how = "preset" if kind == "name" else "alias"
    if kind == "derivative":
        notes.append(Remark("derivative", (name,)))
    elif match == "contains":
        notes.append(Remark("contains", (name, " ".join(extra))))
    if ctx:
        notes.append(Remark("context_variant", (ctx[0].upper(), name)))
    if restated:
        notes.append(Remark("size", (restated.upper(),)))
    read = {w for w, _ in _DTYPE_WORDS} | {"moe", "dense"}
    kept = [g.strip() for g in groups if g.strip() and not re.fullmatch(r"-?\d+k", g.strip(), re.I)
            and not all(w in read or _SIZE.match(w) for w in re.split(r"[^a-z0-9.]+", g.lower()) if w)]
    if kept:
        notes.append(Remark("unused", tuple(kept)))
    if dtype and dtype != model.weight_dtype:
        notes.append(Remark("dtype", (dtype, model.weight_dtype)))
    return ModelMatch(model, how, dtype or model.weight_dtype, raw, tuple(notes))


def _match_model_tokens(toks: list[str]):
    """(preset, "exact"|"contains", kind, extra tokens) for the tokens of a model name, or None.
    "contains": a preset's name with a size ("llama 3.1 70b") inside a longer name, no other size."""
    for pat, name, kind in _model_patterns():
        if pat == toks:
            return name, "exact", kind, []
    for pat, name, kind in _model_patterns():
        if len(pat) < 2 or not _sizes(pat):
            continue  # a family word alone ("mixtral", "qwq") says nothing about the size
        i = _find_run(pat, toks)
        if i < 0:
            continue
        extra = toks[:i] + toks[i + len(pat):]
        if _sizes(extra):
            continue  # another size beside the matched one: a different model
        return name, "contains", kind, extra
    return None


# Method ---------------------------------------------------------------------------------------------



def _int(pattern: str, text: str) -> int | None:
    m = re.search(pattern, text)
    return _count(m.group(1)) if m else None


@reads_name
def parse_method(text) -> MethodMatch:
    """Method, draft model, k, tree depth and branching from what people write about speculation.

    >>> m = parse_method("EAGLE-3, tree depth 3, branching 4 (k=21 verified tokens)")
    >>> (m.method, m.k, m.draft_depth, m.branching)
    ('eagle3', 21, 3, 4)
    >>> parse_method("n-gram (prompt lookup), fixed k=3").method
    'ngram'
    """
    if not isinstance(text, str) or not text.strip():
        return MethodMatch(None, None, None, None, None, None)
    raw = text.strip()
    low = raw.lower()
    key = low.replace("-", "_").replace(" ", "_")
    method, parallel, notes = _method_named_in(low, key)
    k, depth, branching = _speculation_shape(low, notes)
    draft = _draft_named_in(raw, method, notes)
    notes += _draft_notes(raw, low, key, method, draft, k)
    return MethodMatch(method, draft, k, depth, branching, raw, tuple(notes), parallel)


def _method_named_in(low: str, key: str) -> tuple[str | None, bool, list[Remark]]:
    """(method, whether it drafts all k tokens in one pass, remarks on how it is costed) from the lowered
    text (`key`: the same with - and spaces as _): a method's key, else the first family named in it."""
    notes = []
    method = None
    parallel = False
    if key in _raw()["methods"] or key in _METHOD_KEYS:
        method = _METHOD_KEYS.get(key, key)
    elif re.search(r"(?<![a-z])p[\s_-]?eagle|parallel[\s_-]*(?:draft|eagle)", low):
        method, parallel = "eagle3", True  # P-EAGLE: an EAGLE-3 head drafting all k positions in one pass
        notes.append(Remark("p_eagle"))
    elif re.search(r"\bpard\b", low):
        method, parallel = "draft_model", True
        notes.append(Remark("pard"))
    elif re.search(r"d[\s_-]?flash|d[\s_-]?spark|block[\s_-]*diffusion", low):
        method, parallel = "eagle3", True
        notes.append(Remark("block_diffusion"))
    elif re.search(r"self[\s_-]*spec|magicdec", low) or (
            re.search(r"streamingllm|sparse[\s_-]*kv", low) and not re.search(r"draft\s+model", low)):
        method = "self_spec"
    elif re.search(r"\bmtp\b|nextn|multi[\s_-]*token[\s_-]*predict", low):
        method = "mtp"
    elif re.search(r"eagle[\s_-]*3", low):
        method = "eagle3"
    elif re.search(r"eagle", low):
        method = "eagle"
        if re.search(r"eagle[\s_-]*2", low):
            notes.append(Remark("eagle2"))
    elif re.search(r"medusa", low):
        method = "medusa"
    elif re.search(r"hydra", low):
        method = "medusa"
        notes.append(Remark("hydra"))
    elif re.search(r"\brest\b|retrieval", low):
        method = "ngram"
        notes.append(Remark("rest"))
    elif re.search(r"lookahead", low):
        method = "ngram"
        notes.append(Remark("lookahead"))
    elif re.search(r"suffix[\s_-]*(?:decod|tree|spec)", low):
        method = "ngram"
        notes.append(Remark("suffix"))
    elif re.search(r"n[\s_-]?gram|prompt[\s_-]*lookup|\bpld\b", low):
        method = "ngram"
    elif re.search(r"draft|\bsps\b|speculative\s+sampling|assisted", low):
        method = "draft_model"
    return method, parallel, notes


def _speculation_shape(low: str, notes: list[Remark]) -> tuple[int | None, int | None, int | None]:
    """(k, tree depth, branching) as the lowered text states them (None where it does not); a tree
    without a depth is remarked in `notes`."""
    k = _int(r"\bk\s*=\s*(\d+)", low) or _int(r"num_draft_tokens\s*[=:]?\s*(\d+)", low) \
        or _int(r"num_speculative_tokens\s*[=:]?\s*(\d+)", low) or _int(r"nextn\s*=\s*(\d+)", low) \
        or _int(r"(?:applied\s+)?for\s+(\d+)\s+draft\s+tokens", low) or _int(r"gamma\s*=\s*(\d+)", low)
    depth = _int(r"depth\s*[=:]?\s*(\d+)", low) or _int(r"num_steps\s*[=:]?\s*(\d+)", low)
    branching = _int(r"branching\s*[=:]?\s*(\d+)", low) or _int(r"topk\s*[=:]?\s*(\d+)", low)
    if re.search(r"\btree\b|same\s+tree", low) and depth is None:
        notes.append(Remark("tree_depth_unstated"))
    return k, depth, branching


def _draft_named_in(raw: str, method: str | None, notes: list[Remark]) -> str | None:
    """The draft model the text names ("draft model: X", or "X for Y" of a draft-model method with a size
    in X), its KV budget or anything else after "with" remarked in `notes`."""
    draft = None
    m = re.search(r"draft\s+model\s*:\s*(.+)$", raw, re.I)
    if m:
        draft = m.group(1).strip()
        kv = re.search(r"\s+with\s+(.+)$", draft, re.I)
        if kv:
            if re.search(r"streamingllm|sparse|budget", kv.group(1), re.I):
                notes.append(Remark("streaming_kv", (kv.group(1).strip(),)))
            else:
                notes.append(Remark("ignored", (kv.group(1).strip(),)))
            draft = draft[:kv.start()].strip()
        draft = re.sub(r"\s*\([^()]*\)\s*$", "", draft).strip() or None
    else:
        m = re.search(r"([\w./-]+)\s+for\s+[\w./-]+", raw)
        if method == "draft_model" and m and re.search(r"\d", m.group(1)):
            draft = m.group(1)
    return draft


def _draft_notes(raw: str, low: str, key: str, method: str | None, draft: str | None, k) -> list[Remark]:
    """Remarks on the draft: a draft-model method without one named, the draft head's checkpoint, relaxed
    acceptance, an MTP layer applied k times."""
    notes = []
    if method == "draft_model" and draft is None and key not in _raw()["methods"] and key not in _METHOD_KEYS:
        notes.append(Remark("draft_unnamed"))
    head = re.search(r"\(([\w.-]+/[\w.-]+)\)", raw)
    if head and method in ("eagle", "eagle3", "medusa"):
        dtype = _dtype_in(raw)
        notes.append(Remark("draft_head", (head.group(1), dtype.upper() if dtype else None)))
    if re.search(r"relaxed", low):
        notes.append(Remark("relaxed"))
    if method == "mtp" and k and k > 1:
        notes.append(Remark("mtp_chain"))
    return notes


# --- a GPU or model given by its numbers: the one builder presets and user input go through ---------

class Bound(NamedTuple):
    lo: float
    hi: float


# chosen: each range holds every preset with room for hardware not yet released and refuses what no
# device is (a typo: a bandwidth in TB/s written as GB/s, a memory in MB). Presets span 300-8,000 GB/s,
# 65-2,517 dense BF16 TFLOPS and 16-288 GB. Why each bound is where it is: errors.RANGE_REASONS, which the
# refusal (errors.OutOfRange) says.
GPU_BOUNDS: dict[str, Bound] = {
    "bandwidth_GBps": Bound(10, 100_000),
    "dense_bf16_TFLOPS": Bound(1, 100_000),
    "memory_GB": Bound(1, 10_000),
    "dense_fp8_TFLOPS": Bound(1, 200_000),
    "dense_fp4_TFLOPS": Bound(1, 400_000),
    "interconnect_GBps": Bound(1, 100_000),
}

# chosen: shapes of every released decoder (Llama 3.1 405B: 126 layers, hidden 16384, 128 heads;
# Gemma 3: vocab 262,144; DeepSeek-V3: 256 experts) with 8x room or more (errors.RANGE_REASONS: each one's why).
MODEL_BOUNDS: dict[str, Bound] = {
    "layers": Bound(1, 1_000),
    "hidden": Bound(16, 262_144),
    "heads": Bound(1, 4_096),
    "kv_heads": Bound(1, 4_096),
    "head_dim": Bound(4, 4_096),
    "intermediate": Bound(1, 1_048_576),
    "vocab": Bound(2, 4_194_304),
    "experts": Bound(0, 8_192),
    "params_B": Bound(1e-6, 100_000),
}


def _checked(values: dict, bounds: dict[str, Bound], what: str, said_as: dict[str, str]) -> None:
    """SpecModelError naming the key and its accepted range for a value that is missing, not a finite
    number or outside its bound (said_as: how the input names each field, e.g. "bandwidth_gbs")."""
    import math

    for key, bound in bounds.items():
        value = values.get(key)
        shown = said_as.get(key, key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise SpecModelError(f"{what}: {shown} must be a number in {bound.lo:g}-{bound.hi:g}, got {value!r}",
                                 key=shown)
        if not bound.lo <= value <= bound.hi:
            raise OutOfRange(what, shown, value, key, bound.lo, bound.hi)


def build_gpu(name: str, values: dict, what: str = "GPU", said_as: dict[str, str] | None = None) -> GPU:
    """A GPU from its fields (a preset's entry or a spec's numbers), each checked against GPU_BOUNDS."""
    said_as = said_as or {}
    for key in ("bandwidth_GBps", "dense_bf16_TFLOPS", "memory_GB"):
        if values.get(key) is None:
            raise SpecModelError(f"{what}: {said_as.get(key, key)} is missing (accepted "
                                 f"{GPU_BOUNDS[key].lo:g}-{GPU_BOUNDS[key].hi:g})", key=said_as.get(key, key))
    _checked(values, GPU_BOUNDS, what, said_as)
    return GPU(name=name, **{k: v for k, v in values.items() if k in _GPU_FIELDS and k != "name"})


def build_model(name: str, values: dict, what: str = "model", said_as: dict[str, str] | None = None) -> Model:
    """A Model from its fields (a preset's entry or a config.json read by model/custom.py), each shape
    checked against MODEL_BOUNDS and against each other."""
    said_as = said_as or {}
    _checked(values, MODEL_BOUNDS, what, said_as)
    fields_ = {k: v for k, v in values.items() if k in _MODEL_FIELDS and k != "name"}
    if fields_.get("kv_heads", 1) > fields_.get("heads", 1):
        raise SpecModelError(f"{what}: {said_as.get('kv_heads', 'kv_heads')} = {fields_['kv_heads']} is more than "
                             f"the {fields_['heads']} attention heads (accepted 1-{fields_['heads']})")
    experts, top = fields_.get("experts", 0), fields_.get("experts_per_token", 0)
    if experts and not 1 <= top <= experts:
        raise SpecModelError(f"{what}: {said_as.get('experts_per_token', 'experts_per_token')} = {top} must be "
                             f"1-{experts} (the routed experts)")
    return Model(name=name, **fields_)
