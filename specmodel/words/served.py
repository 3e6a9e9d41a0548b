"""What a live verdict was judged on, in words, where that is not the model the server serves.

A scrape knows the served model's name but never the GPU: the verdict rests on the presets given (or
defaulted) on the command line or in the sidebar. Where the served model is not the judged one, the
headline says so before the verdict, so "pays off" is never read as a verdict on the server's own model.

>>> judged_as("tiny-llama", None, "Llama 3.1 8B", "L40S")
"the served model 'tiny-llama' is no preset: judged as Llama 3.1 8B on L40S (assumed)"
>>> judged_as("Qwen/Qwen3-8B", "Llama 3.1 8B", "Llama 3.1 8B", "H100") is None
True
"""

from __future__ import annotations


def judged_as(served: str | None, served_preset: str | None, target: str, gpu: str) -> str | None:
    """One clause for the verdict's headline: which preset the verdict was judged on and why it is an
    assumption; None where the served model is the judged target. `served` is the name the server gives
    (None where it names none), `served_preset` the preset that name reads as (None for no preset)."""
    on = f"judged as {target} on {gpu} (assumed)"
    if not served:
        return f"the server names no model: {on}"
    if served_preset is None:
        return f"the served model '{served}' is no preset: {on}"
    if served_preset != target:
        return f"the served model '{served}' reads as {served_preset}, not the target given: {on}"
    return None
