"""What the name readers did, in words: the sentences under a GPU, model or method text that
specmodel.model.presets read (`parse_hardware`, `parse_model`, `parse_method` return labels and values,
`Remark`s; this module writes them once for the runs review, the CLI and the tests).

>>> from specmodel.model.presets import parse_hardware, parse_method
>>> hardware_note(parse_hardware("2xH200"))
"H200 from '2xH200'; 2 GPUs; TP not stated: taken as the GPU count (2)"
>>> method_note(parse_method("Hydra"))
"'Hydra' -> medusa; Hydra (sequentially dependent draft heads) costed as Medusa"
"""

from __future__ import annotations

from specmodel.model.presets import HardwareMatch, MethodMatch, ModelMatch, Remark

# What a GPU spec (model.custom.gpu_from_spec) that does not say gets, as --help and docs/names.md state it.
GPU_SPEC_DEFAULTS = ("fp8_tflops: none (FP8 weights run at the BF16 rate), fp4_tflops: none (FP4 runs at the FP8 "
                     "rate, else BF16), interconnect: PCIe at interconnect_gbs=32 (PCIe 4.0 x16, one direction; "
                     "used only at --tp > 1), like: H100 SXM (the preset whose engine kernel choices it shares: "
                     "packed GQA verify; like=L40S for an Ampere/Ada GPU), name: Custom GPU; a spec whose three "
                     "numbers are a preset's takes that preset's for all of these but the name")

# -- hardware ---------------------------------------------------------------------------------------


def hardware_remark(r: Remark) -> str:
    """One assumption of parse_hardware in words."""
    if r.code == "variant":
        name, siblings = r.args
        return f"no variant named: read as {name} (not {' or '.join(siblings)})"
    if r.code == "memory_variant":
        stated, name, memory_GB = r.args
        return f"{stated} GB stated, but the {name} preset has {memory_GB:g} GB: no preset for that variant"
    if r.code == "ep_unsized":
        (ep,) = r.args
        return f"expert parallelism without a size: taken as {ep}, the TP group" if ep else \
            "expert parallelism without a size"
    if r.code == "tp_from_count":
        return f"TP not stated: taken as the GPU count ({r.args[0]})"
    raise ValueError(f"no words for the hardware remark {r.code!r}")


def hardware_note(m: HardwareMatch) -> str:
    """What parse_hardware read and assumed, for a person ("H200 from '2xH200'; 2 GPUs; TP not stated: ...")."""
    if m.raw is None:
        return "no hardware named"
    if m.gpu is None:
        said = "GPU not stated" if m.said == "not stated" else "no GPU preset recognised"
        parts = [f"{said} in '{m.raw}'"]
    else:
        parts = [f"{m.gpu.name} from '{m.raw}'"]
    if m.count is not None:
        parts.append(f"{m.count} GPU{'s' if m.count != 1 else ''}")
    if m.tp_stated:
        parts.append(f"TP {m.tp} (stated)")
    if m.ep_stated:
        parts.append(f"EP {m.ep} (stated)")
    return "; ".join(parts + [hardware_remark(r) for r in m.remarks])


# -- model ------------------------------------------------------------------------------------------


def model_remark(r: Remark) -> str:
    """One assumption or dropped part of parse_model in words."""
    a = r.args
    words = {
        "derivative": lambda: f"a known derivative of {a[0]} (same architecture)",
        "contains": lambda: f"read as a derivative of {a[0]}: '{a[1]}' is not part of the preset's name",
        "context_variant": lambda: f"context-extended variant ({a[0]}) of {a[1]}: same weights",
        "size": lambda: f"'{a[0]}' read as the model's size",
        "unused": lambda: "not used: " + ", ".join(f"({g})" for g in a),
        "dtype": lambda: f"{a[0]} weights (from the name; the released checkpoint is {a[1]})",
    }
    if r.code not in words:
        raise ValueError(f"no words for the model remark {r.code!r}")
    return words[r.code]()


def model_not_found(m: ModelMatch) -> str:
    """Why parse_model found no preset: "it gives a size but no model name", or "" when it does not say."""
    return "it gives a size but no model name" if any(r.code == "size_only" for r in m.remarks) else ""


def model_note(m: ModelMatch) -> str:
    """What parse_model read ("'Llama-3-70B-Instruct' -> Llama 3 70B (alias of Llama 3 70B)") and assumed."""
    if m.raw is None:
        return "no model named"
    if m.model is None:
        why = model_not_found(m)
        return f"'{m.raw}' is not a preset nor a known derivative of one" + (f": {why}" if why else "")
    name = m.model.name
    what = {"preset": "preset", "alias": f"alias of {name}", "derivative": f"derivative of {name}"}[m.how]
    notes = [model_remark(r) for r in m.remarks]
    return f"'{m.raw}' -> {name} ({what})" + (": " + "; ".join(notes) if notes else "")


# -- method -----------------------------------------------------------------------------------------

METHOD_REMARKS = {
    "p_eagle": "parallel drafting (P-EAGLE): one draft pass for all k tokens (vLLM blog 2026-03-13, P-EAGLE)",
    "pard": "PARD (parallel draft model, arXiv:2504.18583): one draft-model pass for all k tokens",
    "block_diffusion": "block-diffusion drafter (DFlash, z-lab: Block Diffusion for Flash Speculative Decoding; "
                       "DSpark): one pass drafts a block of k tokens from the target's features, costed as one "
                       "EAGLE-3-sized head pass (its extra layers are not)",
    "eagle2": "EAGLE-2 (dynamic draft tree) costed as EAGLE",
    "hydra": "Hydra (sequentially dependent draft heads) costed as Medusa",
    "rest": "REST drafts from a retrieval datastore: no draft model on the GPU, costed as n-gram",
    "lookahead": "Lookahead decoding drafts from an n-gram pool built by Jacobi iterations: no draft model, "
                 "costed as n-gram (its extra lookahead branches in the verify pass are not)",
    "suffix": "suffix decoding (arXiv:2411.04975; vLLM/Arctic Inference): a CPU suffix-tree proposer with "
              "a depth chosen per step, costed as n-gram (no GPU draft work); k is its largest depth",
    "tree_depth_unstated": "a tree whose depth is not stated",
    "draft_unnamed": "draft model not named in the method text",
    "relaxed": "relaxed (lossy) acceptance",
    "mtp_chain": "the MTP layer applied k times in a chain (one pass per draft token)",
}


def method_remark(r: Remark) -> str:
    """One costing choice or assumption of parse_method in words."""
    if r.code in METHOD_REMARKS:
        return METHOD_REMARKS[r.code]
    if r.code == "streaming_kv":
        return f"the draft reads a StreamingLLM KV budget, not the whole context ('{r.args[0]}')"
    if r.code == "ignored":
        return f"ignored: '{r.args[0]}'"
    if r.code == "draft_head":
        head, dtype = r.args
        return f"draft head {head}" + (f" in {dtype}" if dtype else "")
    raise ValueError(f"no words for the method remark {r.code!r}")


def method_remarks(m: MethodMatch) -> str:
    """The remarks of a recognised method reading, "; "-joined ("" when none)."""
    return "; ".join(method_remark(r) for r in m.remarks)


def method_note(m: MethodMatch) -> str:
    """What parse_method read ("'EAGLE-3, k=4' -> eagle3 (k 4)"), how it is costed and what was assumed."""
    if m.raw is None:
        return "no method named"
    if m.method is None:
        return f"no known speculation method in '{m.raw}'"
    shape = ", ".join(f"{n} {v}" for n, v in (("k", m.k), ("depth", m.draft_depth), ("branching", m.branching))
                      if v is not None)
    remarks = method_remarks(m)
    return f"'{m.raw}' -> {m.method}" + (f" ({shape})" if shape else "") + (f"; {remarks}" if remarks else "")
