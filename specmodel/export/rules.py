"""The verdict as Prometheus rules: recording rules for E, α and per-position acceptance per instance, and
an alert when measured E stays below the model's break-even E at the instance's current load.

    text = rules_yaml(scenario, window="5m")     # a rules file (YAML) for `rule_files:`

Recording rules (all `sum by (job, instance, model_name)`, from counters with `rate()`, so `*_created`
samples never enter: they are other series):

    instance:spec_decode_drafts:rate<W>                 verify steps that carried drafts, per second
    instance:spec_decode_accepted_tokens:rate<W>        accepted draft tokens per second
    instance:spec_decode_draft_tokens:rate<W>           proposed draft tokens per second (where exposed)
    instance:spec_decode_tokens_per_step:ratio_rate<W>  E = 1 + accepted / drafts
    instance:spec_decode_draft_acceptance_rate:ratio_rate<W>   accepted / draft tokens (not α)
    instance:spec_decode_acceptance_per_position:ratio_rate<W> p_{i+1} by `position` (0 = first draft token)
    instance:spec_decode_k:ratio_rate<W>                draft tokens / drafts
    instance:spec_decode_alpha:<W>                      per-token α giving E at the model's k (a lookup)
    instance:num_requests_running:avg<W>                running requests averaged over the window
    instance:generation_tokens:rate<W>                  generated tokens per second
    instance:spec_decode_break_even_tokens_per_step:<W> the model's break-even E at that running count

The break-even E is a step function over batch: `specmodel.model.scenario.predict` evaluated at a grid of
batch sizes (1, 2, 3, 4, 6, 8, 12, ... 2048), each running count taking the value of the nearest grid
point (geometric midpoints between them); neighbouring steps with the same value are merged. Where
speculation cannot tie plain decoding with any acceptance (break-even above k + 1) the step holds
k + 2, so the alert fires for any measured E.

Engines covered (the counter schemas of `specmodel.model.engines`): vLLM V1, llama.cpp, lmdeploy (vLLM's
counters), TensorRT-LLM (`trtllm_` and `trtllm:`, per `token_position`), SGLang (verify calls) and
TGI (skipped tokens). vLLM V0 exposes no usable counters and is not covered.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.metrics import promapi
from specmodel.model import acceptance
from specmodel.model.decide import off_above, summarize
from specmodel.model.scenario import Scenario, predict, with_changes

ALERT = "SpeculativeDecodingBelowBreakEven"
GROUP = "specmodel-speculative-decoding"
BY = "job, instance, model_name"
BATCH_GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512, 768, 1024,
              1536, 2048)
ALPHA_STEP = 0.02

_COUNTS = "(vllm|llamacpp|lmdeploy)"
_TRT = "trtllm[_:]"
_SGL_RANK = 'tp_rank=~"0|", pp_rank=~"0|"'  # SGLang repeats scheduler series on every TP/PP rank
RUNNING_SERIES = ("vllm:num_requests_running|sglang:num_running_reqs|llamacpp:requests_processing|"
                  "lmdeploy:num_requests_running|trtllm[_:]num_requests_running|tgi_batch_current_size")
GENERATION_SERIES = ("vllm:generation_tokens_total|sglang:generation_tokens_total|llamacpp:tokens_predicted_total|"
                     "lmdeploy:generation_tokens_total|trtllm[_:]generation_tokens_total|"
                     "tgi_request_generated_tokens_sum")


_NAMES = {
    "drafts": "instance:spec_decode_drafts:rate{w}",
    "accepted": "instance:spec_decode_accepted_tokens:rate{w}",
    "draft_tokens": "instance:spec_decode_draft_tokens:rate{w}",
    "tokens_per_step": "instance:spec_decode_tokens_per_step:ratio_rate{w}",
    "draft_acceptance_rate": "instance:spec_decode_draft_acceptance_rate:ratio_rate{w}",
    "per_position": "instance:spec_decode_acceptance_per_position:ratio_rate{w}",
    "k": "instance:spec_decode_k:ratio_rate{w}",
    "alpha": "instance:spec_decode_alpha:{w}",
    "running": "instance:num_requests_running:avg{w}",
    "generation": "instance:generation_tokens:rate{w}",
    "break_even": "instance:spec_decode_break_even_tokens_per_step:{w}",
}


def names(window: str) -> dict[str, str]:
    """Recorded series names for a window ("5m" -> instance:spec_decode_drafts:rate5m, ...)."""
    promapi.parse_duration(window)
    return {key: value.format(w=window) for key, value in _NAMES.items()}


def _sum(expr: str, by: str = BY) -> str:
    return f"sum by ({by}) ({expr})"


def _rate(selector: str, w: str) -> str:
    return f"rate({selector}[{w}])"


def recording_expressions(window: str) -> dict[str, str]:
    """PromQL of every recording rule except break-even and α (which need the model)."""
    n = names(window)
    w = window
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
    ])
    draft_tokens = " or ".join([
        _sum(_rate(f'{{__name__=~"{_COUNTS}:spec_decode_num_draft_tokens_total"}}', w)),
        _sum(_rate(f'{{__name__=~"{_TRT}spec_decode_drafted_tokens_total"}}', w)),
    ])
    by_pos = f"{BY}, position"
    trt_accepted = _rate(f'{{__name__=~"{_TRT}spec_decode_accepted_tokens_total"}}', w)
    per_position = (
        "(" + _sum(_rate(f'{{__name__=~"{_COUNTS}:spec_decode_num_accepted_tokens_per_pos_total"}}', w), by_pos)
        + " or " + _sum(f'label_replace({trt_accepted}, "position", "$1", "token_position", "(.*)")', by_pos)
        + f") / on ({BY}) group_left {n['drafts']}")
    return {
        n["drafts"]: drafts,
        n["accepted"]: accepted,
        n["draft_tokens"]: draft_tokens,
        n["tokens_per_step"]: f"1 + {n['accepted']} / {n['drafts']}",
        n["draft_acceptance_rate"]: f"{n['accepted']} / {n['draft_tokens']}",
        n["per_position"]: per_position,
        n["k"]: f"{n['draft_tokens']} / {n['drafts']}",
        n["running"]: _sum(f'avg_over_time({{__name__=~"{RUNNING_SERIES}", {_SGL_RANK}}}[{w}])'),
        n["generation"]: _sum(_rate(f'{{__name__=~"{GENERATION_SERIES}", {_SGL_RANK}}}', w)),
    }


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


def break_even_expression(steps: list[Step], running: str) -> str:
    """`or` of bucketed comparisons: each running count picks its step's break-even E."""
    parts = []
    for st in steps:
        cond = running
        if st.lo is not None:
            cond += f" > {_fmt(st.lo)}"
        if st.hi is not None:
            cond += f" <= {_fmt(st.hi)}"
        if st.lo is None and st.hi is None:
            cond += " >= 0"
        parts.append(f"({cond}) * 0 + {_fmt(st.break_even)}")
    return "\n  or ".join(parts)


def alpha_expression(k: int, tokens_per_step: str) -> str:
    """α for the measured E at the model's k, as a lookup over α in steps of ALPHA_STEP (±0.01)."""
    alphas = np.round(np.arange(0.0, 1.0 + 1e-9, ALPHA_STEP), 4)
    es = [float(acceptance.tokens_per_step(float(a), k)) for a in alphas]
    parts = []
    for i, a in enumerate(alphas):
        lo = (es[i - 1] + es[i]) / 2 if i > 0 else None
        hi = (es[i] + es[i + 1]) / 2 if i + 1 < len(es) else None
        cond = tokens_per_step + (f" > {_fmt(lo)}" if lo is not None else "") + (f" <= {_fmt(hi)}" if hi is not None else "")
        parts.append(f"({cond}) * 0 + {_fmt(float(a))}")
    return " or ".join(parts)


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
        steps += f" (off above batch {off})"
    return (f"{where}{steps}; or lower k, or turn speculation off while load stays this high, or check why "
            "acceptance dropped (temperature, prompts, draft model)")


def _q(expr: str) -> str:
    """A PromQL instant query inside an alert template: its first value, 2 decimals."""
    return ('{{ with printf "' + expr + '" $labels.job $labels.instance $labels.model_name | query }}'
            '{{ . | first | value | printf "%.2f" }}{{ else }}?{{ end }}')


def rules_document(scenario: Scenario, window: str = "5m", for_: str = "10m",
                   severity: str = "warning") -> dict:
    """The rules file as a dict (one group). Raises SpecModelError for a model that does not fit."""
    promapi.parse_duration(window)
    if str(for_).strip() not in ("0", "0s"):
        promapi.parse_duration(for_)  # raises with a message naming the value
    s = scenario.validated()
    first = predict(with_changes(s, concurrency=1))
    if not float(first.spec.max_concurrency) >= 1:
        raise SpecModelError(f"{s.target} with its draft ({s.method}{', ' + s.draft if s.draft else ''}) does not fit "
                             f"on {s.tp}x {s.gpu} even at batch 1: no break-even to alert on; choose a larger GPU, "
                             "more tensor parallelism or a smaller model")
    n = names(window)
    steps = break_even_steps(s)
    rules = [{"record": name, "expr": expr} for name, expr in recording_expressions(window).items()]
    rules.append({"record": n["alpha"], "expr": alpha_expression(int(s.k), n["tokens_per_step"])})
    rules.append({"record": n["break_even"], "expr": break_even_expression(steps, n["running"])})
    sel = "{job='%s',instance='%s',model_name='%s'}"
    rules.append({
        "alert": ALERT,
        "expr": (f"{n['tokens_per_step']}\n  < on ({BY}) {n['break_even']}\n"
                 f"and on ({BY}) {n['drafts']} > 0"),
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {
            "summary": ("{{ $labels.instance }} ({{ $labels.job }}): speculative decoding below break-even, "
                        "E = {{ $value | printf \"%.2f\" }} tokens per step < break-even "
                        + _q(n["break_even"] + sel) + " at " + _q(n["running"] + sel) + " running requests"),
            "description": (f"Measured over {window}: E (tokens per verify step) is below the E at which "
                            f"speculation ties plain decoding at this load, so speculation slows this server down. "
                            + advice(s) + "."),
            "model": (f"{s.target} on {s.tp}x {s.gpu}, {s.method}"
                      f"{' with ' + s.draft if s.method == 'draft_model' and s.draft else ''}, k = {s.k}, "
                      f"context {s.context_len} tokens"),
        },
    })
    return {"groups": [{"name": GROUP, "rules": rules}]}


def _yaml_scalar(value) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a YAML double-quoted scalar
    return json.dumps(value)


def to_yaml(doc: dict) -> str:
    """A small YAML writer for the rules document (strings double-quoted, multi-line expressions as blocks)."""
    lines = ["# Generated by `python -m specmodel rules`: recording rules for speculative decoding per instance",
             "# and an alert when measured E stays below the model's break-even E at the current load.",
             "groups:"]
    for group in doc["groups"]:
        lines.append(f"  - name: {_yaml_scalar(group['name'])}")
        if "interval" in group:
            lines.append(f"    interval: {_yaml_scalar(group['interval'])}")
        lines.append("    rules:")
        for rule in group["rules"]:
            first = True
            for key in ("record", "alert", "expr", "for", "labels", "annotations"):
                if key not in rule:
                    continue
                lead = "      - " if first else "        "
                first = False
                value = rule[key]
                if key == "expr":
                    lines.append(f"{lead}expr: |-")
                    lines.extend("          " + line for line in value.splitlines())
                elif isinstance(value, dict):
                    lines.append(f"{lead}{key}:")
                    lines.extend(f"          {k}: {_yaml_scalar(v)}" for k, v in value.items())
                else:
                    lines.append(f"{lead}{key}: {_yaml_scalar(value)}")
    return "\n".join(lines) + "\n"


def rules_yaml(scenario: Scenario, window: str = "5m", for_: str = "10m", severity: str = "warning") -> str:
    return to_yaml(rules_document(scenario, window, for_, severity))
