"""A GPU or a model given by its numbers rather than a preset's name: a GPU spec
("bandwidth_gbs=1792,tflops=500,memory_gb=96", or a JSON/YAML file with those keys) and a Hugging Face
config.json. Both are turned into the fields of `presets.GPU` / `presets.Model` and built by the same
`presets.build_gpu` / `presets.build_model` that build every preset, so a spec or config with a
preset's numbers is that preset under another name.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from functools import cache

from specmodel.numbers import read_number
from specmodel.errors import OutOfRange, SpecModelError
from specmodel.files import load_json, read_file
from specmodel.text import clean_name
from specmodel.model.presets import (DRAFT_SIZE_RATIO, GPU, GPU_BOUNDS, MODEL_BOUNDS, Model, build_gpu, build_model,
                                     find_gpu, find_model, gpu_names, model_names)

# A GPU spec's keys and the GPU fields they set. The first three are required.
GPU_SPEC_KEYS = {"bandwidth_gbs": "bandwidth_GBps", "tflops": "dense_bf16_TFLOPS", "memory_gb": "memory_GB",
                 "fp8_tflops": "dense_fp8_TFLOPS", "fp4_tflops": "dense_fp4_TFLOPS",
                 "interconnect_gbs": "interconnect_GBps"}
GPU_SPEC_TEXT_KEYS = ("name", "interconnect", "like")
# The three required numbers as a run file's columns and a page link's parameters name them (the sidebar's
# Custom GPU boxes are bound to these).
GPU_SPEC_COLUMNS = {"bandwidth_gbs": "gpu_bandwidth_gbs", "tflops": "gpu_tflops", "memory_gb": "gpu_memory_gb"}
# A spec that names no `like` preset runs the kernels an H100 does (vLLM packs the GQA group in verify on
# Hopper, Blackwell and Instinct; give like=L40S for an Ampere or Ada GPU, where it does not).
DEFAULT_KERNELS_LIKE = "H100 SXM"
# published (PCIe 4.0 specification): x16, one direction; what a spec that names no interconnect gets
# (it only matters at --tp > 1), the same figure roofline assumes for a GPU without one.
SPEC_INTERCONNECT_GBPS = 32.0
DEFAULT_GPU_NAME = "Custom GPU"
# chosen: a spec's numbers within 1% of a preset's are that preset's (a datasheet's 362.05 TFLOPS written 362,
# 3.35 TB/s written 3350); where two presets are that close (GB300 and MI355X), the nearer one.
SAME_NUMBERS_REL = 0.01
# chosen: a spec or config.json is a few kilobytes (DeepSeek-V3's config.json is 1.7 KB); 1 MB refuses
# a weights file or a log given by mistake before it is parsed.
MAX_SPEC_BYTES = 1_000_000


def _read_mapping(path: str, what: str) -> dict:
    data = read_file(path, MAX_SPEC_BYTES, expected=what)
    return _parse_mapping(data, path, what, yaml=path.lower().endswith((".yaml", ".yml")))


def _parse_mapping(data: bytes | str, where: str, what: str, yaml: bool = False) -> dict:
    """The object a file's bytes (or a pasted text) hold: JSON, or YAML where `yaml`; SpecModelError saying
    where (`where`: the path, or how a page names the input) and what was expected."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SpecModelError(f"{where}: not a text file; give {what}") from None
    if yaml:
        import yaml as pyyaml

        try:
            doc = pyyaml.safe_load(data)
        except pyyaml.YAMLError as exc:
            raise SpecModelError(f"{where}: not valid YAML ({str(exc).splitlines()[0]})") from None
    else:
        try:
            doc = load_json(data)
        except json.JSONDecodeError as exc:
            raise SpecModelError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                                 f"give {what}") from None
    if not isinstance(doc, dict):
        raise SpecModelError(f"{where}: expected {what} (an object of keys and values), got {type(doc).__name__}")
    return doc


def _spec_pairs(text: str, said_as: str) -> dict:
    values = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        if not eq:
            raise SpecModelError(f"{said_as}: '{clean_name(part, 40)[0]}' is not key=value; keys: "
                                 f"{', '.join([*GPU_SPEC_KEYS, *GPU_SPEC_TEXT_KEYS])}")
        values[key.strip().lower()] = value.strip()
    return values


def gpu_from_spec(spec: str | dict, said_as: str = "--gpu-spec", named: dict[str, str] | None = None) -> GPU:
    """A GPU from "bandwidth_gbs=…,tflops=…,memory_gb=…[,name=…]", a path to a JSON/YAML file with
    those keys, or a dict of them (the sidebar's boxes, a run file's columns). Unknown keys, missing or
    out-of-range numbers raise SpecModelError naming the key and its accepted range, its `key` set to the
    key as the input names it (`named`: spec key -> the input's own name, e.g. a CSV column). A spec whose
    three numbers are a preset's takes that preset's unstated fields (kernels, interconnect, FP8/FP4
    rates), so it predicts what the preset predicts."""
    named = named or {}
    if isinstance(spec, str):
        spec = _spec_pairs(spec, said_as) if "=" in spec else _read_mapping(spec.strip(), "a GPU spec")
    unknown = [k for k in spec if k not in GPU_SPEC_KEYS and k not in GPU_SPEC_TEXT_KEYS]
    if unknown:
        raise SpecModelError(f"{said_as}: unknown key '{clean_name(str(unknown[0]), 40)[0]}'; keys: "
                             f"{', '.join([*GPU_SPEC_KEYS, *GPU_SPEC_TEXT_KEYS])}", key=str(unknown[0]))
    values: dict = {}
    for key, field in GPU_SPEC_KEYS.items():
        if key not in spec or spec[key] in (None, ""):
            continue
        try:
            values[field] = read_number(spec[key])
        except (TypeError, ValueError):
            bound, shown = GPU_BOUNDS[field], named.get(key, key)
            raise SpecModelError(f"{said_as}: {shown} must be a number in {bound.lo:g}-{bound.hi:g}, "
                                 f"got '{clean_name(str(spec[key]), 40)[0]}'", key=shown) from None
    if spec.get("interconnect"):
        values["interconnect"] = clean_name(str(spec["interconnect"]), 40)[0]
    like = find_gpu(str(spec["like"])) if spec.get("like") else None
    values = {**_unstated(values, like), **values}
    name = clean_name(str(spec.get("name") or DEFAULT_GPU_NAME), 60)[0] or DEFAULT_GPU_NAME
    same = _preset_with_numbers(values)
    # a spec with a preset's numbers takes that preset's kernels, interconnect and FP8/FP4 rates where it does
    # not state them (_unstated); its source names the preset
    source = f"given by {said_as}" + (f"; the numbers of {same.name}" if same and not like else "")
    return build_gpu(name, {**values, "source": source}, said_as,
                     {v: named.get(k, k) for k, v in GPU_SPEC_KEYS.items()})


def spec_numbers(gpu: GPU) -> dict:
    """A GPU's three required numbers as a spec gives them ({"bandwidth_gbs": …, "tflops": …, "memory_gb": …})."""
    return {"bandwidth_gbs": float(gpu.bandwidth_GBps), "tflops": float(gpu.dense_bf16_TFLOPS),
            "memory_gb": float(gpu.memory_GB)}


def _unstated(values: dict, like: GPU | None) -> dict:
    """What a spec that does not state them gets: the fields of the preset with its three numbers (where no
    `like` names another), else PCIe at SPEC_INTERCONNECT_GBPS and the kernels of `like` or of
    DEFAULT_KERNELS_LIKE."""
    same = None if like else _preset_with_numbers(values)
    if same is None:
        return {"interconnect": "PCIe", "interconnect_GBps": SPEC_INTERCONNECT_GBPS,
                "kernels_like": like.name if like else DEFAULT_KERNELS_LIKE}
    return {"interconnect": same.interconnect, "interconnect_GBps": same.interconnect_GBps,
            "interconnect_topology": same.interconnect_topology, "vendor": same.vendor,
            "dense_fp8_TFLOPS": same.dense_fp8_TFLOPS, "dense_fp4_TFLOPS": same.dense_fp4_TFLOPS,
            "kernels_like": same.kernel_name}


def _preset_with_numbers(values: dict) -> GPU | None:
    """The preset whose bandwidth, dense BF16 TFLOPS and memory are the spec's, each within SAME_NUMBERS_REL:
    the nearest, the first listed among equals (None: none is)."""
    numbers = tuple(values.get(f) for f in ("bandwidth_GBps", "dense_bf16_TFLOPS", "memory_GB"))
    if any(not isinstance(x, float) or not math.isfinite(x) for x in numbers):
        return None
    near = [(sum(abs(a / b - 1) for a, b in zip(key, numbers)), i, g) for i, (key, g) in enumerate(_presets_by_numbers())
            if all(math.isclose(a, b, rel_tol=SAME_NUMBERS_REL) for a, b in zip(key, numbers))]
    return min(near, key=lambda t: t[:2])[2] if near else None


@cache
def _presets_by_numbers() -> tuple:
    """((bandwidth, TFLOPS, memory), GPU) of every preset, in the presets' order."""
    gpus = [find_gpu(name) for name in gpu_names()]
    return tuple(((g.bandwidth_GBps, g.dense_bf16_TFLOPS, g.memory_GB), g) for g in gpus)


# --- a model by its Hugging Face config.json --------------------------------------------------------

# torch_dtype (or dtype) of a checkpoint -> the weight dtype the model costs; a quantization_config's
# quant_method (and bits) overrides it.
CONFIG_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}
QUANT_DTYPES = {"fp8": "fp8", "fbgemm_fp8": "fp8", "mxfp4": "fp4", "nvfp4": "fp4", "modelopt": "fp8",
                "awq": "int4", "gptq": "int4", "bitsandbytes": "int4"}
# Config keys the model cannot represent (a traceback or a silently wrong cost otherwise).
UNSUPPORTED_KEYS = {"linear_num_key_heads": "hybrid linear attention (Gated DeltaNet)",
                    "ssm_cfg": "state-space layers", "mamba_d_state": "state-space layers",
                    "encoder_layers": "an encoder-decoder model"}


def _int(cfg: dict, key: str, what: str, default=None) -> int:
    value = cfg.get(key, default)
    if value is None:
        raise SpecModelError(f"{what}: '{key}' is missing: not a decoder model's config.json "
                             f"(expected hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, "
                             f"vocab_size)", key=key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value):
        raise SpecModelError(f"{what}: '{key}' must be a whole number, got {clean_name(repr(value), 40)[0]}", key=key)
    return int(value)


def _weight_dtype(cfg: dict, what: str) -> str:
    quant = cfg.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method"):
        method = str(quant["quant_method"]).lower()
        if method not in QUANT_DTYPES:
            raise SpecModelError(f"{what}: quantization_config.quant_method '{clean_name(method, 40)[0]}' is not "
                                 f"known; accepted {', '.join(QUANT_DTYPES)} (or remove it and give --weight-dtype)")
        return "int8" if QUANT_DTYPES[method] == "int4" and quant.get("bits") == 8 else QUANT_DTYPES[method]
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
    if str(dtype) not in CONFIG_DTYPES:
        raise SpecModelError(f"{what}: torch_dtype '{clean_name(str(dtype), 40)[0]}' is not a serving dtype; "
                             f"accepted {', '.join(CONFIG_DTYPES)} (set the dtype you serve at)")
    return CONFIG_DTYPES[str(dtype)]


def _moe_fields(cfg: dict, layers: int, what: str) -> dict:
    """Routed and shared experts: Mixtral (num_local_experts), Qwen (num_experts, moe_intermediate_size,
    shared_expert_intermediate_size, decoder_sparse_step, mlp_only_layers), DeepSeek/GLM
    (n_routed_experts, n_shared_experts, first_k_dense_replace)."""
    experts = next((cfg[k] for k in ("num_local_experts", "num_experts", "n_routed_experts") if cfg.get(k)), 0)
    if not experts:
        return {}
    experts = _int({"experts": experts}, "experts", what)
    width = _int(cfg, "moe_intermediate_size" if cfg.get("moe_intermediate_size") else "intermediate_size", what)
    shared = _int(cfg, "n_shared_experts", what, 0)
    if cfg.get("shared_expert_intermediate_size"):
        shared_width = _int(cfg, "shared_expert_intermediate_size", what)
        if shared_width % width:
            raise SpecModelError(f"{what}: shared_expert_intermediate_size {shared_width} is not a whole number of "
                                 f"experts of moe_intermediate_size {width}; the model costs shared experts "
                                 f"as experts of that width")
        shared = shared_width // width
    step = _int(cfg, "decoder_sparse_step", what, 1) or 1
    dense_only = cfg.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in dense_only):
        raise SpecModelError(f"{what}: 'mlp_only_layers' must be a list of layer numbers, got "
                             f"{clean_name(repr(dense_only), 40)[0]}", key="mlp_only_layers")
    dense_only = set(dense_only)
    first_dense = _int(cfg, "first_k_dense_replace", what, 0)
    moe_layers = sum(1 for i in range(layers)
                     if i >= first_dense and (i + 1) % step == 0 and i not in dense_only)
    return {"experts": experts, "experts_per_token": _int(cfg, "num_experts_per_tok", what),
            "moe_intermediate": width, "shared_experts": shared, "moe_layers": moe_layers}


def _attention_fields(cfg: dict, heads: int, hidden: int, layers: int, what: str) -> dict:
    """GQA (num_key_value_heads, head_dim), MLA (kv_lora_rank, qk_rope_head_dim, ...), sliding windows."""
    out = {"kv_heads": _int(cfg, "num_key_value_heads", what, heads) or heads}
    if cfg.get("kv_lora_rank"):
        rope, nope = _int(cfg, "qk_rope_head_dim", what), _int(cfg, "qk_nope_head_dim", what)
        out.update(attention="mla", kv_lora_rank=_int(cfg, "kv_lora_rank", what), qk_rope_head_dim=rope,
                   qk_nope_head_dim=nope, q_lora_rank=_int(cfg, "q_lora_rank", what, 0) or 0,
                   v_head_dim=_int(cfg, "v_head_dim", what), head_dim=rope + nope,
                   index_topk=_int(cfg, "index_topk", what, 0) or 0, index_heads=_int(cfg, "index_n_heads", what, 0) or 0,
                   index_head_dim=_int(cfg, "index_head_dim", what, 0) or 0)
        return out
    if not heads or hidden % heads and not cfg.get("head_dim"):
        raise SpecModelError(f"{what}: hidden_size {hidden} is not a multiple of num_attention_heads {heads} "
                             f"and head_dim is not given")
    out["head_dim"] = _int(cfg, "head_dim", what, hidden // max(heads, 1)) or hidden // heads
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) is not False else None
    if window:
        kinds = cfg.get("layer_types")
        windowed = (sum(1 for t in kinds if t == "sliding_attention") if isinstance(kinds, list)
                    else layers // 2 if cfg.get("model_type") == "gemma2" else layers)  # Gemma 2: every other layer
        out.update(sliding_window=_int(cfg, "sliding_window", what), sliding_window_layers=windowed)
    return out


def _with_params(model: Model) -> Model:
    """The model with params_B (and, for MoE, active_params_B) counted from its shapes: what every pass
    reads, every routed expert, and an untied input embedding (norms and biases are < 0.1%)."""
    embed = 0.0 if model.tied_embeddings else model.vocab * model.hidden
    total = model.always_read_params + model.routed_expert_params + embed
    active = None
    if model.is_moe:
        active = (model.always_read_params + embed
                  + model.moe_layers * model.experts_per_token * model.expert_params_per_layer) / 1e9
    return replace(model, params_B=round(total / 1e9, 3), active_params_B=None if active is None else round(active, 3))


def config_fields(cfg: dict, what: str) -> dict:
    """The Model fields a Hugging Face config.json states (params_B left to _with_params)."""
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        cfg = {**cfg["text_config"], **{k: v for k, v in cfg.items() if k in ("torch_dtype", "dtype")}}
    if cfg.get("is_encoder_decoder"):
        raise SpecModelError(f"{what}: is_encoder_decoder is true; only decoder-only models are accepted")
    for key, kind in UNSUPPORTED_KEYS.items():
        if cfg.get(key):
            raise SpecModelError(f"{what}: '{key}' describes {kind}, which this model cannot cost; "
                                 f"accepted: dense, GQA, MoE and MLA decoders")
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list) and set(map(str, kinds)) - {"full_attention", "sliding_attention"}:
        odd = sorted(set(map(str, kinds)) - {"full_attention", "sliding_attention"})[0]
        raise SpecModelError(f"{what}: layer_types has '{clean_name(odd, 40)[0]}' layers; accepted "
                             f"full_attention and sliding_attention")
    hidden, layers = _int(cfg, "hidden_size", what), _int(cfg, "num_hidden_layers", what)
    bound = MODEL_BOUNDS["layers"]
    if not bound.lo <= layers <= bound.hi:  # before the layers are walked (MoE, sliding windows): a huge count hung
        raise OutOfRange(what, "num_hidden_layers", layers, "layers", bound.lo, bound.hi)
    heads = _int(cfg, "num_attention_heads", what)
    if heads < 1:
        raise SpecModelError(f"{what}: num_attention_heads must be ≥ 1, got {heads}")
    fields = {"hidden": hidden, "layers": layers, "heads": heads, "vocab": _int(cfg, "vocab_size", what),
              "intermediate": _int(cfg, "intermediate_size", what),
              "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
              "max_context": _int(cfg, "max_position_embeddings", what, 0) or 0,
              "family": clean_name(str(cfg.get("model_type") or ""), 40)[0],
              "weight_dtype": _weight_dtype(cfg, what),
              "mtp_layers": _int(cfg, "num_nextn_predict_layers", what, 0) or 0,
              "default_draft": None, "params_B": 1.0}
    fields.update(_attention_fields(cfg, heads, hidden, layers, what))
    fields.update(_moe_fields(cfg, layers, what))
    return fields


# How a config.json names each Model field (messages name the file's key).
CONFIG_SAID_AS = {"hidden": "hidden_size", "layers": "num_hidden_layers", "heads": "num_attention_heads",
                  "kv_heads": "num_key_value_heads", "head_dim": "head_dim", "intermediate": "intermediate_size",
                  "vocab": "vocab_size", "experts": "num_experts", "experts_per_token": "num_experts_per_tok",
                  "params_B": "the parameter count (from the shapes, in billions)"}


def model_from_config(config: str | dict, said_as: str = "--target-config", name: str | None = None) -> Model:
    """A Model from a Hugging Face config.json (a path, or its parsed dict), built by presets.build_model
    as every preset is. Not a model config, a huge file or an architecture the model cannot cost raises
    SpecModelError naming the key and what is accepted."""
    path = None
    if isinstance(config, str):
        path = config.strip()
        config = _read_mapping(path, "a Hugging Face config.json")
    what = f"{said_as} {clean_name(path, 80)[0]}" if path else said_as
    fields = config_fields(config, what)
    if name is None:
        stem = path and os.path.splitext(os.path.basename(path))[0]
        if stem == "config":  # models/<name>/config.json: the folder names the model
            stem = os.path.basename(os.path.dirname(os.path.abspath(path)))
        named = config.get("_name_or_path") or stem
        name = clean_name(str(named or "custom model"), 60)[0] or "custom model"
    source = f"config.json given by {said_as}" + (f" ({clean_name(path, 80)[0]})" if path else "")
    model = build_model(name, {**fields, "source": source}, what, CONFIG_SAID_AS)
    return build_model(name, {**_with_params(model).__dict__}, what, CONFIG_SAID_AS)


def model_from_config_text(data: bytes | str, said_as: str, name: str | None = None,
                           unnamed: str = "custom model") -> Model:
    """A Model from the text of a Hugging Face config.json given without a path (a page's upload or paste),
    bounded as a file is (MAX_SPEC_BYTES) and read by model_from_config. Its name: `name` (an upload's
    file name), else the config's `_name_or_path`, else `unnamed`."""
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    if size > MAX_SPEC_BYTES:
        raise SpecModelError(f"{said_as}: {size / 1e6:.1f} MB, over the {MAX_SPEC_BYTES / 1e6:.0f} MB limit of a "
                             "config.json (one is a few kilobytes): give the model's config.json, not its weights "
                             "or a log")
    if not (data.strip() if isinstance(data, (str, bytes)) else data):
        raise SpecModelError(f"{said_as}: empty; give a Hugging Face config.json")
    config = _parse_mapping(data, said_as, "a Hugging Face config.json")
    named = name or config.get("_name_or_path") or unnamed
    return model_from_config(config, said_as, clean_name(str(named), 60)[0] or unnamed)


def draft_sharing_vocab(model: Model) -> str | None:
    """A draft preset to start from for a model given by its config.json, which names none: the smallest dense
    preset with the same vocabulary size (a draft must share its target's tokenizer) and at most
    1/DRAFT_SIZE_RATIO of its parameters; None where no preset is one."""
    found = [m for m in map(find_model, model_names()) if m.vocab == model.vocab and not m.is_moe
             and m.params_B <= model.params_B / DRAFT_SIZE_RATIO]
    return min(found, key=lambda m: m.params_B).name if found else None
