"""`rules` command: Prometheus recording rules and the break-even alert, for the model of your servers.

    python -m specmodel rules --gpu H100 --target "Llama 3.1 8B" --draft "Llama 3.2 1B" --k 4 --window 5m --out rules.yml
"""

from __future__ import annotations

import argparse

from specmodel.cli.args import add_model_arguments, instances_from_args, rules_scenario_from_args
from specmodel.cli.output import print_or_write
from specmodel.export import rules


def add_parser(sub) -> None:
    p = sub.add_parser(
        "rules", help="Prometheus recording rules and a break-even alert for speculative decoding",
        description="Write a Prometheus rules file: recording rules for E, draft acceptance rate, α and per-position "
                    "acceptance per instance (vLLM, SGLang, llama.cpp, lmdeploy, TensorRT-LLM, TGI), and the alert "
                    f"{rules.ALERT}, which fires when measured E stays below the model's break-even E at the "
                    "instance's current running requests, each instance at its own k (and model, with --instance). Check it "
                    "with `promtool check rules FILE`.")
    add_model_arguments(p)
    p.add_argument("--for", dest="for_", default="10m", help="how long E must stay below break-even; default 10m")
    p.add_argument("--severity", default="warning", help="the alert's severity label; default warning")
    p.add_argument("--out", metavar="FILE", help="write the rules here (whole or not at all); default: stdout")
    p.add_argument("--no-legacy-names", dest="legacy", action="store_false",
                   help="leave out the copies recorded under the rules' old names (instance:…:5m; deprecated)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    text = rules.rules_yaml(rules_scenario_from_args(args), window=args.window, for_=args.for_, severity=args.severity,
                            instances=instances_from_args(args), legacy=args.legacy, default_k=args.k)
    print_or_write(text, args.out)
    return 0
