"""The `predict --json` object, assembled in this one place for every answer: a Summary, or the
verdict "does not fit" (every key present, null where there is no number). Pages and reports read
the same object (show.readouts), so the CLI, the JSON and the page cannot disagree."""

from __future__ import annotations

from specmodel.errors import DoesNotFit
from specmodel.export.deploy import deploy_advice, deploy_by_engine, vllm_speculative_config
from specmodel.model.decide import SWITCH_GAIN, Decision, off_above
from specmodel.words import Summary, decision
from specmodel.model.scenario import Arm, Scenario
from specmodel.plan.capacity import int_or_none, rounded
from specmodel.plan.measure import threshold_runs
from specmodel.words.decision_line import decision_line
from specmodel.words.off_cost import off_cost_dict

ARM_KEYS = ("step_ms", "throughput_tok_s", "per_sequence_tok_s", "itl_ms", "max_concurrency", "running")


def _arm(a: Arm) -> dict:
    return {"step_ms": rounded(a.step_ms), "throughput_tok_s": rounded(a.throughput_tok_s),
            "per_sequence_tok_s": rounded(a.per_seq_tok_s), "itl_ms": rounded(a.itl_ms),
            "max_concurrency": int_or_none(a.max_concurrency), "running": int_or_none(a.batch)}


def _inputs(s: Scenario) -> dict:
    """The scenario's inputs as every answer repeats them."""
    engine = s.engine
    return {"gpu": s.gpu.name, "target": s.target.name, "method": s.method.name,
            "draft": s.draft.name if s.method.name == "draft_model" and s.draft else None,
            "context_len": s.context_len, "tp": s.tp,
            "engine": engine.name, "engine_version": engine.version_text, "attention_backend": engine.attention_backend,
            "draft_depth": s.draft_depth, "weight_dtype": s.weight_dtype,
            "kv_dtype": s.kv_dtype, "timings": "measured" if s.t_target_ms is not None else "hardware"}


def prediction_dict(summary: Summary, with_deploy: bool = True, dp: int = 1) -> dict:
    """`predict --json` for a scenario that fits. `with_deploy`: include the engine's deploy advice
    (the keys 'deploy' and 'deploy_by_engine'); pages that show it themselves skip the work.
    `dp`: data-parallel replicas the deployment runs (its traps differ)."""
    p, s = summary.prediction, summary.scenario
    band = summary.band
    out = {
        **_inputs(s),
        "alpha": rounded(p.alpha), "k": int(p.k), "concurrency": int(p.concurrency),
        "tokens_per_step": rounded(p.tokens_per_step), "speedup": rounded(p.speedup),
        "verdict": summary.verdict.label, "decision": decision(summary.verdict.label),
        "verdict_text": summary.verdict.text, "advice": summary.verdict.advice,
        "speedup_low": rounded(band[0]) if band else None, "speedup_high": rounded(band[1]) if band else None,
        "uncertain": summary.uncertain,
        "break_even_tokens_per_step": rounded(p.break_even_tokens_per_step),
        "break_even_alpha": rounded(p.break_even_alpha),
        "best_k": summary.best_k, "best_k_speedup": rounded(summary.best_k_speedup),
        "crossover_concurrency": summary.crossover_concurrency,
        "num_speculative_tokens_per_batch_size": summary.schedule,
        "off_above_batch": off_above(summary.schedule),
        "threshold_text": summary.threshold_text,
        "off_above_batch_low": summary.off_above_range[0] if summary.off_above_range else None,
        "off_above_batch_high": summary.off_above_range[1] if summary.off_above_range else None,
        "plain": _arm(p.plain), "spec": _arm(p.spec),
        "vllm_speculative_config": vllm_speculative_config(summary),
        "notes": list(summary.notes),
        "off_cost": off_cost_dict(summary.off_cost, int(p.concurrency)) if summary.off_cost else None,
        "separate_pools": separate_pools(summary),
        # the decision first, in the words every page and command leads with, and the two concurrencies
        # (each plain and speculative) that would pin an open off threshold (plan.measure.threshold_runs)
        "decision_line": decision_line(summary, s.method.label),
        "threshold_runs": _runs(summary),
        "runs_schedule": None,  # the schedule the user's runs give, where a step fit answers (`predict --calibration`)
        "off_note": None,  # what those runs measured with speculation configured and off, where they did
    }
    out["deploy"] = deploy_advice(summary).to_dict() if with_deploy else None
    by_engine, why = deploy_by_engine(summary, dp) if with_deploy else (None, {})
    out["deploy_by_engine"] = by_engine
    out["deploy_by_engine_unavailable"] = why
    return out


def _runs(summary: Summary) -> list[int] | None:
    low, high = summary.off_above_range or (None, None)
    runs = threshold_runs(summary) if low != high and summary.scenario.k else None
    return list(runs) if runs else None


def separate_pools(d: Decision) -> dict:
    """`separate_pools`: the schedule (one server, speculation configured, its off band not free: `off_cost`)
    against a pool with speculation for the batches where it pays and a pool without it for the rest.
    above_batch: the largest batch where speculation at its best k beats a server without it (null: still at
    512; 0: never); gain_up_to: the most the pools gain over the schedule above it (null: within the noise);
    restart_gain: a server without speculation over the schedule at this concurrency, where the advice is to
    turn speculation off here (null otherwise); at_least: the gain the advice words a gain from (SWITCH_GAIN)."""
    said = lambda x: None if x is None or x <= 1.0 + SWITCH_GAIN else rounded(x)  # noqa: E731 - as the advice
    return {"above_batch": d.pools_above, "gain_up_to": said(d.pools_gain),
            "restart_gain": said(d.restart_gain) if d.best_k == 0 else None, "at_least": rounded(1.0 + SWITCH_GAIN)}


def does_not_fit_dict(s: Scenario, exc: DoesNotFit) -> dict:
    """`predict --json` when not even one sequence fits: every usual key (null where there is no
    number), verdict "does not fit", and `does_not_fit` with what it needs and what fits."""
    arm = {**dict.fromkeys(ARM_KEYS), "max_concurrency": 0, "running": 0}
    return {
        **_inputs(s),
        "alpha": s.alpha, "k": s.k, "concurrency": s.concurrency,
        "tokens_per_step": None, "speedup": None, "verdict": "does not fit", "decision": decision("does not fit"),
        "verdict_text": str(exc),
        "advice": exc.closest, "speedup_low": None, "speedup_high": None, "uncertain": False,
        "break_even_tokens_per_step": None, "break_even_alpha": None, "best_k": None,
        "best_k_speedup": None, "crossover_concurrency": None, "num_speculative_tokens_per_batch_size": [],
        "off_above_batch": None, "off_above_batch_low": None, "off_above_batch_high": None, "threshold_text": None,
        "plain": dict(arm), "spec": dict(arm), "vllm_speculative_config": None,
        "notes": [], "deploy": None, "deploy_by_engine": None, "off_cost": None, "separate_pools": None,
        "deploy_by_engine_unavailable": {e: "not even one sequence fits" for e in ("vllm", "sglang", "trtllm")},
        "does_not_fit": exc.to_dict(), "decision_line": f"{s.method.label}: does not fit", "threshold_runs": None,
        "runs_schedule": None, "off_note": None,
    }
