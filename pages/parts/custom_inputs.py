"""The sidebar's GPU by its numbers and models by their config.json: a "Custom GPU" choice with its three
numbers and an optional name, and a "config.json" choice for the target and the draft (an upload or a
paste). Both are read by the same path as `--gpu-spec` and `--target-config` / `--draft-config`
(specmodel.model.custom), with its messages. The GPU's numbers and name travel in the page link (their
boxes are bound to it); a config.json does not (the link box says so)."""

from __future__ import annotations

import os

import streamlit as st

from pages.parts.streamlit_mode import write_bound_url
from pages.parts.text import no_links
from specmodel import SpecModelError
from specmodel.model import presets
from specmodel.model.custom import (GPU_SPEC_COLUMNS, draft_sharing_vocab, gpu_from_spec, model_from_config_text,
                                    spec_numbers)

CUSTOM_GPU = "Custom GPU"  # the GPU selectbox's choice after the presets
FROM_CONFIG = "From a config.json"  # the target's and the draft's choice after the presets
GPU_SAID_AS = "Custom GPU in the sidebar"  # how the spec's messages name this input ("…: tflops is missing …")
GPU_NAME = "gpu_name"  # the name box's key (and link parameter)
# The boxes, in order: (spec key, label, help); each box's key and link parameter is GPU_SPEC_COLUMNS[spec key].
GPU_BOXES = (("bandwidth_gbs", "Memory bandwidth, GB/s", "From the datasheet (an H100 SXM has 3,350)."),
             ("tflops", "Dense BF16 TFLOPS", "Dense (not sparse) BF16 tensor TFLOPS (an H100 SXM has 989)."),
             ("memory_gb", "Memory, GB", "Memory per GPU (an H100 SXM has 80)."))
_LAST_PRESET = "gpu_last_preset"  # the preset chosen before Custom GPU: its numbers fill the empty boxes
_FILLED = "gpu_boxes_filled"  # the boxes filled from that preset on this run: their values go into the address bar


def remember_preset_gpu() -> None:
    """After the GPU selectbox: the preset in use, whose numbers a switch to Custom GPU starts from."""
    gpu = st.session_state.get("gpu")
    if gpu and gpu != CUSTOM_GPU:
        st.session_state[_LAST_PRESET] = gpu


def gpu_choice_changed() -> None:
    """The GPU selectbox's on_change: a switch to Custom GPU with its boxes empty fills them with the numbers
    of the preset chosen before, so the page shows what it showed until a number is changed."""
    ss = st.session_state
    if ss.get("gpu") != CUSTOM_GPU or any(ss.get(GPU_SPEC_COLUMNS[key]) is not None for key, *_ in GPU_BOXES):
        return
    for key, value in spec_numbers(presets.find_gpu(ss.get(_LAST_PRESET) or "L40S")).items():  # a preset's name
        ss[GPU_SPEC_COLUMNS[key]] = value
    ss[_FILLED] = True


def gpu_boxes(sb) -> None:
    """With Custom GPU chosen: its three number boxes and a name box, bound to the link, and what is wrong
    with them (the --gpu-spec message: the key and its accepted range)."""
    if st.session_state.get("gpu") != CUSTOM_GPU:
        return
    for key, label, help_text in GPU_BOXES:  # no min or max: a zero, negative or absurd number gets the spec's message
        sb.number_input(f"{label} ({key})", value=None, step=1.0, key=GPU_SPEC_COLUMNS[key], bind="query-params",
                        placeholder="required", help=help_text)
    sb.text_input("Name (optional)", key=GPU_NAME, bind="query-params", max_chars=60, placeholder="Custom GPU",
                  help="How the verdicts and tables name this GPU.")
    if st.session_state.pop(_FILLED, False):  # filled through session state: the address bar gets them too
        for key, *_ in GPU_BOXES:
            write_bound_url(GPU_SPEC_COLUMNS[key], f"{st.session_state[GPU_SPEC_COLUMNS[key]]:g}")
    try:
        gpu = sidebar_gpu()
    except SpecModelError as exc:
        sb.error(no_links(str(exc)))
    else:
        sb.caption(no_links(f"{gpu.name}: {gpu.bandwidth_GBps:g} GB/s, {gpu.dense_bf16_TFLOPS:g} TFLOPS, "
                            f"{gpu.memory_GB:g} GB; engine kernels as on {gpu.kernel_name}. The link carries them."))



def sidebar_gpu():
    """The sidebar's GPU: a preset's name, or the Custom GPU its boxes give (SpecModelError naming the
    number that is missing or out of range, as --gpu-spec says it)."""
    ss = st.session_state
    choice = ss.get("gpu", "L40S")
    if choice != CUSTOM_GPU:
        return choice
    spec = {key: ss.get(GPU_SPEC_COLUMNS[key]) for key, *_ in GPU_BOXES}
    spec["name"] = ss.get(GPU_NAME) or None
    return gpu_from_spec(spec, GPU_SAID_AS)


def config_boxes(sb, role: str) -> None:
    """With "From a config.json" chosen for `role` ("target" or "draft"): an upload and a paste box for its
    Hugging Face config.json, and what is wrong with it (the --target-config message: the key and what is
    accepted)."""
    if st.session_state.get(role) != FROM_CONFIG:
        return
    sb.file_uploader(f"The {role}'s config.json", type=["json"], key=f"{role}_config_file", max_upload_size=1,
                     help="The model's config.json from its Hugging Face repository (at most 1 MB): dense, GQA, "
                          "MoE and MLA decoders; the dtype from torch_dtype or quantization_config.")
    sb.text_area(f"…or paste the {role}'s config.json", key=f"{role}_config_text", height=90,
                 placeholder='{"hidden_size": 4096, "num_hidden_layers": 32, ...}')
    try:
        model = sidebar_model(role)
    except SpecModelError as exc:
        sb.error(no_links(str(exc)))
    else:
        sb.caption(no_links(f"{model.name}: {model.params_B:g}B parameters, {model.layers} layers, "
                            f"{model.weight_dtype} weights. A page link does not carry it."))


def sidebar_model(role: str):
    """The sidebar's target or draft: a preset's name, or the Model its config.json gives (the upload, else
    the paste); SpecModelError where the config.json is missing or is not one the model can cost."""
    ss = st.session_state
    choice = ss.get(role)
    if choice != FROM_CONFIG:
        return choice
    said_as = f"the {role}'s config.json"
    upload = ss.get(f"{role}_config_file")
    if upload is not None:
        stem = os.path.splitext(upload.name)[0]
        return model_from_config_text(upload.getvalue(), f"{said_as} ({upload.name[:80]})",
                                      None if stem.lower() == "config" else stem, f"custom {role}")
    text = ss.get(f"{role}_config_text") or ""
    if not text.strip():
        raise SpecModelError(f"The {role} model is set to come from a config.json, and none is given: upload or "
                             f"paste it in the sidebar (a page link does not carry it)")
    return model_from_config_text(text, said_as, None, f"custom {role}")


def config_draft() -> str | None:
    """The draft the sidebar starts from for a target given by its config.json: a preset sharing its vocabulary
    (None where none does, or the config.json is not read yet)."""
    try:
        target = sidebar_model("target")
    except SpecModelError:
        return None
    return draft_sharing_vocab(target) if isinstance(target, presets.Model) else None


def configs_in_use() -> list[str]:
    """The roles ("target", "draft") the sidebar takes from a config.json: what a page link cannot carry."""
    ss = st.session_state
    draft = ss.get("method", "draft_model") == "draft_model" and ss.get("draft") == FROM_CONFIG
    return [role for role, used in (("target", ss.get("target") == FROM_CONFIG), ("draft", draft)) if used]


def sidebar_choices(s) -> dict:
    """The sidebar's GPU, target, method and draft for a run reader's defaults (runs.RunDefaults): preset
    names, and a Custom GPU or a config.json's model as itself (no preset has its name)."""
    ss = st.session_state
    given = {"gpu": ss.get("gpu") == CUSTOM_GPU, "target": ss.get("target") == FROM_CONFIG,
             "draft": ss.get("draft") == FROM_CONFIG and s.draft is not None}
    return {**s.names(), **{kind: getattr(s, kind) for kind, own in given.items() if own}}
