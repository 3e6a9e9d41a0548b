"""A capacity plan in words (specmodel.plan.capacity decides the arms and the GPUs; this module writes its
verdict, advice, notes and why an arm misses the target, for the Capacity page, `capacity` and its JSON)."""

from __future__ import annotations

from specmodel.model.scenario import Scenario
from specmodel.notes import info


def arm_name(a) -> str:
    """An arm of a plan as the notes name it."""
    return "plain" if a.k == 0 else f"speculative (k = {a.k})"


def gpus(n: int) -> str:
    return f"{n} GPU" + ("" if n == 1 else "s")


def _how(s: Scenario, a, target) -> str:
    replicas = f"{a.replicas} replica{'s' if a.replicas != 1 else ''} of {s.tp} GPUs, " if s.tp > 1 else ""
    return f"{gpus(a.gpus)} ({replicas}{a.batch_per_replica} users per replica at {target.reach(a.user_tok_s)})"


def capacity_verdict(s: Scenario, load, target, plain, spec, k_fixed: bool) -> tuple[str, str, str]:
    """(label, one sentence with the numbers, what to deploy) for a capacity plan's two arms (plan.capacity's
    ArmPlan, Load and Target); the label is one of plan.capacity.VERDICTS."""
    method = s.method.name if s.method.name != "draft_model" else f"the {s.draft} draft"
    spec_k = f"k = {spec.k}"
    if not plain.meets_target and not spec.meets_target:
        best = spec if spec.best_reachable_user_tok_s > plain.best_reachable_user_tok_s else plain
        where = "speculation, " + spec_k if best.k else "plain decoding"
        text = (f"neither meets the target; best reachable: {target.reach(best.best_reachable_user_tok_s)} "
                f"({where}, {best.best_reachable_batch} user{'s' if best.best_reachable_batch > 1 else ''} "
                "per replica)")
        if best.best_reachable_user_tok_s <= 0:
            return ("neither meets the target", "neither meets the target: not one sequence fits in memory",
                    "shorten the context, or choose a GPU with more memory or more tensor-parallel GPUs per replica")
        relaxed = f"{target.reach(best.best_reachable_user_tok_s)} or {'more' if target.is_itl else 'less'}"
        advice = (f"relax the target to {relaxed}, or choose a faster "
                  "GPU, more tensor-parallel GPUs per replica or a smaller model")
        return "neither meets the target", text, advice
    if not plain.meets_target:
        text = (f"only speculation meets {target.describe()}: {_how(s, spec, target)}; plain decoding reaches at "
                f"most {target.reach(plain.best_reachable_user_tok_s)}")
        return "only spec meets the target", text, f"deploy speculation with {method}, {spec_k}, on {gpus(spec.gpus)}"
    if not spec.meets_target:
        which = f"with {spec_k}" if k_fixed else "at any k"
        text = (f"speculation {which} cannot meet {target.describe()} ({spec.reason}); plain decoding needs "
                f"{_how(s, plain, target)}")
        advice = f"leave speculation off: {gpus(plain.gpus)} without it"
        if k_fixed:
            advice += "; or try another k"
        return "costs GPUs", text, advice
    saved = plain.gpus - spec.gpus
    if saved:
        verb, than = ("saves", "instead of") if saved > 0 else ("costs", "against")
        text = (f"speculation {verb} {gpus(abs(saved))}: {_how(s, spec, target)} with {spec_k}, {than} "
                f"{_how(s, plain, target)} without")
    if saved > 0:
        return "saves GPUs", text, f"deploy speculation with {method}, {spec_k}: {gpus(spec.gpus)} instead of {plain.gpus}"
    if saved < 0:
        advice = f"leave speculation off for this load: {gpus(plain.gpus)} instead of {spec.gpus}"
        if k_fixed:
            advice += "; a smaller k may cost less (leave k to the search to see)"
        return "costs GPUs", text, advice
    faster = spec.user_tok_s > plain.user_tok_s * (1 + 1e-6)
    text = (f"the same {gpus(plain.gpus)} either way; each user sees {target.reach(spec.user_tok_s)} with "
            f"speculation ({spec_k}) and {target.reach(plain.user_tok_s)} without")
    advice = (f"speculation ({spec_k}) is free here: the same GPUs, faster users" if faster else
              "leave speculation off: the same GPUs and no faster for users")
    return "same", text, advice


def saved_words(saved: int | None) -> str:
    """GPUs speculation saves (negative: costs) in words; None: it cannot meet the target."""
    if saved is None:
        return "cannot meet the target"
    return f"saves {gpus(saved)}" if saved > 0 else f"costs {gpus(-saved)}" if saved < 0 else "needs the same GPUs"


def capacity_uncertain(text: str, saved: list, batch: int) -> str:
    """The verdict where the model's 80% band's ends disagree: led by "uncertain", as decide.uncertain_head
    leads a speedup verdict; the estimate's words follow."""
    return (f"uncertain: by the estimate {text} — across the model's 80% band speculation "
            f"{saved_words(saved[0])} at its low end and {saved_words(saved[1])} at its high end; measure "
            f"both arms at {batch} users per replica to settle it")


def capacity_notes(capped: list, max_batch: int, by_rate: bool) -> list:
    """The notes under a plan: arms whose plan stops at the largest batch considered, and for a request rate
    that prefill is not modelled."""
    notes = [info(f"the {arm_name(a)} plan stops at {max_batch} users per replica, the most this "
                  "model considers; engines usually cap the batch lower (vLLM's max_num_seqs)") for a in capped]
    if by_rate:
        notes.append(info("decode only: prefill (time to first token) is not modelled; the concurrency is Little's "
                          "law, requests/s × output tokens ÷ per-user speed"))
    return notes


def arm_missed(k: int, fits: float, best_user_tok_s: float, best_itl_ms: float, batch: int) -> str:
    """Why an arm misses the target: nothing fits, or the fastest it serves a user (at that batch)."""
    if fits < 1:
        return ("the draft and its KV cache leave no room for one sequence beside the target"
                if k else "not one sequence fits in the KV cache beside the target's weights")
    return f"the fastest it serves a user is {best_user_tok_s:.1f} tok/s (ITL {best_itl_ms:.1f} ms), at batch {batch}"


def fit_replicas_words(plain: int | None, spec: int | None) -> str:
    """The replicas each arm needs by a step fit's measured step times (plan.capacity.replicas_by_fit), in one
    clause: which arm needs fewer, or that neither meets the target."""
    if plain is None and spec is None:
        return "neither arm meets the target even at batch 1 by the measured step times"
    if spec is not None and (plain is None or spec < plain):
        return f"speculation needs {spec} replicas against {plain or 'no number of'} plain (measured step times)"
    if plain is not None and (spec is None or plain < spec):
        return f"plain decoding needs {plain} replicas against {spec or 'no number of'} with speculation (measured step times)"
    return f"both need {plain} replicas (measured step times): speculation saves nothing here"


def fit_capacity_line(label: str, by_fit: dict) -> str:
    """The Capacity page's answer from the user's runs (plan.capacity.replicas_by_fit of their step fit), before
    the model's: the replicas, and the users a replica holds in each arm at the fit and at its band's slow edge."""
    def held(arm: dict, how: str) -> str:
        if not arm["batch_per_replica"]:
            return f"no user {how}"
        return (f"{arm['batch_per_replica']} user{'s' if arm['batch_per_replica'] != 1 else ''} {how} "
                f"({arm['batch_per_replica_slow']} at the band's slow edge)")

    holds = f"a replica holds {held(by_fit['plain'], 'plain')} and {held(by_fit['spec'], 'with speculation')}"
    return f"Your runs ({label}): {by_fit['words']}; {holds}. The model's plan follows."
