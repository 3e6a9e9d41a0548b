"""What a run that does not state its draft length or its acceptance is assumed to have.

Two tables in data/spec_defaults.json, every entry with its source:
- default_k: the draft length an engine (or a method's reference implementation) uses when none is
  given (vLLM's MTP: the checkpoint's MTP layers; SGLang's auto-chosen EAGLE tree; Spec-Bench's PLD);
- acceptance: published acceptance figures per method and, where known, model family and dataset;
- k_spread: where there is no default, the k values an engine or method commonly runs at (vLLM's docs'
  EAGLE examples; Spec-Bench SpS's schedule): a row with none is predicted at a stated central k and
  its band spans all of them;
- default_draft: the draft a benchmark's scripts use when a row names none (Spec-Bench SpS: vicuna-68m);
- unmodelled: methods whose rows are refused, with the reason (REST, Lookahead).

A value taken from here is an assumption: the run reader marks the row ("k assumed", "assumed
acceptance") and the band around its prediction is widened by ASSUMED_ALPHA_SPREAD. A method with no
entry has no default: its rows are refused, not given another method's acceptance.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from specmodel.bounds import bounded_cache
from specmodel.model import acceptance

_DATA = Path(__file__).with_name("data") / "spec_defaults.json"

# How far an assumed per-token acceptance is taken to be off, each way, for the band: the published
# figures this table holds for one method span about this much across datasets (SpecDecode-Bench's
# per-dataset spread, Spec-Bench's per-task columns).
ASSUMED_ALPHA_SPREAD = 0.15


@cache
def _raw() -> dict:
    return json.loads(_DATA.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class DefaultK:
    k: int
    draft_depth: int | None
    branching: int | None
    source: str


@dataclass(frozen=True)
class AssumedAcceptance:
    alpha: float  # the per-token acceptance the entry comes to (at the row's context for a curve)
    label: str  # which published figure
    source: str
    differs: tuple[str, ...]  # what the row has that the figure does not: "another model family", ...
    # how the figure was read for this engine's convention, where it had to be: (published tokens per step,
    # why they count every step, tokens per step with a proposal, the engine's proposal rate); words.converted_words
    converted: tuple = ()


def default_k(method: str, engine: str | None, family: str | None, mtp_layers: int | None,
              text: str = "", method_text: str = "") -> DefaultK | None:
    """The documented default draft length for a row that gives none, or None where there is none."""
    for e in _raw()["default_k"]:
        if not _matches(e, method, engine, text, method_text) or ("family" in e and e["family"] != family):
            continue
        k = e["k"]
        if k == "mtp_layers":
            if not mtp_layers:
                continue
            k = int(mtp_layers)
        return DefaultK(int(k), e.get("draft_depth"), e.get("branching"), e["source"])
    return None


def _matches(e: dict, method: str, engine: str | None, text: str, method_text: str) -> bool:
    """Whether a table entry applies to a row: its method, engine, `when` (row text) and `only` (method text)."""
    engine_name = (engine or "").split()[0].lower() if engine else ""
    return e["method"] == method and ("engine" not in e or e["engine"] == engine_name) and \
        ("when" not in e or bool(re.search(e["when"], text, re.I))) and \
        ("only" not in e or bool(re.search(e["only"], method_text, re.I)))


def benchmark_proposal_rate(method: str, engine: str | None, text: str = "",
                            method_text: str = "") -> tuple[float, str] | None:
    """(share of steps that verify drafts, source) where a benchmark's own code fixes it (Spec-Bench's PLD:
    every step, a placeholder where nothing matches), else None."""
    for e in _raw().get("proposal_rate", []):
        if _matches(e, method, engine, text, method_text):
            return float(e["rate"]), e["source"]
    return None


@dataclass(frozen=True)
class KSpread:
    k: int  # the central k a row with none is predicted at
    ks: tuple[int, ...]  # every k it may have run at: the band spans them
    source: str


def k_spread(method: str, engine: str | None, text: str = "", method_text: str = "") -> KSpread | None:
    """The k values a method is commonly run at where it has no documented default, or None."""
    for e in _raw().get("k_spread", []):
        if _matches(e, method, engine, text, method_text):
            return KSpread(int(e["k"]), tuple(int(k) for k in e["ks"]), e["source"])
    return None


@dataclass(frozen=True)
class DefaultDraft:
    draft: str  # a model preset name
    source: str


def default_draft(method: str, text: str = "", method_text: str = "") -> DefaultDraft | None:
    """The draft model a benchmark's own scripts use for a row that names none, or None."""
    for e in _raw().get("default_draft", []):
        if _matches(e, method, None, text, method_text):
            return DefaultDraft(e["draft"], e["source"])
    return None


@bounded_cache(4096)  # a large file repeats the same few method names: each matched once
def unmodelled(method_text: str) -> str | None:
    """Why a method the model does not cost is refused (REST, Lookahead), or None."""
    for e in _raw().get("unmodelled", []):
        if re.search(e["match"], method_text or "", re.I):
            return e["reason"]
    return None


def _entry_alpha(e: dict, context_len: float | None, proposal_rate: float = 1.0) -> tuple[float, tuple]:
    """(α, how the figure was converted). A mean accepted length that counts the steps without a
    proposal (`counts_steps_without_proposal`) is, for an engine that verifies drafts only where a
    proposal was made (proposal_rate < 1), first read back to the steps with one, so that the model's
    1 + rate · (E − 1) gives the published tokens per step at the published k again."""
    if "alpha" in e:
        return float(e["alpha"]), ()
    if "survival" in e:
        return float(acceptance.from_survival(e["survival"]).alpha), ()
    if "mean_accept_len" in e:
        tokens, k, said = float(e["mean_accept_len"]), int(e["k"]), ()
        if e.get("counts_steps_without_proposal") and proposal_rate < 1.0:
            tokens = acceptance.tokens_with_proposal(tokens, proposal_rate, k)
            said = (e["mean_accept_len"], e["counts_steps_without_proposal"], tokens, proposal_rate)
        return float(acceptance.from_tokens_per_step(tokens, k).alpha), said
    curve = e["alpha_by_context"]
    ctx = float(context_len or curve[0][0])
    return float(min(curve, key=lambda point: abs(point[0] - ctx))[1]), ()


def assumed_acceptance(method: str, family: str | None = None, workload: str = "",
                       context_len: float | None = None, proposal_rate: float = 1.0) -> AssumedAcceptance | None:
    """The published figure nearest to a row (same method required; then same family and dataset
    preferred; else the method's default entry), or None where the method has none. `proposal_rate`:
    the share of steps the row's engine verifies drafts on (scenario.default_proposal_rate)."""
    best, best_score = None, -1
    for e in _raw()["acceptance"]:
        if e["method"] != method:
            continue
        fam = family is not None and e.get("family") == family
        data = bool(e.get("dataset")) and bool(re.search(e["dataset"], workload or "", re.I))
        score = 4 * fam + 2 * data + bool(e.get("default"))
        if score > best_score:
            best, best_score = e, score
    if best is None:
        return None
    fam = family is not None and best.get("family") == family
    data = bool(best.get("dataset")) and bool(re.search(best["dataset"], workload or "", re.I))
    differs = []
    if not fam:
        differs.append(f"another model family ({best.get('family')})")
    if not data:
        differs.append("another dataset" if best.get("dataset") else "no stated dataset")
    alpha, converted = _entry_alpha(best, context_len, proposal_rate)
    return AssumedAcceptance(alpha, best["label"], best["source"], tuple(differs), converted)


def method_default_acceptance(method: str, proposal_rate: float = 1.0) -> AssumedAcceptance | None:
    """A method's own default acceptance (the entry marked default), for the What-if page."""
    for e in _raw()["acceptance"]:
        if e["method"] == method and e.get("default"):
            alpha, converted = _entry_alpha(e, None, proposal_rate)
            return AssumedAcceptance(alpha, e["label"], e["source"], (), converted)
    return None


def alpha_range(alpha: float) -> tuple[float, float]:
    """The α an assumed acceptance may really be, for the band: ± ASSUMED_ALPHA_SPREAD within [0.01, 0.99]."""
    return max(0.01, alpha - ASSUMED_ALPHA_SPREAD), min(0.99, alpha + ASSUMED_ALPHA_SPREAD)
