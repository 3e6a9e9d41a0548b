"""`scrape` command: two snapshots of a server's /metrics, the window's statistics and the verdict.

    python -m specmodel scrape http://host:8000/metrics --window 10 --json

A bearer token is read from the environment variable named by --token-env (default
SPECMODEL_TOKEN), never from the command line, where other users could read it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from specmodel.cli.args import add_scenario_arguments, named_scenario, number, saved_fits_from_args, server_method
from specmodel.errors import SpecModelError
from specmodel.notes import cli_label
from specmodel.words.served import figures_line, ms

TOKEN_ENV = "SPECMODEL_TOKEN"
# chosen: the seed report's k (bench/evidence/seed_runs.csv, k = 4)
DEFAULT_K = 4  # the k a prediction assumes where the server runs no speculation and --k is not given


def add_parser(sub) -> None:
    p = sub.add_parser(
        "scrape", help="measure speculative decoding on a live inference server "
                       "(vLLM, SGLang, llama.cpp, lmdeploy, TensorRT-LLM, TGI) and judge it",
        description="Scrape URL twice, --window seconds apart, and report the window's tokens per step (E), "
                    "α, per-position acceptance, load and throughput, placed on the model for the given "
                    "hardware and models. Exit 2 with one line when the server cannot be measured.")
    p.add_argument("url", help="the server's metrics URL, e.g. http://localhost:8000/metrics")
    p.add_argument("--window", type=number(0.1, 3600, strict_lo=False), default=10.0,
                   help="seconds between the two scrapes; default 10")
    p.add_argument("--model-name", help="which model_name to read when the server serves several")
    p.add_argument("--k", type=number(1, 32, whole=True),
                   help="draft tokens per step on this server: needed where it does not reveal it (vLLM V0, TGI's "
                        f"--speculate, SGLang without spec_num_steps); with speculation off, the k the prediction "
                        f"assumes (default {DEFAULT_K})")
    p.add_argument("--alpha", type=number(0, 1), default=0.7,
                   help="α for the prediction when speculation is off on the server; default 0.7")
    p.add_argument("--spec-k", type=number(1, 32, whole=True), dest="spec_k",
                   help="deprecated spelling of --k (kept as an alias; prints a note)")
    p.add_argument("--token-env", default=TOKEN_ENV,
                   help=f"environment variable holding a bearer token; default {TOKEN_ENV}")
    p.add_argument("--timeout", type=number(0.5, 600), default=20.0,
                   help="seconds one scrape may take in total; default 20")
    p.add_argument("--plain-url", metavar="URL",
                   help="a plain server's metrics URL (the same model without speculation, the same traffic), scraped "
                        "over the same window: its measured step is the plain arm the server's own step is set against")
    p.add_argument("--t-target-ms", type=number(0, 10_000, strict_lo=True),
                   help="the plain step measured at batch 1, ms: the plain arm grown to the window's batch by the model")
    add_scenario_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_scrape)


def run_scrape(args: argparse.Namespace) -> int:
    from specmodel.cli.output import print_json
    from specmodel.metrics import live, scrape  # here: building every command's parser imports no HTTP client

    k = args.k
    if args.spec_k is not None:
        print("note: --spec-k is deprecated: use --k (one flag for the server's draft tokens per step)",
              file=sys.stderr)
        if k is not None and k != args.spec_k:
            raise SpecModelError(f"--k {k} and --spec-k {args.spec_k} disagree: give only --k")
        k = args.spec_k
    base = named_scenario(args, alpha=args.alpha, k=k or DEFAULT_K).validated()
    token = os.environ.get(args.token_env) or None
    policy = scrape.ScrapePolicy.from_env(total_timeout_s=args.timeout)
    with scrape.make_client(policy) as client:
        _first, last, stats, plain = scrape.measure_beside(client, args.url, args.plain_url, args.window, token=token,
                                                           policy=policy, model_name=args.model_name, k=k)
    if stats.spec_enabled and stats.tokens_per_step is None and not stats.configured_off:  # idle: nothing to judge
        raise SpecModelError(f"{scrape.display_url(args.url)}: " + (stats.notes[-1] if stats.notes else
                                                                    "acceptance is not measurable in this window"))
    verdict = live.live_verdict(stats, base, live.InputNames(assumed="--alpha and --k"))
    fits = tuple(saved_fits_from_args(args))  # --calibration's, named like --fit where given
    judgement = _judgement(args, stats, verdict, plain, fits)
    out = live.result_dict(args.url, last, stats, verdict, judgement)
    _across_k(out, fits, args, stats, judgement)
    if args.json:
        print_json(out)
        return 0
    _print_text(out, stats, last, verdict, judgement)
    return 0


def _across_k(out: dict, fits: tuple, args: argparse.Namespace, stats, judgement) -> None:
    """out["decision_across_k"] ({decision_line, schedule}, as `predict` gives it) where --calibration holds this
    server's runs at its k and at other k (show.decisions.server_across_k); the key is left out where it does not."""
    from specmodel.show.decisions import server_across_k

    across = server_across_k(judgement, fits, server_method(args), stats, stats.model_name or "this server")
    if across is not None:
        out["decision_across_k"] = across.to_dict()  # decision_line, schedule, the runs that pin its switch


def _judgement(args: argparse.Namespace, stats, verdict, plain_stats, fits: tuple):
    """What the verdict rests on: a step fit of --calibration (`fits`) for this server, --plain-url's measured
    step, --t-target-ms (metrics/timed.py)."""
    from specmodel.metrics import live, timed
    from specmodel.notes import warning

    notes = []
    method = server_method(args)
    plain = None
    if plain_stats is not None:
        plain = timed.plain_from_stats(plain_stats, "--plain-url's window")
        if plain is None:
            notes.append(warning("--plain-url gave no plain step: " + ("that server runs speculation" if
                                 plain_stats.spec_enabled else "its window timed no decode step (idle, or no "
                                 "inter-token latency histogram)")))
    j = live.judged(stats, verdict, fits, method, plain, args.t_target_ms)
    return dataclasses.replace(j, notes=tuple(notes) + j.notes)


def _print_text(out: dict, stats, last, verdict, judgement) -> None:
    """The scrape in lines: where and what, the acceptance, the load, then the verdict a reader sees first."""
    from specmodel.cli.output import across_k_lines

    print(f"{out['metrics_url']}: {out['engine']} [{stats.server}], model {stats.model_name or '?'}, "
          f"k = {stats.k if stats.k else '-'} "
          f"({out['k_source']}), window {stats.window_s:.1f} s")
    print(f"  decision:         {out['decision_line']}")  # first, in the page's words
    for line in across_k_lines(out.get("decision_across_k"), "  across k:         ", " " * 20):
        print(line)
    if stats.tokens_per_step is not None:
        ci = stats.tokens_per_step_ci
        ci_text = f" (95% {ci[0]:.2f}–{ci[1]:.2f})" if ci else ""
        alpha = f"α {stats.alpha:.3f}" if stats.alpha is not None else "α needs k"
        rate = ("" if stats.draft_acceptance_rate is None else  # each figure's source after it, not after the last
                f", draft acceptance rate {stats.draft_acceptance_rate:.3f} [{stats.rate_source}]")
        print(f"  tokens per step:  {stats.tokens_per_step:.3f}{ci_text} [{stats.source}], {alpha}{rate}")
        if stats.mean_draft_length is not None and stats.max_draft_length:
            print(f"  draft length:     mean {stats.mean_draft_length:.2f}, max {stats.max_draft_length}")
        if stats.survival:
            print("  per position:     " + ", ".join(f"p{i + 1} {p:.3f}" for i, p in enumerate(stats.survival)))
    load = [f"running {stats.running:.1f}" if stats.running is not None else "running ?",
            f"waiting {stats.waiting:.1f}" if stats.waiting is not None else "waiting ?"]
    if stats.generation_tok_s is not None:
        load.append(f"{stats.generation_tok_s:.1f} generated tok/s")
    if stats.kv_usage is not None:
        load.append(f"KV cache {100 * stats.kv_usage:.0f}% used")
    print("  load:             " + ", ".join(load))
    if stats.timing is not None:
        t = stats.timing
        batch = f", batch {t.batch:.3g}" if t.batch is not None else ""
        print(f"  step timing:      {ms(t.ms_per_token)} ms a token, {ms(t.step_ms)} ms a step{batch} [{t.series}]")
    # the headline says first what the verdict rests on (presets, a step fit, measured step times)
    print(f"  verdict:          {out['headline']}")
    if out["advice"]:
        print(f"  advice:           {out['advice']}")
    if out["step_fit"] and judgement.rests_on != "step fit":
        print(f"  step fit alone:   {out['step_fit']['words']} ({out['step_fit']['setup']})")
    if judgement.decides:
        print(f"  model (presets):  {out['judged_as'] + ': ' if out['judged_as'] else ''}{verdict.text}")
    print(f"  figures:          {figures_line(out['figures_measured'], out['figures_modelled'])}")
    if verdict.k_options:
        print("  k' options:       " + ", ".join(f"k={o.k}: {o.speedup:.2f}x" for o in verdict.k_options))
    for note in out["notes"]:
        print(f"  {cli_label(note) + ':':<17} {note}")
