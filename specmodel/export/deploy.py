"""What to deploy, in the serving engine's own terms: the best k per batch-size range (scenario.k_schedule)
written as that engine takes it.

- vLLM: `--speculative-config` JSON with `num_speculative_tokens_per_batch_size` (vllm_speculative_config).
- SGLang: launch flags (`--speculative-algorithm`, `--speculative-num-steps`, `--speculative-eagle-topk`,
  `--speculative-num-draft-tokens`, `--speculative-draft-model-path`; SGLang's speculative decoding
  docs, https://docs.sglang.ai/advanced_features/speculative_decoding.html). A chain of k drafts is
  k steps, top-k 1 and k + 1 verified tokens. SGLang runs one k at every batch size, so the batch
  above which speculation loses is said beside the flags.
- Other engines: the numbers in words (k, and the batch to turn speculation off above).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from specmodel.model.decide import SWITCH_GAIN, off_above, small_flips
from specmodel.words import Summary
from specmodel.model.dialects import SGLANG_ALGORITHM, TRTLLM_DECODING_TYPE, VLLM_METHODS
from specmodel.model.dialects import draft_path as _draft_path
from specmodel.model.engines import engine_preset, engine_text



def vllm_speculative_config(summary: Summary) -> dict | None:
    """What to put in vLLM's --speculative-config: the best k here and the per-batch schedule (one k
    where the vLLM version named predates the per-batch key, vllm_per_batch). None when speculation
    should be off at every batch size."""
    schedule = summary.schedule
    if all(k == 0 for _, _, k in schedule) and summary.best_k == 0:
        return None
    s = summary.scenario
    config: dict = {"method": s.method.name}
    if _draft_path(s):
        config["model"] = _draft_path(s)
    k_max = max(summary.best_k, max(k for _, _, k in schedule))
    if not vllm_per_batch(s):
        config["num_speculative_tokens"] = summary.best_k or k_max
        return config
    config["num_speculative_tokens"] = k_max
    config["num_speculative_tokens_per_batch_size"] = schedule
    return config


def _vllm_limit_flags(summary: Summary) -> list[str]:
    """--max-num-seqs where more sequences run at the scenario's concurrency (what fits of it) than vLLM's
    default limit on this GPU (the version named, or the newest read for another engine's scenario)."""
    s, p = summary.scenario, summary.prediction
    gpu, engine = s.gpu, s.engine
    engine = engine if engine.name == "vllm" else engine_preset("vllm")
    running = int(max(float(p.plain.batch), float(p.spec.batch) if s.k else 0.0))
    return engine.running_limit_flags(gpu.name, gpu.memory_GB, running)


def _named_older(s, engine: str, since: str) -> bool:
    """True where the scenario names `engine` with a version older than `since` ("vllm 0.10.1"): the other
    engines' dialects, and an engine named without a version, are written for the newest release."""
    e = s.engine
    return e.name == engine and e.older_than(since)


def vllm_per_batch(s) -> bool:
    """Whether the vLLM the scenario names takes num_speculative_tokens_per_batch_size (from v0.24.0)."""
    return not _named_older(s, "vllm", VLLM_MIN_VERSION["num_speculative_tokens_per_batch_size"])


@dataclass(frozen=True)
class DeployAdvice:
    engine: str
    intro: str  # one sentence for a person (Markdown: code in backticks)
    code: str | None  # what to paste, or None
    language: str | None  # "json" or "bash"
    note: str | None  # what the engine cannot express, or None

    @property
    def one_line(self) -> str | None:
        """The code on one line (flags continued with backslashes joined)."""
        return None if self.code is None else self.code.replace(" \\\n  ", " ")

    def to_dict(self) -> dict:
        return {"engine": self.engine, "intro": self.intro, "code": self.code, "language": self.language,
                "note": self.note}


def deploy_advice(summary: Summary) -> DeployAdvice:
    """The deployment advice for the summary's scenario, in its engine's terms."""
    s = summary.scenario
    schedule = summary.schedule
    k_run = summary.best_k or max((k for _, _, k in schedule), default=0)
    off = off_above(schedule)
    if k_run == 0 and all(k == 0 for _, _, k in schedule):
        return DeployAdvice(engine_text(s.engine), "Speculation does not pay off at any batch size up to 512 here: leave it off.",
                            None, None, None)
    off_text = f"above batch {off} speculation loses here" if off else None
    if s.engine.name == "vllm":  # "vllm 0.10.1" too: a version before 0.24.0 runs one k
        limit = " ".join(_vllm_limit_flags(summary))
        limit_note = (f"Start both servers (plain and speculative) with {limit}: vLLM's default limit on sequences "
                      "running at once on this GPU is lower than the batch here." if limit else None)
        if vllm_per_batch(s):
            return DeployAdvice(engine_text(s.engine), "vLLM `--speculative-config` with the best k for each batch-size range "
                                "(`[min batch, max batch, k]`, k = 0 turns speculation off):",
                                json.dumps(vllm_speculative_config(summary)), "json", limit_note)
        since = VLLM_MIN_VERSION["num_speculative_tokens_per_batch_size"]
        off_note = (f"{off_text[0].upper() + off_text[1:]}: send those batches to a server without "
                    "--speculative-config." if off_text else None)
        return DeployAdvice(engine_text(s.engine), f"vLLM {s.engine.version_text} `--speculative-config` with one k "
                            f"(a k per batch-size range, `num_speculative_tokens_per_batch_size`, needs vLLM {since} "
                            "or later):", json.dumps(vllm_speculative_config(summary)), "json",
                            " ".join(filter(None, [off_note, limit_note])) or None)
    tokens = f"{k_run} draft token{'s' if k_run != 1 else ''}"
    if s.engine.name == "sglang" and s.method.name in SGLANG_ALGORITHM:  # "sglang 0.5.9" too
        return DeployAdvice("sglang", f"SGLang launch flags for a chain of k = {tokens}:",
                            " \\\n  ".join(" ".join(f) for f in _sglang_flags(s, k_run)), "bash",
                            _one_k_note(schedule, off_text))
    return DeployAdvice(engine_text(s.engine), f"Run k = {tokens} per step"
                        + (f"; {off_text}: turn it off there." if off_text else "."), None, None, None)


def _sglang_flags(s, k: int) -> list[list[str]]:
    """SGLang's launch flags for a chain of k drafts, each with its value."""
    flags = [["--speculative-algorithm", SGLANG_ALGORITHM[s.method.name]]]
    if _draft_path(s):
        flags.append(["--speculative-draft-model-path", _draft_path(s)])
    if s.method.name != "ngram":
        flags += [["--speculative-num-steps", str(k)], ["--speculative-eagle-topk", "1"]]
    flags.append(["--speculative-num-draft-tokens", str(k + 1)])
    cap = s.engine.running_cap_flags(s.method.name, s.concurrency)  # SGLang: 48 otherwise
    return flags + [cap] if cap else flags


def _one_k_note(schedule: list[list[int]], off_text: str | None) -> str | None:
    """SGLang runs one k at every batch size: how the best k changes with the batch (pick the k of the
    usual batch), and the batch above which speculation loses."""
    ranges = [(lo, hi, k) for lo, hi, k in schedule if k > 0]
    parts = []
    if len({k for _, _, k in ranges}) > 1:
        steps = ", ".join(f"{k} up to batch {hi}" for _lo, hi, k in ranges[:-1]) + f" and {ranges[-1][2]} above that"
        parts.append(f"the best k here is {steps}: pick the k of your usual batch")
    if off_text:
        parts.append(f"{off_text}, so serve larger batches from a server without these flags")
    return "SGLang runs one k at every batch size: " + "; ".join(parts) + "." if parts else None



# ---- Every engine's dialect from the one decision (Summary.schedule, best_k, off_above) -------------
#
# Keys and the first release that accepts them, read from each engine's source:
# - vLLM (release wheels, vllm/config/speculative.py and vllm/config/vllm.py): `--speculative-config`
#   JSON with method / model / num_speculative_tokens (v0.8.5, the oldest release checked);
#   `num_speculative_tokens_per_batch_size` from v0.24.0 (absent in v0.23.0): a list of
#   [range_start, range_end, k], inclusive ranges, the first starting at 1, non-overlapping, k >= 0
#   (vllm/v1/spec_decode/dynamic/utils.py validate_and_normalize_dynamic_sd_schedule), each k capped
#   at num_speculative_tokens, which must be > 0 and is also the lookahead the scheduler reserves at
#   every batch (vllm/v1/core/sched/scheduler.py num_lookahead_tokens), even where the table says 0.
#   With data_parallel_size > 1, v0.26.0 and later drop the table and run static
#   num_speculative_tokens (VllmConfig._maybe_disable_dynamic_sd_for_data_parallel, 'DP divergence and
#   deadlocks'); v0.24.0-v0.25.0 have no such guard. The V1 model runner keeps the table only for
#   ngram, eagle, eagle3, mtp, draft_model and dflash (_maybe_disable_dynamic_sd_for_v1, v0.33.0), and
#   switches full CUDA graphs to PIECEWISE (_maybe_override_dynamic_sd_cudagraph_mode).
#   `disable_by_batch_size` is read by nothing but the config from v0.10.0 (the V0 spec-decode worker
#   that used it is gone) and the key is removed in v0.17.0.
# - SGLang (release wheels, python/sglang/srt/server_args.py, speculative/adaptive_spec_params.py):
#   --speculative-algorithm / --speculative-num-steps / --speculative-eagle-topk /
#   --speculative-num-draft-tokens; `--speculative-adaptive` with `--speculative-adaptive-config FILE`
#   from v0.5.11 (one candidate_steps list); per batch size slots (JSON keys "1", "8", ...: a slot
#   applies from its key up to the next key) from v0.5.13; a 0 step (speculation off) in
#   candidate_steps from v0.5.14. Adaptive runs EAGLE/EAGLE3 only, top-k 1, without attention DP
#   (adaptive_unsupported_reason). A slot with one candidate runs that k.
# - TensorRT-LLM (NVIDIA/TensorRT-LLM main, tensorrt_llm/llmapi/llm_args.py DecodingBaseConfig, 2026;
#   not on PyPI as a wheel, so no release was read): `draft_len_schedule` maps batch sizes to draft
#   lengths with keys as upper bounds ({4: 4, 8: 2, 32: 1}: batches 1-4 k = 4, 5-8 k = 2, 9-32 k = 1,
#   33+ off), the smallest key's value must equal max_draft_len, every value <= max_draft_len;
#   `max_concurrency` (speculation off above it) and draft_len_schedule are mutually exclusive.
#   Earlier releases read the keys as lower bounds ({1: 4, 4: 2, 8: 0}) and require key 1: check your
#   release's llm_args.py. Medusa runs only on the TensorRT backend (supports_backend), without these keys.

VLLM_MIN_VERSION = {"method": "0.8.5", "model": "0.8.5", "num_speculative_tokens": "0.8.5",
                    "num_speculative_tokens_per_batch_size": "0.24.0"}
VLLM_DP_FALLBACK = "0.26.0"  # from here DP > 1 drops the per-batch table for static k (older: no guard)
VLLM_DYNAMIC_METHODS = ("ngram", "eagle", "eagle3", "mtp", "draft_model")  # keep the table on the V1 runner
SGLANG_MIN_VERSION = {"--speculative-algorithm": "0.4.6", "--speculative-adaptive": "0.5.11",
                      "--speculative-adaptive-config (per batch size keys)": "0.5.13",
                      "candidate_steps 0 (off)": "0.5.14"}
SGLANG_ADAPTIVE_METHODS = ("eagle", "eagle3", "mtp")  # run through SGLang's EAGLE/EAGLE3 worker


def _max_k(summary: Summary) -> int:
    return max([summary.best_k, *(k for _, _, k in summary.schedule)])


def _never_pays(summary: Summary) -> bool:
    return _max_k(summary) == 0


def common_warnings(summary: Summary) -> list[str]:
    """The traps every engine shares: an off threshold the model cannot place inside its band, and a
    per-batch best k that flips for gains inside run-to-run noise (which the schedule does not chase)."""
    out = []
    off, between = off_above(summary.schedule), summary.off_above_range
    if off is not None and between and between[0] != between[1]:
        lo, hi = (f"{b}" if b is not None else "above 512" for b in between)
        out.append(f"the off threshold (batch {off}) lies inside the model's band: at the band's ends speculation "
                   f"stops paying above batch {lo} or {hi}; measure plain and speculative runs there (`plan`) "
                   "before trusting it")
    flips = small_flips(summary.grid) if summary.grid is not None else 0
    if flips:
        out.append(f"the per-batch best k changes {flips} time(s) for a gain under {SWITCH_GAIN:.0%}; the schedule "
                   "keeps one k there (switching k re-pads to other CUDA graphs and buys nothing inside noise)")
    return out


def _vllm(summary: Summary, dp: int) -> dict:
    s = summary.scenario
    target = s.target.hf_id
    serve = ["vllm", "serve", target] + (["--tensor-parallel-size", str(s.tp)] if s.tp > 1 else []) \
        + (["--data-parallel-size", str(dp)] if dp > 1 else []) + s.engine.backend_flags \
        + _vllm_limit_flags(summary)
    warnings = common_warnings(summary)
    if _never_pays(summary):
        return {"config": None, "command": shlex.join(serve), "min_version": {}, "warnings": warnings,
                "note": "speculation does not pay at any batch up to 512 here: serve without --speculative-config"}
    config = vllm_speculative_config(summary)
    k_max = config["num_speculative_tokens"]
    per_batch = "num_speculative_tokens_per_batch_size" in config
    if per_batch and k_max and any(k == 0 for _, _, k in summary.schedule):
        warnings.append(f"vLLM reserves KV lookahead for num_speculative_tokens = {k_max} at every batch, also "
                        "where the table says 0 (vllm/v1/core/sched/scheduler.py)")
    if dp > 1:
        warnings.append(f"data parallelism ({dp}): vLLM {VLLM_DP_FALLBACK} and later drop "
                        f"num_speculative_tokens_per_batch_size and run k = {k_max} at every batch (0.24-0.25 have "
                        f"no such guard and can deadlock); with DP deploy one k, e.g. k = {summary.best_k}, and "
                        "turn speculation off by routing large batches elsewhere")
    if s.method.name not in VLLM_DYNAMIC_METHODS:
        warnings.append(f"vLLM's V1 model runner drops the per-batch table for method '{s.method}' and runs "
                        f"k = {k_max} at every batch (VLLM_USE_V2_MODEL_RUNNER=1 keeps it)")
    warnings.append("disable_by_batch_size does nothing from vLLM 0.10.0 and is gone from 0.17.0: the per-batch "
                    "table (k = 0 ranges) is how vLLM turns speculation off above a batch")
    command = shlex.join(serve + ["--speculative-config", json.dumps(config, separators=(", ", ": "))])
    since = VLLM_MIN_VERSION["num_speculative_tokens_per_batch_size"]
    off = off_above(summary.schedule) or "the off threshold"
    note = (f"vLLM before {since} has no per-batch k: run num_speculative_tokens = {summary.best_k or k_max} alone "
            f"and send batches above {off} to a server without it" if per_batch else
            f"vLLM {s.engine.version_text} has no per-batch k (num_speculative_tokens_per_batch_size "
            f"from {since}): this runs num_speculative_tokens = {k_max} at every batch; send batches above {off} to a "
            "server without it")
    return {"config": config, "command": command,
            "min_version": {k: VLLM_MIN_VERSION[k] for k in config if k in VLLM_MIN_VERSION},
            "warnings": warnings, "note": note}


def sglang_adaptive_config(summary: Summary) -> dict:
    """SGLang's --speculative-adaptive-config: a slot per schedule range, keyed by its first batch,
    with the one k the schedule runs there as its only candidate (0 = off, v0.5.14+)."""
    return {str(lo): {"candidate_steps": [int(k)]} for lo, _hi, k in summary.schedule}


def _sglang(summary: Summary, dp: int) -> dict | str:
    s = summary.scenario
    if s.method.name not in SGLANG_ALGORITHM:
        return f"SGLang has no speculative algorithm for method '{s.method}'"
    serve = ["python", "-m", "sglang.launch_server", "--model-path", s.target.hf_id] \
        + (["--tp-size", str(s.tp)] if s.tp > 1 else []) + (["--dp-size", str(dp)] if dp > 1 else [])
    warnings = common_warnings(summary)
    if _never_pays(summary):
        return {"config": None, "command": shlex.join(serve), "min_version": {}, "warnings": warnings,
                "note": "speculation does not pay at any batch up to 512 here: launch without speculative flags"}
    flags = [word for flag in _sglang_flags(s, _max_k(summary)) for word in flag]
    ks = {k for _, _, k in summary.schedule}
    config: dict = {"flags": flags, "adaptive_config": None}
    min_version = {"--speculative-algorithm": SGLANG_MIN_VERSION["--speculative-algorithm"]}
    prefix = ""
    note = None
    # a version named before the per-batch slots (or a 0 step) runs one k
    too_old = _named_older(s, "sglang", SGLANG_MIN_VERSION["--speculative-adaptive-config (per batch size keys)"]) or (
        0 in ks and _named_older(s, "sglang", SGLANG_MIN_VERSION["candidate_steps 0 (off)"]))
    if len(ks) > 1 and s.method.name in SGLANG_ADAPTIVE_METHODS and dp == 1 and not too_old:
        adaptive = sglang_adaptive_config(summary)
        config["adaptive_config"] = adaptive
        flags += ["--speculative-adaptive", "--speculative-adaptive-config", "sglang_adaptive.json"]
        min_version["--speculative-adaptive"] = SGLANG_MIN_VERSION["--speculative-adaptive"]
        min_version["--speculative-adaptive-config (per batch size keys)"] = \
            SGLANG_MIN_VERSION["--speculative-adaptive-config (per batch size keys)"]
        if 0 in ks:
            min_version["candidate_steps 0 (off)"] = SGLANG_MIN_VERSION["candidate_steps 0 (off)"]
        prefix = f"printf '%s' {shlex.quote(json.dumps(adaptive))} > sglang_adaptive.json && "
        note = ("one candidate per batch-size slot fixes k per range (SGLang pads the batch to its CUDA-graph "
                "size before picking the slot); before v0.5.13 SGLang runs one k at every batch")
    else:
        off = off_above(summary.schedule)
        why = ("SGLang's adaptive steps run EAGLE/EAGLE3 only" if len(ks) > 1 and s.method.name not in SGLANG_ADAPTIVE_METHODS
               else "adaptive steps are not synchronised across attention-DP ranks" if len(ks) > 1 and dp > 1
               else f"{engine_text(s.engine)} has no per-batch adaptive steps (slots per batch size from "
                    f"{SGLANG_MIN_VERSION['--speculative-adaptive-config (per batch size keys)']}, a 0 step from "
                    f"{SGLANG_MIN_VERSION['candidate_steps 0 (off)']})" if len(ks) > 1 and too_old else None)
        note = _one_k_note(summary.schedule, f"above batch {off} speculation loses here" if off else None)
        if why:
            note = f"{why}: {note or 'one k at every batch'}"
    if dp > 1:
        warnings.append(f"data parallelism ({dp}): SGLang's adaptive steps refuse attention DP "
                        "(adaptive_unsupported_reason); these flags run one k")
    return {"config": config, "command": prefix + shlex.join(serve + flags), "min_version": min_version,
            "warnings": warnings, "note": note}


def trtllm_config(summary: Summary) -> tuple[dict, list[str]]:
    """TensorRT-LLM's speculative_config (for trtllm-serve's YAML) and what it could not express:
    draft_len_schedule keyed by each range's last batch (keys are upper bounds; above the last key
    speculation is off), or max_concurrency where one k runs up to an off threshold."""
    s = summary.scenario
    warnings: list[str] = []
    ranges = [list(r) for r in summary.schedule]
    while ranges and ranges[-1][2] == 0:  # trailing off: implicit above the last key
        ranges.pop()
    first_k = ranges[0][2] if ranges else 0
    if any(k > first_k for _, _, k in ranges):
        warnings.append(f"TensorRT-LLM requires the smallest batch to run max_draft_len, so the larger k the "
                        f"schedule runs at larger batches is capped at {first_k} here")
        for r in ranges:
            r[2] = min(r[2], first_k)
    config: dict = {"decoding_type": TRTLLM_DECODING_TYPE[s.method.name], "max_draft_len": int(first_k)}
    if _draft_path(s):
        config["speculative_model"] = _draft_path(s)
    if s.method.name == "mtp":
        config["num_nextn_predict_layers"] = int(first_k)
    off = off_above(summary.schedule)
    if len({k for _, _, k in ranges}) == 1 and off is not None:
        config["max_concurrency"] = int(off)
    elif ranges:
        config["draft_len_schedule"] = {int(hi): int(k) for _lo, hi, k in ranges}
        if off is None:
            warnings.append(f"draft_len_schedule turns speculation off above its last key ({ranges[-1][1]}, the "
                            "largest batch the schedule covers): raise that key to your max_batch_size if "
                            "speculation still pays there")
    return config, warnings


def _trtllm(summary: Summary, dp: int) -> dict | str:
    s = summary.scenario
    if s.method.name == "medusa":
        return "TensorRT-LLM runs Medusa only on its TensorRT backend, which has no draft_len_schedule or max_concurrency"
    if s.method.name not in TRTLLM_DECODING_TYPE:
        return f"TensorRT-LLM has no speculative decoding config for method '{s.method}'"
    serve = ["trtllm-serve", s.target.hf_id] + (["--tp_size", str(s.tp)] if s.tp > 1 else [])
    warnings = common_warnings(summary)
    if _never_pays(summary):
        return {"config": None, "command": shlex.join(serve), "min_version": {}, "warnings": warnings,
                "note": "speculation does not pay at any batch up to 512 here: serve without speculative_config"}
    config, own = trtllm_config(summary)
    warnings += own
    import yaml  # here: only TensorRT-LLM's answer is YAML (predict's other paths do not load it)

    yaml_text = yaml.safe_dump({"speculative_config": config}, sort_keys=False)
    command = (f"printf '%s' {shlex.quote(yaml_text)} > spec.yaml && "
               + shlex.join(serve + ["--extra_llm_api_options", "spec.yaml"]))
    return {"config": {"speculative_config": config}, "yaml": yaml_text, "command": command,
            "min_version": {}, "warnings": warnings,
            "note": "keys of draft_len_schedule are upper bounds (TensorRT-LLM main, llm_args.py); releases that read "
                    "them as lower bounds need {1: max_draft_len, ...}: check your release. Newer trtllm-serve also "
                    "takes the file as --config"}


def deploy_by_engine(summary: Summary, dp: int = 1) -> tuple[dict, dict]:
    """({engine: {config, command, min_version, warnings, note} or None}, {engine: why None}) for vLLM,
    SGLang and TensorRT-LLM, every one from the summary's schedule and best k (one decision)."""
    out, why = {}, {}
    for engine, build in (("vllm", _vllm), ("sglang", _sglang), ("trtllm", _trtllm)):
        if engine == "vllm" and summary.scenario.method.name not in VLLM_METHODS:
            result = f"vLLM has no speculative method for '{summary.scenario.method}'"
        else:
            result = build(summary, dp)
        if isinstance(result, str):
            out[engine], why[engine] = None, result
        else:
            out[engine] = result
    return out, why
