"""Argument helpers the commands share: checked number types, the hardware/model/efficiency flags,
the acceptance and timing flags, and the Scenario, efficiency and engine they name.

Every `cmd_*` module builds its parser from these, so one flag reads and fails the same way in every
command (exit 2 with one line naming the flag, from argparse or cli.main).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from specmodel import numbers
from specmodel.errors import SpecModelError
from specmodel.bounds import MAX_CONTEXT, MAX_K, MAX_TP, check_setting
from specmodel.text import clean_name
from specmodel.model import acceptance, presets
from specmodel.model.calibration_file import load_calibration
from specmodel.model.custom import gpu_from_spec, model_from_config
from specmodel.model.engines import engine_names, engine_text, find_engine, named_engine
from specmodel.model.memory import DTYPES
from specmodel.model.parameters import PARAMETERS
from specmodel.model.roofline import Efficiency
from specmodel.model.scenario import Scenario
from specmodel.words.names import GPU_SPEC_DEFAULTS


def number(lo: float | None = None, hi: float | None = None, *, whole: bool = False, strict_lo=False):
    """An argparse `type` for a finite number in [lo, hi] (lo excluded with strict_lo; an int when whole),
    whose message says what was expected and what was given."""
    def parse(text: str):
        shown = numbers.quoted(text)  # a 5,000-digit value is quoted by its first 40 characters
        why = numbers.refusal(text)
        if why is not None:
            raise argparse.ArgumentTypeError(f"expected a number, got {shown}, which {why}")
        value = numbers.read_number(text)
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {shown}")
        if whole and value != int(value):
            raise argparse.ArgumentTypeError(f"expected a whole number, got {shown}")
        if lo is not None and (value < lo or (strict_lo and value == lo)):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict_lo else '≥'} {lo:g}, got {shown}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be ≤ {hi:g}, got {shown}")
        return int(value) if whole else value
    return parse


def survival_profile(text: str) -> tuple[float, ...]:
    """An argparse `type` for --survival: comma-separated p_1,...,p_k in [0, 1], not increasing."""
    try:
        values = acceptance.parse_survival(text, "the profile")
    except SpecModelError as exc:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated p_1,...,p_k in [0, 1], not increasing ({exc})") from None
    return values


def add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    """Hardware, model and efficiency flags shared by the commands that build a Scenario."""
    p.add_argument("--gpu", default=None, help="GPU as people write it ('h100', '8x H100 (TP=8)'; see `presets`); "
                                              "default L40S")
    p.add_argument("--gpu-spec", metavar="SPEC|FILE",
                   help="a GPU by its numbers instead of --gpu: 'bandwidth_gbs=1792,tflops=500,memory_gb=96[,name=X]' "
                        "(memory bandwidth GB/s, dense BF16 TFLOPS, memory GB) or a JSON/YAML file with those keys; "
                        f"optional fp8_tflops, fp4_tflops, interconnect, interconnect_gbs. Unstated: {GPU_SPEC_DEFAULTS}")
    p.add_argument("--tp", type=number(1, MAX_TP, whole=True), default=None,
                   help="tensor-parallel GPUs per replica; default what --gpu says, else 1")
    p.add_argument("--target", default=None, help="target model preset; default Llama 3.1 8B")
    p.add_argument("--target-config", metavar="CONFIG.json",
                   help="the target by its Hugging Face config.json instead of --target (dense, GQA, MoE, MLA; "
                        "dtype from torch_dtype or quantization_config)")
    p.add_argument("--draft", help="draft model preset (implies --method draft_model)")
    p.add_argument("--draft-config", metavar="CONFIG.json",
                   help="the draft model by its Hugging Face config.json instead of --draft (implies --method draft_model)")
    p.add_argument("--method", type=_method_name, choices=presets.METHODS,
                   help="speculation method, as people write it ('EAGLE-3', 'n-gram'); default draft_model")
    p.add_argument("--context-len", type=number(0, MAX_CONTEXT, whole=True), default=1024,
                   help="mean tokens in each sequence's KV cache; default 1024")
    p.add_argument("--engine", type=_engine_name, default=None, metavar="ENGINE",
                   help=f"serving engine whose per-step overheads apply (data/engines.json), with its version where "
                        f"it changes the step ('SGLang v0.5.9', 'vllm 0.14') and an attention backend forced with "
                        f"--attention-backend after it ('vllm 0.19.0 ROCM_AITER_FA'); one of {', '.join(engine_names())}; "
                        "default vllm")
    p.add_argument("--calibration", metavar="FILE.json",
                   help="apply a calibration saved by `runs --calibrate --save-calibration`; flags below override it; "
                        "its step fits (the runs' own step times) answer first for their k and method")
    p.add_argument("--fit", metavar="TEXT", default=None,
                   help="with --calibration holding several step fits of this k and method: the one whose target, "
                        "workload or setup contains TEXT (e.g. 'chat')")
    for name, bound in PARAMETERS.items():
        flag = "--" + name.replace("_", "-")
        unit = f", {bound.unit}" if bound.unit else ""
        p.add_argument(flag, dest=name, type=number(bound.lo, bound.hi), default=None,
                       help=f"{bound.words}{unit} (default {getattr(Efficiency(), name):g}; "
                            f"allowed {bound.lo:g}-{bound.hi:g})")


def add_acceptance_and_timing_arguments(p: argparse.ArgumentParser,
                                        k_help: str = "draft tokens per step; default 4") -> None:
    """Acceptance (α, E or a survival profile), k, k_max and measured step times: the What-if inputs
    besides hardware and models (shared by `predict` and `capacity`)."""
    acc = p.add_mutually_exclusive_group()
    acc.add_argument("--alpha", type=number(0, 1), help="per-token acceptance α in [0, 1]; default 0.7")
    acc.add_argument("--accept-len", type=number(1), help="mean acceptance length E (tokens per step, bonus included)")
    acc.add_argument("--survival", type=survival_profile, help="measured per-position survival p_1,...,p_k")
    p.add_argument("--k", type=number(0, 32, whole=True), default=None, help=k_help)
    p.add_argument("--k-max", type=number(1, 32, whole=True), default=8, help="largest k to consider for best k")
    p.add_argument("--t-target-ms", type=number(0, 10_000, strict_lo=True), help="measured target step at batch 1, ms")
    p.add_argument("--t-draft-ms", type=number(0, 10_000), help="measured draft cost per draft token at batch 1, ms")
    p.add_argument("--draft-depth", type=number(1, 64, whole=True),
                   help="tree drafting: sequential draft passes (k is then the tree's verified tokens)")
    p.add_argument("--branching", type=number(1, 64, whole=True), default=1,
                   help="tree drafting: tokens per sequence in each draft pass after the first (top-k)")
    p.add_argument("--draft-kv-budget", type=number(1, MAX_CONTEXT, whole=True),
                   help="self_spec: tokens of KV the sparse draft reads (default 512)")
    p.add_argument("--weight-dtype", choices=DTYPES, help="target weights' dtype; default: the preset's")
    p.add_argument("--kv-dtype", choices=("bf16", "fp8"), default="bf16", help="KV cache dtype")
    p.add_argument("--proposal-rate", type=number(0, 1, strict_lo=True), default=None,
                   help="share of sequence-steps with a proposal (n-gram proposes only on a match; "
                        "measure it as drafts / (generated − accepted) tokens); default 1, n-gram 0.4")


def _method_name(text: str) -> str:
    """--method as people write it ("EAGLE-3", "n-gram", "Medusa") -> its id; argparse says what is known."""
    found = presets.parse_method(text).method
    if found is None:
        raise argparse.ArgumentTypeError(f"'{text}' is not a speculation method; one of {', '.join(presets.METHODS)}")
    return found


def _engine_name(text: str) -> str:
    """--engine as people write it ("SGLang", "SGLang v0.5.9", "vLLM V1", "TensorRT-LLM") -> its id and
    version ("sglang 0.5.9")."""
    found = named_engine(text)
    if found is None:
        raise argparse.ArgumentTypeError(f"'{text}' is not a serving engine; one of {', '.join(engine_names())}")
    return found


def gpu_and_tp(args: argparse.Namespace) -> tuple:
    """(GPU preset name, or the GPU --gpu-spec builds; tensor parallelism) from --gpu as written, --gpu-spec
    and --tp: a TP the --gpu text states ("8x H100 (TP=8)") applies when --tp is not given; the two
    disagreeing is an error, as --gpu and --gpu-spec together are."""
    spec = getattr(args, "gpu_spec", None)
    if spec:
        if args.gpu:
            raise SpecModelError("--gpu and --gpu-spec both name the GPU: give one of them")
        check_setting(args.tp or 1, "--tp", 1, MAX_TP)
        return gpu_from_spec(spec, "--gpu-spec"), int(args.tp or 1)
    text = args.gpu or "L40S"
    gpu = presets.find_gpu(text).name
    stated = presets.stated_tp(text)
    if args.tp is not None and stated is not None and args.tp != stated:
        raise SpecModelError(f"--gpu '{text}' says TP {stated} but --tp is {args.tp}: give one of them")
    tp = args.tp if args.tp is not None else stated if stated is not None else 1
    check_setting(tp, f"tensor parallelism (--gpu '{clean_name(text, 60)[0]}')" if args.tp is None
                  else "--tp", 1, MAX_TP)  # TP=0 was silently 1; 99999999999x H100 passed the --tp bound
    return gpu, int(tp)


def target_from_args(args: argparse.Namespace):
    """--target's preset name (Llama 3.1 8B when none is given), or the Model --target-config builds."""
    config = getattr(args, "target_config", None)
    if config:
        if args.target:
            raise SpecModelError("--target and --target-config both name the target: give one of them")
        return model_from_config(config, "--target-config")
    return presets.find_model(args.target or "Llama 3.1 8B").name


def method_and_draft(args: argparse.Namespace) -> tuple:
    """--method and --draft (or --draft-config) as (method, draft preset name, draft Model or None);
    draft_model gets the target's default draft."""
    config = getattr(args, "draft_config", None)
    named = args.draft or config
    if named and args.method not in (None, "draft_model"):
        flag = "--draft" if args.draft else "--draft-config"
        raise SpecModelError(f"{flag} names a draft model, which conflicts with --method {args.method}")
    if args.draft and config:
        raise SpecModelError("--draft and --draft-config both name the draft model: give one of them")
    method = args.method or "draft_model"
    if config:
        return method, model_from_config(config, "--draft-config")
    draft = args.draft
    if method == "draft_model" and not draft:
        target = target_from_args(args)
        draft = target.default_draft if isinstance(target, presets.Model) else presets.find_model(target).default_draft
        if draft is None:
            raise SpecModelError(f"no default draft model for {target}: give --draft NAME, --draft-config FILE "
                                 f"or --method")
    if draft:
        draft = presets.find_model(draft).name
    return method, draft


def efficiency_from_args(args: argparse.Namespace) -> Efficiency:
    """The calibration file's parameters (or the defaults), with every parameter flag given on top."""
    base = load_calibration(args.calibration)[0] if getattr(args, "calibration", None) else Efficiency()
    given = {name: getattr(args, name) for name in PARAMETERS if getattr(args, name, None) is not None}
    return replace(base, **given)


def saved_fits_from_args(args: argparse.Namespace) -> list:
    """The step fits of --calibration ([] without one), only those named like --fit where it is given."""
    if not getattr(args, "calibration", None):
        return []
    from specmodel.fit.saved import saved_fits
    fits = saved_fits(load_calibration(args.calibration)[1], clean_name(args.calibration)[0])
    wanted = getattr(args, "fit", None)
    return [f for f in fits if wanted.lower() in f.label.lower()] if wanted else fits


def step_fit_from_args(args: argparse.Namespace, k: int | None, method: str | None, out: dict, fits=None):
    """The saved step fit of --calibration this question is about, or None; where the file holds fits and
    none or several would do, a note in out["step_fit_note"]. `fits`: saved_fits_from_args(args), where the
    caller has read them already."""
    if not getattr(args, "calibration", None):
        return None
    from specmodel.fit.saved import chosen_fit
    fits = saved_fits_from_args(args) if fits is None else fits
    if not fits and getattr(args, "fit", None):
        out["step_fit_note"] = f"no step fit in the calibration is named like '{clean_name(args.fit, 40)[0]}' (--fit)"
        return None
    chosen = chosen_fit(fits, k, method)
    usable = [f for f in fits if f.fit.usable]
    if chosen is None and usable:
        names = "; ".join(f"{f.label} (k={f.fit.k})" for f in usable[:6])
        out["step_fit_note"] = (f"the calibration holds {len(usable)} step fits and none or several match k = {k}: "
                                f"{names}; give the --k and --method of one, or --fit with a word of its name")
    return chosen


def engine_from_args(args: argparse.Namespace) -> str:
    """--engine's canonical name (the default engine when it is not given)."""
    return engine_text(find_engine(getattr(args, "engine", None)))


def named_scenario(args: argparse.Namespace, engine: bool = True, **inputs) -> Scenario:
    """The Scenario add_scenario_arguments' flags name (GPU, TP, models, method, context, efficiency and, with
    `engine`, the engine), with `inputs` (α, k, concurrency, ...) on top: every command builds its scenario here."""
    method, draft = method_and_draft(args)
    gpu, tp = gpu_and_tp(args)
    if engine:
        inputs["engine"] = engine_from_args(args)
    return Scenario.from_names(gpu=gpu, target=target_from_args(args), method=method, draft=draft, tp=tp,
                               context_len=args.context_len, efficiency=efficiency_from_args(args), **inputs)


def server_method(args: argparse.Namespace) -> str | None:
    """The method --method or a draft flag names for a server (None: what its metrics show)."""
    return args.method or ("draft_model" if args.draft or args.draft_config else None)


def acceptance_given(args: argparse.Namespace) -> bool:
    """Whether --alpha, --accept-len or --survival was given (else a step fit uses its runs' own E)."""
    return any(getattr(args, a, None) is not None for a in ("alpha", "accept_len", "survival"))


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The What-if Scenario from add_scenario_arguments, add_acceptance_and_timing_arguments and --concurrency."""
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
    return named_scenario(args, alpha=alpha, survival=survival, k=k, concurrency=args.concurrency,
                          t_target_ms=args.t_target_ms, t_draft_ms=args.t_draft_ms, draft_depth=args.draft_depth,
                          branching=args.branching, draft_kv_budget=args.draft_kv_budget,
                          weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype, proposal_rate=args.proposal_rate)


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The model the rules and dashboard judge against: hardware, models, k and a calibration file."""
    add_scenario_arguments(p)
    p.add_argument("--k", type=number(1, MAX_K, whole=True),
                   help="draft tokens per step (num_speculative_tokens) for servers whose metrics do not show it "
                        "and that --instance does not name (each instance is judged at the k its counters show: its "
                        "mean draft length); without it such a server's k is recorded as unknown and it is not "
                        "judged; the advice is worded for this k (default 4)")
    p.add_argument("--alpha", type=number(0, 1), default=0.7,
                   help="typical α, used only for the advice in the alert (break-even does not depend on it); default 0.7")
    p.add_argument("--window", default="5m", help="Prometheus duration the rates cover (30s, 5m, 1h); default 5m")
    p.add_argument("--instance", action="append", default=[], metavar="INSTANCE=K[,TARGET[,DRAFT]]",
                   help="judge this instance (its `instance` label) on its own k and, optionally, its own target "
                        "model and draft: needed where the server does not expose k (TGI's --speculate), e.g. "
                        "tgi-0:80=2; repeat for more. Other instances use the k their counters show, else --k where "
                        "given (else their k is recorded as unknown)")


# chosen: the seed report's k (bench/evidence/seed_runs.csv, k = 4)
ADVICE_K = 4  # the k the rules' advice and description are worded for where --k is not given


def rules_scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The scenario `rules` and `dashboard` judge servers against, from add_model_arguments (the default
    engine: --engine is not read here)."""
    return named_scenario(args, engine=False, alpha=args.alpha, k=args.k or ADVICE_K).validated()


def instances_from_args(args: argparse.Namespace) -> tuple:
    """The --instance INSTANCE=K[,TARGET] of `rules` and `dashboard`, parsed (specmodel.export.rules)."""
    from specmodel.model.instances import parse_instance

    return tuple(parse_instance(text) for text in getattr(args, "instance", []) or [])
