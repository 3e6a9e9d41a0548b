"""Probe: time of one routed MoE layer (the expert FFNs only: gate+up GEMM, SiLU·mul, down GEMM) by
number of tokens, for decode (q = 1 token per sequence) against verify (q = k + 1 tokens per
sequence), on one GPU. Run on the lent H200 (python3 bench/evidence/probe_moe_h200.py OUT.csv);
the CSV it wrote on 2026-12-01 is bench/evidence/h200_moe_layer.csv.

Routing is uniform random top-k without replacement per token (no locality between the tokens of one
sequence: the model's EXPERT_LOCALITY = 0 case), redrawn for each of SAMPLES timings. Tokens routed to
an expert are grouped (padded to a multiple of 16, as grouped GEMMs and vLLM's fused_moe pad to a
block) and run through torch._grouped_mm (CUTLASS grouped GEMM on Hopper) inside a CUDA graph;
where _grouped_mm is missing, through one torch.mm per touched expert in a CUDA graph (the `kernel`
column says which). Expert shapes from the models' config.json on Hugging Face:
  Qwen3-30B-A3B: hidden_size 2048, moe_intermediate_size 768, num_experts 128, num_experts_per_tok 8
  GLM-4.5-Air: hidden_size 4096, moe_intermediate_size 1408, n_routed_experts 128, num_experts_per_tok 8
  DeepSeek-V3 (one GPU of EP 8: 32 of 256 experts, a token reaching this GPU for ~1 of its 8 picks):
    hidden_size 7168, moe_intermediate_size 2048, n_routed_experts 256, num_experts_per_tok 8
"""

import csv
import sys

import torch

SHAPES = [  # name, hidden, intermediate, experts on this GPU, picks per token on this GPU
    ("qwen3-30b-a3b", 2048, 768, 128, 8),
    ("glm-4.5-air", 4096, 1408, 128, 8),
    ("deepseek-v3-ep8", 7168, 2048, 32, 1),
]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
QS = [1, 2, 4, 8]
SAMPLES = 4
REPLAYS = 20
ALIGN = 16


def routing(tokens, experts, picks, gen):
    scores = torch.rand(tokens, experts, generator=gen, device="cuda")
    return scores.topk(picks, dim=1).indices.flatten()


def layer(hidden, inter, experts):
    w13 = torch.randn(experts, 2 * inter, hidden, device="cuda", dtype=torch.bfloat16) * 0.02
    w2 = torch.randn(experts, hidden, inter, device="cuda", dtype=torch.bfloat16) * 0.02
    return w13, w2


def grouped(x, w13, w2, counts):
    padded = ((counts + ALIGN - 1) // ALIGN) * ALIGN
    offs = torch.cumsum(padded, 0).to(torch.int32)
    h = torch._grouped_mm(x, w13.transpose(-2, -1), offs=offs, out_dtype=torch.bfloat16)
    gate, up = h.chunk(2, dim=-1)
    a = torch.nn.functional.silu(gate) * up
    return torch._grouped_mm(a.contiguous(), w2.transpose(-2, -1), offs=offs, out_dtype=torch.bfloat16)


def looped(x, w13, w2, counts):
    out, start = [], 0
    for e, n in enumerate(counts.tolist()):
        n = ((n + ALIGN - 1) // ALIGN) * ALIGN
        if n == 0:
            continue
        h = x[start:start + n] @ w13[e].T
        gate, up = h.chunk(2, dim=-1)
        out.append((torch.nn.functional.silu(gate) * up) @ w2[e].T)
        start += n
    return out


def time_once(fn, x, w13, w2, counts):
    for _ in range(2):
        fn(x, w13, w2, counts)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn(x, w13, w2, counts)
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPLAYS):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / REPLAYS


def main(path):
    gen = torch.Generator(device="cuda").manual_seed(0)
    kernel = "grouped_mm" if hasattr(torch, "_grouped_mm") else "mm_loop"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["date", "gpu", "torch", "kernel", "shape", "hidden", "intermediate", "experts", "picks",
                      "batch", "q", "tokens", "experts_touched", "ms"])
        for name, hidden, inter, experts, picks in SHAPES:
            w13, w2 = layer(hidden, inter, experts)
            for b in BATCHES:
                for q in QS:
                    tokens = b * q
                    times, touched = [], []
                    for _ in range(SAMPLES):
                        ids = routing(tokens, experts, picks, gen)
                        counts = torch.bincount(ids, minlength=experts).cpu()
                        rows = int((((counts + ALIGN - 1) // ALIGN) * ALIGN).sum())
                        x = torch.randn(max(rows, ALIGN), hidden, device="cuda", dtype=torch.bfloat16)
                        fn = grouped if kernel == "grouped_mm" else looped
                        try:
                            times.append(time_once(fn, x, w13, w2, counts.cuda() if fn is grouped else counts))
                        except RuntimeError as e:  # _grouped_mm unsupported here: fall back once
                            if fn is looped:
                                raise
                            print("grouped_mm failed, falling back to mm_loop:", e, flush=True)
                            kernel = "mm_loop"
                            times.append(time_once(looped, x, w13, w2, counts))
                        touched.append(int((counts > 0).sum()))
                    ms = sorted(times)[len(times) // 2]
                    out.writerow(["2026-12-01", torch.cuda.get_device_name(), torch.__version__, kernel, name, hidden,
                                  inter, experts, picks, b, q, tokens, sum(touched) / len(touched), round(ms, 5)])
                    print(name, b, q, tokens, round(ms, 4), flush=True)
            del w13, w2
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1])
