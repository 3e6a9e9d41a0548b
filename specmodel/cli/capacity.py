"""`capacity` command: GPUs needed for a load at a latency target, with and without speculation."""

from __future__ import annotations

import argparse

from specmodel.cli.args import add_acceptance_and_timing_arguments, add_scenario_arguments, number, scenario_from_args
from specmodel.notes import cli_label


def add_parser(sub) -> None:
    p = sub.add_parser(
        "capacity", help="GPUs needed for a load at a latency target, with and without speculation",
        description="How many GPUs serve a load (concurrent users, or requests/s with mean output tokens) with "
                    "every user at a latency target, for plain decoding and for speculation at its best k. "
                    "Decode only: prefill is not modelled.")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--users", type=number(), help="concurrent users (sequences decoding at once)")
    load.add_argument("--rps", type=number(), help="requests per second (needs --output-tokens)")
    p.add_argument("--output-tokens", type=number(), help="mean generated tokens per request (with --rps)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--min-user-tok-s", type=number(), help="every user sees at least this many tokens/s")
    target.add_argument("--max-itl-ms", type=number(), help="every user's mean inter-token latency at most this, ms")
    add_scenario_arguments(p)
    add_acceptance_and_timing_arguments(
        p, k_help="fix the speculative arm's k (default: the k in 1..--k-max that needs the fewest GPUs)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_capacity, concurrency=1)


def run_capacity(args: argparse.Namespace) -> int:
    from specmodel.cli.output import print_json
    from specmodel.plan.capacity import Load, Target, plan  # here: only this command needs the planner

    s = scenario_from_args(args)
    load = Load(users=args.users, rps=args.rps, output_tokens=args.output_tokens)
    target = Target(min_user_tok_s=args.min_user_tok_s, max_itl_ms=args.max_itl_ms)
    result = plan(s, load, target, k=args.k, k_max=args.k_max)
    out = result.to_dict()
    _step_fit(args, s, out, load, target)
    if args.json:
        print_json(out)
        return 0
    who = f"{s.target} on {s.tp}× {s.gpu} per replica" if s.tp > 1 else f"{s.target} on {s.gpu}"
    how = f"draft {s.draft}" if s.method.name == "draft_model" else s.method.name
    acc = f"α={s.alpha:.2f}" if s.survival is None else f"profile {','.join(f'{p:g}' for p in s.survival)}"
    print(f"{who}, {how}, {acc}, context {s.context_len} ({out['timings']} timings)")
    print(f"  load: {result.load.describe()}; target: {result.target.describe()}")
    plain, spec = out["plain"], out["spec"]
    rows = [("GPUs", "gpus", "{}"), ("replicas", "replicas", "{}"), ("users per replica", "batch_per_replica", "{}"),
            ("tok/s per user", "user_tok_s", "{:.1f}"), ("ITL ms", "itl_ms", "{:.1f}"),
            ("tok/s per GPU", "throughput_tok_s_per_gpu", "{:,.0f}")]
    spec_name = f"speculative (k = {spec['k']})"
    print(f"  {'':<20}{'plain':>14}{spec_name:>24}")
    for label, key, fmt in rows:
        cells = [("impossible" if arm[key] is None else fmt.format(arm[key])
                  + ("" if arm["meets_target"] else " (best)"))
                 for arm in (plain, spec)]
        print(f"  {label:<20}{cells[0]:>14}{cells[1]:>24}")
    if out.get("step_fit"):
        f = out["step_fit"]
        print(f"  measured fit ({f['setup']}): {f['words']}")
        print(f"  model alone: {out['verdict_text']}")
    else:
        print(f"  verdict: {out['verdict_text']}")
    if out.get("step_fit_note"):
        print(f"  step fits: {out['step_fit_note']}")
    print(f"  advice:  {out['advice']}")
    for note in out["notes"]:
        print(f"  {cli_label(note) + ':':<8} {note}")
    return 0


def _step_fit(args: argparse.Namespace, s, out: dict, load, target) -> None:
    """With a saved step fit for this k and method (--calibration): the replicas each arm needs by the
    server's own measured step times, at the fit and at the band's slow edge (out["step_fit"])."""
    from specmodel.cli.args import acceptance_given, step_fit_from_args
    from specmodel.plan.capacity import replicas_by_fit

    saved = step_fit_from_args(args, args.k, s.method.name, out)  # the fit's own k unless --k is given
    if saved is None:
        return
    e = float(out["spec"].get("tokens_per_step") or 0) or None if acceptance_given(args) else None
    out["step_fit"] = {"setup": saved.label, **replicas_by_fit(saved.fit, load, target, e)}
