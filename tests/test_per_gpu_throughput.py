"""Throughputs a source gives per GPU are a replica's throughput divided by its GPUs: read them as the
replica's (the quantity the model predicts), or a fit takes the model to be 4x too fast on a TP=4 run."""

from __future__ import annotations

import pytest

from specmodel.runs import RunDefaults, read_runs
from specmodel.runs.measured import throughput_per_gpu
from specmodel.runs.review import evaluate_runs

# The development set's transcription of vLLM's AMD Instinct post (S18: vllm-project.github.io
# _posts/2026-07-13-eagle-3-amd-instinct.md, Figure 5 bar labels): MiniMax-M2.5 with EAGLE-3 on
# 4x MI355X, plain 90 and 822 output tok/s per GPU at concurrency 4 and 64.
HEAD = "source_id,hardware,target_model,draft_model_or_method,k,workload_or_dataset,concurrency_or_batch," \
       "baseline_tok_s,spec_tok_s,speedup,latency_metric_note\n"
ROW = ('S18,"4x AMD Instinct MI355X (TP=4, EP)",MiniMax-M2.5 (MoE),EAGLE-3 BF16 draft (thoughtworks/MiniMax-M2.5-Eagle3),'
       '3,random prompts 1K in / 1K out,{c},{base},{spec},{s},{note}\n')
PER_GPU = "output throughput tok/s/GPU (mean of 5 seeds); speedup as printed in figure"


def read(note: str):
    body = ROW.format(c=4, base=90, spec=162, s=1.79, note=note) + ROW.format(c=64, base=822, spec=1137, s=1.38, note=note)
    return read_runs([("s18.csv", (HEAD + body).encode())], RunDefaults()).rows


@pytest.mark.parametrize("text, per_gpu", [
    (PER_GPU, True), ("tokens/s per GPU", True), ("throughput per device, TP=8", True),
    ("aggregate generated tokens/s at fixed batch size", False), ("decode throughput tokens/s, max-num-seqs 1", False),
    ("offline output tokens/s", False), ("8 GPUs, throughput 5,000 tok/s", False)])
def test_per_gpu_throughput_is_recognised_as_sources_write_it(text, per_gpu):
    assert throughput_per_gpu(text) is per_gpu


def test_a_per_gpu_figure_is_read_as_the_replicas_and_the_row_says_so():
    rows = read(PER_GPU)
    assert rows["baseline_tok_s"].tolist() == [360.0, 3288.0]
    assert rows["spec_tok_s"].tolist() == [648.0, 4548.0]
    assert rows["measured_speedup"].tolist() == [1.79, 1.38]  # a ratio is the same per GPU or per replica
    assert all("per GPU: × 4 GPUs" in r for r in rows["remarks"])
    # without the words "per GPU" nothing is multiplied
    plain = read("output throughput tok/s (mean of 5 seeds)")
    assert plain["baseline_tok_s"].tolist() == [90.0, 822.0]


def test_the_models_plain_throughput_matches_the_replica_read_from_a_per_gpu_figure():
    """Plain decoding at concurrency 4 and 64: within 20% of 4 x the published per-GPU figure (the model
    without any fit; before the per-GPU reading it was 4.4x the figure as read)."""
    ev = evaluate_runs(read(PER_GPU))
    ratio = ev["predicted_baseline_tok_s"].astype(float) / ev["baseline_tok_s"].astype(float)
    assert ratio.between(0.8, 1.2).all(), ratio.tolist()
