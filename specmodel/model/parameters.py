"""The one bounds table of the model's free parameters (roofline.Efficiency): hard bounds that
calibration, CLI flags, link values, calibration files and Efficiency itself check, and the physical
ranges a fit is judged against."""

from __future__ import annotations

from typing import NamedTuple


class Param(NamedTuple):
    lo: float  # hard bounds: calibration, flags, link values and calibration files all use these
    hi: float
    unit: str
    words: str
    physical_lo: float  # where real systems sit; a fit ending outside is reported
    physical_hi: float


# The one bounds table of the model's parameters. Hard bounds: an efficiency is a fraction of peak;
# overheads above 20 ms per pass would dwarf every step time the presets produce. Physical ranges:
# GEMMs reach 0.63-0.69 of dense peak and weight reads 0.56-0.80 of peak bandwidth on an H200
# (bench/evidence/h200_steptime.csv); KV reads 0.90-0.94 (h200_gqa_verify.csv); engine
# overheads within ×0.3-×3 of data/engines.json; an attention layer's floor 5-40 µs.
PARAMETERS: dict[str, Param] = {
    "eta_bw": Param(0.2, 1.0, "", "achieved fraction of peak memory bandwidth", 0.6, 0.95),
    "eta_flops": Param(0.05, 1.0, "", "achieved fraction of dense peak FLOPS", 0.45, 0.8),
    "t_fixed_ms": Param(0.0, 20.0, "ms", "extra fixed time per forward pass", 0.0, 3.0),
    "t_spec_overhead_ms": Param(0.0, 20.0, "ms", "extra overhead per speculative step", 0.0, 3.0),
    # How much less of peak bandwidth a small model (the draft) reaches than a large one: 0 = the same
    # (the default: the per-kernel latency explains the H200's 56% for 1B vs 79% for 8B).
    "small_model_exponent": Param(0.0, 0.5, "", "bandwidth penalty of a small (draft) model", 0.0, 0.3),
    "kernel_us": Param(0.0, 50.0, "µs", "latency of one weight GEMM kernel beyond its bytes", 1.0, 10.0),
    "overhead_scale": Param(0.0, 5.0, "×", "engine overheads relative to the engine preset", 0.3, 3.0),
    # Per-sequence cost of the speculative step: wide on purpose. The presets' 10-15 µs per sequence
    # are fitted to one benchmark's engine versions; Python-side proposers and rejection samplers of
    # other versions cost several times more per request (a fit that ends at an edge says so).
    "spec_seq_scale": Param(0.0, 20.0, "×", "per-sequence cost of the speculative step relative to the engine preset",
                            0.3, 10.0),
    "eta_kv": Param(0.2, 1.0, "", "achieved fraction of peak bandwidth reading the KV cache", 0.6, 0.98),
    "attn_floor_us": Param(0.0, 100.0, "µs", "latency floor of one attention layer", 5.0, 40.0),
    "smooth_p": Param(1.0, 10.0, "", "sharpness of the memory/compute transition", 2.0, 4.0),
}
