"""`predict` and `presets` commands: one what-if scenario from flags; the preset catalogue."""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from . import acceptance, presets
from .calibrate import PARAMETERS, load_calibration
from .engines import engine_names, find_engine
from .errors import DoesNotFit, SpecModelError
from .roofline import DTYPES, Efficiency
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
        values = acceptance.parse_survival(text, "the profile")
    except SpecModelError as exc:
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
    p.add_argument("--engine", choices=engine_names(), default=None,
                   help="serving engine whose per-step overheads apply (data/engines.json); default vllm")
    p.add_argument("--calibration", metavar="FILE.json",
                   help="apply a calibration saved by `runs --calibrate --save-calibration`; flags below override it")
    for name, bound in PARAMETERS.items():
        flag = "--" + name.replace("_", "-")
        unit = f", {bound.unit}" if bound.unit else ""
        p.add_argument(flag, dest=name, type=_number(bound.lo, bound.hi), default=None,
                       help=f"{bound.words}{unit} (default {getattr(Efficiency(), name):g}; "
                            f"allowed {bound.lo:g}-{bound.hi:g})")


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
    p.add_argument("--draft-depth", type=_number(1, 64, whole=True),
                   help="tree drafting: sequential draft passes (k is then the tree's verified tokens)")
    p.add_argument("--branching", type=_number(1, 64, whole=True), default=1,
                   help="tree drafting: tokens per sequence in each draft pass after the first (top-k)")
    p.add_argument("--draft-kv-budget", type=_number(1, 1_048_576, whole=True),
                   help="self_spec: tokens of KV the sparse draft reads (default 512)")
    p.add_argument("--weight-dtype", choices=DTYPES, help="target weights' dtype; default: the preset's")
    p.add_argument("--kv-dtype", choices=("bf16", "fp8"), default="bf16", help="KV cache dtype")
    p.add_argument("--proposal-rate", type=_number(0, 1, strict_lo=True), default=None,
                   help="share of sequence-steps with a proposal (n-gram proposes only on a match; "
                        "measure it as drafts / (generated − accepted) tokens); default 1, n-gram 0.4")


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
    """The calibration file's parameters (or the defaults), with every parameter flag given on top."""
    base = load_calibration(args.calibration)[0] if getattr(args, "calibration", None) else Efficiency()
    given = {name: getattr(args, name) for name in PARAMETERS if getattr(args, name, None) is not None}
    return replace(base, **given)


def engine_from_args(args: argparse.Namespace) -> str:
    return find_engine(getattr(args, "engine", None)).name


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
                    efficiency=efficiency_from_args(args), engine=engine_from_args(args),
                    draft_depth=args.draft_depth, branching=args.branching, draft_kv_budget=args.draft_kv_budget,
                    weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype, proposal_rate=args.proposal_rate)


def does_not_fit_dict(s: Scenario, exc: DoesNotFit) -> dict:
    """The `predict --json` object when not even one sequence fits: every usual key (null where there
    is no number), verdict "does not fit", and `does_not_fit` with what it needs and what fits."""
    arm = dict.fromkeys(["step_ms", "throughput_tok_s", "per_sequence_tok_s", "itl_ms", "max_concurrency"])
    return {
        "gpu": s.gpu, "target": s.target, "method": s.method, "draft": s.draft if s.method == "draft_model" else None,
        "alpha": s.alpha, "k": s.k, "concurrency": s.concurrency, "context_len": s.context_len, "tp": s.tp,
        "timings": "measured" if s.t_target_ms is not None else "hardware",
        "tokens_per_step": None, "speedup": None, "verdict": "does not fit", "verdict_text": str(exc),
        "advice": exc.closest, "break_even_tokens_per_step": None, "break_even_alpha": None, "best_k": None,
        "best_k_speedup": None, "crossover_concurrency": None, "num_speculative_tokens_per_batch_size": [],
        "off_above_batch": None, "plain": {**arm, "max_concurrency": 0, "running": 0},
        "spec": {**arm, "max_concurrency": 0, "running": 0}, "vllm_speculative_config": None, "notes": [],
        "does_not_fit": exc.to_dict(), "engine": s.engine, "draft_depth": s.draft_depth, "weight_dtype": s.weight_dtype,
        "kv_dtype": s.kv_dtype, "speedup_low": None, "speedup_high": None, "uncertain": False,
    }


def _f(value, spec: str = ".2f", none: str = "n/a") -> str:
    return none if value is None else format(value, spec)


def run_predict(args: argparse.Namespace) -> int:
    from .cli import print_json

    scenario = scenario_from_args(args)
    try:
        summary = summarize(scenario, k_max=args.k_max)
    except DoesNotFit as exc:  # an answer: in JSON a verdict; as text one line and exit 2
        if not args.json:
            raise
        print_json(does_not_fit_dict(scenario, exc))
        return 0
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
    print(f"  tokens per step:  {_f(out['tokens_per_step'])} (break-even {_f(out['break_even_tokens_per_step'])}, "
          f"α {be_alpha})")
    print(f"  plain:            {_f(plain['step_ms'])} ms/step, {_f(plain['throughput_tok_s'], '.0f')} tok/s, "
          f"fits {plain['max_concurrency']} sequences")
    print(f"  speculative:      {_f(spec['step_ms'])} ms/step, {_f(spec['throughput_tok_s'], '.0f')} tok/s, "
          f"fits {spec['max_concurrency']} sequences")
    cross = out["crossover_concurrency"]
    print(f"  best k:           {out['best_k']} ({_f(out['best_k_speedup'])}x); crossover: "
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
    print("GPUs (dense TFLOPS BF16 / FP8 / FP4, bandwidth GB/s, memory GB, interconnect GB/s each way):")
    for g in gpus:
        low = "/".join("-" if x is None else f"{x:g}" for x in (g.dense_fp8_TFLOPS, g.dense_fp4_TFLOPS))
        print(f"  {g.name:<10} {g.dense_bf16_TFLOPS:>7g} /{low:<13} {g.bandwidth_GBps:>6g} {g.memory_GB:>5g}  "
              f"{g.interconnect} {g.interconnect_GBps:g}")
    print("Models (parameters [active], layers, KV KiB per token, weights, max context, family, default draft):")
    for m in models:
        active = f"[{m.active_params_B:g}B, {m.experts_per_token}/{m.experts} experts]" if m.is_moe else ""
        print(f"  {m.name:<29} {m.params_B:>7g}B {active:<24} {m.layers:>3} {m.kv_bytes_per_token / 1024:>6g} "
              f"{m.weight_dtype:<4} {m.max_context:>8} {m.family:<11} {m.default_draft or '-'}")
    print("Methods:")
    for m in methods:
        print(f"  {m.name:<12} {m.description}")
    print("Sources: `python -m specmodel presets --json`.")
    return 0
