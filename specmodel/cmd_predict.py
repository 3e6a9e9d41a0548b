"""`predict` and `presets` commands: one what-if scenario from flags; the preset catalogue."""

from __future__ import annotations

import argparse
import math

from . import acceptance, presets
from .errors import SpecModelError
from .roofline import Efficiency
from .scenario import Scenario, summarize


def _number(lo: float | None = None, hi: float | None = None, *, whole: bool = False, strict_lo=False):
    def parse(text: str):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got '{text}'")
        if whole and value != int(value):
            raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'")
        if lo is not None and (value < lo or (strict_lo and value == lo)):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict_lo else '≥'} {lo:g}, got {text}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be ≤ {hi:g}, got {text}")
        return int(value) if whole else value
    return parse


def _survival(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
        acceptance.validate_survival(values)
    except (ValueError, SpecModelError) as exc:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated p_1,...,p_k in [0, 1], not increasing ({exc})") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one value")
    return values


def add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    """Hardware, model and efficiency flags shared by the commands that build a Scenario."""
    p.add_argument("--gpu", default="L40S", help="GPU preset (see `presets`); default L40S")
    p.add_argument("--tp", type=_number(1, 64, whole=True), default=1, help="tensor-parallel GPUs per replica")
    p.add_argument("--target", default="Llama 3.1 8B", help="target model preset; default Llama 3.1 8B")
    p.add_argument("--draft", help="draft model preset (implies --method draft_model)")
    p.add_argument("--method", choices=presets.METHODS, help="speculation method; default draft_model")
    p.add_argument("--context-len", type=_number(0, 1_048_576, whole=True), default=1024,
                   help="mean tokens in each sequence's KV cache; default 1024")
    p.add_argument("--eta-bw", type=_number(0.05, 1.0, strict_lo=False), default=Efficiency.eta_bw,
                   help="achieved fraction of peak bandwidth (calibrated value)")
    p.add_argument("--eta-flops", type=_number(0.05, 1.0), default=Efficiency.eta_flops,
                   help="achieved fraction of dense peak FLOPS (calibrated value)")
    p.add_argument("--t-fixed-ms", type=_number(0, 1000), default=Efficiency.t_fixed_ms,
                   help="fixed overhead per forward pass, ms")
    p.add_argument("--t-spec-overhead-ms", type=_number(0, 1000), default=Efficiency.t_spec_overhead_ms,
                   help="overhead per speculative step, ms")


def add_acceptance_and_timing_arguments(p: argparse.ArgumentParser,
                                        k_help: str = "draft tokens per step; default 4") -> None:
    """Acceptance (α, E or a survival profile), k, k_max and measured step times: the What-if inputs
    besides hardware and models (shared by `predict` and `capacity`)."""
    acc = p.add_mutually_exclusive_group()
    acc.add_argument("--alpha", type=_number(0, 1), help="per-token acceptance α in [0, 1]; default 0.7")
    acc.add_argument("--accept-len", type=_number(1), help="mean acceptance length E (tokens per step, bonus included)")
    acc.add_argument("--survival", type=_survival, help="measured per-position survival p_1,...,p_k")
    p.add_argument("--k", type=_number(0, 32, whole=True), default=None, help=k_help)
    p.add_argument("--k-max", type=_number(1, 32, whole=True), default=8, help="largest k to consider for best k")
    p.add_argument("--t-target-ms", type=_number(0, 10_000, strict_lo=True), help="measured target step at batch 1, ms")
    p.add_argument("--t-draft-ms", type=_number(0, 10_000), help="measured draft cost per draft token at batch 1, ms")


def method_and_draft(args: argparse.Namespace) -> tuple[str, str | None]:
    if args.draft and args.method not in (None, "draft_model"):
        raise SpecModelError(f"--draft names a draft model, which conflicts with --method {args.method}")
    method = args.method or "draft_model"
    draft = args.draft
    if method == "draft_model" and not draft:
        draft = presets.find_model(args.target).default_draft
        if draft is None:
            raise SpecModelError(f"no default draft model for {args.target}: give --draft NAME or --method")
    if draft:
        draft = presets.find_model(draft).name
    return method, draft


def efficiency_from_args(args: argparse.Namespace) -> Efficiency:
    return Efficiency(eta_bw=args.eta_bw, eta_flops=args.eta_flops, t_fixed_ms=args.t_fixed_ms,
                      t_spec_overhead_ms=args.t_spec_overhead_ms)


def add_parser(sub) -> None:
    p = sub.add_parser("predict", help="predict speedup, break-even, best k and crossover for one scenario",
                       description="Predict one scenario. With --t-target-ms/--t-draft-ms the timings are "
                                   "measured (they pin the memory-bound floor); otherwise from hardware presets.")
    add_scenario_arguments(p)
    add_acceptance_and_timing_arguments(p)
    p.add_argument("--concurrency", type=_number(1, 65_536, whole=True), default=1, help="concurrent sequences")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_predict)

    q = sub.add_parser("presets", help="list GPU, model and method presets with their sources")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=run_presets)


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    method, draft = method_and_draft(args)
    k = args.k
    survival = args.survival
    if survival is not None and k is None:
        k = len(survival)
    k = 4 if k is None else k
    alpha = 0.7 if args.alpha is None else args.alpha
    if args.accept_len is not None:
        if k == 0:
            raise SpecModelError("--accept-len needs k ≥ 1")
        alpha = acceptance.from_tokens_per_step(args.accept_len, k, "--accept-len").alpha
    if args.t_draft_ms is not None and args.t_target_ms is None:
        raise SpecModelError("--t-draft-ms needs --t-target-ms too (measured timings come as a pair)")
    return Scenario(gpu=presets.find_gpu(args.gpu).name, target=presets.find_model(args.target).name,
                    method=method, draft=draft, alpha=alpha, survival=survival, k=k,
                    concurrency=args.concurrency, context_len=args.context_len,
                    t_target_ms=args.t_target_ms, t_draft_ms=args.t_draft_ms, tp=args.tp,
                    efficiency=efficiency_from_args(args))


def run_predict(args: argparse.Namespace) -> int:
    from .cli import print_json

    summary = summarize(scenario_from_args(args), k_max=args.k_max)
    out = summary.to_dict()
    if args.json:
        print_json(out)
        return 0
    s = summary.scenario
    plain, spec = out["plain"], out["spec"]
    who = f"{s.target} on {s.tp}× {s.gpu}" if s.tp > 1 else f"{s.target} on {s.gpu}"
    how = f"draft {s.draft}" if s.method == "draft_model" else s.method
    be_alpha = "unreachable" if out["break_even_alpha"] is None else f"{out['break_even_alpha']:.2f}"
    print(f"{who}, {how}, k={out['k']}, α={out['alpha']:.2f}, concurrency {out['concurrency']}, "
          f"context {s.context_len} ({out['timings']} timings)")
    print(f"  verdict:          {out['verdict_text']}")
    if out["advice"]:
        print(f"  advice:           {out['advice']}")
    print(f"  tokens per step:  {out['tokens_per_step']:.2f} (break-even {out['break_even_tokens_per_step']:.2f}, "
          f"α {be_alpha})")
    print(f"  plain:            {plain['step_ms']:.2f} ms/step, {plain['throughput_tok_s']:.0f} tok/s, "
          f"fits {plain['max_concurrency']} sequences")
    print(f"  speculative:      {spec['step_ms']:.2f} ms/step, {spec['throughput_tok_s']:.0f} tok/s, "
          f"fits {spec['max_concurrency']} sequences")
    cross = out["crossover_concurrency"]
    print(f"  best k:           {out['best_k']} ({out['best_k_speedup']:.2f}x); crossover: "
          + ("none up to 4096" if cross is None else f"loses above batch {cross}"))
    print(f"  vLLM schedule:    num_speculative_tokens_per_batch_size = {out['num_speculative_tokens_per_batch_size']}")
    for note in out["notes"]:
        print(f"  note:             {note}")
    return 0


def run_presets(args: argparse.Namespace) -> int:
    from .cli import print_json

    gpus = [presets.find_gpu(n) for n in presets.gpu_names()]
    models = [presets.find_model(n) for n in presets.model_names()]
    methods = [presets.find_method(n) for n in presets.METHODS]
    if args.json:
        print_json({"gpus": [g.__dict__ for g in gpus], "models": [m.__dict__ for m in models],
                    "methods": [m.__dict__ for m in methods]})
        return 0
    print("GPUs (dense BF16 TFLOPS, bandwidth GB/s, memory GB):")
    for g in gpus:
        print(f"  {g.name:<10} {g.dense_bf16_TFLOPS:>7g} {g.bandwidth_GBps:>7g} {g.memory_GB:>5g}")
    print("Models (parameters, layers, KV KiB per token, default draft):")
    for m in models:
        print(f"  {m.name:<14} {m.params_B:>6g}B {m.layers:>3} {m.kv_bytes_per_token / 1024:>5g}  {m.default_draft or '-'}")
    print("Methods:")
    for m in methods:
        print(f"  {m.name:<12} {m.description}")
    print("Sources: `python -m specmodel presets --json`.")
    return 0
