"""Write tests/fixtures/plan_runs/: the `vllm bench serve --save-result` files that the plan for
PLAN_SCENARIO asks for, in the real format (the keys vLLM 0.33.0's client writes, as in
../shared/reference/vllm_bench_serve_*_sample.json), from a simulated server whose truth the model
does not know: vLLM 0.14+ (a draft model runs without the async scheduler that plain decoding keeps,
so the speculative step pays ~1.3 ms more in series) and kernels at 82% of peak bandwidth instead
of 90%, with ±1% run-to-run noise. The speculative server ran with synthetic acceptance
(synthetic_acceptance_length = the plan's E), so its counters show that acceptance. The run with speculation
configured and off (the plan's seventh: every batch at k = 0) is the plain step × (1 + TRUTH_OFF_COST), saved
with the `speculation=off` metadata the plan's command gives.

    .venv/bin/python -m tests.make_plan_fixtures
"""

import json
from pathlib import Path

from specmodel import Scenario, summarize
from specmodel.model.roofline import Efficiency
from specmodel.model.scenario import predict, with_changes
from specmodel.plan.measure import OUTPUT_LEN, input_len, measurement_plan

PLAN_SCENARIO = dict(gpu="L40S", target="Llama 3.1 8B", method="draft_model", draft="Llama 3.2 1B", alpha=0.7, k=4,
                     engine="vllm")
TRUTH = dict(engine="vllm 0.14.0", efficiency=Efficiency(eta_bw=0.82))
NOISE = (1.008, 0.992, 1.004, 0.995, 1.01, 0.997)  # fixed, so the files never change
# the simulated server's off band: 9% of a plain step (vLLM's published value is 16-20% at these batches), so a
# test can tell the measured value from the engine's
TRUTH_OFF_COST = 0.09
OUT = Path(__file__).resolve().parent / "fixtures" / "plan_runs"


def synthetic_rates(length: float, k: int) -> list[float]:
    """vLLM's synthetic per-position rates for a mean acceptance length (its minimum-variance schedule:
    whole positions always accepted, the remainder in the next one)."""
    drafts = length - 1
    whole = int(drafts)
    return ([1.0] * whole + [drafts - whole] + [0.0] * (k - whole - 1))[:k]


def main() -> None:
    scenario = Scenario.from_names(**PLAN_SCENARIO)
    plan = measurement_plan(summarize(scenario))
    k, e = plan.k, round(plan.acceptance_length, 2)
    rates = synthetic_rates(e, k)
    truth = with_changes(scenario, survival=tuple(rates), **TRUTH)  # reads the engine text
    OUT.mkdir(parents=True, exist_ok=True)
    in_len = input_len(scenario)
    for i, run in enumerate(plan.runs):
        p = predict(truth, concurrency=run.concurrency)
        arm = p.spec if run.speculative and not run.off else p.plain
        tok_s = float(arm.throughput_tok_s) * NOISE[i % len(NOISE)] / (1.0 + TRUTH_OFF_COST * run.off)
        n = run.num_prompts
        out_tokens = n * OUTPUT_LEN
        duration = out_tokens / tok_s
        tpot = float(arm.itl_ms) * (1.0 if not run.speculative else 1.0)
        label = f"{'off' if run.off else 'spec' if run.speculative else 'plain'}_c{run.concurrency}"
        d = {"date": "20261201-120000", "endpoint_type": "vllm", "backend": "vllm", "label": label,
             "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
             "num_prompts": n, "gpu": "L40S", "tp": "1",
             "note": "simulated server (tests/make_plan_fixtures.py), vllm bench serve --save-result format",
             "request_rate": "inf", "burstiness": 1.0, "max_concurrency": run.concurrency, "duration": duration,
             "completed": n, "failed": 0, "total_input_tokens": n * in_len, "total_output_tokens": out_tokens,
             "request_throughput": n / duration, "request_goodput": None, "output_throughput": tok_s,
             "total_token_throughput": (n * in_len + out_tokens) / duration,
             "max_output_tokens_per_s": tok_s * 1.1, "max_concurrent_requests": run.concurrency, "rtfx": 0.0,
             "mean_ttft_ms": 60.0, "median_ttft_ms": 58.0, "std_ttft_ms": 9.0, "p50_ttft_ms": 58.0,
             "p90_ttft_ms": 72.0, "p99_ttft_ms": 95.0, "mean_tpot_ms": tpot, "median_tpot_ms": tpot,
             "std_tpot_ms": tpot * 0.05, "p50_tpot_ms": tpot, "p90_tpot_ms": tpot * 1.06, "p99_tpot_ms": tpot * 1.12,
             "mean_itl_ms": tpot, "median_itl_ms": tpot, "std_itl_ms": tpot * 0.2, "p50_itl_ms": tpot,
             "p90_itl_ms": tpot * 1.2, "p99_itl_ms": tpot * 2.0,
             "mean_e2el_ms": 60.0 + tpot * OUTPUT_LEN, "median_e2el_ms": 60.0 + tpot * OUTPUT_LEN,
             "std_e2el_ms": tpot * 10, "p50_e2el_ms": 60.0 + tpot * OUTPUT_LEN,
             "p90_e2el_ms": 60.0 + tpot * OUTPUT_LEN * 1.05, "p99_e2el_ms": 60.0 + tpot * OUTPUT_LEN * 1.1}
        if run.off:
            d.update({"method": "draft_model", "draft_model": "Llama 3.2 1B", "speculation": "off"})
        elif run.speculative:
            d["method"] = "draft_model"
            d["draft_model"] = "Llama 3.2 1B"
            drafts = round(out_tokens / e)
            accepted = round(drafts * (e - 1))
            d.update({"spec_decode_acceptance_rate": 100.0 * accepted / (drafts * k),
                      "spec_decode_acceptance_length": 1 + accepted / drafts, "spec_decode_num_drafts": drafts,
                      "spec_decode_draft_tokens": drafts * k, "spec_decode_accepted_tokens": accepted,
                      "spec_decode_per_position_acceptance_rates": rates})
        (OUT / f"{label}.json").write_text(json.dumps(d, indent=1) + "\n")
    print(f"wrote {len(plan.runs)} files to {OUT}")


if __name__ == "__main__":
    main()
