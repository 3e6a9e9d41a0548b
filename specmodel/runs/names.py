"""A row's names and settings as presets: free-text GPU, model, method, engine and dtype names matched
to the presets, the defaults where a row names none, and a remark for each fallback or guess.

This is the part of validation that depends on text only: a large file repeats the same few names
on every row, so each distinct combination is worked out once (names_of).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specmodel.numbers import number_or_none
from specmodel.bounds import MAX_NAME_TEXT, bounded_cache
from specmodel.text import clean_name
from specmodel.model import engines, presets
from specmodel.model.memory import DTYPES
from specmodel.runs.records import RunDefaults, RunRecord
from specmodel.words.names import hardware_remark, method_remarks, model_note

# The name parsers are pure functions of the text, and a large file repeats the same few GPU, model,
# method and engine names on every row: each distinct text is parsed once.
parse_hardware = bounded_cache(4096)(presets.parse_hardware)
parse_model = bounded_cache(4096)(presets.parse_model)
parse_method = bounded_cache(4096)(presets.parse_method)
parse_engine = bounded_cache(4096)(presets.parse_engine)
named_engine = bounded_cache(4096)(engines.named_engine)
engine_in_text = bounded_cache(4096)(engines.engine_in_text)
parse_dtype = bounded_cache(1024)(presets.parse_dtype)
cleaned_name = bounded_cache(16384)(clean_name)


@bounded_cache(1024)
def _default_draft(target) -> str | None:
    return target.default_draft if isinstance(target, presets.Model) else presets.find_model(target).default_draft


_NAME_KEYS = ("workload", "notes", "gpu", "target_model", "draft_model", "method")
_TEXT_KEYS = (*_NAME_KEYS, "engine", "weight_dtype", "_context")


@dataclass(frozen=True)
class Names:
    """What a row's names and settings come to (the part of validation that depends on text only)."""

    cleaned: tuple  # (key, name without control characters) for _NAME_KEYS present
    changed: tuple  # keys whose text had control characters removed
    method: str
    gpu_text: str | None
    gpu: str
    target_text: str | None
    target: str
    draft_text: str | None
    draft: str | None
    tp: int
    ep: int | None
    context: float
    weight_dtype: str | None
    engine: str | None
    method_depth: int | None
    method_branching: int | None
    fallbacks: tuple  # (kind, name as written) for presets that fell back
    remarks: tuple
    refused: tuple = ()  # ((reason, message), ...): names that match nothing or two things, no choice given
    parallel: bool = False  # the method drafts all k tokens in one pass



def names_of(v: dict, fmt: str, has_gpu_header: bool, tp, ep, context, defaults: RunDefaults,
             gpu_spec=None) -> Names:
    """What a row's values come to: each distinct combination is worked out once (a large file repeats
    the same few names on every row); values that cannot be hashed (JSON lists) are worked out as is.
    gpu_spec: the GPU the row gives by its numbers (runs.gpu_columns), which its gpu text only names."""
    key = (tuple(v.get(k) for k in _TEXT_KEYS), fmt, has_gpu_header, tp, ep, context, defaults, gpu_spec)
    try:
        hash(key)
    except TypeError:
        return _names.__wrapped__(*key)
    return _names(*key)


@bounded_cache(8192)
def _names(texts: tuple, fmt: str, has_gpu_header: bool, tp, ep, context, defaults: RunDefaults,
           gpu_spec=None) -> Names:
    v = dict(zip(_TEXT_KEYS, texts))
    rec = RunRecord("", None, fmt, v, {"gpu": "gpu"} if has_gpu_header else {})
    remarks: list[str] = []
    cleaned, changed = _clean(v)
    method_text = v.get("method")
    parsed_method = parse_method(method_text) if method_text not in (None, "") else None
    fallbacks = {"gpu": None, "target": None, "draft": None}
    refused: list[tuple[str, str]] = []
    method = _method(method_text, parsed_method, defaults, remarks)
    if parsed_method is not None and parsed_method.method is None and "method" not in defaults.explicit:
        refused.append(("method_unknown", f"method '{method_text}' is no speculation method this model knows "
                        f"({', '.join(presets.METHODS)}); {defaults.give('method')} to predict it as one"))
    gpu_text, gpu, hw = _gpu(rec, defaults, remarks, fallbacks, tp_given=tp is not None, spec=gpu_spec)
    target_text, target, target_match = _preset("model", v.get("target_model"), defaults.target,
                                                defaults.named("target"), remarks, "target")
    if target_text is not None and (target_match is None or target_match.model is None):
        fallbacks["target"] = target_text
    method, draft_text, draft = _draft(v, method, parsed_method, target, defaults, remarks, fallbacks)
    _refusals(v, None if gpu_spec else gpu_text, fallbacks, method, parsed_method, draft, defaults, refused)
    if gpu_text is None and gpu_spec is None:
        remarks.append(f"no GPU named: {gpu} ({defaults.named('gpu')})")
    tp, ep, context = _settings(v, hw, tp, ep, context, defaults, remarks)
    weight_dtype = _dtype_cell(rec, remarks)
    if weight_dtype is None:
        weight_dtype = target_match.weight_dtype if target_match is not None and target_match.model else None
    engine = _engine(rec, remarks)
    return Names(tuple(cleaned), tuple(changed), method, gpu_text, gpu, target_text, target, draft_text, draft, tp,
                 ep, context, weight_dtype, engine, parsed_method.draft_depth if parsed_method else None,
                 parsed_method.branching if parsed_method else None,
                 tuple((kind, name) for kind, name in fallbacks.items() if name is not None), tuple(remarks),
                 tuple(refused), bool(parsed_method.parallel) if parsed_method else False)


def _nearest(kind: str, text) -> str:
    near = presets.nearest_presets(kind, text)
    return f"nearest presets: {', '.join(near)}" if near else "no preset is near (see `python -m specmodel presets`)"


def _refusals(v: dict, gpu_text, fallbacks: dict, method: str, parsed_method, draft,
              defaults: RunDefaults, refused: list) -> None:
    """A name that matches no preset or two, or a draft-model run naming no draft, refuses the row
    unless the user chose that kind explicitly (RunDefaults.explicit): no silent fallback."""
    if "gpu" not in defaults.explicit:
        named = presets.gpus_named(gpu_text) if gpu_text else []
        if len(named) > 1:
            refused.append(("gpu_ambiguous", f"GPU '{gpu_text}' names {' and '.join(named)}: which one ran is not "
                            f"said; {defaults.give('gpu')} (or fix the cell) to predict it"))
        elif fallbacks.get("gpu") == "(empty)":
            refused.append(("gpu_missing", f"no GPU in this row's GPU column; {defaults.give('gpu')} to predict it"))
        elif fallbacks.get("gpu"):
            why = "says the GPU is not stated" if re.search(r"not\s+stated|unknown", str(gpu_text), re.I) else \
                f"is no preset; {_nearest('gpus', gpu_text)}"
            refused.append(("gpu_unknown", f"GPU '{gpu_text}' {why}; {defaults.give('gpu')} to predict it on one"))
    if fallbacks.get("target") and "target" not in defaults.explicit:
        refused.append(("target_unknown", f"target '{fallbacks['target']}' is no preset nor a known derivative of "
                        f"one; {_nearest('models', fallbacks['target'])}; {defaults.give('target')} to predict it as one"))
    if method == "draft_model" or (parsed_method is not None and parsed_method.method == "draft_model"):
        if fallbacks.get("draft") and "draft" not in defaults.explicit:
            refused.append(("draft_unknown", f"draft '{fallbacks['draft']}' is no preset; "
                            f"{_nearest('models', fallbacks['draft'])}; {defaults.give('draft')} to predict it with one"))
        elif parsed_method is not None and parsed_method.method == "draft_model" and not v.get("draft_model") \
                and not parsed_method.draft_model and "draft" not in defaults.explicit:
            refused.append(("draft_missing", f"'{v.get('method')}' names no draft model; {defaults.give('draft')} to "
                            f"predict it with one{f' (the default for this target is {draft})' if draft else ''}"))


def _clean(v: dict) -> tuple[list, list]:
    """Control characters out of the names, in place: ([(key, cleaned text)], [keys that changed])."""
    cleaned, changed = [], []
    for key in _NAME_KEYS:
        if v.get(key) not in (None, ""):
            text, was_changed = cleaned_name(str(v[key]), 500 if key == "notes" else 200)
            if was_changed:
                changed.append(key)
            v[key] = text
            cleaned.append((key, text))
    return cleaned, changed


def _method(method_text, parsed_method, defaults: RunDefaults, remarks: list[str]) -> str:
    if parsed_method is None:
        return defaults.method
    if parsed_method.method is None:
        remarks.append(f"method '{method_text}' is unknown: predicted as {defaults.method} ({defaults.named('method')})")
        return defaults.method
    said = method_remarks(parsed_method)
    if said:
        remarks.append(f"method: {said}")
    return parsed_method.method


def _gpu(rec: RunRecord, defaults: RunDefaults, remarks: list[str], fallbacks: dict, tp_given: bool = False,
         spec=None):
    """(GPU as written, preset, the hardware reading); notes a fallback in `fallbacks`. tp_given: the row
    has a tp column of its own (no "TP not stated" remark). spec: the GPU the row gives by its numbers,
    taken as it is (its text, if any, is only its name and may say a TP)."""
    if spec is not None:
        text = str(rec.values.get("gpu") or "").strip() or None
        remarks.append(f"GPU by its numbers: {spec.name}, {spec.bandwidth_GBps:g} GB/s, {spec.dense_bf16_TFLOPS:g} "
                       f"TFLOPS, {spec.memory_GB:g} GB")
        return text, spec, parse_hardware(text) if text else None
    gpu_text, gpu, hw = _preset("GPU", rec.values.get("gpu"), defaults.gpu, defaults.named("gpu"), remarks,
                                tp_given=tp_given)
    if gpu_text is not None and (hw is None or hw.gpu is None) and gpu == defaults.gpu and \
            not any(r.startswith(f"GPU '{gpu_text}' matched") for r in remarks):
        fallbacks["gpu"] = gpu_text
    elif gpu_text is None and rec.fmt == "csv" and "gpu" in rec.headers:
        fallbacks["gpu"] = "(empty)"
    return gpu_text, gpu, hw


def _draft(v: dict, method: str, parsed_method, target: str, defaults: RunDefaults, remarks: list[str],
           fallbacks: dict) -> tuple[str, str | None, str | None]:
    """(method, draft as written, draft preset): the draft named, else the default one; n-gram without any."""
    draft_default = defaults.draft if defaults.method == "draft_model" and defaults.draft else None
    if target != defaults.target or not draft_default:
        draft_default = _default_draft(target)
    draft_named = v.get("draft_model") or (parsed_method.draft_model if parsed_method else None)
    if method == "draft_model":
        draft_text, draft, draft_match = _preset("model", draft_named, draft_default, defaults.named("draft"),
                                                 remarks, "draft")
        if draft_text is not None and (draft_match is None or draft_match.model is None):
            fallbacks["draft"] = draft_text
        elif draft_text is None and draft and parsed_method is not None:
            remarks.append(f"draft not named in '{v.get('method')}': {draft}, the default draft of {target}")
    else:
        draft_text, draft = draft_named, None
    if method == "draft_model" and draft is None:
        remarks.append(f"no draft model named and no default for {target}: predicted as n-gram")
        method = "ngram"
    return method, draft_text, draft


def _settings(v: dict, hw, tp, ep, context, defaults: RunDefaults, remarks: list[str]):
    """(tp, ep, context): the row's columns, else what the hardware text or workload says, else the defaults."""
    tp_text = hw.tp if hw is not None else None
    if tp is not None and tp_text is not None and tp != tp_text:
        remarks.append(f"tp column {tp} used; the hardware text says TP {tp_text}")
    tp = tp or tp_text or defaults.tp
    ep = ep if ep is not None else (hw.ep if hw is not None else None)
    if context is None:
        from_text = context_from_text(v.get("workload"))
        if from_text is not None:
            context = from_text
            remarks.append(f"context {context} tokens read from the workload '{v.get('workload')}'")
        else:
            context = defaults.context_len
    return tp, ep, context


def _preset(kind: str, raw, default: str | None, said: str, remarks: list[str], role: str = "model",
            tp_given: bool = False):
    """(user's text, preset name, the reading): free text matched to a preset (a derivative of a
    known architecture counts, with a remark), else the default with a remark naming it as `said`.
    A GPU text's "TP not stated" is no remark where the row has a tp column of its own (tp_given)."""
    if raw in (None, ""):
        return None, default, None
    text = str(raw).strip()
    if kind == "GPU":
        hw = parse_hardware(text)
        by_numbers, as_near = (None, ()) if hw.gpu else _gpu_by_numbers(text)
        found = hw.gpu or by_numbers
        if found is not None and hw.gpu is None:
            remarks.append(f"GPU '{text}' matched to {found.name} by its memory and bandwidth"
                           + (f" ({', '.join(as_near)} as near; their compute differs)" if as_near else ""))
        elif found is not None:
            assumed = [hardware_remark(r) for r in hw.remarks if r.code == "variant"
                       or (r.code == "ep_unsized" and r.args[0])
                       or (r.code == "tp_from_count" and r.args[0] != 1 and not tp_given)]
            if assumed:
                remarks.append(f"GPU '{text}': " + "; ".join(assumed))
        stated = hw.said == "not stated" or any(r.code == "tp_from_count" for r in hw.remarks)
        reading, why = hw, "GPU not stated" if stated else "not recognised"
    else:
        reading = parse_model(text)
        found = reading.model
        note = model_note(reading)
        if found is not None and (reading.how == "derivative" or ": " in note):
            remarks.append(f"{role} {note}")
        why = "not recognised" if not note.endswith("name") else note.split(": ")[-1]
    if found is not None:
        return text, found.name, reading
    remarks.append(f"{kind} '{text}' is not a preset ({why}): predicted with {default} ({said})")
    return text, default, reading



@bounded_cache(1024)
def _gpu_by_numbers(text: str):
    """A GPU described by numbers ("48GB GPU, ~860 GB/s"): (the preset within 10% on both, nearest
    first, or None; the other presets as near, for the remark: L40S and L40 share 48 GB at 864 GB/s)."""
    bw = re.search(r"(\d+(?:\.\d+)?)\s*(T|G)B/s", text, re.I | re.A)  # digits 0-9 (the one number rule)
    mem = re.search(r"(\d+(?:\.\d+)?)\s*GB(?!/)", text, re.I | re.A)
    if not bw or not mem:
        return None, ()
    bandwidth = float(bw.group(1)) * (1000 if bw.group(2).upper() == "T" else 1)
    memory = float(mem.group(1))

    def distance(g):
        return abs(g.bandwidth_GBps / bandwidth - 1) + abs(g.memory_GB / memory - 1)

    hits = sorted((g for g in map(presets.find_gpu, presets.gpu_names())
                   if abs(g.bandwidth_GBps / bandwidth - 1) <= 0.1 and abs(g.memory_GB / memory - 1) <= 0.1),
                  key=distance)  # a stable sort: among equals, the preset listed first
    if not hits:
        return None, ()
    return hits[0], tuple(g.name for g in hits[1:] if distance(g) == distance(hits[0]))


# chosen: a token count of a workload text past this reads as this (refused as a context by check_setting):
# a 500-digit "prefill N tokens" was an OverflowError
_MOST_TOKENS = 10 ** 12


def _tokens_count(number: str, kilo: str) -> int:
    value = number_or_none(number)
    return _MOST_TOKENS if value is None else min(_MOST_TOKENS, round(value * (1024 if kilo else 1)))


def context_from_text(text) -> int | None:
    """Tokens in the KV cache per sequence, from a workload description: "prefill 32000 tokens" ->
    32000; "ISL/OSL=1K/2K", "ISL 3200 / OSL 800", "16K input / 1K output" or "1K in / 1K out" ->
    input + half the output (K = 1024); ">4k tokens context" -> 4096. None when the text says
    nothing of the kind."""
    return _context_from_str(text) if isinstance(text, str) else None


def lengths_from_text(text) -> tuple[int | None, int | None]:
    """(input tokens, output tokens) a workload text states ("ISL 3200 / OSL 800", "16K input / 1K
    output", "ISL/OSL=1K/2K", "1K in / 1K out", "input 3200, output 800"); None for what it does not."""
    return _lengths_from_str(text[:MAX_NAME_TEXT]) if isinstance(text, str) else (None, None)


_N = r"([0-9]+(?:\.[0-9]+)?)\s*(k?)"


@bounded_cache(4096)
def _lengths_from_str(text: str) -> tuple[int | None, int | None]:
    low = text.lower()
    n = _N
    m = re.search(r"isl\s*/\s*osl\s*[=:]?\s*" + n + r"\s*/\s*" + n, low) or \
        re.search(n + r"\s*(?:tokens?\s+)?(?:in|input)\s*[/,;]\s*" + n + r"\s*(?:tokens?\s+)?(?:out|output)\b", low)
    if m:
        return _tokens_count(m.group(1), m.group(2)), _tokens_count(m.group(3), m.group(4))
    isl = re.search(r"\b(?:isl|input(?:\s+len(?:gth)?)?|prompt(?:\s+len(?:gth)?)?)\s*[=:]?\s*" + n + r"\b", low)
    osl = re.search(r"\b(?:osl|output(?:\s+len(?:gth)?)?|max[_\s-]*tokens)\s*[=:]?\s*" + n + r"\b", low)
    return (_tokens_count(isl.group(1), isl.group(2)) if isl else None,
            _tokens_count(osl.group(1), osl.group(2)) if osl else None)


@bounded_cache(4096)
def _context_from_str(text: str) -> int | None:
    low = text.lower()
    n = _N
    m = re.search(r"prefill(?:\s+length)?\s*(?:of\s*|=\s*)?" + n + r"\s*tokens?", low) or \
        re.search(n + r"\s*(?:tokens?\s+)?prefill", low)
    if m:
        return _tokens_count(m.group(1), m.group(2))
    isl, osl = _lengths_from_str(text)
    if isl is not None and osl is not None:
        return isl + osl // 2
    m = re.search(r">?\s*" + n + r"\s*tokens?\s+(?:of\s+)?context", low)
    if m:
        return _tokens_count(m.group(1), m.group(2))
    return None


def _dtype_cell(rec: RunRecord, remarks: list[str]) -> str | None:
    raw = rec.values.get("weight_dtype")
    if raw in (None, ""):
        return None
    dtype = parse_dtype(str(raw))
    if dtype is None:
        remarks.append(f"weight dtype '{raw}' is not one of {', '.join(DTYPES)}: the model's own used")
    return dtype


_HF_ID = re.compile(r"\b[\w.-]+/[\w.-]*[a-z][\w.-]*", re.I)


def _engine(rec: RunRecord, remarks: list[str]) -> str | None:
    """The serving engine: the engine column, else the first one named in the method, notes or
    reference columns ("vLLM V1", "in SGLang", "TensorRT-LLM")."""
    raw = rec.values.get("engine")
    if raw not in (None, ""):
        engine = named_engine(str(raw)) or parse_engine(str(raw).replace(" ", ""))  # "SGLang v0.5.9" keeps its version
        if engine is None:
            remarks.append(f"engine '{raw}' is not one of {', '.join(presets.ENGINES)}: left empty")
        return engine
    for key, where in (("method", "the method"), ("notes", "the notes"), ("_context", "the reference columns")):
        # a checkpoint id ("lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B") names who trained a draft, not the
        # engine that ran it: such ids are left out of the search
        engine = engine_in_text(_HF_ID.sub(" ", str(rec.values.get(key) or "")))
        if engine is not None:
            remarks.append(f"engine {engine} named in {where}")
            return engine
    gpu = presets.parse_hardware(str(rec.values.get("gpu") or "")).gpu
    if gpu is not None and gpu.vendor == "Google":  # a TPU, however it is written ("v6e-8", "Trillium")
        remarks.append("engine xla: on a TPU decoding runs as one compiled XLA program")
        return "xla"
    return None


