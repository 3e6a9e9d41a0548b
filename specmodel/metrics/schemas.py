"""Which inference engine wrote a `/metrics` page, keyed on its speculative-decoding counter schema.

Engines name the same counters differently, and several now copy vLLM's schema under their own
prefix. So an engine is recognised by the *shape* of its spec-decode series (the suffixes and the
per-position label), and the prefix in front of them says which engine it is:

| schema        | series (suffixes after the prefix)                                   | engines (prefix)                     |
|---------------|----------------------------------------------------------------------|--------------------------------------|
| vLLM counters | spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total,          | vLLM V1 `vllm:`, llama.cpp           |
|               | spec_decode_num_accepted_tokens_per_pos_total{position}              | `llamacpp:`, lmdeploy `lmdeploy:`,   |
|               |                                                                      | any other prefix (reported as such)  |
| TensorRT-LLM  | spec_decode_{drafted,accepted}_tokens_total{token_position},         | `trtllm_` (trtllm-serve), `trtllm:`  |
|               | spec_decode_num_{draft,accepted}_tokens_total                        | (NVIDIA Dynamo)                      |
| SGLang        | spec_verify_calls_total, spec_accept_length                           | `sglang:`                            |
| TGI           | request_skipped_tokens (summary: _sum, _count), request_count        | `tgi_`                               |
| vLLM V0       | spec_decode_efficiency, spec_decode_num_emitted_tokens_total          | `vllm:`                              |

Each Engine below carries `source` (the engine's file and the commit its names and meanings were read at) and
`convention` (what E and the per-position counts mean there); docs/engines.md lists them as a table.
Sources (metric names as each engine's code writes them):
- vLLM V1: vllm/v1/spec_decode/metrics.py (SpecDecodingProm).
- llama.cpp server: tools/server `server_task_result_metrics::to_metrics()` (counters
  `llamacpp:spec_decode_num_*_total`, `..._per_pos_total{position}`, gauges `requests_processing`,
  `requests_deferred`).
- lmdeploy: lmdeploy/metrics/loggers.py (github.com/InternLM/lmdeploy, commit 1263d5c).
- TensorRT-LLM: tensorrt_llm/metrics/collector.py (MetricsCollector, prefix `trtllm_`, per-position
  counters labelled `token_position`); tensorrt_llm/serve/openai_server.py mounts them at
  `/prometheus/metrics` (its `/metrics` answers JSON iteration stats). Dynamo re-exports them as `trtllm:`.
- TGI: docs/source/reference/metrics.md and backends/v3/src/backend.rs (github.com/huggingface/
  text-generation-inference, commit db931fc): `tgi_request_skipped_tokens` records n − 1 for every
  generation step of every request, where n tokens came out of the step.

`detect(names)` returns the engine and the prefix in use, or raises SpecModelError naming what it
looked for (or, for a page mixing two engines, both of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specmodel.errors import SpecModelError


@dataclass(frozen=True)
class Engine:
    """How one engine names what the statistics need. Names are suffixes after the prefix."""

    server: str  # the id in JSON ("vllm-v1", "llamacpp", ...)
    label: str  # for people
    prefixes: tuple[str, ...]
    schema: str  # "counts" (vLLM's counters), "trtllm", "sglang", "tgi", "vllm-v0"
    counters: dict[str, str] = field(default_factory=dict)  # canonical -> suffix (samples keep _total)
    gauges: dict[str, tuple[str, str]] = field(default_factory=dict)  # canonical -> (suffix, "sum"|"mean")
    per_position: tuple[str, str] | None = None  # (suffix, label) of accepted tokens per draft position
    drafted_per_position: tuple[str, str] | None = None  # TensorRT-LLM: drafted tokens per position
    generation: str = "generation_tokens"  # canonical counter that measures generated tokens
    k_hint: str = ""  # why k is not known, in words ("not exposed …"), where the engine does not expose it
    cannot_know: tuple[str, ...] = ()  # what this engine's metrics do not reveal, in words
    k_unknown: str = ""  # said (before cannot_know) only while k is not known from elsewhere
    source: str = ""  # the engine's file and commit/version the names and meanings come from
    convention: str = ""  # what E and the per-position counts mean there, in words
    counts_draft_tokens: bool = False  # a counter of proposed draft tokens: accepted ÷ drafted needs no k
    e_source: str = "accepted / drafts counters"  # what E is computed from (LiveStats.source)
    gauge_source: str = "engine gauge"  # the engine's own E gauge, where E comes from it
    rank_labels: tuple[str, ...] = ()  # labels of ranks that each repeat the same series: only rank 0 is read
    # the server's own step timing (metrics/timing.py): canonical -> suffixes, the first one present read; not in
    # names() (the Fleet view asks for them in a query of their own, timing_names)
    timing: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def timing_names(self, prefix: str | None = None) -> tuple[str, ...]:
        """Every full sample name of the engine's step timing (empty where it exposes none)."""
        return tuple(p + s for p in ((prefix,) if prefix else self.prefixes) for suffixes in self.timing.values()
                     for s in suffixes)

    def names(self, prefix: str | None = None) -> dict[str, str]:
        """Every full sample name this engine's statistics read -> how a window reduces it."""
        out: dict[str, str] = {}
        for p in ((prefix,) if prefix else self.prefixes):
            out.update({p + s: "increase" for s in self.counters.values()})
            for pos in (self.per_position, self.drafted_per_position):
                if pos:
                    out[p + pos[0]] = "increase"
            out.update({p + s: "avg" for s, _how in self.gauges.values()})
        return out


_VLLM_COUNTS = {
    "drafts": "spec_decode_num_drafts_total",
    "draft_tokens": "spec_decode_num_draft_tokens_total",
    "accepted": "spec_decode_num_accepted_tokens_total",
}
_PER_POS = ("spec_decode_num_accepted_tokens_per_pos_total", "position")
# vLLM's timing histograms (their _sum and _count): vllm/v1/metrics/stats.py observes the inter-token latency
# once per request and engine step that brought it tokens (however many: a verify step's E), its first token
# (prefill) as time to first token instead; vllm/v1/metrics/loggers.py observes iteration_tokens_total once per
# engine step. inter_token_latency_seconds replaced time_per_output_token_seconds (the same observations), which
# older V1 builds and V0 write.
_VLLM_TIMING = {
    "decode_latency_s": ("inter_token_latency_seconds_sum", "time_per_output_token_seconds_sum"),
    "decode_observations": ("inter_token_latency_seconds_count", "time_per_output_token_seconds_count"),
    "first_tokens": ("time_to_first_token_seconds_count",),
    "engine_steps": ("iteration_tokens_total_count",),
}

ENGINES: dict[str, Engine] = {e.server: e for e in (
    Engine("vllm-v1", "vLLM (V1 engine)", ("vllm:",), "counts",
           counters={**_VLLM_COUNTS, "generation_tokens": "generation_tokens_total"},
           gauges={"running": ("num_requests_running", "sum"), "waiting": ("num_requests_waiting", "sum"),
                   "kv_usage": ("kv_cache_usage_perc", "mean")},
           per_position=_PER_POS, counts_draft_tokens=True, timing=_VLLM_TIMING,
           source="vllm/v1/spec_decode/metrics.py (SpecDecodingProm), vllm-project/vllm commit 016a858",
           convention="E = 1 + accepted ÷ drafts (bonus token in); per_pos[i] ÷ drafts = P(≥ i+1 accepted) "
                      "(survival); accepted ÷ draft tokens = vLLM's draft acceptance rate; k = number of "
                      "position labels (one per num_speculative_tokens)"),
    Engine("vllm-v0", "vLLM (V0 engine)", ("vllm:",), "vllm-v0",
           # Kept for k inference only: V0 over-counts them (cumulative totals added every interval).
           counters={"draft_tokens": "spec_decode_num_draft_tokens_total",
                     "accepted": "spec_decode_num_accepted_tokens_total",
                     "emitted": "spec_decode_num_emitted_tokens_total",
                     "generation_tokens": "generation_tokens_total"},
           gauges={"running": ("num_requests_running", "sum"), "waiting": ("num_requests_waiting", "sum"),
                   "kv_usage": ("gpu_cache_usage_perc", "mean"),
                   "efficiency": ("spec_decode_efficiency", "mean"),
                   "draft_acceptance_rate": ("spec_decode_draft_acceptance_rate", "mean")},
           k_hint="not exposed by vLLM V0: give k", timing=_VLLM_TIMING,
           source="vllm/spec_decode/metrics.py + vllm/engine/metrics.py, vLLM 0.6 to 0.9 (V0 engine)",
           convention="spec_decode_efficiency = E ÷ (k + 1) over the last interval (a gauge); its counters add "
                      "cumulative totals every interval, so only their ratio is used (for k)",
           gauge_source="vllm:spec_decode_efficiency gauge · (k + 1)"),
    Engine("sglang", "SGLang", ("sglang:",), "sglang",
           counters={"verify_calls": "spec_verify_calls_total", "requests": "num_requests_total",
                     "generation_tokens": "generation_tokens_total"},
           gauges={"running": ("num_running_reqs", "sum"), "waiting": ("num_queue_reqs", "sum"),
                   "kv_usage": ("token_usage", "mean"), "accept_length": ("spec_accept_length", "mean"),
                   "draft_acceptance_rate": ("spec_accept_rate", "mean"), "num_steps": ("spec_num_steps", "mean"),
                   "gen_throughput": ("gen_throughput", "sum")},
           k_hint="not exposed: no sglang:spec_num_steps gauge",
           source="python/sglang/srt/metrics/collector.py (SchedulerMetricsCollector), sgl-project/sglang commit 93d0487",
           convention="spec_accept_length = accepted drafts + bonus token per verify (a gauge over the last "
                      "log window); counter form E = (Δgeneration tokens − Δrequests) ÷ Δspec_verify_calls; "
                      "k = spec_num_steps",
           e_source="(generation tokens − requests) / verify calls counters",
           gauge_source="sglang:spec_accept_length gauge", rank_labels=("tp_rank", "pp_rank")),
    Engine("llamacpp", "llama.cpp server", ("llamacpp:",), "counts",
           counters={**_VLLM_COUNTS, "generation_tokens": "tokens_predicted_total"},
           gauges={"running": ("requests_processing", "sum"), "waiting": ("requests_deferred", "sum"),
                   "kv_usage": ("kv_cache_usage_ratio", "mean")},
           per_position=_PER_POS, counts_draft_tokens=True,
           source="tools/server/server-task.cpp server_task_result_metrics, ggml-org/llama.cpp commit 17f5f8a",
           convention="vLLM's counters; the draft length varies per step (--draft-min/--draft-max, a draft "
                      "stops early below --draft-p-min), so accepted ÷ drafted comes from the draft-token "
                      "counter, the mean draft length is draft tokens ÷ drafts and the longest is 1 + the "
                      "largest position label"),
    Engine("lmdeploy", "lmdeploy", ("lmdeploy:",), "counts",
           counters={**_VLLM_COUNTS, "generation_tokens": "generation_tokens_total"},
           gauges={"running": ("num_requests_running", "sum"), "waiting": ("num_requests_waiting", "sum"),
                   "kv_usage": ("gpu_cache_usage_perc", "mean")},
           per_position=_PER_POS, counts_draft_tokens=True,
           source="lmdeploy/metrics/loggers.py, InternLM/lmdeploy commit 1263d5c",
           convention="vLLM's counters and meanings (survival per position, bonus token in E)"),
    Engine("trtllm", "TensorRT-LLM", ("trtllm_", "trtllm:"), "trtllm",
           counters={"draft_tokens_total": "spec_decode_num_draft_tokens_total",
                     "accepted_total": "spec_decode_num_accepted_tokens_total",
                     "generation_tokens": "generation_tokens_total"},
           gauges={"running": ("num_requests_running", "sum"), "waiting": ("num_requests_waiting", "sum"),
                   "kv_usage": ("kv_cache_utilization", "mean"),
                   "accept_length": ("spec_decode_acceptance_length", "mean")},
           per_position=("spec_decode_accepted_tokens_total", "token_position"),
           drafted_per_position=("spec_decode_drafted_tokens_total", "token_position"),
           counts_draft_tokens=True,
           source="tensorrt_llm/metrics/collector.py (MetricsCollector), NVIDIA/TensorRT-LLM commit 050f80d",
           convention="per request (return_perf_metrics: true): drafted and accepted tokens per token_position, "
                      "so drafts = drafted[0] and accepted[i] ÷ drafts is survival; per iteration "
                      "(enable_iter_perf_stats: true): num_draft_tokens / num_accepted_tokens counters and the "
                      "gauge spec_decode_acceptance_length (the last iteration's accepted length, bonus token in)",
           e_source="accepted per token_position / drafted at position 0 counters",
           gauge_source="trtllm_spec_decode_acceptance_length gauge (the last iteration's)"),
    Engine("tgi", "Hugging Face TGI", ("tgi_",), "tgi",
           counters={"steps": "request_skipped_tokens_count", "accepted": "request_skipped_tokens_sum",
                     "requests": "request_count", "generation_tokens": "request_generated_tokens_sum"},
           gauges={"running": ("batch_current_size", "sum"), "waiting": ("queue_size", "sum")},
           k_hint="not exposed by TGI (it is the server's --speculate N): give k",
           k_unknown="k (the server's --speculate N) is not in TGI's metrics: give it",
           cannot_know=("per-position acceptance: TGI records only how many extra tokens each step kept "
                        "(tgi_request_skipped_tokens), so k' < k assumes a constant per-token α",
                        "generation steps are counted per request including each request's first (prefill) "
                        "step, so E = 1 + Δsum / (Δcount − Δtgi_request_count)"),
           source="backends/v3/src/backend.rs + docs/source/reference/metrics.md, huggingface/"
                  "text-generation-inference commit db931fc",
           convention="tgi_request_skipped_tokens observes n − 1 per generation step of each request (n tokens "
                      "out of the step), its first (prefill) step included; k is --speculate N, not exposed",
           e_source="tgi_request_skipped_tokens: 1 + sum / (count − tgi_request_count)"),
)}
SERVERS = tuple(ENGINES)
# The servers whose /metrics the Live and Fleet statistics read, for messages and help texts.
SERVERS_IN_WORDS = "vLLM (V1 or V0), SGLang, TensorRT-LLM, Hugging Face TGI, llama.cpp or lmdeploy"

# What each schema is recognised by: (engine, suffix) probes, most specific first.
_SPEC_PROBES = (
    ("trtllm", "spec_decode_drafted_tokens_total"), ("trtllm", "spec_decode_accepted_tokens_total"),
    ("trtllm", "spec_decode_num_draft_tokens_total"),
    ("counts", "spec_decode_num_drafts_total"), ("counts", "spec_decode_num_accepted_tokens_per_pos_total"),
    ("sglang", "spec_verify_calls_total"), ("sglang", "spec_accept_length"),
    ("tgi", "request_skipped_tokens_count"), ("tgi", "request_skipped_tokens_sum"),
    ("vllm-v0", "spec_decode_efficiency"), ("vllm-v0", "spec_decode_num_emitted_tokens_total"),
)
_SCHEMA_PREFIXES = {"trtllm": ("trtllm_", "trtllm:"), "sglang": ("sglang:",), "tgi": ("tgi_",), "vllm-v0": ("vllm:",)}
_COUNTS_BY_PREFIX = {"vllm:": "vllm-v1", "llamacpp:": "llamacpp", "lmdeploy:": "lmdeploy"}
_FAMILIES = {"vllm:": "vllm", "sglang:": "sglang", "llamacpp:": "llamacpp", "lmdeploy:": "lmdeploy",
             "trtllm_": "trtllm", "trtllm:": "trtllm", "tgi_": "tgi"}
_FAMILY_LABEL = {"vllm": "vLLM", "sglang": "SGLang", "llamacpp": "llama.cpp", "lmdeploy": "lmdeploy",
                 "trtllm": "TensorRT-LLM", "tgi": "TGI"}

TRTLLM_DOC = "https://nvidia.github.io/TensorRT-LLM/latest/examples/prometheus_metrics.html"

LOOKED_FOR = ("vllm:spec_decode_num_drafts_total (vLLM V1; the same counters as llamacpp:… for llama.cpp and "
              "lmdeploy:… for lmdeploy), trtllm_spec_decode_drafted_tokens_total{token_position} (TensorRT-LLM, "
              "also trtllm:…; or, per iteration only, trtllm_spec_decode_num_draft_tokens_total; trtllm-serve serves them at "
              "/prometheus/metrics), sglang:spec_verify_calls_total "
              "or sglang:spec_accept_length (SGLang), tgi_request_skipped_tokens (TGI), "
              "vllm:spec_decode_efficiency (vLLM V0), or any vllm:, sglang:, llamacpp:, lmdeploy:, trtllm_ or "
              "tgi_ series (speculation off)")


def generic(prefix: str) -> Engine:
    """An engine we do not know by name that writes vLLM's counter schema under its own prefix."""
    name = prefix.rstrip(":_") or prefix
    base = ENGINES["vllm-v1"]
    return Engine(f"other:{name}", f"'{name}' (vLLM's counter schema)", (prefix,), "counts",
                  counters=dict(_VLLM_COUNTS), gauges={g: base.gauges[g] for g in ("running", "waiting")},
                  per_position=_PER_POS, counts_draft_tokens=True,
                  source="vLLM's counter schema (vllm/v1/spec_decode/metrics.py) under another prefix",
                  convention=ENGINES["vllm-v1"].convention)


def engine_of(server: str) -> Engine:
    """The Engine of a server id (one known only by its vLLM-schema prefix: that schema's engine)."""
    if server in ENGINES:
        return ENGINES[server]
    return generic(str(server).removeprefix("other:") + ":")


def schema_of(server: str) -> str:
    """The counter schema of a server id ("counts" for an engine known only by its vLLM-schema prefix)."""
    return engine_of(server).schema


def family(name: str) -> str | None:
    """The engine family a sample name belongs to, by prefix (None: not an inference engine's)."""
    for prefix, fam in _FAMILIES.items():
        if name.startswith(prefix):
            return fam
    return None


def _spec_hits(names: set[str]) -> list[tuple[str, str]]:
    """(schema, prefix) of every spec-decode series present."""
    hits = []
    for name in names:
        for schema, suffix in _SPEC_PROBES:
            prefix = name[: -len(suffix)]
            # vLLM's counters under any prefix; the others under their engine's (vLLM-schema engines have
            # spec_decode_num_draft_tokens_total too)
            if name.endswith(suffix) and prefix and prefix in _SCHEMA_PREFIXES.get(schema, (prefix,)):
                hits.append((schema, prefix))
                break
    return hits


def detect(names: set[str], labels_have_engine: bool = False) -> tuple[Engine, str]:
    """(engine, prefix) of the metrics page whose sample names are `names`."""
    hits = set(_spec_hits(names))
    families = {f for f in map(family, names) if f}
    spec_families = {family(p) or f"other:{p}" for _s, p in hits}
    kinds = spec_families | families
    if len(kinds) > 1:
        def count(kind: str) -> int:
            if kind.startswith("other:"):
                return sum(1 for n in names if n.startswith(kind.removeprefix("other:")))
            return sum(1 for n in names if family(n) == kind)

        shown = ", ".join(f"{_FAMILY_LABEL.get(k, k.removeprefix('other:'))} ({count(k)} series)" for k in sorted(kinds))
        raise SpecModelError(f"this response mixes the metrics of {len(kinds)} engines: {shown}; is the URL "
                             "load-balanced across different servers, or an exporter that merges several? Point it "
                             "at one inference server's own metrics endpoint")
    order = ("trtllm", "counts", "sglang", "tgi", "vllm-v0")  # most specific first
    for schema, prefix in sorted(hits, key=lambda hit: (order.index(hit[0]), hit[1])):
        if schema != "counts":
            return ENGINES[schema], prefix
        return (ENGINES[_COUNTS_BY_PREFIX[prefix]] if prefix in _COUNTS_BY_PREFIX else generic(prefix)), prefix
    # speculation off: the one family's engine
    if "vllm" in families:
        v0 = "vllm:gpu_cache_usage_perc" in names and "vllm:kv_cache_usage_perc" not in names and not labels_have_engine
        return ENGINES["vllm-v0" if v0 else "vllm-v1"], "vllm:"
    if "trtllm" in families:
        return ENGINES["trtllm"], "trtllm:" if any(n.startswith("trtllm:") for n in names) else "trtllm_"
    for fam in families:  # sglang, tgi, llamacpp, lmdeploy: one prefix each
        return ENGINES[fam], next(p for p, f in _FAMILIES.items() if f == fam)
    raise SpecModelError(
        f"no inference-server metrics in this response ({len(names)} metric names): looked for {LOOKED_FOR}. "
        "Point the URL at the inference server's own metrics endpoint (for TensorRT-LLM's trtllm-serve: "
        f"/prometheus/metrics; see {TRTLLM_DOC}), not at another exporter")


def timing_catalogue() -> tuple[str, ...]:
    """Every sample name of any engine's step timing (for the Fleet view's timing query)."""
    return tuple(sorted({n for engine in ENGINES.values() for n in engine.timing_names()}))


def catalogue() -> dict[str, str]:
    """Every sample name any engine's statistics read -> "increase" or "avg" (for PromQL over a fleet)."""
    out: dict[str, str] = {}
    for engine in ENGINES.values():
        out.update(engine.names())
    return dict(sorted(out.items()))
