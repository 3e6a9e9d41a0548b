"""`mix` command: one pool serving several workloads, against splitting the GPUs by traffic shape."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from specmodel.cli.args import add_scenario_arguments, named_scenario, number
from specmodel.errors import SpecModelError
from specmodel.bounds import MAX_CONCURRENCY
from specmodel.model.decide import K_MAX
from specmodel.model.presets import METHODS
from specmodel.notes import cli_label

if TYPE_CHECKING:
    from specmodel.plan.mix import MixReport


def _methods(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"expected methods from {', '.join(METHODS)}, got '{text}'")
    return names


def add_parser(sub) -> None:
    p = sub.add_parser(
        "mix", help="one pool serving several workloads vs splitting the GPUs by traffic shape",
        description="Compare one pool with speculation on and off against the best splits of the GPUs "
                    "into pools per workload. FILE is a CSV (header: label, share, alpha or survival, "
                    "optional temperature, notes, alpha_<method>) or a JSON list of such objects.")
    p.add_argument("file", metavar="FILE", help="workloads: CSV or JSON")
    p.add_argument("--gpus", type=number(1, 256, whole=True), default=2,
                   help="GPUs in total for the mix (a pool gets whole GPUs); default 2")
    p.add_argument("--concurrency", type=number(1, MAX_CONCURRENCY, whole=True), default=32,
                   help="concurrent sequences of the whole mix; default 32")
    p.add_argument("--k", type=number(0, 32, whole=True), default=4,
                   help="draft tokens per step of the single pool as deployed; default 4")
    p.add_argument("--k-max", type=number(1, 16, whole=True), default=K_MAX,
                   help=f"largest k the search tries; default {K_MAX}")
    p.add_argument("--methods", type=_methods,
                   help="methods the search tries (comma-separated); default the pool's method and any "
                        "with an alpha_<method> column")
    p.add_argument("--top", type=number(1, 20, whole=True), default=3, help="splits to report; default 3")
    p.add_argument("--split", type=lambda text: [s.strip() for s in text.split(",") if s.strip()],
                   help="labels of the workloads (at most 6) the split search separates, comma-separated; the "
                        "others share one pool; default: all, or the 6 with the largest shares")
    add_scenario_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_mix)


def report_from_args(args: argparse.Namespace) -> tuple[MixReport, list[str]]:
    from specmodel.plan.mix import compare  # here: only this command needs the planner
    from specmodel.plan.workloads import read_workloads

    workloads, problems, notes = read_workloads(args.file)
    if problems:
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
        raise SpecModelError(problems[0] + more)
    base = named_scenario(args, k=args.k, concurrency=args.concurrency)
    report = compare(base, workloads, args.concurrency, args.gpus, methods=args.methods, k_max=args.k_max,
                     top=args.top, split_among=args.split)
    return report, notes


def run_mix(args: argparse.Namespace) -> int:
    from specmodel.cli.output import print_json

    report, notes = report_from_args(args)
    out = report.to_dict()
    out["notes"] = notes + out["notes"]
    _step_fit(args, report, out)
    if args.json:
        print_json(out)
        return 0
    s = report.scenario
    how = f"draft {s.draft}" if s.method.name == "draft_model" else s.method.name
    print(f"{s.target} on {report.gpus}× {s.gpu} (tp {s.tp}), {how}, {report.concurrency} concurrent sequences, "
          f"context {s.context_len}")
    for line in out["decision_lines"]:  # the decision first, in the page's words
        print(f"decision: {line}")
    print("workloads: " + ", ".join(f"{w.label} {w.share:.0%} (α {w.alpha:.2f})" for w in report.workloads))
    for note in out["notes"]:
        print(f"{cli_label(note)}: {note}")
    labels = [w.label for w in report.workloads]
    width = max(12, *(len(x) for x in labels))
    header = f"{'plan':<34} {'tok/s':>8} {'vs off':>7}  " + "  ".join(f"{x[:width]:>{width}}" for x in labels)
    print()
    print(header)
    print(f"{'':<34} {'':>8} {'':>7}  " + "  ".join(f"{'ITL ms, tok/s/seq':>{width}}" for _ in labels))
    off = report.single_off.throughput_tok_s
    for plan in report.plans:
        cells = []
        for x in labels:
            _, w = plan.workload(x)
            cells.append(f"{w.itl_ms:>{width - 8}.1f}, {w.per_seq_tok_s:>6.1f}")
        mark = "" if plan.fits else "  [does not fit: sequences queue]"
        print(f"{plan.name:<34} {plan.throughput_tok_s:>8,.0f} {plan.throughput_tok_s / off:>6.2f}x  "
              + "  ".join(cells) + mark)
        print(f"  {plan.describe()}")
    print()
    print(report.recommendation)
    if out.get("step_fit"):
        from specmodel.words.step_fit import mix_fit_line
        print(mix_fit_line(out["step_fit"]["setup"], out["step_fit"]))
    if out.get("step_fit_note"):
        print(f"step fits: {out['step_fit_note']}")
    return 0


def _step_fit(args: argparse.Namespace, report, out: dict) -> None:
    """With a saved step fit for the pool's k and method (--calibration): each workload's speedup in the
    single pool by the server's measured step times, at its own tokens per step (out["step_fit"])."""
    from specmodel.cli.args import step_fit_from_args
    from specmodel.plan.mix import workloads_by_fit

    s = report.scenario
    saved = step_fit_from_args(args, s.k, s.method.name, out)
    if saved is not None:
        out["step_fit"] = {"setup": saved.label, **workloads_by_fit(report, saved.fit)}
