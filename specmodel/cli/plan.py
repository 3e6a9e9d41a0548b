"""`plan` command: the fewest benchmark runs that pin what the model cannot know for one scenario,
as ready commands for the engine's benchmark; with --results, the band before and after calibrating.

    python -m specmodel plan [predict's scenario flags] [--bench vllm|sglang|guidellm] [--results FILE...] [--json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specmodel.cli.args import add_acceptance_and_timing_arguments, add_scenario_arguments, number, scenario_from_args
from specmodel.errors import SpecModelError
from specmodel.files import read_file
from specmodel.text import safe_text


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="the few benchmark runs that pin the model's unknowns, as ready commands",
                       description="Plan the fewest plain and speculative benchmark runs that separate a server's "
                                   "fixed from its per-sequence step costs and bracket where speculation stops "
                                   "paying, for the scenario predict takes (same flags). --results FILE... reads "
                                   "their results back, calibrates and prints the band before and after.")
    add_scenario_arguments(p)
    add_acceptance_and_timing_arguments(p)
    p.add_argument("--concurrency", type=number(1, 65_536, whole=True), default=1, help="concurrent sequences")
    p.add_argument("--bench", choices=("vllm", "sglang", "guidellm"), default=None,
                   help="benchmark client; default the engine's own (vllm bench serve, sglang.bench_serving), "
                        "guidellm for TensorRT-LLM")
    p.add_argument("--results", nargs="+", metavar="FILE", help="the plan's result files: calibrate on them and "
                                                                 "print the band before and after")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    from specmodel.cli.output import across_k_lines, print_json
    from specmodel.words import summarize
    from specmodel.plan.measure import measurement_plan

    scenario = scenario_from_args(args)
    summary = summarize(scenario, k_max=args.k_max)
    plan = measurement_plan(summary, args.bench)
    out = plan.to_dict()
    out["off_above_batch_low"], out["off_above_batch_high"] = summary.off_above_range or (None, None)
    out["off_above_batch"] = summary.off_above
    if args.results:
        out["calibrated"], out["step_fits"] = _calibrated(scenario, args.results)
    _saved_fit(args, scenario, out)
    if args.json:
        print_json(out)
        return 0
    fits = out.get("step_fits", []) + ([out["step_fit"]] if out.get("step_fit") else [])
    if fits:  # the reviewer's own runs first: where they decide, the model's plan below is for what they do not
        print("Your runs (each setup's step fit):")
        for f in fits:
            print(f"  {f['setup']}: {f['words']}")
            for line in f["runs_to_pin"]:
                print(f"    to pin the rest: {line}")
        for line in across_k_lines(out.get("decision_across_k"), "  across k: ", "    "):
            print(line)
        print("The model's plan for the scenario of the flags (their defaults where none is given"
              + _not_theirs(args, scenario, fits) + "):")
    hours = out["total_minutes"]
    print(f"Measurement plan for {scenario.target} on {scenario.gpu} ({out['engine']}, {scenario.method}, k = "
          f"{plan.k}): {len(plan.runs)} runs, about {hours:g} min with {len(plan.servers)} server starts")
    print(f"  plain server:       {plan.servers['plain']}")
    print(f"  speculative server: {plan.servers['speculative']}")
    if "speculative_off" in plan.servers:
        print(f"  speculation off:    {plan.servers['speculative_off']}")
    for r in plan.runs:
        print(f"  - batch {r.concurrency}, {r.arm} "
              f"(~{r.seconds / 60:.1f} min): {r.why}")
        print(f"    {r.command}")
    for note in plan.notes:
        print(f"  note: {note}")
    if out.get("calibrated"):
        c = out["calibrated"]
        print(f"  band before: {c['before'][0]:.2f}x to {c['before'][1]:.2f}x (width {c['width_before']:.2f}); "
              f"after calibrating on the results: {c['after'][0]:.2f}x to {c['after'][1]:.2f}x "
              f"(width {c['width_after']:.2f}, engine {c['engine_after']})")
        print(f"  calibration: {c['calibration']['message']}")
    return 0


def _not_theirs(args: argparse.Namespace, scenario, fits: list[dict]) -> str:
    """Where no flag names the target and the runs' fits are of another model: that the plan's commands are not for
    the runs' server ("; not your runs' 'tiny-llama': …"); "" otherwise."""
    if args.target or getattr(args, "target_config", None):
        return ""
    theirs = sorted({f["target"] for f in fits if f.get("target") and f["target"] != scenario.target.name})
    if not theirs:
        return ""
    named = ", ".join(f"'{safe_text(t, 60)}'" for t in theirs[:3])
    return f"; not your runs' {named}: give --target and --gpu for its commands"


def _fit_entry(label: str, fit, target: str | None = None) -> dict:
    """A step fit as the plan shows it: its words, what it pinned, and the runs that would pin the rest: the terms
    it left at defaults, and where it leaves the turn-off batch open, the two concurrencies that would close it (the
    decision line's "Pin it", between the batches the runs measured)."""
    from specmodel.show.decisions import fit_pin
    from specmodel.words.step_fit import fit_line, pinned_words, runs_to_pin, threshold_runs_words

    off = fit.off_above() if fit.usable else None
    threshold = fit_pin(off, None, fit) if off is not None else None
    return {"setup": label, "words": fit_line(fit), "pinned": pinned_words(fit) if fit.usable else "",
            "runs_to_pin": runs_to_pin(fit) + ([threshold_runs_words(threshold, off)] if threshold else []), "usable": fit.usable,
            "batches": list(fit.batches), "threshold_runs": list(threshold) if threshold else None, "target": target}


def _saved_fit(args: argparse.Namespace, scenario, out: dict) -> None:
    """--calibration's step fit for this k and method: what it pinned and which runs would pin the rest; where the
    file holds the same server's runs at other k too, the schedule across them and the runs that would pin where it
    switches k (`decision_across_k`, as `predict` gives it)."""
    from specmodel.cli.args import saved_fits_from_args, step_fit_from_args
    from specmodel.fit.saved import fits_across_k
    from specmodel.show.decisions import across_k_decision

    fits = saved_fits_from_args(args) if getattr(args, "calibration", None) else []  # the file read once
    saved = step_fit_from_args(args, scenario.k, scenario.method.name, out, fits)
    if saved is not None:
        out["step_fit"] = _fit_entry(saved.label, saved.fit, saved.target)
        across = fits_across_k(fits, scenario.k, saved.method or scenario.method.name)
        if across:
            out["decision_across_k"] = across_k_decision(across, saved.workload or scenario.method.label).to_dict()


def _calibrated(scenario, files: list[str]) -> dict:
    from specmodel.plan.measure import calibrated_band
    from specmodel.runs.load import read_runs
    from specmodel.runs.records import RunDefaults

    defaults = RunDefaults(**scenario.names(), tp=scenario.tp, context_len=scenario.context_len, k=scenario.k or None)
    table = read_runs([(Path(f).name, read_file(f)) for f in files], defaults)
    from specmodel.runs import collapse_problems
    for line in collapse_problems(table.problems):
        sys.stderr.write(f"{line}\n")
    if table.rows.empty:
        raise SpecModelError("no run could be read from the --results files; see the lines above")
    from specmodel.runs.step_points import setup_fits
    fits = [_fit_entry(", ".join(p for p in (f.workload, f.setup) if p) or "the results", f.fit, f.target)
            for f in setup_fits(table.rows, scenario.efficiency)]
    try:
        band = calibrated_band(scenario, table.rows)
    except SpecModelError as exc:
        if not fits:
            raise
        band = None
        sys.stderr.write(f"note: the model's parameters were not fitted: {exc}. The step fits are from the "
                         "results alone\n")
    return band, fits
