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

from specmodel.model.instances import TGI_AS_NGRAM, Judged


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


def refusal(judged: Judged) -> str | None:
    """Why an instance is not predicted (model.instances.Judged.refused: a draft not smaller than its target),
    naming both and what to do; None where it is not refused."""
    if judged.refused is None:
        return None
    target, draft = judged.refused
    return (f"the draft {draft.name} ({draft.params_B:.2f}B parameters) is not smaller than the target {target.name} "
            f"({target.params_B:.2f}B): a draft model must be much smaller than its target to speed it up; give the "
            f"instance its own draft (--instance INSTANCE=K,{target.name},DRAFT) or judge it with a draft-free method")


# What a live verdict rests on (metrics/timed.py's `rests_on`), most measured first.
MEASURED = "measured"  # both arms' step times measured on servers (the speculative one's and a plain one's)
MEASURED_FIT = "measured + step fit"  # one arm measured on the server, the other a saved step fit's
MEASURED_MODEL = "measured + model"  # the speculative arm measured, the plain step the model's from a measured one
STEP_FIT = "step fit"  # a saved step fit at the window's batch and E (the server exposes no step timing)
PRESETS = "presets"  # the model alone, on presets

NO_TIMING = "no step fit or measured plain step"


def presets_clause(judged: str | None, target: str, gpu: str) -> str:
    """The headline's clause where the verdict rests on presets alone: no step fit, plain server or measured
    plain step was given, so every step time is the presets' (and `judged`, words.served.judged_as, where the
    served model is not the judged one).

    >>> presets_clause(None, "Llama 3.1 8B", "L40S")
    'rests on presets (Llama 3.1 8B on L40S, assumed; no step fit or measured plain step)'
    """
    if judged:
        return f"rests on presets ({NO_TIMING}): {judged}"
    return f"rests on presets ({target} on {gpu}, assumed; {NO_TIMING})"


def timed_head(label: str, speedup: float, band: tuple[float, float], batch: float) -> str:
    """"loses: 0.14x (0.12x to 0.16x) at batch 14.5", led by "uncertain" where the band straddles 1.0."""
    head = f"{label}: {speedup:.2f}x ({band[0]:.2f}x to {band[1]:.2f}x) at batch {batch:.3g}"
    if band[0] < 1.0 < band[1]:
        return f"uncertain ({label} by the estimate): {head[len(label) + 2:]}"
    return head


def timed_text(head: str, rests_on: str, spec: str, plain: str, configured_off: bool = False) -> str:
    """The headline of a window judged on measured step times: what it rests on, the verdict, and each arm's
    time per token with where it came from (`configured_off`: the speculative server proposed no draft, so its arm
    is speculation configured and off)."""
    arm = "configured and off" if configured_off else "speculative"
    return f"{rests_on}: {head}: {arm} {spec} against plain {plain}"


def ms(value: float) -> str:
    """A step time as the headlines write it: "7.6", "86.9", "369"."""
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def ms_words(value: float, where: str) -> str:
    """"86.9 ms a token (measured: vllm:inter_token_latency_seconds)"."""
    return f"{ms(value)} ms a token ({where})"


def timed_advice(label: str, batch: float, off: str | None, configured_off: bool = False) -> str:
    """What to do after a verdict on measured step times, with where a step fit says it stops paying;
    `configured_off`: the server's speculation is configured but switched off at this load (it proposed no draft),
    so what was measured is the off state's cost."""
    after = f"; the step fit: {off}" if off else ""
    if configured_off:
        if label == "loses":
            return (f"speculation is already off at this load (batch {batch:.3g}) and its off state still costs: serve "
                    f"this load without speculation configured (a restart or a plain pool){after}")
        return f"speculation is off at this load (batch {batch:.3g}), and its off state costs about nothing here{after}"
    if label == "loses":
        return f"turn speculation off at this load (batch {batch:.3g}){after}"
    if label == "borderline":
        return (f"within run-to-run noise at batch {batch:.3g}: watch a longer window, or compare with a plain "
                f"server at the same load{after}")
    return f"keep it on at this load (batch {batch:.3g}){after}"


def fit_contradicted(arm: str, fit_ms: float, measured_ms: float, batch: float, batches: str) -> str:
    """A note where the window's measured step lies outside a step fit's band at its batch."""
    return (f"the step fit (runs at {batches}) puts the {arm} step at {ms(fit_ms)} ms a token at batch {batch:.3g}; "
            f"this window measured {ms(measured_ms)} ms: the fit does not hold at this load, so the measurement "
            "decides; calibrate again with a run at this concurrency")


def figures_line(measured: list[str], modelled: list[str]) -> str:
    """"measured: E, …; modelled: plain step (…)" in one line."""
    parts = [f"measured: {', '.join(measured)}" if measured else "measured: nothing",
             f"modelled: {', '.join(modelled)}" if modelled else "modelled: nothing"]
    return "; ".join(parts)


def served_as_words(label: str) -> str:
    """The sentence for a label model.instances.as_served returns: why the instance is judged as another method."""
    return {TGI_AS_NGRAM: "n-gram, as TGI runs --speculate without Medusa heads (it loads no draft model)"}.get(label, label)
