"""`fleet` command: every instance's speculative-decoding statistics through a Prometheus server."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from specmodel.cli.args import (add_scenario_arguments, instances_from_args, named_scenario, number, saved_fits_from_args,
                                server_method)
from specmodel.errors import SpecModelError
from specmodel.bounds import PROMETHEUS_TIMEOUT_S
from specmodel.metrics.schemas import SERVERS_IN_WORDS

if TYPE_CHECKING:
    from specmodel.metrics import promapi

PASSWORD_ENV = "SPECMODEL_PROMETHEUS_PASSWORD"
PRESETS_WORDS = "rests on presets (no step fit applies: give --calibration with step fits of these servers)"
TOKEN_ENV = "SPECMODEL_PROMETHEUS_TOKEN"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "fleet", help="per-instance speculation statistics and verdicts from a Prometheus server",
        description=f"Query a Prometheus server that scrapes {SERVERS_IN_WORDS} servers: per instance, E, α, "
                    "k, load and throughput over the window, and the model's predicted speedup at that "
                    "instance's concurrency. Credentials come from environment variables, never the command "
                    "line: a bearer token (--token-env) or --user with a password (--password-env).")
    p.add_argument("url", metavar="PROMETHEUS_URL", help="base URL of the Prometheus server, e.g. http://prometheus:9090")
    p.add_argument("--window", default="5m", help="Prometheus duration the statistics cover (30s, 5m, 1h); default 5m")
    p.add_argument("--match", default="", metavar="LABELS",
                   help='label filter for every series, e.g. job="vllm" or job=~"vllm-.*"')
    p.add_argument("--timeout", type=number(0.1, 600), default=PROMETHEUS_TIMEOUT_S,
                   help=f"seconds to wait for Prometheus; default {PROMETHEUS_TIMEOUT_S:g}")
    p.add_argument("--user", help="user name for basic auth (the password comes from --password-env)")
    p.add_argument("--password-env", default=PASSWORD_ENV,
                   help=f"environment variable holding the basic-auth password; default {PASSWORD_ENV}")
    p.add_argument("--token-env", default=TOKEN_ENV,
                   help=f"environment variable holding a bearer token; default {TOKEN_ENV}")
    add_scenario_arguments(p)
    p.add_argument("--alpha", type=number(0, 1), default=0.7,
                   help="α assumed for instances with speculation off (what turning it on would do); default 0.7")
    p.add_argument("--spec-k", type=number(1, 32, whole=True), default=4,
                   help="k assumed for instances with speculation off; default 4")
    p.add_argument("--k", type=number(1, 32, whole=True),
                   help="draft tokens per step, for servers that do not reveal it (vLLM V0)")
    p.add_argument("--instance", action="append", default=[], metavar="INSTANCE=K[,TARGET[,DRAFT]]",
                   help="judge this instance on its own k (and target, draft), as `rules --instance` does: needed "
                        "where the server does not expose k (TGI's --speculate); repeatable")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per instance")
    p.set_defaults(run=run)


def auth_from_env(user: str | None, password_env: str = PASSWORD_ENV, token_env: str = TOKEN_ENV) -> promapi.PromAuth:
    from specmodel.metrics import promapi  # here, not at the top: the HTTP client loads only for a query

    token = os.environ.get(token_env) or None
    password = os.environ.get(password_env) or None
    if user and token:
        raise SpecModelError(f"--user and ${token_env} are both set: use one way to log in")
    return promapi.PromAuth(username=user, password=password if user else None, bearer_token=token)


def _fmt(value, spec: str, none: str = "-") -> str:
    return none if value is None else format(value, spec)


def run(args: argparse.Namespace) -> int:
    from specmodel.cli.output import across_k_lines, print_json
    from specmodel.metrics import fleet, promapi, scrape  # here: building every command's parser imports no HTTP client

    policy = scrape.ScrapePolicy.from_env()
    server = promapi.PromServer(args.url, auth_from_env(args.user, args.password_env, args.token_env),
                                timeout_s=args.timeout, policy=policy)
    base = named_scenario(args, alpha=args.alpha, k=args.spec_k).validated()
    fits = tuple(saved_fits_from_args(args))  # --calibration's, named like --fit where given
    method = server_method(args)
    with scrape.make_client(policy) as client:
        report = fleet.fleet(client, server, base, window=args.window, selector=args.match, k=args.k, fits=fits,
                             method=method, instances=instances_from_args(args))
    rows = [_with_across_k(i, fits, method) for i in report.instances]
    for p in report.problems:  # the good instances are the answer (exit 0); the bad ones are named
        sys.stderr.write(f"warning: {p['instance']} (job {p['job']}) not read: {p['reason']}\n")
    if args.json:
        print_json(rows + [{"instance": d["instance"], "model_name": None, "job": d["job"], "up": False,
                            "verdict": "down", "last_error": d["last_error"] or None} for d in report.down]
                   + [{"instance": p["instance"], "model_name": None, "job": p["job"], "up": None,
                       "verdict": "not read", "problems": [p["reason"]], "last_error": None}
                      for p in report.problems])
        return 0
    gpus = f"{base.tp}× {base.gpu}" if base.tp > 1 else base.gpu
    on_presets = all(r["verdict_rests_on"] == "presets" for r in rows)
    print(f"{len(rows)} instance(s) at {report.prometheus}, window {report.window}; "
          f"model: {base.target} on {gpus}, {base.method}"
          + (f"; every verdict {PRESETS_WORDS}" if on_presets else ""))
    for r in rows:  # the decision per instance first, in the page's words
        print(f"  decision: {r['decision_line']}")
        for line in across_k_lines(r.get("decision_across_k"), "  across k: ", " " * 12):
            print(line)
    for i, r in ((i, i.to_dict()) for i in report.losing):
        print(f"  LOSES  {i.instance} ({i.job}): {r['verdict_text']}; {r['advice']}")
    for d in report.down:
        print(f"  DOWN   {d['instance']} ({d['job']}): {d['last_error'] or 'scrape failing'}")
    for p in report.problems:
        print(f"  NOT READ  {p['instance']} ({p['job']}): {p['reason']}")
    header = f"{'job':<16} {'instance':<24} {'server':<8} {'k':>2} {'E':>5} {'α':>5} {'running':>8} " \
             f"{'tok/s':>8} {'pred':>6}  verdict"
    print(header)
    for r in rows:
        print(f"{r['job'][:16]:<16} {r['instance'][:24]:<24} {r['server']:<8} {_fmt(r['k'], 'd'):>2} "
              f"{_fmt(r['tokens_per_step'], '.2f'):>5} {_fmt(r['alpha'], '.2f'):>5} "
              f"{_fmt(r['running_requests'], '.1f'):>8} {_fmt(r['generation_tok_s'], '.0f'):>8} "
              f"{_fmt(r['predicted_speedup'], '.2f'):>5}x  {r['verdict_text']}"
              + (f" ({r['advice']})" if r["advice"] else ""))
    return 0


def _with_across_k(instance, fits: tuple, method: str | None) -> dict:
    """The instance's JSON, with `decision_across_k` ({decision_line, schedule}, as `scrape` gives it) where the
    calibration holds its server's runs at its k and at other k (show.decisions.server_across_k)."""
    from specmodel.show.decisions import server_across_k

    out = instance.to_dict()
    across = server_across_k(instance.judgement, fits, method, instance.stats, instance.instance)
    if across is not None:
        out["decision_across_k"] = across.to_dict()  # decision_line, schedule, the runs that pin its switch
    return out
