"""`dashboard` command: a Grafana dashboard over the rules of `specmodel rules`.

    python -m specmodel dashboard --window 5m --out speculative-decoding.json
"""

from __future__ import annotations

import argparse

from specmodel.cli.args import add_model_arguments, instances_from_args, rules_scenario_from_args
from specmodel.cli.output import print_or_write


def add_parser(sub) -> None:
    p = sub.add_parser(
        "dashboard", help="a Grafana dashboard (JSON) for speculative decoding vs break-even",
        description="Write a Grafana dashboard (JSON model, import it in Grafana) with E and its break-even line, "
                    "α, per-position acceptance, running requests, tokens/s and the alert's state, templated on job, "
                    "instance and model. It reads the series recorded by `python -m specmodel rules` with the same "
                    "--window.")
    add_model_arguments(p)
    p.add_argument("--title", help="dashboard title")
    p.add_argument("--out", metavar="FILE.json", help="write the dashboard here (whole or not at all); default: stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from specmodel.export import dashboard  # here: only this command needs it

    text = dashboard.dashboard_json(rules_scenario_from_args(args), window=args.window, title=args.title,
                                    instances=instances_from_args(args), default_k=args.k)
    print_or_write(text, args.out)
    return 0
