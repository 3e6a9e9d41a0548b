"""The verdict as Prometheus rules: recording rules for E, α and per-position acceptance per instance, and
an alert when an instance's measured E stays below its own break-even E (its own k and model) at its load.

    text = rules_yaml(scenario, window="5m")     # a rules file (YAML) for `rule_files:`
    text = rules_yaml(scenario, instances=(parse_instance("tgi-0:80=2"),))   # TGI --speculate 2 there

Names follow Prometheus' `level:metric:operations` convention (https://prometheus.io/docs/practices/rules/):
the level is the labels kept (`job_instance_model_name`), the operations what was done, the window inside the
operation (`rate5m`); `_NAMES` lists them and docs/engines.md says what each holds. From counters with `rate()`,
so `*_created` samples never enter. Each name from before the convention (`_LEGACY`) is recorded too, as a copy
of its new series (deprecated).

The break-even E is a step function over batch: `predict` at BATCH_GRID, each running count taking the value of
the nearest grid point (geometric midpoints), equal neighbours merged; where speculation cannot tie plain decoding
the step holds k + 2, so the alert fires for any measured E. One step function per (model, k), each its own rule
(label `profile`): the rules' model at every k in DEFAULT_KS, and each --instance INSTANCE=K[,TARGET[,DRAFT]] its
own (k, target, draft) as `specmodel.model.instances.decide` makes it for fleet too. An instance without a k has no
break-even and is never alerted on.

Engines covered (`specmodel.metrics.schemas`): vLLM V1, llama.cpp, lmdeploy, TensorRT-LLM, SGLang and TGI (k is
its --speculate, not exposed: give it with --instance; judged as the n-gram it runs, `instances.as_served`).
vLLM V0 exposes no usable counters and is not covered.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import yaml

from specmodel.bounds import MAX_K
from specmodel.errors import SpecModelError
from specmodel.model.decide import off_above
from specmodel.model.instances import InstanceModel, decide, parse_instance

__all__ = ["ALERT", "InstanceModel", "parse_instance", "names", "legacy_names", "rules_document", "rules_yaml",
           "to_yaml", "break_even_steps", "profiles"]  # InstanceModel and parse_instance live in model/instances.py
from specmodel.words import summarize
from specmodel.words.served import refusal
from specmodel.model.scenario import Scenario, predict, with_changes

ALERT = "SpeculativeDecodingBelowBreakEven"


def _parse_duration(text: str) -> float:
    from specmodel.metrics.promapi import parse_duration  # here: the HTTP client loads only where rules are made
    return parse_duration(text)


GROUP = "specmodel-speculative-decoding"
BY = "job, instance, model_name"
LEVEL = "job_instance_model_name"
# chosen: about two points per doubling (1.33-1.5x apart) up to 2048, fine enough that a step of the
# break-even function moves by little between grid points (module docstring)
BATCH_GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512, 768, 1024,
              1536, 2048)
# chosen: the k values an instance's own k is looked up among (plus each --instance's): every k the tool accepts
DEFAULT_KS = tuple(range(1, MAX_K + 1))

_COUNTS = "(vllm|llamacpp|lmdeploy)"
_TRT = "trtllm[_:]"
_SGL_RANK = 'tp_rank=~"0|", pp_rank=~"0|"'  # SGLang repeats scheduler series on every TP/PP rank
RUNNING_SERIES = ("vllm:num_requests_running|sglang:num_running_reqs|llamacpp:requests_processing|"
                  "lmdeploy:num_requests_running|trtllm[_:]num_requests_running|tgi_batch_current_size")
GENERATION_SERIES = ("vllm:generation_tokens_total|sglang:generation_tokens_total|llamacpp:tokens_predicted_total|"
                     "lmdeploy:generation_tokens_total|trtllm[_:]generation_tokens_total|"
                     "tgi_request_generated_tokens_sum")


_NAMES = {
    "drafts": "{L}:spec_decode_drafts:rate{w}",
    "accepted": "{L}:spec_decode_accepted_tokens:rate{w}",
    "draft_tokens": "{L}:spec_decode_draft_tokens:rate{w}",
    "tokens_per_step": "{L}:spec_decode_tokens_per_step:ratio_rate{w}",
    "draft_acceptance_rate": "{L}:spec_decode_draft_acceptance_rate:ratio_rate{w}",
    "per_position": "{L}_position:spec_decode_acceptance_per_position:ratio_rate{w}",
    "mean_draft_length": "{L}:spec_decode_mean_draft_length:ratio_rate{w}",
    "max_draft_length": "{L}:spec_decode_max_draft_length:count_rate{w}",
    "running": "{L}:num_requests_running:avg{w}",
    "generation": "{L}:generation_tokens:rate{w}",
    "k_configured": "instance:spec_decode_k:configured",
    "k": "{L}:spec_decode_k:count_rate{w}",
    # 1 for an instance whose E is measured but whose k is neither exposed nor given (TGI without --instance,
    # SGLang without spec_num_steps): reported, never judged at an assumed k.
    "k_unknown": "{L}:spec_decode_k_unknown:unless_ratio_rate{w}",
    # A helper the break-even lookup reads: 100000 · profile + running requests (profile: the instance's k, or
    # 100 + 2 × the index of its --instance (k, target), 101 + 2 × it on a TGI server), so each lookup term is one
    # cheap comparison.
    "profile_running": "{L}:spec_decode_profile_running:encoded_avg{w}",
    "alpha": "{L}:spec_decode_alpha:bisect_ratio_rate{w}",
    "break_even": "{L}:spec_decode_break_even_tokens_per_step:lookup_avg{w}",
}
# The names before the convention (the window where the operation goes, level `instance`): recorded as copies.
_LEGACY = {
    "drafts": "instance:spec_decode_drafts:rate{w}",
    "accepted": "instance:spec_decode_accepted_tokens:rate{w}",
    "draft_tokens": "instance:spec_decode_draft_tokens:rate{w}",
    "tokens_per_step": "instance:spec_decode_tokens_per_step:ratio_rate{w}",
    "draft_acceptance_rate": "instance:spec_decode_draft_acceptance_rate:ratio_rate{w}",
    "per_position": "instance:spec_decode_acceptance_per_position:ratio_rate{w}",
    "mean_draft_length": "instance:spec_decode_k:ratio_rate{w}",  # it recorded draft tokens / drafts
    "running": "instance:num_requests_running:avg{w}",
    "generation": "instance:generation_tokens:rate{w}",
    "alpha": "instance:spec_decode_alpha:{w}",
    "break_even": "instance:spec_decode_break_even_tokens_per_step:{w}",
}


def names(window: str) -> dict[str, str]:
    """Recorded series names for a window ("5m" -> job_instance_model_name:spec_decode_drafts:rate5m, ...)."""
    _parse_duration(window)
    return {key: value.format(L=LEVEL, w=window) for key, value in _NAMES.items()}


def legacy_names(window: str) -> dict[str, str]:
    """The names the rules had before they followed the convention, still recorded (deprecated)."""
    _parse_duration(window)
    return {key: value.format(w=window) for key, value in _LEGACY.items()}


def _sum(expr: str, by: str = BY) -> str:
    return f"sum by ({by}) ({expr})"


def _rate(selector: str, w: str) -> str:
    return f"rate({selector}[{w}])"


# Engines' own tokens-per-step gauges (bonus token in), for builds without the counters E comes from: SGLang's
# spec_accept_length (builds with only the spec_accept_length / spec_accept_rate gauges) and TensorRT-LLM's
# spec_decode_acceptance_length (iteration stats only, no per-token_position counters).
GAUGE_E_SERIES = "sglang:spec_accept_length|trtllm[_:]spec_decode_acceptance_length"


def _counter_expressions(w: str) -> tuple[str, str, str]:
    """(drafts, accepted, draft tokens) per second, per engine, each the first form an instance has."""
    drafts = " or ".join([
        _sum(_rate(f'{{__name__=~"{_COUNTS}:spec_decode_num_drafts_total"}}', w)),
        _sum(_rate(f'{{__name__=~"{_TRT}spec_decode_drafted_tokens_total", token_position="0"}}', w)),
        _sum(_rate(f"sglang:spec_verify_calls_total{{{_SGL_RANK}}}", w)),
        # TGI: one observation per generation step, the request's first (prefill) step included.
        f"({_sum(_rate('tgi_request_skipped_tokens_count', w))} - on ({BY}) {_sum(_rate('tgi_request_count', w))})",
        _sum(_rate("tgi_request_skipped_tokens_count", w)),
    ])
    accepted = " or ".join([
        _sum(_rate(f'{{__name__=~"{_COUNTS}:spec_decode_num_accepted_tokens_total"}}', w)),
        _sum(_rate(f'{{__name__=~"{_TRT}spec_decode_accepted_tokens_total"}}', w)),
        f"clamp_min({_sum(_rate(f'sglang:generation_tokens_total{{{_SGL_RANK}}}', w))}"
        f" - on ({BY}) {_sum(_rate(f'sglang:num_requests_total{{{_SGL_RANK}}}', w))}"
        f" - on ({BY}) {_sum(_rate(f'sglang:spec_verify_calls_total{{{_SGL_RANK}}}', w))}, 0)",
        _sum(_rate("tgi_request_skipped_tokens_sum", w)),
        # TensorRT-LLM with iteration stats only: the per-iteration totals
        _sum(_rate(f'{{__name__=~"{_TRT}spec_decode_num_accepted_tokens_total"}}', w)),
    ])
    draft_tokens = " or ".join([
        _sum(_rate(f'{{__name__=~"{_COUNTS}:spec_decode_num_draft_tokens_total"}}', w)),
        _sum(_rate(f'{{__name__=~"{_TRT}spec_decode_drafted_tokens_total"}}', w)),
        _sum(_rate(f'{{__name__=~"{_TRT}spec_decode_num_draft_tokens_total"}}', w)),
    ])
    return drafts, accepted, draft_tokens


def _k_expression(n: dict[str, str], instances, default_k: int | None) -> str:
    """The instance's k: given with --instance; else its mean draft length (draft tokens ÷ drafts, rounded:
    variable-length drafts are judged at what was verified on average, fixed ones at their k); else the draft
    positions it counts or SGLang's spec_num_steps; else, TensorRT-LLM with iteration stats only, draft tokens ÷
    (accepted ÷ (E − 1)) from its acceptance-length gauge; else the rules' --k where one was given. An instance
    with none of these has no k: `k_unknown` reports it and no break-even is looked up for it."""
    parts = []
    if instances:
        parts.append(f"({n['running']} * 0 + on (instance) group_left () max by (instance) ({n['k_configured']}))")
    parts += [
        f"clamp_min(round({n['mean_draft_length']}), 1)",
        n["max_draft_length"],
        f"clamp_min(round({n['draft_tokens']} * on ({BY}) ({n['tokens_per_step']} - 1) / on ({BY}) "
        f"({n['accepted']} > 0)), 1)",
    ]
    if default_k is not None:
        parts.append(f"({n['tokens_per_step']} * 0 + {int(default_k)})")
    return "\nor ".join(parts)


def recording_expressions(window: str, default_k: int | None = None, instances=()) -> dict[str, str]:
    """PromQL of every recording rule except break-even and α (which need the model), in evaluation
    order: a rule reads only the ones before it (Prometheus evaluates a group's rules in order).
    `default_k`: the k of instances that neither expose one nor are given one (None: reported as unknown)."""
    n = names(window)
    w = window
    drafts, accepted, draft_tokens = _counter_expressions(w)
    by_pos = f"{BY}, position"
    counts_per_pos = _rate(f'{{__name__=~"{_COUNTS}:spec_decode_num_accepted_tokens_per_pos_total"}}', w)
    trt_accepted = _rate(f'{{__name__=~"{_TRT}spec_decode_accepted_tokens_total"}}', w)
    trt_drafted = _rate(f'{{__name__=~"{_TRT}spec_decode_drafted_tokens_total"}}', w)
    per_position = (
        "(" + _sum(counts_per_pos, by_pos)
        + " or " + _sum(f'label_replace({trt_accepted}, "position", "$1", "token_position", "(.*)")', by_pos)
        + f") / on ({BY}) group_left {n['drafts']}")
    gauge_e = f'avg by ({BY}) (avg_over_time({{__name__=~"{GAUGE_E_SERIES}", {_SGL_RANK}}}[{w}]))'
    out = {
        n["drafts"]: drafts,
        n["accepted"]: accepted,
        n["draft_tokens"]: draft_tokens,
        # from the counters; else the engine's own gauge (SGLang gauge-only builds, TensorRT-LLM iteration stats)
        n["tokens_per_step"]: f"1 + {n['accepted']} / {n['drafts']}\nor {gauge_e}",
        n["draft_acceptance_rate"]: f"{n['accepted']} / {n['draft_tokens']}",
        n["per_position"]: per_position,
        n["mean_draft_length"]: f"{n['draft_tokens']} / {n['drafts']}",
        # the longest draft: the positions counted (one series per num_speculative_tokens), else SGLang's steps
        n["max_draft_length"]: " or ".join([
            f"count by ({BY}) ({_sum(counts_per_pos, by_pos)})",
            f"count by ({BY}) ({_sum(trt_drafted, BY + ', token_position')})",
            f"max by ({BY}) (sglang:spec_num_steps{{{_SGL_RANK}}})"]),
        n["running"]: _sum(f'avg_over_time({{__name__=~"{RUNNING_SERIES}", {_SGL_RANK}}}[{w}])'),
        n["generation"]: _sum(_rate(f'{{__name__=~"{GENERATION_SERIES}", {_SGL_RANK}}}', w)),
    }
    if instances:
        out[n["k_configured"]] = " or ".join(
            f'label_replace(label_replace(vector({m.k}), "instance", "{m.instance}", "", ""), '
            f'"profile", "{m.profile}", "", "")' for m in instances)
    out[n["k"]] = _k_expression(n, instances, default_k)
    out[n["k_unknown"]] = f"{n['tokens_per_step']} * 0 + 1 unless on ({BY}) {n['k']}"
    return out


@dataclass(frozen=True)
class Step:
    """Break-even E for running requests in (lo, hi] (lo None: from 0; hi None: no upper end)."""

    lo: float | None
    hi: float | None
    batch: int  # the grid batch size this step stands for
    break_even: float  # capped at k + 2 where speculation cannot tie


def break_even_steps(scenario: Scenario, grid=BATCH_GRID) -> list[Step]:
    """The model's break-even E over batch as steps (from specmodel.model.scenario.predict)."""
    s = scenario.validated()
    if s.k < 1:
        raise SpecModelError("rules need k ≥ 1 (draft tokens per step): give --k")
    batches = np.asarray(grid, dtype=float)
    p = predict(s, concurrency=batches)
    cap = s.k + 2.0
    values = [min(float(v), cap) if math.isfinite(float(v)) else cap
              for v in np.atleast_1d(p.break_even_tokens_per_step)]
    edges = [math.sqrt(a * b) for a, b in zip(grid, grid[1:])]
    steps: list[Step] = []
    for i, (batch, value) in enumerate(zip(grid, values)):
        lo = edges[i - 1] if i > 0 else None
        hi = edges[i] if i < len(edges) else None
        if steps and round(steps[-1].break_even, 3) == round(value, 3):
            steps[-1] = Step(steps[-1].lo, hi, steps[-1].batch, steps[-1].break_even)
        else:
            steps.append(Step(lo, hi, int(batch), value))
    return steps


def _fmt(x: float) -> str:
    return f"{x:.6g}"


PROFILE_SCALE = 100000  # chosen: running requests stay below it
TGI_SERIES = "tgi_request_skipped_tokens_count"  # the series TGI's E is read from: present on TGI servers only
# chosen: the code of the TGI servers judged at --k (TGI exposes no k): above every k the rules judge (≤ MAX_K = 64)
# and below the --instance codes (100 + 2i)
TGI_DEFAULT_CODE = 99


@dataclass(frozen=True)
class Profile:
    """One (model, k) the break-even is computed for, and the code its instances carry."""

    scenario: Scenario
    code: int  # the instance's k (the rules' own model), or 100 + 2i for the i-th --instance (k, target), 101 + 2i
    # for the same on a TGI server
    label: str | None = None  # the `profile` label of instance:spec_decode_k:configured (configured ones)
    server: str | None = None  # "tgi": only for instances whose E comes from TGI's series (instances.as_served)


def profiles(scenario: Scenario, instances=(), default_k: int | None = None) -> list[Profile]:
    """The configured instances' own (k, target); with --k (`default_k`), a TGI server's at that k as the method it
    runs (instances.as_served: n-gram, no draft model), as fleet judges it; then the rules' model at every k an
    instance may run."""
    s = scenario.validated()
    out = []
    seen = {}
    for m in instances:
        seen.setdefault(m.profile, m)
    for i, (label, m) in enumerate(seen.items()):
        said = f"--instance {m.instance}={m.k}{',' + m.target if m.target else ''}{',' + m.draft if m.draft else ''}"
        judged = decide(s, None, given=m)  # the one place fleet asks too
        if judged.scenario is None:
            raise SpecModelError(f"{said}: {refusal(judged) or judged.predicted_on}")
        try:
            own = judged.scenario.validated()
            break_even_steps(own)
        except SpecModelError as exc:
            raise SpecModelError(f"{said}: {exc}") from None
        out.append(Profile(own, 100 + 2 * i, label))
        on_tgi = decide(s, None, given=m, server="tgi").scenario  # the method a TGI server runs (no draft model)
        if on_tgi is not None and on_tgi != judged.scenario:
            out.append(Profile(on_tgi.validated(), 101 + 2 * i, label, "tgi"))
    if default_k is not None:
        on_tgi = decide(with_changes(s, k=int(default_k)), None, server="tgi").scenario
        if on_tgi is not None and on_tgi.method != s.method:
            out.append(Profile(on_tgi.validated(), TGI_DEFAULT_CODE, None, "tgi"))
    for k in sorted(set(DEFAULT_KS) | {int(s.k)}):
        out.append(Profile(with_changes(s, k=k), k))
    return out


def profile_running_expression(window: str, chosen: list[Profile]) -> str:
    """100000 · profile + running requests, per instance (configured instances first: `or` keeps them)."""
    n = names(window)
    # a TGI server's profile first (`or` keeps the first match): only instances with TGI's E series have one
    configured = sorted((p for p in chosen if p.label is not None), key=lambda p: p.server != "tgi")
    parts = [f"({n['running']} + on (instance) group_left () "
             f"(0 * max by (instance) ({n['k_configured']}{{profile=\"{p.label}\"}})"
             + (f" + 0 * max by (instance) ({TGI_SERIES})" if p.server == "tgi" else "")
             + f" + {p.code * PROFILE_SCALE}))"
             for p in configured]
    # a TGI server judged at --k: its own profile (TGI exposes no k, so --k is its k), before the rules' model's
    parts += [f"({n['running']} + on (instance) group_left () (0 * max by (instance) ({TGI_SERIES})"
              f" + {p.code * PROFILE_SCALE}))" for p in chosen if p.label is None and p.server == "tgi"]
    parts.append(f"({n['running']} + {PROFILE_SCALE} * {n['k']})")
    return "\nor ".join(parts)


def _profile_terms(p: Profile, encoded: str) -> str:
    """One profile's break-even steps: each a comparison on the encoded series, its step's value where it holds."""
    parts = []
    base = p.code * PROFILE_SCALE
    for st in break_even_steps(p.scenario):
        lo = base - 0.5 if st.lo is None else base + st.lo
        hi = base + PROFILE_SCALE - 1 if st.hi is None else base + st.hi
        parts.append(f"({encoded} > {_fmt_exact(lo)} <= {_fmt_exact(hi)}) * 0 + {_fmt(st.break_even)}")
    return "\n  or ".join(parts)


def break_even_rules(window: str, chosen: list[Profile]) -> list[dict]:
    """The break-even series as one recording rule per profile, all under one name, told apart by a `profile`
    label ("k4", or an --instance's "given k2 Llama 3.1 70B"; each instance falls in one profile). One expression of
    every profile's steps (64 k values, about 1,000 comparisons) took PromQL seconds per evaluation: its cost
    grows with the square of its length."""
    n = names(window)
    return [{"record": n["break_even"], "expr": _profile_terms(p, n["profile_running"]),
             "labels": {"profile": _profile_label(p)}} for p in chosen]


def _profile_label(p: Profile) -> str:
    """"k4"; an --instance's "given k2 Llama 3.1 70B"; on a TGI server "given k2 on TGI: ngram"."""
    if p.label is None:
        return f"k{p.scenario.k} on TGI: {p.scenario.method}" if p.server == "tgi" else f"k{p.code}"
    return f"given {p.label}" + (f" on TGI: {p.scenario.method}" if p.server == "tgi" else "")


ALPHA_BISECTIONS = 10  # chosen: α to ±0.0005, finer than any acceptance a counter gives


def alpha_rules(window: str) -> list[dict]:
    """α for each instance's measured E at its own k: bisection on E(α) = 1 + α + … + α^k, one recorded step
    per halving (any k, no table), from α = 0.5; the last step is the α series."""
    n = names(window)
    e, k = n["tokens_per_step"], n["k"]
    step_names = [n["alpha"].replace(":bisect_", f":bisect{j}_") for j in range(ALPHA_BISECTIONS)] + [n["alpha"]]
    out = [{"record": step_names[0], "expr": f"{k} * 0 + 0.5"}]
    for j in range(1, ALPHA_BISECTIONS + 1):
        a = step_names[j - 1]
        out.append({"record": step_names[j], "expr": (
            f"{a} + {0.5 ** (j + 1):g} * (2 * ({e} > bool ((1 - {a} ^ ({k} + 1)) / (1 - {a}))) - 1)")})
    return out


def _fmt_exact(x: float) -> str:
    return f"{x:.10g}"  # an encoded bound keeps the 6 significant digits of its part


def advice(scenario: Scenario) -> str:
    """What to do when the alert fires, from the model's summary (crossover and per-batch schedule)."""
    summary = summarize(with_changes(scenario, concurrency=1))
    cross = summary.crossover_concurrency
    off = off_above(summary.schedule)
    model = (f"{scenario.target} on {scenario.tp}x {scenario.gpu}" if scenario.tp > 1 else
             f"{scenario.target} on {scenario.gpu}") + f", {scenario.method}"
    if cross == 0:
        where = f"The model ({model}) finds k = {scenario.k} loses from batch 1"
    elif cross is None:
        where = f"The model ({model}) expects k = {scenario.k} to pay at every batch, so acceptance is the problem"
    else:
        where = f"The model ({model}) expects k = {scenario.k} to pay up to batch {cross}"
    steps = f"; per batch size use num_speculative_tokens_per_batch_size {json.dumps(summary.schedule)}"
    if off is not None:
        steps += " (off at every batch)" if off == 0 else f" (off above batch {off})"
    return (f"{where}{steps}; or lower k, or turn speculation off while load stays this high, or check why "
            "acceptance dropped (temperature, prompts, draft model)")


def _q(expr: str, form: str = "%.2f", missing: str = "{{ else }}?") -> str:
    """A PromQL instant query inside an alert template: its first value printed with `form`; `missing` where
    the query has no value ("" for an instance whose longest draft is not counted)."""
    return ('{{ with printf "' + expr + '" $labels.job $labels.instance $labels.model_name | query }}'
            '{{ . | first | value | printf "' + form + '" }}' + missing + '{{ end }}')


def _checked(scenario: Scenario, window: str, for_: str, instances) -> tuple[Scenario, tuple]:
    """The scenario validated and the --instance list checked, or SpecModelError naming what is wrong."""
    _parse_duration(window)
    if str(for_).strip() not in ("0", "0s"):
        _parse_duration(for_)  # raises with a message naming the value
    s = scenario.validated()
    first = predict(with_changes(s, concurrency=1))
    if not float(first.spec.max_concurrency) >= 1:
        raise SpecModelError(f"{s.target} with its draft ({s.method}{', ' + s.draft if s.draft else ''}) does not fit "
                             f"on {s.tp}x {s.gpu} even at batch 1: no break-even to alert on; choose a larger GPU, "
                             "more tensor parallelism or a smaller model")
    instances = tuple(instances)
    dupes = sorted({m.instance for m in instances if sum(o.instance == m.instance for o in instances) > 1})
    if dupes:
        raise SpecModelError(f"--instance names {', '.join(dupes)} more than once: give each instance once")
    return s, instances


def rules_document(scenario: Scenario, window: str = "5m", for_: str = "10m",
                   severity: str = "warning", instances=(), legacy: bool = True, default_k: int | None = None) -> dict:
    """The rules file as a dict (one group). Raises SpecModelError for a model that does not fit.
    `instances`: InstanceModel per instance judged on its own k (and target); `legacy`: also record the
    names from before the naming convention (copies of the new series); `default_k`: the k of instances that
    neither expose one nor are given one (None: their k is recorded as unknown and they are not judged)."""
    s, instances = _checked(scenario, window, for_, instances)
    n = names(window)
    rules = [{"record": name, "expr": expr}
             for name, expr in recording_expressions(window, default_k, instances).items()]
    chosen = profiles(s, instances, default_k)
    rules.append({"record": n["profile_running"], "expr": profile_running_expression(window, chosen)})
    rules += alpha_rules(window)
    rules += break_even_rules(window, chosen)
    if legacy:
        old = legacy_names(window)
        rules += [{"record": old[key], "expr": n[key]} for key in _LEGACY]
    rules.append(alert_rule(s, window, for_, severity, instances, default_k))
    return {"groups": [{"name": GROUP, "rules": rules}]}


def alert_rule(s: Scenario, window: str, for_: str, severity: str, instances, default_k: int | None) -> dict:
    """The break-even alert: E below the instance's own break-even while it drafts (or, where no drafts are
    counted, an engine gauge's E while it generates)."""
    n = names(window)
    sel = "{job='%s',instance='%s',model_name='%s'}"
    given = "; ".join(f"{m.instance}: k = {m.k}{', ' + m.target if m.target else ''}" for m in instances)
    unknown = (f"else k = {default_k}" if default_k is not None else
               "else not judged: k unknown, recorded in " + n["k_unknown"])
    return {
        "alert": ALERT,
        "expr": (f"{n['tokens_per_step']}\n  < on ({BY}) {n['break_even']}\n"
                 f"and on ({BY}) ({n['drafts']} > 0 or ({n['generation']} > 0 unless on ({BY}) {n['drafts']}))"),
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {
            "summary": ("{{ $labels.instance }} ({{ $labels.job }}): speculative decoding below break-even, "
                        "E = {{ $value | printf \"%.2f\" }} tokens per step < break-even "
                        + _q(n["break_even"] + sel) + " at " + _q(n["running"] + sel) + " running requests, k = "
                        + _q(n["k"] + sel) + _q(n["max_draft_length"] + sel, " (longest draft %.0f)", "")),
            "description": (f"Measured over {window}: E (tokens per verify step) is below the E at which "
                            f"speculation ties plain decoding at this instance's load and k, so speculation slows "
                            f"this server down. " + advice(s) + "."),
            "model": (f"{s.target} on {s.tp}x {s.gpu}, {s.method}"
                      f"{' with ' + s.draft.name if s.method.name == 'draft_model' and s.draft else ''}, each instance "
                      f"at its own k (its mean draft length, draft tokens ÷ drafts, rounded; else its counted draft "
                      f"positions; {unknown}), context {s.context_len} tokens"
                      + (f"; given per instance: {given}" if given else "")),
        },
    }


HEADER = ("# Generated by `python -m specmodel rules`: recording rules for speculative decoding per instance\n"
          "# and an alert when measured E stays below the model's break-even E at the current load.\n")


class _RulesDumper(yaml.SafeDumper):
    """yaml.safe_dump's dumper, with multi-line strings (the longer expressions) written as literal blocks and
    list items indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False):
        return super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_RulesDumper.add_representer(str, _str)


def to_yaml(doc: dict) -> str:
    """The rules document as YAML (PyYAML's safe dumper, keys in the document's order, no line folding)."""
    return HEADER + yaml.dump(doc, Dumper=_RulesDumper, sort_keys=False, allow_unicode=True, width=math.inf,
                              default_flow_style=False)


def rules_yaml(scenario: Scenario, window: str = "5m", for_: str = "10m", severity: str = "warning",
               instances=(), legacy: bool = True, default_k: int | None = None) -> str:
    return to_yaml(rules_document(scenario, window, for_, severity, instances, legacy, default_k))
