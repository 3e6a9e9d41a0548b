"""Serving engines' own overheads (data/engines.json, a source per engine): what a step costs beyond
its kernels. Per forward pass of the target (scheduling, input preparation, sampling), per
sequence per step, per draft pass (launch and sampling of the proposer), per speculative step and
per sequence per speculative step (rejection, bookkeeping), and n-gram matching on the CPU.

Engines by version: an engine named with a version ("SGLang v0.5.9", "vllm 0.14.1") runs the
behaviour of that version where it costs time. Today that is the overlap (async) scheduler: it hides
a step's CPU work behind the GPU's previous step, and versions that turn it off for speculative
decoding but keep it for plain decoding make the speculative step pay that work in series
(data/engines.json `overlap`, with the engine files and tags it comes from); and the verify pass's
attention kernel where a version's default backend does not pack the GQA group (`verify_unpacked`:
vLLM from 0.19.0 on Instinct GPUs); and a first draft pass run outside CUDA graphs (`eager_draft`: SGLang's
EAGLE draft-extend pass before v0.4.7). An engine named without a version is predicted as the newest
release read behaves, says so, and the band spans each version that behaves otherwise."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

from packaging.version import Version

from specmodel.errors import SpecModelError
from specmodel.bounds import bounded_cache, reads_name

_DATA = Path(__file__).with_name("data") / "engines.json"
DEFAULT_ENGINE = "vllm"
# A GPU run whose engine is not named is predicted with DEFAULT_ENGINE's overheads; its remark names
# these other serving engines (a research code base's own loop, e.g. Hugging Face in eager PyTorch,
# costs more than any of them).
UNNAMED_ENGINE_OTHERS = ("sglang", "trtllm")
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
    version: Version | None = None  # as named ("sglang 0.5.9"); None: not named
    overlap: dict | None = None  # data/engines.json `overlap`: versions from which the scheduler overlaps
    # n-gram: True where every sequence verifies k drafts every step, matched or not (padded), so its
    # acceptance length already averages over steps without a match; False where a sequence without
    # a match verifies nothing and the acceptance length counts only steps with a proposal.
    ngram_drafts_every_step: bool = False
    # data/engines.json `verify_unpacked`: GPUs and versions whose default attention backend runs the
    # verify pass (q > 1) in a kernel that reads each KV head once per query head (vLLM >= 0.19 on ROCm)
    verify_unpacked: dict | None = None
    # data/engines.json `acceptance_caveats`: versions, GPUs and methods where the engine's drafter is
    # known to accept less than the method does elsewhere (not a time cost: the acceptance to enter)
    acceptance_caveats: tuple = ()
    # data/engines.json `spec_running_cap`: requests the engine runs at once while speculating when its
    # limit flag is not given (SGLang: 48), with the methods it applies to, the flag and the source
    spec_running_cap: dict | None = None
    # an attention backend named in the engine text ("vllm 0.19.0 ROCM_AITER_FA": --attention-backend), one
    # of verify_unpacked's `backend` and `packed_backends`; None: the version's default
    attention_backend: str | None = None
    # data/engines.json `eager_draft`: versions whose first draft pass after a verify runs outside CUDA
    # graphs (SGLang before v0.4.7: the EAGLE draft-extend pass), the methods and that pass's eager cost
    eager_draft: dict | None = None
    # data/engines.json `max_num_seqs`: the sequences the engine runs at once when its limit flag is not given
    # (vLLM: 1024 or 256 by GPU memory), both arms alike
    max_num_seqs: dict | None = None
    # data/engines.json `off_cost`: what a step costs with speculation configured but switched off (a k = 0
    # band of a per-batch schedule), a share of the plain step by batch, from the version the band exists in
    # (specmodel.model.off_state reads it)
    off_cost: dict | None = None

    # A Scenario holds its engine: it prints as the engine text (key, version, backend) and is hashed by
    # that text (the data behind it is the preset's own: dicts, not hashable), the cache key's only text.
    KEY_FIELDS: ClassVar[tuple[str, ...]] = ("name", "attention_backend")

    def __str__(self) -> str:
        return engine_text(self)

    def __repr__(self) -> str:  # short: a Scenario's repr (a test's failure) would print every source
        return f"{type(self).__name__}({str(self)!r})"

    def __hash__(self) -> int:
        return hash((self.name, self.version, self.attention_backend))

    def running_cap(self, method: str) -> int | None:
        """Requests this engine runs at once with `method` speculating unless its flag raises the limit
        (a version named before the cap's `since` keeps the limit as given; one not named runs as the newest)."""
        cap = self.spec_running_cap
        if not cap or method not in cap["methods"] or self.older_than(cap.get("since")):
            return None
        return int(cap["requests"])

    def default_running_limit(self, gpu_name: str, memory_GB: float) -> int | None:
        """Sequences this engine version runs at once on this GPU, plain or speculative, when its limit flag
        is not given (data/engines.json `max_num_seqs`: vLLM 1024 on a GPU of 70 GiB or more, not an A100 from
        v0.9.0, else 256); None for an engine whose limit follows from memory (the KV fit binds first)."""
        m = self.max_num_seqs
        if not m:
            return None
        large = (memory_GB * 1e9 >= m["large_memory_GiB"] * 2 ** 30 and not self.older_than(m["large_from"])
                 and not (not self.older_than(m["not_large_from"]) and _on(m["not_large"], gpu_name)))
        return int(m["large"] if large else m["default"])

    def running_limit_flags(self, gpu_name: str, memory_GB: float, requests: int) -> list[str]:
        """The flag that lets `requests` sequences run at once where this engine's default limit is lower
        (vLLM's --max-num-seqs), for both servers; [] where none is needed."""
        limit = self.default_running_limit(gpu_name, memory_GB)
        return [self.max_num_seqs["flag"], str(requests)] if limit is not None and requests > limit else []

    def running_cap_flags(self, method: str, requests: int) -> list[str]:
        """The launch flag and value that let `requests` run at once while speculating, where the engine's
        own limit is lower (SGLang's --max-running-requests); [] where none is needed."""
        cap = self.running_cap(method)
        return [self.spec_running_cap["flag"], str(requests)] if cap is not None and requests > cap else []

    @property
    def backend_flags(self) -> list[str]:
        """--attention-backend NAME where the engine text names one (both servers of a comparison)."""
        return ["--attention-backend", self.attention_backend] if self.attention_backend else []

    @property
    def version_text(self) -> str | None:
        return str(self.version) if self.version else None

    def _at_least(self, since: str | None) -> bool:
        return since is not None and self.version is not None and self.version >= parse_version(since)

    def older_than(self, since: str | None) -> bool:
        """True for a version named and older than `since` (a version not named runs as the newest read)."""
        return since is not None and self.version is not None and self.version < parse_version(since)

    def eager_first_pass_ms(self, method: str) -> float:
        """What the first draft pass of a speculative step costs beyond the preset's draft_pass_ms because
        this version runs it outside CUDA graphs (data/engines.json `eager_draft`: SGLang before v0.4.7,
        its EAGLE draft-extend pass); 0 elsewhere and for a version not named (the newest read graphs it)."""
        e = self.eager_draft
        if not e or method not in e["methods"] or not self.older_than(e["first_pass_graphed_since"]):
            return 0.0
        return max(float(e["eager_pass_ms"]) - self.draft_pass_ms, 0.0)

    def serial_cpu(self, method: str) -> tuple[float, float]:
        """(ms, ms per sequence) a speculative step pays in series because this version overlaps plain
        decoding's CPU work with the GPU but not speculative decoding's; (0, 0) where both or
        neither overlap, and for a version not named (see other_behaviours)."""
        if not self.overlap or self.version is None:
            return 0.0, 0.0
        plain = self._at_least(self.overlap.get("plain_since"))
        spec = self._at_least(self.overlap.get("spec_since", {}).get(method))
        if plain and not spec:
            return float(self.overlap["hidden_ms"]), float(self.overlap["hidden_seq_us"]) * 1e-3
        return 0.0, 0.0

    @property
    def read_through(self) -> str | None:
        """The newest release whose scheduling was read for this preset (data/engines.json)."""
        return (self.overlap or {}).get("read_through")

    @property
    def read_from(self) -> str | None:
        """The oldest release whose scheduling was read for this preset (data/engines.json)."""
        return (self.overlap or {}).get("read_from")

    @property
    def before_read(self) -> bool:
        """True for a version older than any release read: the notes say so and the band spans the other
        behaviours (other_behaviours)."""
        return bool(self.version and self.read_from and self.version < parse_version(self.read_from))

    @property
    def unread(self) -> bool:
        """A version outside the releases read (before the oldest or after the newest)."""
        return self.beyond_read or self.before_read

    @property
    def beyond_read(self) -> bool:
        """True for a version newer than any release read for this preset: predicted as the newest read."""
        return bool(self.version and self.read_through and self.version > parse_version(self.read_through))

    def variant(self, text: str) -> "Engine":
        """This engine at one of other_behaviours' texts ("sglang 0.5.10"): what find_engine reads from it."""
        return _engine(self.name, parse_version(text), attention_backend(self.name, text))

    def other_behaviours(self, method: str, gpu_name: str = "", attention: str = "gqa") -> list[str]:
        """For an engine named without a version, or with one outside the releases read: the newest
        version of each other behaviour (the serial CPU term for this method, a verify kernel that does
        not pack the GQA group on this GPU, a first draft pass outside CUDA graphs; where this one pays
        any, also the release that pays none), as engine texts ("sglang 0.5.10", "vllm 0.18.99"), newest
        first; the band spans them. [] for a version named and read."""
        if (self.version is not None and not self.unread) or not (self.overlap or self.verify_unpacked):
            return []
        overlap = self.overlap or {}
        edges = [overlap.get("spec_since", {}).get(method), overlap.get("plain_since")]
        if self.eager_draft and method in self.eager_draft["methods"]:
            edges.append(self.eager_draft["first_pass_graphed_since"])
        if self.verify_unpacked and not self.attention_backend and _engine(self.name, Version("999")).unpacks_verify(
                gpu_name, attention):  # the default backend's kernel matters here (a backend named fixes it)
            edges.append(self.verify_unpacked.get("since"))
        oldest = parse_version(overlap.get("read_from") or "0")  # a version before any read runs as the oldest
        candidates = {v for e in edges if e for v in (parse_version(e), _just_before(parse_version(e)))
                      if v and v >= oldest}
        mine, free = self._behaviour(method, gpu_name, attention), ((0.0, 0.0), True, 0.0)  # free: pays none
        seen, out = {mine, free} if mine == free else {mine}, []
        for version in sorted(candidates, reverse=True):
            behaviour = _engine(self.name, version, self.attention_backend)._behaviour(method, gpu_name, attention)
            if behaviour not in seen:
                seen.add(behaviour)
                out.append(engine_text(_engine(self.name, version, self.attention_backend)))
        return out

    def _behaviour(self, method: str, gpu_name: str, attention: str) -> tuple:
        return self.serial_cpu(method), not self.unpacks_verify(gpu_name, attention), self.eager_first_pass_ms(method)

    def unpacks_verify(self, gpu_name: str, attention: str = "gqa") -> bool:
        """True where this version's default attention backend on this GPU runs verify passes in a
        kernel that reads each KV head once per query head although the GPU has packed kernels
        (data/engines.json `verify_unpacked`: vLLM from 0.19.0 on Instinct GPUs, ROCM_ATTN)."""
        u = self.verify_unpacked
        if not u or attention in u.get("except_attention", ()):
            return False
        if self.attention_backend:  # named: its own kernel at any version (packed_backends pack the group)
            return self.attention_backend == u["backend"] and _on(u["gpus"], gpu_name)
        return self._from_on(u["since"], u["gpus"], gpu_name, u.get("read_through", ""))

    def _from_on(self, since: str, gpus, gpu_name: str, newest_read: str | None = None) -> bool:
        """True for this version from `since` on, on a GPU whose name holds one of `gpus`; a version not
        given runs as the newest release read (as the overlap terms do)."""
        newest = self.read_through if newest_read is None else newest_read
        version = self.version if self.version is not None else parse_version(newest or "")
        return bool(version and version >= parse_version(since) and _on(gpus, gpu_name))

    def acceptance_caveat(self, method: str, gpu_name: str) -> dict | None:
        """The caveat (data/engines.json `acceptance_caveats`) on an acceptance entered for this method on this
        GPU with this version (one not given runs as the newest release read), else None."""
        return next((c for c in self.acceptance_caveats if method in c["methods"] and (
            self._from_on(c["since"], c["gpus"], gpu_name) if not self.attention_backend  # the version's default
            else self.attention_backend == c.get("drafter_backend")  # named: the drafter runs it too (v0.19.0)
            and _on(c["gpus"], gpu_name))), None)

    def verify_query_tile(self, gpu_name: str, attention: str = "gqa") -> int:
        """Query rows the unpacked verify kernel computes per program (0: as many as the pass has)."""
        return int(self.verify_unpacked.get("query_tile", 0)) if self.unpacks_verify(gpu_name, attention) else 0

    def packs_verify(self, gpu_name: str, attention: str = "gqa") -> bool:
        low = gpu_name.lower()
        packed = "*" in self.packed_verify_gpus or any(w.lower() in low for w in self.packed_verify_gpus)
        return packed and not self.unpacks_verify(gpu_name, attention)


@cache
def _raw() -> dict:
    return {k: v for k, v in json.loads(_DATA.read_text()).items() if not k.startswith("_")}


def engine_names() -> list[str]:
    return list(_raw())


@reads_name
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


def engine_in_text(text) -> str | None:
    """The first serving engine a free text names, with its version only where the version follows the
    engine's name ("as in SGLang v0.5.9 (not vLLM)" -> "sglang 0.5.9", "vLLM v0.19.0 ROCm" -> "vllm
    0.19.0"); a number elsewhere in the text is not taken for the engine's version.

    >>> engine_in_text("Serving: vLLM v0.10.1 (some v0.11.1), H100"), engine_in_text("vLLM v0-era (2024)")
    ('vllm 0.10.1', 'vllm')
    """
    key = parse_engine(text)
    if key is None:
        return None
    low = text.lower()
    start = min(m.end() for pat in [dict(PATTERNS)[key]] for m in [re.search(pat, low)] if m)
    m = _VERSION.match(low[start:start + 24].lstrip(" -:"))
    return f"{key} {m.group(1)}" if m else key


_VERSION = re.compile(r"(?<![\w.])v?(\d{1,3}(?:\.\d{1,4}){1,3})(?:\.post\d+|rc\d+)?(?![\w.])", re.I)


@reads_name
def parse_version(text) -> Version | None:
    """The release version in a text, its release numbers only ("SGLang v0.5.9" -> 0.5.9, "vllm 0.10.1.post1"
    -> 0.10.1), compared as packaging's Version (0.14 is 0.14.0).

    >>> parse_version("SGLang v0.5.9"), parse_version("vLLM 0.14"), parse_version("vLLM V1")
    (<Version('0.5.9')>, <Version('0.14')>, None)
    """
    if not isinstance(text, str):
        return None
    m = _VERSION.search(text[:200])
    return Version(m.group(1)) if m else None


def _just_before(version: Version) -> Version | None:
    """The last release before `version` (0.5.11 -> 0.5.10, 0.14.0 -> 0.13.99)."""
    v = list(version.release) + [0] * (3 - len(version.release))
    for i in (2, 1, 0):
        if v[i] > 0:
            return Version(".".join(map(str, v[:i] + [v[i] - 1] + [99] * (2 - i))))
    return None


def normalise_engine(text) -> str | None:
    """An engine key from a key or a text naming it; None if none is named."""
    if isinstance(text, str) and text.strip().lower() in _raw():
        return text.strip().lower()
    return parse_engine(text)


def find_engine(name: str | None) -> Engine:
    key = normalise_engine(name) if name else DEFAULT_ENGINE
    if key is None or key not in _raw():
        raise SpecModelError(f"unknown engine '{name}'; choose one of: {', '.join(engine_names())}")
    return _engine(key, parse_version(name) if isinstance(name, str) else None, attention_backend(key, name))


def _on(gpus, gpu_name: str) -> bool:
    """True on a GPU whose name holds one of the words `gpus` (data/engines.json's GPU lists)."""
    low = gpu_name.lower()
    return any(w.lower() in low for w in gpus)


def backends(key: str) -> tuple[str, ...]:
    """The attention backends an engine text may name for this engine (data/engines.json verify_unpacked:
    the default kernel's `backend` and the `packed_backends`)."""
    u = _raw().get(key, {}).get("verify_unpacked") or {}
    return tuple(([u["backend"]] if u.get("backend") else []) + list(u.get("packed_backends", ())))


def attention_backend(key: str | None, text) -> str | None:
    """The attention backend a text names for the engine `key` ("vllm 0.19.0 --attention-backend rocm_aiter_fa"
    -> "ROCM_AITER_FA"), else None.

    >>> attention_backend("vllm", "vLLM 0.19.0 ROCM_AITER_FA"), attention_backend("vllm", "vllm 0.19.0")
    ('ROCM_AITER_FA', None)
    """
    if not key or not isinstance(text, str):
        return None
    words = set(re.findall(r"[a-z0-9_]+", text[:200].lower()))
    return next((b for b in backends(key) if b.lower() in words), None)


def _engine(key: str, version: Version | None, backend: str | None = None) -> Engine:
    # cached by the version as written: Version("0.14") == Version("0.14.0"), and an engine's text keeps its own
    return _engine_as_written(key, None if version is None else str(version), backend)


# chosen: a process meets a few engine versions; the version is a user's text (0.5.9, 123.4567.8.9, ...), so an
# unbounded cache grew by one Engine per distinct version any file or link named, on a server shared by everyone
@bounded_cache(256)
def _engine_as_written(key: str, version_text: str | None, backend: str | None) -> Engine:
    e = _raw()[key]
    version = None if version_text is None else Version(version_text)
    return Engine(key, e["label"], *(float(e[f]) for f in ("step_ms", "seq_us", "draft_pass_ms", "draft_seq_us",
                                                            "spec_step_ms", "spec_seq_us", "ngram_seq_us")),
                  e["source"], tuple(e.get("packed_verify_gpus", ("*",))), float(e.get("tree_step_ms", 0.0)),
                  float(e.get("tree_token_us", 0.0)), version, e.get("overlap"),
                  bool(e.get("ngram_drafts_every_step", False)), e.get("verify_unpacked"),
                  tuple(e.get("acceptance_caveats", ())), e.get("spec_running_cap"), backend, e.get("eager_draft"),
                  e.get("max_num_seqs"), e.get("off_cost"))


def engine_preset(key: str) -> Engine:
    """The engine preset of a data/engines.json key ("vllm"), no version: looked up by its key, no text read."""
    return _engine(key, None)


def with_version(engine: str, version_text) -> str:
    """An engine key and a version as a user typed it ("v0.5.9", "0.19.0 ROCM_AITER_FA") as one engine text
    ("sglang 0.5.9", "vllm 0.19.0 ROCM_AITER_FA"); the engine alone where the text holds neither."""
    return engine_text(_engine(engine, parse_version(version_text or ""), attention_backend(engine, version_text)))


@reads_name
def named_engine(text) -> str | None:
    """The engine a text names, with its version where the text gives one ("SGLang v0.5.9" ->
    "sglang 0.5.9", "vLLM V1" -> "vllm"); None when no engine is named."""
    key = normalise_engine(text)
    if key is None:
        return None
    return engine_text(_engine(key, parse_version(text), attention_backend(key, text)))


def engine_text(engine: Engine) -> str:
    """The engine as a Scenario takes it: its key, its version and its attention backend where named."""
    return " ".join(filter(None, (engine.name, engine.version_text, engine.attention_backend)))
