"""The measurement plan: the fewest benchmark runs that pin what the model cannot know about a given
server (its fixed per-step cost, its per-sequence cost, and where speculation stops paying), each as
a ready command for the engine's own benchmark, and what uploading their results does to the band.

Which runs, and why:
- batch 1, plain and speculative: the fixed cost of a step (weights read once, kernel launches, the
  engine's CPU work per step) and the draft's cost, where per-sequence costs are smallest;
- the two ends of the range where the model places the off threshold (`off_above_batch_low/high`,
  the band's two ends), plain and speculative: they bracket the crossover, and the upper one, far
  from batch 1, separates per-sequence cost (KV reads, per-sequence CPU work) from fixed cost.
A range that collapses (the model is sure) is bracketed at half and twice the threshold instead.
- where the off cost is not measured (off_state: the engine's published or chosen value), one run of the
  speculative server with speculation configured and switched off (every batch at k = 0) at the batch where
  the schedule's off band starts (or the plan's largest): what the off band costs, which decides where to
  turn speculation off and what separate pools gain (its result reads back as `off_tok_s`).

Synthetic acceptance (so the fit sees step cost apart from acceptance), read from each engine's source:
- vLLM: `--speculative-config` keys `rejection_sample_method: "synthetic"` with
  `synthetic_acceptance_length` (mean tokens per step, bonus included, in [1, k + 1]) from v0.20.0
  (vllm/config/speculative.py; absent in v0.19.0);
- SGLang: environment `SGLANG_SIMULATE_ACC_LEN` (accepted length per step, bonus included; clamped to
  [1, steps + 1]) from v0.5.3 (python/sglang/srt/environ.py); `SIMULATE_ACC_LEN` in
  speculative/eagle_utils.py from v0.4.5 to v0.5.2; none in v0.4.4 and before (release wheels);
- TensorRT-LLM: none found; acceptance is what the prompts give.
An engine named with a version gets that version's setting, or none where it has none (the server
would refuse vLLM's keys before 0.20.0); one named without a version gets the newest.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, replace

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.model.decide import SCHEDULE_MAX_BATCH, engine_variants, speedup_band
from specmodel.words import Summary
from specmodel.model.dialects import SGLANG_ALGORITHM, TRTLLM_DECODING_TYPE, VLLM_METHODS, draft_path
from specmodel.model.engines import engine_text
from specmodel.model.scenario import Scenario, predict, resolved_engine

BENCHES = ("vllm", "sglang", "guidellm")
BENCH_OF_ENGINE = {"vllm": "vllm", "sglang": "sglang"}  # others: guidellm (any OpenAI-compatible server)
OUTPUT_LEN = 256  # chosen: output tokens per request: long enough that decoding dominates the run
# chosen (no measurement found): a round estimate of one server's start, for the plan's time estimate
SERVER_START_S = 180  # loading weights, compiling, capturing CUDA graphs: per server the plan starts
MIN_PROMPTS = 16  # chosen: requests a run sends at least, so a batch-1 run is not one request's noise
PROMPTS_PER_SLOT = 8  # chosen: requests per concurrent slot: the batch stays full through most of the run
SYNTHETIC = {
    "vllm": {"setting": '--speculative-config keys "rejection_sample_method": "synthetic", '
                        '"synthetic_acceptance_length": E', "since": "vLLM 0.20.0",
             "source": "vllm/config/speculative.py (release wheels; absent in 0.19.0)"},
    "sglang": {"setting": "environment SGLANG_SIMULATE_ACC_LEN=E", "since": "SGLang 0.5.3",
               "source": "python/sglang/srt/environ.py (SIMULATE_ACC_LEN in speculative/eagle_utils.py before)"},
}
# Older settings by version, newest first after SYNTHETIC's own: (first release, setting, environment variable)
_SYNTHETIC_OLDER = {
    "sglang": [("0.4.5", {"setting": "environment SIMULATE_ACC_LEN=E", "since": "SGLang 0.4.5",
                          "source": "python/sglang/srt/speculative/eagle_utils.py, v0.4.5 to v0.5.2 (release wheels; "
                                    "renamed SGLANG_SIMULATE_ACC_LEN in v0.5.3, absent in v0.4.4)"})],
}


def synthetic_setting(s: Scenario) -> dict | None:
    """The synthetic-acceptance setting of the scenario's engine at its version (SYNTHETIC: the newest,
    also for an engine named without a version), or None where that version has none."""
    engine = s.engine
    newest = SYNTHETIC.get(engine.name)
    if newest is None or engine.version is None:
        return newest
    for setting in [newest, *(older for _, older in _SYNTHETIC_OLDER.get(engine.name, []))]:
        if not engine.older_than(setting["since"].split()[-1]):
            return setting
    return None


def _simulate_env(setting: dict | None) -> str:
    """The environment prefix a synthetic setting given as an environment variable needs ("NAME=")."""
    words = (setting or {}).get("setting", "").split()
    return words[1].split("=")[0] + "=" if len(words) == 2 and words[0] == "environment" else ""


@dataclass(frozen=True)
class PlannedRun:
    concurrency: int
    speculative: bool
    command: str  # the benchmark client's command line
    server: str  # the server it runs against
    why: str
    num_prompts: int
    seconds: float  # predicted length of the run alone
    off: bool = False  # the speculative server with speculation configured and switched off (off_state)

    @property
    def arm(self) -> str:
        """The run's server in words."""
        return "speculation configured, off" if self.off else "speculative" if self.speculative else "plain"

    def to_dict(self) -> dict:
        return {"concurrency": self.concurrency, "speculative": self.speculative, "command": self.command,
                "server": self.server, "why": self.why, "num_prompts": self.num_prompts,
                "seconds": round(self.seconds, 1), "speculation_off": self.off}


@dataclass(frozen=True)
class Plan:
    engine: str
    bench: str
    k: int
    acceptance_length: float  # E the speculative server is told to accept (synthetic), or expects
    runs: tuple[PlannedRun, ...]
    servers: dict  # "plain" / "speculative" -> the server command
    synthetic: dict | None  # the engine's synthetic-acceptance setting: setting, since, source
    total_seconds: float
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"engine": self.engine, "bench": self.bench, "k": self.k,
                "acceptance_length": round(self.acceptance_length, 3),
                "runs": [r.to_dict() for r in self.runs], "servers": self.servers, "synthetic_acceptance": self.synthetic,
                "total_seconds": round(self.total_seconds), "total_minutes": round(self.total_seconds / 60, 1),
                "notes": list(self.notes)}


def plan_concurrencies(summary: Summary) -> list[tuple[int, str]]:
    """(concurrency, why) for the plan: batch 1 and the two ends of the off-threshold range (or half
    and twice the threshold when the range is one batch), capped where the speculative arm still fits."""
    s = summary.scenario
    cap = largest_batch(summary)
    lo, hi = summary.off_above_range or (None, None)
    off = summary.off_above
    points = [(1, "batch 1: the fixed cost of a step (weights read once, kernel launches, the engine's CPU work) "
                  "and the draft's, where per-sequence costs are smallest")]
    if lo is not None and hi is not None and lo != hi or (lo is None) != (hi is None):
        low = max(2, lo or 1)
        high = hi if hi is not None else cap
        points.append((low, f"batch {low}: where speculation stops paying at the band's low end "
                            f"(off_above_batch_low {lo}); brackets the threshold from below"))
        points.append((high, f"batch {high}: where it stops paying at the band's high end "
                             f"(off_above_batch_high {'above 512' if hi is None else hi}); far from batch 1, "
                             "it separates the per-sequence cost (KV reads, per-sequence CPU work) from the fixed one"))
    else:
        t = off if off is not None else (summary.crossover_concurrency if s.k else None)
        if t is None or t >= cap:
            points.append((max(2, cap // 8), f"batch {max(2, cap // 8)}: a mid batch, where both costs count"))
            points.append((cap, f"batch {cap}: the largest batch the speculative arm fits (up to 512); it "
                                "separates the per-sequence cost from the fixed one"))
        else:
            t = max(t, 1)
            points.append((max(2, t // 2), f"batch {max(2, t // 2)}: half the predicted off threshold "
                                           f"(batch {t}); speculation should still pay here"))
            points.append((min(cap, 2 * t), f"batch {min(cap, 2 * t)}: twice the threshold; it should lose "
                                            "here, and far from batch 1 it separates per-sequence from fixed cost"))
    out, seen = [], set()
    for wanted, why in points:
        c = int(min(cap, max(1, wanted)))
        if c != wanted:
            why += f" (run at batch {c}: the most sequences the speculative arm fits)"
        if c not in seen:
            seen.add(c)
            out.append((c, why))
    return sorted(out)


def threshold_runs(summary) -> tuple[int, int] | None:
    """The two concurrencies that would pin an open off threshold (the plan's runs beside batch 1: the ends of
    the range the model's band leaves for it, plan_concurrencies), each run plain and speculative; None where
    the range is closed (the model places the threshold at one batch) or speculation never pays."""
    lo, hi = summary.off_above_range or (None, None)
    if lo == hi or summary.off_above == 0 and not hi:
        return None
    brackets = [c for c, _ in plan_concurrencies(summary) if c > 1]
    return (brackets[0], brackets[-1]) if len(brackets) >= 2 else None


def fit_threshold_runs(off: tuple[int | None, int | None, int | None], largest: int,
                       measured: tuple[float, ...] = ()) -> tuple[int, int] | None:
    """The two concurrencies that would pin a step fit's open off threshold (`off`: StepFit.off_above, at the fit
    and the band's low and high end): the band's two ends, the high one capped at `largest` (what the speculative
    arm fits); None where the band closes on one batch or leaves nothing to run between its ends. An end the runs
    already measured (`measured`: their batches; StepFit.off_above holds the band inside the runs' own win and
    loss) moves inside: to the thirds, in log, of the way between the measured batches around the threshold
    (measured wins at 4 and losses at 16: batch 6 and 10)."""
    _, low, high = off
    if low == high or low is None:
        return None
    first, last = max(2, low), min(largest, high if high is not None else largest)
    done = {int(round(b)) for b in measured}
    edges = first, last + 1
    span = edges[1] / edges[0]
    if edges[0] in done:
        first = int(round(edges[0] * span ** (1 / 3)))
    if edges[1] in done:
        last = int(round(edges[0] * span ** (2 / 3)))
    return (first, last) if first < last and not {first, last} & done else None


def input_len(s: Scenario) -> int:
    """Prompt tokens that give the scenario's mean context (prompt + half the output, as the run
    readers compute context_len)."""
    return max(16, int(s.context_len - OUTPUT_LEN / 2))


def _servers(s: Scenario, engine: str, k: int, accept_len: float, max_batch: int = 1, off: bool = False) -> dict:
    """The plain and speculative servers' commands; with `off`, also the speculative server with speculation
    configured and switched off at every batch ("speculative_off": vLLM's per-batch table all 0, from 0.24.0;
    SGLang's adaptive steps with one 0 step, from 0.5.14; TensorRT-LLM's max_concurrency 1, off above it)."""
    target = s.target.hf_id
    draft = draft_path(s)
    e = round(accept_len, 2)
    if engine == "vllm":
        if s.method.name not in VLLM_METHODS:
            raise SpecModelError(f"vLLM has no speculative method for '{s.method}': plan for another engine")
        cfg = {"method": s.method.name, **({"model": draft} if draft else {}), "num_speculative_tokens": k,
               **({"rejection_sample_method": "synthetic", "synthetic_acceptance_length": e}
                  if synthetic_setting(s) else {})}
        tp = ["--tensor-parallel-size", str(s.tp)] if s.tp > 1 else []
        gpu = s.gpu  # both servers run the plan's largest batch, above vLLM's default limit too
        limit = s.engine.running_limit_flags(gpu.name, gpu.memory_GB, max_batch)
        base = ["vllm", "serve", target, *tp, *s.engine.backend_flags, *limit, "--port", "8000"]
        out = {"plain": shlex.join(base),
               "speculative": shlex.join(base + ["--speculative-config", json.dumps(cfg, separators=(", ", ": "))])}
        zero = {**{key: v for key, v in cfg.items() if "synthetic" not in key and key != "rejection_sample_method"},
                "num_speculative_tokens_per_batch_size": [[1, SCHEDULE_MAX_BATCH, 0]]}
        return out | ({"speculative_off": shlex.join(base + ["--speculative-config", json.dumps(
            zero, separators=(", ", ": "))])} if off else {})
    if engine == "sglang":
        if s.method.name not in SGLANG_ALGORITHM:
            raise SpecModelError(f"SGLang has no speculative algorithm for '{s.method}': plan for another engine")
        tp = ["--tp-size", str(s.tp)] if s.tp > 1 else []
        base = ["python", "-m", "sglang.launch_server", "--model-path", target, *tp, "--port", "30000"]
        flags = ["--speculative-algorithm", SGLANG_ALGORITHM[s.method.name]] + (
            ["--speculative-draft-model-path", draft] if draft else []) + (
            ["--speculative-num-steps", str(k), "--speculative-eagle-topk", "1"] if s.method.name != "ngram" else []) + [
            "--speculative-num-draft-tokens", str(k + 1)]
        flags += s.engine.running_cap_flags(s.method.name, max_batch)  # else it runs 48 at once (v0.4.5+)
        env = _simulate_env(synthetic_setting(s))
        out = {"plain": shlex.join(base), "speculative": (f"{env}{e} " if env else "") + shlex.join(base + flags)}
        zero = shlex.quote(json.dumps({"1": {"candidate_steps": [0]}}))
        return out | ({"speculative_off": f"printf '%s' {zero} > sglang_off.json && " + shlex.join(
            base + flags + ["--speculative-adaptive", "--speculative-adaptive-config", "sglang_off.json"])} if off else {})
    if s.method.name not in TRTLLM_DECODING_TYPE:
        raise SpecModelError(f"TensorRT-LLM's PyTorch backend has no speculative config for '{s.method}'")
    tp = ["--tp_size", str(s.tp)] if s.tp > 1 else []
    yaml = (f"speculative_config:\n  decoding_type: {TRTLLM_DECODING_TYPE[s.method.name]}\n  max_draft_len: {k}\n"
            + (f"  speculative_model: {draft}\n" if draft else "")
            + (f"  num_nextn_predict_layers: {k}\n" if s.method.name == "mtp" else ""))
    base = ["trtllm-serve", target, *tp, "--port", "8000"]
    out = {"plain": shlex.join(base),
           "speculative": f"printf '%s' {shlex.quote(yaml)} > spec.yaml && "
                          + shlex.join(base + ["--extra_llm_api_options", "spec.yaml"])}
    return out | ({"speculative_off": f"printf '%s' {shlex.quote(yaml + '  max_concurrency: 1' + chr(10))} > "
                                      "spec_off.yaml && " + shlex.join(base + ["--extra_llm_api_options", "spec_off.yaml"])}
                  if off else {})


def _bench_command(bench: str, s: Scenario, c: int, n: int, spec: bool, label: str, off: bool = False) -> str:
    target = s.target.hf_id
    in_len = input_len(s)
    out_file = f"{label}.json"
    if bench == "vllm":
        meta = [f"gpu={s.gpu}", f"tp={s.tp}", f"label={label}"] + (["speculation=off"] if off else [])
        if spec or off:
            meta.append(f"method={s.method}")
            if s.method.name == "draft_model" and s.draft:
                meta.append(f"draft_model={s.draft}")
        return shlex.join(["vllm", "bench", "serve", "--backend", "vllm", "--model", target,
                           "--base-url", "http://localhost:8000", "--dataset-name", "random",
                           "--random-input-len", str(in_len), "--random-output-len", str(OUTPUT_LEN), "--ignore-eos",
                           "--num-prompts", str(n), "--max-concurrency", str(c), "--request-rate", "inf",
                           "--save-result", "--result-dir", "results", "--result-filename", out_file,
                           "--metadata", *meta])
    if bench == "sglang":
        return shlex.join(["python", "-m", "sglang.bench_serving", "--backend", "sglang", "--host", "127.0.0.1",
                           "--port", "30000", "--model", target, "--dataset-name", "random",
                           "--random-input-len", str(in_len), "--random-output-len", str(OUTPUT_LEN),
                           "--random-range-ratio", "1", "--num-prompts", str(n), "--max-concurrency", str(c),
                           "--output-file", f"results/{label}.jsonl"])
    return shlex.join(["guidellm", "benchmark", "--target", "http://localhost:8000", "--rate-type", "concurrent",
                       "--rate", str(c), "--max-requests", str(n),
                       "--data", f"prompt_tokens={in_len},output_tokens={OUTPUT_LEN}",
                       "--output-path", f"results/{out_file}"])


def off_run_batch(summary: Summary, batches: list[int]) -> int | None:
    """The batch of the plan's run with speculation configured and off, one of the plan's own (its plain run
    there is what the off run is compared with): the first above the schedule's off threshold, else the
    largest; None where the off cost is measured already, where the engine has no off band inside the server,
    or where speculation never pays (nothing is configured)."""
    cost = summary.off_cost
    if cost is None or cost.kind not in ("published", "chosen") or summary.pools_above == 0:
        return None
    above = [c for c in sorted(batches) if c > max(1, summary.off_above or 1)]
    return above[0] if above and summary.off_above is not None else max(batches)


def measurement_plan(summary: Summary, bench: str | None = None) -> Plan:
    """The plan for the summary's scenario on its engine: runs, servers, the synthetic-acceptance
    setting where the engine has one, and how long it takes (predicted throughput, plus server starts)."""
    s = summary.scenario
    engine = s.engine.name
    if engine not in ("vllm", "sglang", "trtllm"):
        raise SpecModelError(f"no benchmark plan for engine '{engine}': choose vllm, sglang or trtllm")
    bench = bench or BENCH_OF_ENGINE.get(engine, "guidellm")
    if bench not in BENCHES:
        raise SpecModelError(f"unknown benchmark '{bench}'; one of {', '.join(BENCHES)}")
    k = int(s.k or summary.best_k or 4)
    # the tokens a step emits at k: the summary's own prediction where k is the scenario's (one prediction
    # fewer on every What-if rerun)
    accept = float((summary.prediction if k == s.k else predict(replace(s, k=k))).tokens_per_step)
    points = plan_concurrencies(summary)
    off_at = off_run_batch(summary, [c for c, _ in points])  # None: the off band's cost is measured, or not asked
    servers = _servers(s, engine, k, accept, max(c for c, _ in points), off=off_at is not None)
    synthetic = synthetic_setting(s)
    runs = []
    # one prediction over the plan's batches (elementwise, so each is what predicting it alone gives)
    p = predict(replace(s, k=k), concurrency=np.array([c for c, _ in points]))
    for i, (c, why) in enumerate(points):
        n = max(MIN_PROMPTS, PROMPTS_PER_SLOT * c)
        for spec in (False, True):
            arm = p.spec if spec else p.plain
            label = f"{'spec' if spec else 'plain'}_c{c}"
            seconds = n * OUTPUT_LEN / max(float(np.asarray(arm.throughput_tok_s)[i]), 1e-9)
            words = (f"{why}; speculative (k = {k}" + (f", acceptance fixed at E = {accept:.2f}" if synthetic
                                                       else "") + ")") if spec else f"{why}; plain decoding"
            runs.append(PlannedRun(c, spec, _bench_command(bench, s, c, n, spec, label),
                                   servers["speculative" if spec else "plain"], words, n, seconds))
    if off_at is not None:  # one of the plan's batches (off_run_batch): its plain throughput is predicted above
        plain_there = float(np.asarray(p.plain.throughput_tok_s)[[c for c, _ in points].index(off_at)])
        runs.append(_off_run(summary, bench, servers["speculative_off"], off_at, plain_there))
    notes = _plan_notes(s, bench, servers, synthetic, accept, k, runs)
    total = sum(r.seconds for r in runs) + len(servers) * SERVER_START_S
    return Plan(engine_text(s.engine), bench, k, accept, tuple(runs), servers,
                synthetic, total, tuple(notes))


def _plan_notes(s: Scenario, bench: str, servers: dict, synthetic: dict | None, accept: float, k: int,
                runs: list) -> list[str]:
    """The plan's notes: where to run what, the synthetic-acceptance setting, the benchmark's gaps, the
    engine's running limit, n-gram's proposal rate and the run with speculation configured and off."""
    engine = s.engine.name
    notes = [f"run the plain runs against `{servers['plain']}`, then the speculative ones against the speculative "
             "server; upload every result file (Past runs, or `python -m specmodel runs results/* --calibrate`, or "
             "`plan ... --results results/*`) to calibrate"]
    named = engine_text(s.engine)
    if synthetic and s.engine.version is None:
        notes.append(f"synthetic acceptance: {synthetic['setting']} ({synthetic['since']} and later, "
                     f"{synthetic['source']}); E = {accept:.2f} is the model's tokens per step at k = {k}; "
                     "with older releases drop it and the acceptance is whatever the prompts give")
    elif synthetic:
        notes.append(f"synthetic acceptance: {synthetic['setting']} (from {synthetic['since']}, {synthetic['source']}); "
                     f"E = {accept:.2f} is the model's tokens per step at k = {k}")
    elif engine in SYNTHETIC:
        notes.append(f"{named} has no synthetic-acceptance setting ({SYNTHETIC[engine]['setting']} from "
                     f"{SYNTHETIC[engine]['since']}" + "".join(f", {o['setting']} from {o['since']}" for _, o in
                                                              _SYNTHETIC_OLDER.get(engine, []))
                     + "): the acceptance is what the prompts give, so use prompts like production's")
    else:
        notes.append("TensorRT-LLM has no synthetic-acceptance setting that we found: the acceptance is what the "
                     "prompts give, so use prompts like production's")
    if bench == "sglang":
        notes.append("sglang.bench_serving's result has no spec-decode counters: give the acceptance (k and "
                     "tokens_per_step or alpha) in a CSV row beside it, or run `vllm bench serve --backend openai` "
                     "against the SGLang server")
    if bench == "guidellm":
        notes.append("guidellm records no k or acceptance: pass `--k` to `runs` and give tokens_per_step in a CSV row")
    cap = s.engine.running_cap(s.method.name)
    if cap is not None and max(r.concurrency for r in runs) > cap:
        flag = s.engine.spec_running_cap["flag"]
        notes.append(f"the speculative server sets {flag}: {engine_text(s.engine)} runs at most {cap} "
                     "requests at once while speculating unless it is given (its server arguments reset the limit "
                     "for speculative decoding), so the larger batches would queue instead of running")
    if s.method.name == "ngram":
        notes.append("n-gram proposes only on a match: synthetic acceptance fixes what is accepted, not how often "
                     "it proposes (--proposal-rate)")
    off = next((r for r in runs if r.off), None)
    if off is not None:
        notes.append(f"the run at batch {off.concurrency} goes against `{servers['speculative_off']}` (speculation "
                     "configured, every batch at k = 0): what the schedule's off band costs, a share of the plain step "
                     "at that batch; `runs` reads its result as `off_tok_s` (vllm bench's `speculation=off` metadata; "
                     "for another benchmark put its throughput in the CSV row of that batch) and uses it instead of "
                     "the engine's value")
    return notes


def largest_batch(summary: Summary) -> int:
    """The largest batch the plan runs at: what the speculative arm fits, up to the schedule's 512."""
    return int(min(SCHEDULE_MAX_BATCH, max(1, summary.prediction.spec.max_concurrency)))


def _off_run(summary: Summary, bench: str, server: str, c: int, plain: float) -> PlannedRun:
    """The run of the speculative server with speculation configured and switched off at batch c, where a
    plain server runs `plain` tokens/s (the plan's own prediction at c: one prediction fewer per What-if rerun)."""
    s = summary.scenario
    n = max(MIN_PROMPTS, PROMPTS_PER_SLOT * c)
    share = float(summary.off_cost.at(c))
    seconds = n * OUTPUT_LEN * (1.0 + share) / max(plain, 1e-9)
    why = (f"batch {c}: speculation configured but off (k = 0 at every batch), against the plain run at batch {c}: what the "
           f"off band costs, here taken as {share:.0%} of a plain step ({summary.off_cost.kind}); it moves where to turn "
           "speculation off and what separate pools gain")
    return PlannedRun(c, True, _bench_command(bench, s, c, n, False, f"off_c{c}", off=True), server, why, n, seconds,
                      off=True)


def calibrated_band(s: Scenario, rows) -> dict:
    """What uploading the plan's results does: calibrate on them (runs.calibrate) under each engine
    behaviour the scenario leaves open (the engine as it stands, and each version that costs more where
    its version is not given: decide.engine_variants), keep the one the runs fit best, and give the band
    at the scenario before and after. Keys: before, after ([low, high]), width_before, width_after,
    engine_after, calibration (Calibration.to_dict), narrower."""
    from specmodel.runs.calibrate import calibrate
    from specmodel.runs.unpredicted import unpredicted_rows

    engine = s.engine
    candidates = [engine_text(engine)] + engine_variants(s)
    fits = []
    for name in candidates:
        r = rows.copy()
        if "engine" not in r.columns:
            r["engine"] = name
        else:
            r["engine"] = r["engine"].where(r["engine"].notna() & (r["engine"] != ""), name)
        try:
            cal = calibrate(r, s.efficiency)
        except SpecModelError as exc:
            why = exc
            continue
        err = cal.mape_after_pct if cal.mape_after_pct is not None else float("inf")
        fits.append((err + (cal.throughput_mape_after_pct or 0.0), name, cal))
    if not fits and any(unpredicted_rows(rows)):
        raise why  # calibrate's own reason: runs naming no preset are judged on their measurement alone
    if not fits:
        raise SpecModelError("none of the runs has both an acceptance and a measured throughput: nothing to "
                             "calibrate on (load the plan's plain and speculative result files together)")
    _err, name, cal = min(fits, key=lambda t: t[0])
    before = speedup_band(s)
    after_s = replace(s, efficiency=cal.efficiency, engine=resolved_engine(name))
    after = speedup_band(after_s)
    width = lambda b: float(b[1] - b[0])  # noqa: E731
    return {"before": [round(before[0], 4), round(before[1], 4)], "after": [round(after[0], 4), round(after[1], 4)],
            "width_before": round(width(before), 4), "width_after": round(width(after), 4),
            "speedup_before": round(float(predict(s).speedup), 4),
            "speedup_after": round(float(predict(after_s).speedup), 4),
            "engine_after": name, "engines_tried": candidates, "narrower": width(after) < width(before),
            "calibration": cal.to_dict()}
