"""`predict` and `presets` commands: one what-if scenario from flags; the preset catalogue."""

from __future__ import annotations

import argparse

from specmodel.cli.args import add_acceptance_and_timing_arguments, add_scenario_arguments, number, scenario_from_args
from specmodel.errors import DoesNotFit, SpecModelError
from specmodel.export.deploy import deploy_advice
from specmodel.export.prediction import does_not_fit_dict, prediction_dict
from specmodel.bounds import MAX_CONCURRENCY
from specmodel.model import presets
from specmodel.words import summarize
from specmodel.words.decision_line import pin_line
from specmodel.model.memory import kv_bytes_per_token
from specmodel.model.off_state import given_off_cost
from specmodel.notes import cli_label
from specmodel.show.readouts import slower_caption


def add_parser(sub) -> None:
    p = sub.add_parser("predict", help="predict speedup, break-even, best k and crossover for one scenario",
                       description="Predict one scenario. With --t-target-ms/--t-draft-ms the timings are "
                                   "measured (they pin the memory-bound floor); otherwise from hardware presets.")
    add_scenario_arguments(p)
    add_acceptance_and_timing_arguments(p)
    p.add_argument("--concurrency", type=number(1, MAX_CONCURRENCY, whole=True), default=1, help="concurrent sequences")
    p.add_argument("--dp", type=number(1, 1024, whole=True), default=1,
                   help="data-parallel replicas the deployment runs (vLLM and SGLang drop per-batch k under DP); default 1")
    p.add_argument("--off-cost", type=number(0, 10), metavar="SHARE",  # 10: ten times the step, far above any published
                   help="what a step costs with speculation configured but switched off (the schedule's k = 0 band), "
                        "as you measured it: a share of the plain step (0.15 for 15%%); default: the engine's value "
                        "(`off_cost` in --json says which)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_predict)

    q = sub.add_parser("presets", help="list GPU, model and method presets with their sources")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=run_presets)


def crossover_words(cross: int | None, k: int) -> str:
    """The crossover of the k set here in words (never "loses above batch 0")."""
    if k == 0:
        return "none (speculation is off)"
    if cross is None:
        return f"k = {k} never loses up to batch 4096"
    if cross == 0:
        return f"k = {k} loses already at batch 1"
    return f"k = {k} loses above batch {cross}"


def _f(value, spec: str = ".2f", none: str = "n/a") -> str:
    return none if value is None else format(value, spec)


def run_predict(args: argparse.Namespace) -> int:
    from specmodel.cli.output import across_k_lines, print_json

    scenario = scenario_from_args(args)
    off = None if args.off_cost is None else given_off_cost(args.off_cost, "--off-cost")
    try:
        summary = summarize(scenario, k_max=args.k_max, off=off)
    except DoesNotFit as exc:  # an answer: in JSON a verdict; as text one line and exit 2
        if not args.json:
            raise
        print_json(does_not_fit_dict(scenario, exc))
        return 0
    out = prediction_dict(summary, dp=args.dp)
    fit_out = _step_fit(args, summary, out)
    ran = out["runs_schedule"]  # None: no step fit of --calibration answers, the model decides
    from specmodel.show.decisions import with_runs_schedule
    advice = deploy_advice(summary if ran is None else with_runs_schedule(summary, ran))  # as the decision says
    if args.json:
        print_json(out)
        return 0
    s = summary.scenario
    plain, spec = out["plain"], out["spec"]
    who = f"{s.target} on {s.tp}× {s.gpu}" if s.tp > 1 else f"{s.target} on {s.gpu}"
    how = f"draft {s.draft}" if s.method.name == "draft_model" else s.method.name
    be_alpha = "unreachable" if out["break_even_alpha"] is None else f"{out['break_even_alpha']:.2f}"
    model_setup = (f"{who}, {how}, k={out['k']}, α={out['alpha']:.2f}, concurrency {out['concurrency']}, "
                   f"context {s.context_len} ({out['timings']} timings)")
    # where the reviewer's runs answer, their setup heads the answer and the flags' scenario is the model's
    print(f"{fit_out['setup']} (your runs' step fit), concurrency {out['concurrency']}" if fit_out else model_setup)
    print(f"  decision:         {out['decision_line']}")
    if out["threshold_runs"]:
        print(f"                    {pin_line(tuple(out['threshold_runs']))}")
    for line in across_k_lines(out.get("decision_across_k"), "  across k:         ", " " * 20):
        print(line)
    if fit_out:
        print(f"  measured fit:     {fit_out['words']}")  # its setup heads the answer
        print(f"                    {fit_out['off_words']}")
        print(f"  model alone:      {out['verdict_text']}, on {model_setup}")
    else:
        print(f"  verdict:          {out['verdict_text']}")
    if out.get("step_fit_note"):
        print(f"  step fits:        {out['step_fit_note']}")
    if out["advice"]:  # the model's, for the flags' scenario: said so where the runs' fit decides
        print(f"  {'model advice:' if fit_out else 'advice:':<17} {out['advice']}")
    print(f"  tokens per step:  {_f(out['tokens_per_step'])} (break-even {_f(out['break_even_tokens_per_step'])}, "
          f"α {be_alpha})")
    print(f"  plain:            {_f(plain['step_ms'])} ms/step, {_f(plain['throughput_tok_s'], '.0f')} tok/s, "
          f"fits {plain['max_concurrency']} sequences")
    print(f"  speculative:      {_f(spec['step_ms'])} ms/step, {_f(spec['throughput_tok_s'], '.0f')} tok/s, "
          f"fits {spec['max_concurrency']} sequences")
    cross = out["crossover_concurrency"]
    faster = slower_caption(out)  # the schedule's k a little slower here than the k set: said, as on the page
    print(f"  best k:           {out['best_k']} ({_f(out['best_k_speedup'])}x)" + (f", {faster}" if faster else "")
          + "; crossover: " + crossover_words(cross, s.k))
    if out["threshold_text"]:
        print(f"                    {out['threshold_text']}")
    pools, off = out["separate_pools"], out["off_cost"]
    if off and off["value"]:
        print(f"  off band:         {off['value']:.0%} of a plain step at batch {off['at_batch']} ({off['kind']}); "
              + (f"speculation pays up to batch {pools['above_batch']}" if pools["above_batch"] else
                 "speculation never pays here" if pools["above_batch"] == 0 else "speculation pays up to batch 512"))
    if str(s.engine) == "vllm" and ran is not None:  # the runs decide: their schedule, the model's beside it
        table = f"num_speculative_tokens_per_batch_size = {ran}" if any(k for *_, k in ran) else \
            "none: off at every batch, serve without --speculative-config"  # a table of zeros is configured-off
        print(f"  vLLM schedule:    {table} (your runs; the model's: {out['num_speculative_tokens_per_batch_size']})")
    elif str(s.engine) == "vllm":  # the engine text: no version named
        print(f"  vLLM schedule:    num_speculative_tokens_per_batch_size = {out['num_speculative_tokens_per_batch_size']}")
    else:
        print(f"  deploy:           {advice.intro}" + (f" {advice.one_line}" if advice.code else ""))
        if advice.note:
            print(f"                    {advice.note}")
    if out.get("off_note"):
        print(f"  off state:        {out['off_note']}")
    for note in out["notes"]:
        print(f"  {cli_label(note) + ':':<17} {note}")
    return 0


def _step_fit(args: argparse.Namespace, summary, out: dict) -> dict | None:
    """The saved step fit's answer at this concurrency (out["step_fit"]), where --calibration holds one for
    this k and method; the measurement's fit decides before the model, and its decision line leads."""
    s = summary.scenario
    from specmodel.cli.args import acceptance_given, saved_fits_from_args, step_fit_from_args
    from specmodel.fit.saved import fits_across_k
    from specmodel.plan.measure import fit_threshold_runs, largest_batch
    from specmodel.show.decisions import across_k_decision, runs_schedule
    from specmodel.words.off_cost import measured_off_words
    from specmodel.words.decision_line import fit_decision_line
    from specmodel.words.step_fit import fit_decision, off_words

    fits = saved_fits_from_args(args) if getattr(args, "calibration", None) else []  # the file read once
    saved = step_fit_from_args(args, s.k, s.method.name, out, fits)
    if saved is None:
        return None
    fit = saved.fit
    e = float(out["tokens_per_step"]) if acceptance_given(args) and fit.tokens_per_step else None  # else the runs' E
    low_high = [float(v) for v in fit.speedup(float(s.concurrency), e)]
    decision, words = fit_decision(fit, s.concurrency, e)
    mid, lo, hi = fit.off_above(e)
    out["step_fit"] = {"setup": saved.label, "speedup": round(low_high[0], 4), "speedup_low": round(low_high[1], 4),
                       "speedup_high": round(low_high[2], 4), "decision": decision, "words": words,
                       "off_above": {"batch": mid, "low": lo, "high": hi}, "off_words": off_words(fit, e),
                       "batches": list(fit.batches), "k": fit.k, "target": saved.target,
                       "tokens_per_step": e if e is not None else fit.tokens_per_step,
                       "tokens_per_step_from": "--alpha / --accept-len / --survival" if e is not None else "the runs"}
    out["verdict_from"] = "step fit"
    # the runs answer: the decision line is the fit's, and so are the runs that would pin its threshold
    out["decision_line"] = fit_decision_line(fit.k, (mid, lo, hi), _method_label(saved.method) or s.method.label)
    runs = fit_threshold_runs((mid, lo, hi), largest_batch(summary), tuple(b for b, _ in fit.measured))
    out["threshold_runs"] = list(runs) if runs else None
    across = fits_across_k(fits, s.k, saved.method or s.method.name)  # the answering fit's server at other k too
    if across:
        d = across_k_decision(across, saved.workload or s.method.label)
        out["decision_across_k"] = d.to_dict()  # decision_line, schedule, the runs that pin its switch
    # what to deploy as the runs decide: their schedule ([first batch, last batch, k], k = 0 off), not the model's
    out["runs_schedule"] = runs_schedule(fit, e, across or None)
    out["off_note"] = measured_off_words(fit.off_measured) or None  # the runs' off state, where they measured it
    return out["step_fit"]


def _method_label(name: str | None) -> str | None:
    """The label of the method the answering fit's runs name ("N-gram (prompt lookup)"), where it is a known one: the
    fit may be the only one at this k, chosen whatever method the flags default to."""
    try:
        return presets.find_method(name).label if name else None
    except SpecModelError:
        return None


def run_presets(args: argparse.Namespace) -> int:
    from specmodel.cli.output import print_json

    gpus = [presets.find_gpu(n) for n in presets.gpu_names()]
    models = [presets.find_model(n) for n in presets.model_names()]
    methods = [presets.find_method(n) for n in presets.METHODS]
    if args.json:
        print_json({"gpus": [g.__dict__ for g in gpus], "models": [m.__dict__ for m in models],
                    "methods": [m.__dict__ for m in methods]})
        return 0
    print("GPUs (dense TFLOPS BF16 / FP8 / FP4, bandwidth GB/s, memory GB, interconnect GB/s each way):")
    for g in gpus:
        low = "/".join("-" if x is None else f"{x:g}" for x in (g.dense_fp8_TFLOPS, g.dense_fp4_TFLOPS))
        print(f"  {g.name:<10} {g.dense_bf16_TFLOPS:>7g} /{low:<13} {g.bandwidth_GBps:>6g} {g.memory_GB:>5g}  "
              f"{g.interconnect} {g.interconnect_GBps:g}")
    print("Models (parameters [active], layers, KV KiB per token, weights, max context, family, default draft):")
    for m in models:
        active = f"[{m.active_params_B:g}B, {m.experts_per_token}/{m.experts} experts]" if m.is_moe else ""
        print(f"  {m.name:<29} {m.params_B:>7g}B {active:<24} {m.layers:>3} {kv_bytes_per_token(m) / 1024:>6g} "
              f"{m.weight_dtype:<4} {m.max_context:>8} {m.family:<11} {m.default_draft or '-'}")
    print("Methods:")
    for m in methods:
        print(f"  {m.name:<12} {m.description}")
    print("Sources: `python -m specmodel presets --json`.")
    return 0
