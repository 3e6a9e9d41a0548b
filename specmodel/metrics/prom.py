"""Prometheus text of an inference server -> Snapshot; two snapshots -> windowed spec-decode statistics.

Stable API (the Live page, the `scrape` command and the Fleet view build on exactly these): `parse_snapshot`
(one scrape's text) and `snapshot_from_samples` (prometheus_client `Sample`s, e.g. from PromQL answers) ->
`Snapshot`; `window_between(a, b)` and `window_over(snapshots)` -> `SpecWindow` (counter increases, a counter
that went down counting from zero as Prometheus' rate() does; gauges averaged); `stats_from_window(w)` ->
`LiveStats`, which never raises for an idle or speculation-free window (what it cannot give is None and
`LiveStats.notes` says why), only for impossible input; `wilson_interval`.

Server kinds (`Snapshot.server`): the engines of `specmodel.metrics.schemas` (its table says, per engine and
from which source commit, what each series means). E needs no k and is always given where the counters (or
the engine's gauge) allow; α, survival and the verdict need k (`LiveStats.needs_k` when it is missing).
Accepted ÷ drafted comes from the draft-token counter where the engine has one (llama.cpp drafts vary in
length: `mean_draft_length` = draft tokens ÷ drafts, `max_draft_length` = 1 + the largest position), else
(E − 1)/k. Conversions (docs/model.md, "Acceptance numbers"; per engine docs/engines.md):

    vLLM V1   E = 1 + Δaccepted / Δdrafts,  p_{i+1} = Δaccepted_per_pos[i] / Δdrafts,
              k = 1 + largest `position` label.
    vLLM V0   its spec-decode counters over-count (the reference sample's note), so E comes from the
              gauge spec_decode_efficiency: E = eff · (k + 1); k from the lifetime ratio
              emitted / draft_tokens = E / k, which the over-counting scales away.
    SGLang    counter form: Δdrafts = Δspec_verify_calls, E = (Δgeneration_tokens − Δrequests) /
              Δspec_verify_calls (each request's first token comes from prefill, not from a verify
              step; this reproduces the gauge in the reference sample, 2.74); otherwise the gauge
              spec_accept_length, which already counts the bonus token. k = spec_num_steps.
"""

from __future__ import annotations

import math
import re
import time
from collections import defaultdict
from collections.abc import Iterable
from itertools import zip_longest
from dataclasses import asdict, dataclass, field, replace

import numpy as np
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from specmodel import bounds, numbers
from specmodel.errors import SpecModelError
from specmodel.bounds import MAX_K
from specmodel.text import clean_name, safe_text
from specmodel.metrics import schemas as engines
from specmodel.metrics.timing import StepTiming, step_timing
from specmodel.model import acceptance
from specmodel.notes import Note, info, warning

SERVERS = engines.SERVERS  # engines known by name; one writing vLLM's schema under another prefix is "other:<prefix>"


@dataclass(frozen=True)
class Snapshot:
    """One scrape, reduced to the numbers the statistics need (engines summed, one model)."""

    server: str  # "vllm-v1" | "vllm-v0" | "sglang"
    model_name: str | None
    model_names: tuple[str, ...]  # every model_name the server exposes
    at: float  # seconds (wall clock of the scrape, or as given)
    k: int | None  # draft tokens per step; None when speculation is off or k is unknown
    k_source: str  # where k came from, or why it is not known, in words ("given", "not exposed: …")
    spec_enabled: bool  # the server exposes speculative-decoding metrics
    counters: dict[str, float] = field(default_factory=dict)  # canonical name -> lifetime value
    per_position: tuple[float, ...] = ()  # lifetime accepted tokens at draft position 0..k-1 (vLLM V1)
    gauges: dict[str, float] = field(default_factory=dict)  # canonical name -> value now
    num_gpu_blocks: int | None = None  # vllm:cache_config_info (summed over engines)
    block_size: int | None = None  # tokens per KV-cache block
    engines: int = 1
    source_url: str | None = None  # where it was scraped from, when that was not the URL given
    notes: tuple[str, ...] = ()  # what the parser did to the text (a duplicated series dropped), as Notes
    timing: dict[str, float] = field(default_factory=dict)  # lifetime sums and counts of the timing histograms
    timing_series: str = ""  # the latency histogram they came from (metrics/timing.py)


@dataclass(frozen=True)
class SpecWindow:
    """Counter increases and gauge values over one window of `window_s` seconds.

    Counts are increases (None: the server does not expose that counter). Gauges are averages over
    the window (None: not exposed). `gauge_tokens_per_step` / `gauge_draft_acceptance_rate` carry
    an engine's own windowed average where it has no counters (vLLM V0, SGLang without counters).
    """

    server: str
    k: int | None
    window_s: float
    model_name: str | None = None
    spec_enabled: bool = True
    drafts: float | None = None  # verify steps that carried drafts, per sequence
    draft_tokens: float | None = None
    accepted: float | None = None  # accepted draft tokens (bonus token not included)
    per_position: tuple[float, ...] | None = None  # drafts with position i accepted, i = 0..k-1
    generation_tokens: float | None = None
    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = None  # fraction of the KV cache in use, 0..1
    gauge_tokens_per_step: float | None = None
    gauge_draft_acceptance_rate: float | None = None
    num_gpu_blocks: int | None = None
    block_size: int | None = None
    counter_reset: bool = False  # a counter went down inside the window (server restarted)
    k_source: str = ""
    running_end: float | None = None  # the running-requests gauge at the window's last scrape
    running_start: float | None = None  # ... and at its first scrape (with running_end: which way the load moved)
    running_low: float | None = None  # its lowest and highest reading at the window's scrapes
    running_high: float | None = None
    notes: tuple[str, ...] = ()  # the snapshots' notes (a duplicated series dropped), passed on to LiveStats
    timing: dict[str, float] = field(default_factory=dict)  # increases of the timing histograms' sums and counts
    timing_series: str = ""


@dataclass(frozen=True)
class LiveStats:
    """What one window says about speculation on that server. None = not measurable here."""

    server: str
    model_name: str | None
    k: int | None
    window_s: float
    spec_enabled: bool
    tokens_per_step: float | None  # E, bonus token included (vLLM's mean acceptance length)
    tokens_per_step_ci: tuple[float, float] | None
    alpha: float | None  # constant per-token α giving E at this k
    alpha_ci: tuple[float, float] | None
    survival: tuple[float, ...] | None  # p_i = P(at least i drafts accepted), i = 1..k
    survival_ci: tuple[tuple[float, float], ...] | None
    conditional: tuple[float, ...] | None  # P(position i accepted | i − 1 accepted)
    draft_acceptance_rate: float | None  # accepted ÷ drafted tokens (from the draft-token counter), not α
    draft_acceptance_rate_ci: tuple[float, float] | None
    drafts: float | None  # drafts in the window (the sample size behind the intervals)
    generation_tokens: float | None
    generation_tok_s: float | None
    running: float | None
    waiting: float | None
    kv_usage: float | None
    num_gpu_blocks: int | None
    block_size: int | None
    kv_capacity_tokens: int | None  # num_gpu_blocks · block_size
    source: str  # which numbers E came from
    notes: tuple[str, ...] = ()
    mean_draft_length: float | None = None  # draft tokens ÷ drafts (where the engine counts draft tokens)
    max_draft_length: int | None = None  # the longest draft: 1 + the largest position label, else k
    rate_source: str | None = None  # which numbers draft_acceptance_rate came from (None where there is none)
    running_end: float | None = None  # running requests at the window's last scrape (the operating point)
    running_start: float | None = None  # running requests at the window's first scrape
    running_low: float | None = None  # lowest and highest reading at the window's scrapes
    running_high: float | None = None
    timing: StepTiming | None = None  # the server's own step timing over the window (metrics/timing.py)
    k_source: str | None = None  # where k came from, or why it is not known (the mean draft length where drafts vary)

    @property
    def measured(self) -> bool:
        """True when this window's acceptance can be placed on the model: E measured and k known (α)."""
        return self.tokens_per_step is not None and self.alpha is not None

    @property
    def needs_k(self) -> bool:
        """E is measured but k is not known: α, break-even and the verdict wait for k."""
        return self.tokens_per_step is not None and self.k is None

    @property
    def configured_off(self) -> bool:
        """Speculation configured (its counters exported) but no draft proposed in a window in which the server
        decoded: switched off at this load (a k = 0 band of a per-batch schedule, a disabled draft), not idle."""
        return self.spec_enabled and decoded_without_drafts(self.drafts, self.generation_tokens)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["measured"] = self.measured
        out["needs_k"] = self.needs_k
        return json_safe(out)


# --- parsing -------------------------------------------------------------------------------------

# No statistic reads a histogram's buckets (the schemas read counters, gauges and a summary's _sum and
# _count), and buckets are two thirds of a vLLM exposition's lines: well-formed bucket sample lines are
# left out before the text is parsed, so a scrape parses only what the statistics can use. A bucket
# line that is not well formed stays, so the parser still refuses it.
_BUCKET_LINE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*_bucket\{[^\n{}]*\}[ \t]+[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?"
                          r"|NaN|Inf)(?:[ \t]+-?[0-9]+)?[ \t]*(?:\n|\Z)", re.M)


def _families(text: str):
    if not isinstance(text, str) or not text.strip():
        raise SpecModelError("the response is empty, not Prometheus metrics text: check the URL path "
                             "(usually /metrics)")
    head = text.lstrip()[:200].lower()
    if head.startswith("<") or "<html" in head:
        raise SpecModelError("the response is an HTML page, not Prometheus metrics text: check the URL "
                             "path (usually /metrics) and that nothing (a login page, a proxy) sits in front")
    written, text = text, _BUCKET_LINE.sub("", text) if "_bucket{" in text else text
    samples = sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    if samples > bounds.MAX_METRICS_SAMPLES:  # counted before the parser runs: its time grows with them
        raise SpecModelError(f"the metrics text has {samples:,} samples (histogram buckets not counted), more than "
                             f"the {bounds.MAX_METRICS_SAMPLES:,} one server's /metrics page is read with: check "
                             "that the URL is one server's /metrics endpoint, not a federation or aggregation "
                             "endpoint (use the Fleet page with a Prometheus server for many servers)")
    odd = _unwritten_number(written) if not written.isascii() or _LONG_DIGITS.search(written) else None
    if odd is not None:  # prometheus_client's parser would have read it (float("٤") is 4.0)
        raise SpecModelError(odd)
    families, stopped = [], False
    try:
        with bounds.work_deadline():
            for family in text_string_to_metric_families(text):
                families.append(family)
                if bounds.out_of_time():
                    stopped = True
                    break
    except (ValueError, TypeError, IndexError, KeyError, RecursionError):
        # The parser's message quotes the offending line: never show it (the URL may be any internal
        # page, and its content is not ours to display). Say where, and what kind of line it is.
        raise SpecModelError(_unwritten_number(written, every_line=True) or "the response is not Prometheus metrics "
                             f"text ({_bad_line(text)}): check that the URL is the server's /metrics endpoint") from None
    if stopped:  # the work deadline passed while the text was read
        raise SpecModelError(f"reading the metrics text took more than the {bounds.MAX_WORK_S:g} s limit on processing "
                             f"one answer ({len(families):,} metric families read): check that the URL is one "
                             "server's /metrics endpoint")
    return families


# A sample's value (and timestamp) as exporters write them: Go's strconv.FormatFloat / Python's repr of a
# float, digits 0-9 with a dot and an exponent, NaN, +Inf, -Inf (the exposition format's own spellings).
# prometheus_client's parser hands the value to int() and float() (prometheus_client/parser.py, _parse_value,
# 0.26.0), which also read Arabic-Indic or full-width digits ("٤" as 4) and raise past 4,300 digits; it refuses
# an underscore itself, but only as a line it cannot read. So a value is looked at by the one number parser
# first wherever the text could hold such a value: a character outside ASCII, or a run of more digits than
# a number may have (numbers.MAX_DIGITS), or after the parser has refused a line.
_LONG_DIGITS = re.compile(f"[0-9]{{{numbers.MAX_DIGITS + 1}}}")  # chosen: one digit past numbers.MAX_DIGITS (above)


def _unwritten_number(text: str, every_line: bool = False) -> str | None:
    """The message for the first sample whose value or timestamp is a number no exporter writes ("line 12
    (vllm:num_requests_running) has a value that has digits other than 0-9 ..."), None where there is none.
    Without `every_line`, only the lines that hold a character outside ASCII or a long run of digits are
    looked at (the parser refuses an underscore itself). Only a series of an inference engine is named: the
    URL may be any internal page, not ours to quote."""
    for number, line in enumerate(text.split("\n"), start=1):  # the parser's lines: a label may hold U+2028
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or (
                not every_line and line.isascii() and not _LONG_DIGITS.search(line)):
            continue
        if "{" in stripped:  # a label value may hold anything but the value after the labels holds no "}"
            if "}" not in stripped:
                continue
            name, tail = stripped.split("{", 1)[0].strip(), stripped.rsplit("}", 1)[1]
        else:
            name, _, tail = stripped.replace("\t", " ").partition(" ")
        for token in tail.split():
            why = numbers.refusal(token)
            if why is None or why == "is not a number":  # a number, or a line the parser judges itself
                continue
            series = f" ({clean_name(name, 120)[0]})" if engines.family(name) else ""
            return (f"line {number:,} of the metrics text{series} has a value that {why.split(':')[0]}; exporters "
                    "write numbers with the digits 0-9 (12, 0.5, 1.5e+06, NaN, +Inf): check the exporter")
    return None


def _bad_line(text: str) -> str:
    """Where the text stops being metrics text, without quoting it: 'line 3 is not a metric sample'."""
    sample = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?\s+(\S+)(?:\s+(-?\d+(?:\.\d+)?))?$")
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = sample.match(stripped)
        try:
            float(m.group(1)) if m else float("x")
        except ValueError:
            return f"line {number} is not a metric sample"
    return "its samples could not be read"


def _keep(engine: engines.Engine, labels: dict[str, str]) -> bool:
    """Drop duplicate series: an engine that exports the same series from every rank (SGLang: TP/PP) keeps rank 0."""
    return all(labels.get(label, "0") == "0" for label in engine.rank_labels)


def _by_position(samples, label: str) -> tuple[float, ...]:
    counts: dict[int, float] = defaultdict(float)
    for s in samples:
        if label not in s.labels:
            continue
        raw = s.labels[label]
        why = numbers.refusal(raw)
        if why is not None:  # "1_0" and Arabic-Indic digits were read as positions; 5,000 digits raised
            raise SpecModelError(f"a per-position series has {label}={numbers.quoted(raw)}, which {why}: check "
                                 "the server")
        value = numbers.read_number(raw)
        if not (math.isfinite(value) and value == int(value)):
            raise SpecModelError(f"a per-position series has {label}={numbers.quoted(raw)}, not a whole number: "
                                 "check the server")
        position = int(value)
        if not 0 <= position < MAX_K:  # the tuple below is as long as the largest label: bound it
            raise SpecModelError(f"a per-position series has {label}=\"{position}\", so k would be "
                                 f"{position + 1:,}; this tool handles k up to {MAX_K}: check the server")
        counts[position] += s.value
    return tuple(counts.get(i, 0.0) for i in range(max(counts) + 1)) if counts else ()


def parse_snapshot(text: str, model_name: str | None = None, at: float | None = None,
                   k: int | None = None) -> Snapshot:
    """Parse one scrape. Raises SpecModelError for text that is not the metrics of an inference server
    this module knows (see `specmodel.model.engines`), or for a `model_name` the server does not expose.

    >>> snap = parse_snapshot('# TYPE vllm:spec_decode_num_drafts_total counter\\n'
    ...     'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10\\n'
    ...     'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 5\\n'
    ...     'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 8\\n'
    ...     'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 4\\n',
    ...     at=0.0)
    >>> snap.server, snap.k, snap.counters["drafts"], snap.per_position, snap.engines
    ('vllm-v1', 2, 15.0, (8.0, 4.0), 2)
    """
    samples, notes = without_duplicates([s for fam in _families(text) for s in fam.samples])
    snap = snapshot_from_samples(samples, model_name=model_name, at=at, k=k)
    return replace(snap, notes=snap.notes + notes) if notes else snap


def without_duplicates(samples: list) -> tuple[list, tuple]:
    """The samples with each series (name and labels) once, its first sample kept, and a warning naming
    the first series written twice and how many were. Prometheus does the same with one scrape: a
    second sample of a series at the scrape's timestamp is not appended (storage.ErrDuplicateSampleForTimestamp
    in scrapeLoop.checkAddError, counted by prometheus_target_scrapes_sample_duplicate_timestamp_total;
    prometheus/prometheus scrape/scrape.go, commit 0008cbeeb1a13e34a237c0b5d91eb1ee97a5b332). Summing them
    counted the series twice (E 2.70 read as 1.85)."""
    seen: set = set()
    kept, dropped, first = [], 0, None
    for s in samples:
        key = (s.name, tuple(sorted(s.labels.items())))
        if key in seen:
            dropped += 1
            first = first or s
            continue
        seen.add(key)
        kept.append(s)
    if not dropped:
        return samples, ()
    labels = ",".join(f'{k}="{v}"' for k, v in sorted(first.labels.items()))
    series = clean_name(f"{first.name}{{{labels}}}" if labels else first.name, 160)[0]
    return kept, (warning(f"the metrics text has {dropped:,} duplicated series (the same name and labels twice, "
                          f"e.g. {series}): the first sample of each was read and the others ignored, as Prometheus "
                          "does; check the exporter or the proxy in front of the server"),)


def snapshot_from_samples(samples: Iterable[Sample], model_name: str | None = None, at: float | None = None,
                          k: int | None = None) -> Snapshot:
    """The snapshot of samples already at hand, as `parse_snapshot` makes it from text: prometheus_client
    `Sample`s (name, labels as strings, value), e.g. built from PromQL answers (the Fleet view).
    `*_created` samples are never counted.

    >>> snap = snapshot_from_samples([
    ...     Sample("vllm:spec_decode_num_drafts_total", {"model_name": "m"}, 10.0),
    ...     Sample("vllm:spec_decode_num_accepted_tokens_per_pos_total", {"model_name": "m", "position": "0"}, 8.0),
    ...     Sample("vllm:spec_decode_num_accepted_tokens_per_pos_total", {"model_name": "m", "position": "1"}, 4.0)],
    ...     at=0.0)
    >>> snap.server, snap.k, snap.counters["drafts"], snap.per_position
    ('vllm-v1', 2, 10.0, (8.0, 4.0))
    """
    # prometheus_client reads "999…9" as an int: one of 400 digits overflowed every float use (a traceback)
    samples = [s if isinstance(s.value, float) else s._replace(value=_as_float(s.value))
               for s in samples if not s.name.endswith("_created")]
    names = {s.name for s in samples}
    engine, prefix = engines.detect(names, any("engine" in s.labels for s in samples if s.name.startswith("vllm:")))
    server = engine.server
    ours = [s for s in samples if s.name.startswith(prefix) and _keep(engine, s.labels)]
    shown = _shown_models(ours)
    chosen, models = _model_chosen(ours, engine, prefix, model_name, shown)
    if chosen is not None:
        ours = [s for s in ours if shown.get(s.labels.get("model_name"), chosen) == chosen]

    by_name: dict[str, list] = defaultdict(list)
    for s in ours:
        by_name[s.name].append(s)
    engines_seen = len({s.labels.get("engine") for s in ours if "engine" in s.labels}) or 1

    counters = _counters(engine, prefix, by_name)
    per_position = ()
    if engine.per_position:
        per_position = _by_position(by_name.get(prefix + engine.per_position[0], []), engine.per_position[1])
    if engine.schema == "trtllm":
        counters, per_position = _trtllm_counters(counters, per_position, by_name, prefix, engine)
    gauges = _gauges(engine, prefix, by_name)
    blocks, block_size = _vllm_cache_blocks(by_name) if server == "vllm-v1" else (None, None)

    timing, timing_series = _timing(engine, prefix, by_name)
    spec = _spec_enabled(engine, counters, per_position, gauges)
    k_found, k_source = _infer_k(engine, counters, per_position, gauges) if spec else (None, "speculation off")
    if k is not None:
        k_found, k_source = acceptance.check_k(k), "given"
    return Snapshot(server=server, model_name=chosen, model_names=models,
                    at=time.time() if at is None else float(at), k=k_found, k_source=k_source,
                    spec_enabled=spec, counters=counters, per_position=per_position, gauges=gauges,
                    num_gpu_blocks=blocks, block_size=block_size, engines=engines_seen, timing=timing,
                    timing_series=timing_series)


def _shown_models(ours: list) -> dict[str, str]:
    """{model_name label: the name as it is shown}: through the one text-safety function (no line break
    or control character, at most 200 characters: a label with a newline forged a line of `scrape`). The
    names shown are the ones compared, so the name a page passes back picks the same series."""
    return {raw: safe_text(raw) for raw in {s.labels["model_name"] for s in ours if "model_name" in s.labels}}


def _model_chosen(ours: list, engine: engines.Engine, prefix: str, model_name: str | None,
                  shown: dict[str, str]) -> tuple[str | None, tuple[str, ...]]:
    """(the model_name to read, every model_name served, as `shown`): the requested one, else the busiest
    (most generated tokens); None where the samples carry no model_name."""
    gen_name = prefix + engine.counters.get(engine.generation, "")
    tokens_by_model: dict[str, float] = defaultdict(float)
    for s in ours:
        if "model_name" in s.labels:
            tokens_by_model[shown[s.labels["model_name"]]] += s.value if s.name == gen_name else 0.0
    models = tuple(sorted(tokens_by_model))
    if model_name is not None:
        model_name = safe_text(model_name)
        if models and model_name not in tokens_by_model:
            raise SpecModelError(f"model '{model_name}' is not served here; this server exposes: "
                                 + ", ".join(models))
        return model_name, models
    if models:
        return max(models, key=lambda m: (tokens_by_model[m], m == models[0])), models
    return None, models


def _counters(engine: engines.Engine, prefix: str, by_name: dict) -> dict[str, float]:
    """The engine's counters by their canonical names, summed over series; a counter that is not a
    finite count is refused."""
    counters = {}
    for canon, suffix in engine.counters.items():
        # prometheus_client's parser names a counter sample written without `_total` (TGI) `..._total`.
        for name in (prefix + suffix, prefix + suffix + "_total"):
            if name in by_name:
                counters[canon] = float(sum(s.value for s in by_name[name]))
                break
    for canon, value in counters.items():  # +Inf or NaN is not a count: never read as "off" or as a k
        if not math.isfinite(value):
            raise SpecModelError(f"the counter {prefix}{engine.counters[canon]} is {_prom_number(value)} on this "
                                 "page, not a count: check the server's /metrics")
    return counters


def _timing(engine: engines.Engine, prefix: str, by_name: dict) -> tuple[dict[str, float], str]:
    """(the engine's timing sums and counts by canonical name, the latency histogram they are of): the first
    suffix present of each, summed over series; a value that is not finite is left out (timing is optional:
    it never fails a scrape)."""
    out: dict[str, float] = {}
    series = ""
    for canon, suffixes in engine.timing.items():
        for suffix in suffixes:
            values = [s.value for s in by_name.get(prefix + suffix, [])]
            if values:
                if all(math.isfinite(v) and v >= 0 for v in values):
                    out[canon] = float(sum(values))
                    if canon == "decode_latency_s":
                        series = prefix + suffix.removesuffix("_sum")
                break
    return out, series


def _gauges(engine: engines.Engine, prefix: str, by_name: dict) -> dict[str, float]:
    """The engine's gauges by their canonical names: the sum or the mean of their finite series."""
    gauges: dict[str, float] = {}
    for canon, (suffix, how) in engine.gauges.items():
        values = [s.value for s in by_name.get(prefix + suffix, []) if math.isfinite(s.value)]
        if values:
            gauges[canon] = float(sum(values) if how == "sum" else sum(values) / len(values))
    return gauges


def _vllm_cache_blocks(by_name: dict) -> tuple[int | None, int | None]:
    """(KV cache blocks over all engines, block size) from vLLM V1's cache_config_info."""
    blocks, block_size = None, None
    for s in by_name.get("vllm:cache_config_info", []):
        count = numbers.number_or_none(s.labels.get("num_gpu_blocks"))
        size = numbers.number_or_none(s.labels.get("block_size"))
        if count is None or size is None or count < 0 or size <= 0 or count > 2 ** 53 or size > 2 ** 53:
            continue  # an informational label: one that is no count is not read
        blocks, block_size = (blocks or 0) + int(count), int(size)
    return blocks, block_size


def _trtllm_counters(counters: dict, accepted_by_pos: tuple, by_name: dict, prefix: str,
                     engine: engines.Engine) -> tuple[dict, tuple]:
    """TensorRT-LLM counts drafted and accepted tokens per `token_position` and has no drafts counter:
    every draft drafts position 0, so drafts = drafted[0]; accepted = Σ accepted[i]; and since a token is
    accepted only after every earlier one, accepted[i] counts the drafts with at least i + 1 accepted."""
    drafted = _by_position(by_name.get(prefix + engine.drafted_per_position[0], []), engine.drafted_per_position[1])
    out = {name: v for name, v in counters.items() if name == "generation_tokens"}
    if drafted:
        out["drafts"] = drafted[0]
        out["draft_tokens"] = float(sum(drafted))
        out["accepted"] = float(sum(accepted_by_pos))
        width = len(drafted)
        return out, tuple(accepted_by_pos[i] if i < len(accepted_by_pos) else 0.0 for i in range(width))
    # Only the iteration totals (older builds): drafts are known once k is (draft tokens / k).
    if "draft_tokens_total" in counters:
        out["draft_tokens"] = counters["draft_tokens_total"]
    if "accepted_total" in counters:
        out["accepted"] = counters["accepted_total"]
    return out, ()


def _trtllm_without_positions(counters: dict, gauges: dict) -> str:
    """Why k is unknown on a TensorRT-LLM exposition without per-position counters, naming what it has."""
    there = [name for name, present in (
        ("spec_decode_num_draft_tokens_total", "draft_tokens" in counters),
        ("spec_decode_num_accepted_tokens_total", "accepted" in counters),
        ("the spec_decode_acceptance_length gauge", "accept_length" in gauges)) if present]
    return ("not exposed: this TensorRT-LLM exposition has " + (", ".join(there) or "no speculative-decoding series")
            + " (iteration stats) but no spec_decode_drafted_tokens_total{token_position}, which trtllm-serve writes "
            f"only with return_perf_metrics: true; give k (see {engines.TRTLLM_DOC})")


def _trtllm_k_from_gauge(counters: dict, gauges: dict) -> tuple[int | None, str]:
    """TensorRT-LLM with iteration stats only: no drafts counter, but E (the acceptance-length gauge) = 1 +
    accepted ÷ drafts gives drafts = accepted ÷ (E − 1), so k = draft tokens ÷ drafts = draft tokens · (E − 1) ÷
    accepted, rounded (the gauge is the last iteration's, the counters the whole run's: an estimate)."""
    e, tokens, accepted = gauges.get("accept_length"), counters.get("draft_tokens"), counters.get("accepted")
    if e is not None and tokens and accepted and e > 1 and accepted > 0:
        ratio = tokens * (e - 1) / accepted
        if 0 < ratio <= MAX_K:
            return acceptance.mean_length_k(ratio), ("draft tokens × (acceptance length − 1) ÷ accepted tokens, "
                                                     "rounded (TensorRT-LLM iteration stats: no per-token_position "
                                                     "counters)")
    return None, _trtllm_without_positions(counters, gauges)


# The counters and gauges (canonical names) whose presence says a schema's server speculates.
_SPEC_SERIES = {"counts": ("drafts", "draft_tokens", "accept_length"), "trtllm": ("drafts", "draft_tokens", "accept_length"),
                "vllm-v0": ("efficiency", "draft_tokens"), "tgi": ("steps",),
                "sglang": ("accept_length", "verify_calls", "num_steps")}


def _spec_enabled(engine: engines.Engine, counters: dict, per_position: tuple, gauges: dict) -> bool:
    return bool(per_position) or any(name in counters or name in gauges for name in _SPEC_SERIES[engine.schema])


def _infer_k(engine: engines.Engine, counters: dict, per_position: tuple, gauges: dict) -> tuple[int | None, str]:
    if engine.schema in ("counts", "trtllm"):
        label = engine.per_position[1] if engine.per_position else "position"
        if per_position:
            return len(per_position), f"1 + largest {label} label"
        drafts, tokens = counters.get("drafts", 0.0), counters.get("draft_tokens", 0.0)
        if drafts > 0 and tokens > 0:
            ratio = tokens / drafts
            if not ratio <= MAX_K:  # 1e300 / 1e-300 is inf: refused with the bound, not an OverflowError
                raise SpecModelError(f"{tokens:g} draft tokens over {drafts:g} drafts is more than the {MAX_K} "
                                     "drafts per step this tool handles: check the counters")
            return acceptance.mean_length_k(ratio), "draft tokens / drafts"
        if engine.schema == "trtllm":
            return _trtllm_k_from_gauge(counters, gauges)
        return None, "not known until drafts are made"
    if engine.schema == "tgi":
        return None, engine.k_hint
    if engine.schema == "sglang":
        steps = gauges.get("num_steps")
        if steps and steps >= 1:
            return int(round(steps)), "sglang:spec_num_steps"
        return None, engine.k_hint
    eff, emitted, tokens = gauges.get("efficiency"), counters.get("emitted"), counters.get("draft_tokens")
    if eff and emitted and tokens and emitted / tokens > eff:  # emitted/draft_tokens = E/k, eff = E/(k+1)
        estimate = 1.0 / (emitted / tokens / eff - 1.0)
        # Lifetime counters against the last interval's gauge: trust only a near-whole answer.
        if estimate >= 0.8 and abs(estimate - round(estimate)) <= 0.2:
            return max(1, round(estimate)), "emitted / draft tokens vs efficiency"
    return None, engine.k_hint


# --- windows -------------------------------------------------------------------------------------

def _increase(before: float | None, after: float | None) -> tuple[float | None, bool]:
    """Prometheus increase() over two samples: a counter that went down restarted from zero."""
    if after is None or before is None:
        return None, False
    return (after, True) if after < before else (after - before, False)


def _mean(values) -> float | None:
    """The mean of the values that exist (None when none does)."""
    seen = [v for v in values if v is not None]
    return sum(seen) / len(seen) if seen else None


def window_between(a: Snapshot, b: Snapshot) -> SpecWindow:
    """The window from snapshot a to the later snapshot b of the same server and model."""
    if a.server != b.server:
        raise SpecModelError(f"the server changed between scrapes ({a.server} then {b.server}): "
                             "is the URL load-balanced across different servers?")
    if a.model_name != b.model_name:
        raise SpecModelError(f"the model changed between scrapes ({a.model_name} then {b.model_name}): "
                             "choose one model name")
    window_s = b.at - a.at
    if not window_s > 0:
        raise SpecModelError(f"the second scrape must be later than the first (window {window_s:g} s)")
    reset = False
    inc: dict[str, float | None] = {}
    for name in set(a.counters) | set(b.counters):
        inc[name], went_down = _increase(a.counters.get(name), b.counters.get(name))
        reset |= went_down
    per_position = None
    if b.per_position:
        before = a.per_position + (0.0,) * (len(b.per_position) - len(a.per_position))
        pairs = [_increase(x, y) for x, y in zip(before, b.per_position)]
        per_position = tuple(v for v, _ in pairs)
        reset |= any(r for _, r in pairs)
    k = b.k if b.k is not None else a.k
    k_source = b.k_source if b.k is not None else a.k_source

    drafts = draft_tokens = accepted = gauge_e = None
    gauge_rate = b.gauges.get("draft_acceptance_rate")
    schema = engines.schema_of(b.server)
    if schema in ("counts", "trtllm"):
        drafts, draft_tokens, accepted = inc.get("drafts"), inc.get("draft_tokens"), inc.get("accepted")
        if drafts is None:  # TensorRT-LLM without per-position counters: its acceptance-length gauge, else k
            gauge_e = b.gauges.get("accept_length")
            if gauge_e is None and draft_tokens is not None and k:
                drafts = draft_tokens / k
    elif schema == "vllm-v0":
        eff = b.gauges.get("efficiency")
        if eff is not None and k is not None:
            gauge_e = eff * (k + 1)
    elif schema == "tgi":
        # One observation per generation step of each request, its first (prefill) step included: those
        # kept 0 extra tokens, so take them out of the count (one per request started in the window).
        steps, requests, accepted = inc.get("steps"), inc.get("requests"), inc.get("accepted")
        if steps is not None:
            drafts = steps - requests if requests is not None and 0 <= requests < steps else steps
            draft_tokens = drafts * k if k else None
    else:
        drafts = inc.get("verify_calls")
        gen, req = inc.get("generation_tokens"), inc.get("requests") or 0.0
        if drafts is not None and gen is not None:
            accepted = max(0.0, gen - req - drafts) if drafts > 0 else 0.0
            draft_tokens = drafts * k if k else None
        gauge_e = b.gauges.get("accept_length")
    return SpecWindow(
        server=b.server, k=k, window_s=window_s, model_name=b.model_name, spec_enabled=b.spec_enabled,
        drafts=drafts, draft_tokens=draft_tokens, accepted=accepted, per_position=per_position,
        generation_tokens=inc.get("generation_tokens"),
        **{g: _mean((a.gauges.get(g), b.gauges.get(g))) for g in ("running", "waiting", "kv_usage")},
        gauge_tokens_per_step=gauge_e, gauge_draft_acceptance_rate=gauge_rate,
        num_gpu_blocks=b.num_gpu_blocks, block_size=b.block_size, counter_reset=reset, k_source=k_source,
        running_end=b.gauges.get("running"), running_start=a.gauges.get("running"),
        **_extremes([a.gauges.get("running"), b.gauges.get("running")]),
        notes=_once(a.notes + b.notes), timing_series=b.timing_series,
        # a timing series that went down restarted: the counters report the reset
        timing={name: _increase(a.timing[name], b.timing[name])[0] for name in set(a.timing) & set(b.timing)})


def _once(notes) -> tuple:
    """The notes in order, each once."""
    return tuple(dict.fromkeys(notes))


def _extremes(values) -> dict:
    """running_low and running_high of the readings that exist (None when none does)."""
    seen = [v for v in values if v is not None]
    return {"running_low": min(seen) if seen else None, "running_high": max(seen) if seen else None}


def window_over(snapshots) -> SpecWindow:
    """One window spanning snapshots taken in time order, summing neighbour-to-neighbour increases."""
    snaps = list(snapshots)
    if len(snaps) < 2:
        raise SpecModelError("a window needs two scrapes: wait for the next one")
    parts = [window_between(a, b) for a, b in zip(snaps, snaps[1:])]

    def total(name):
        values = [getattr(p, name) for p in parts]
        return None if any(v is None for v in values) else float(sum(values))

    per_position = None
    if all(p.per_position is not None for p in parts):
        per_position = tuple(float(sum(c)) for c in zip_longest(*(p.per_position for p in parts), fillvalue=0.0))

    return replace(  # the last part's k, gauges and cache, with the counts summed and the load over every part
        parts[-1], window_s=snaps[-1].at - snaps[0].at, per_position=per_position,
        **{c: total(c) for c in ("drafts", "draft_tokens", "accepted", "generation_tokens")},
        **{g: _mean(getattr(p, g) for p in parts) for g in ("running", "waiting", "kv_usage")},
        counter_reset=any(p.counter_reset for p in parts), running_start=parts[0].running_start,
        **_extremes([v for p in parts for v in (p.running_low, p.running_high)]),
        notes=_once(n for p in parts for n in p.notes),
        timing={name: float(sum(p.timing[name] for p in parts)) for name in set.intersection(*(set(p.timing) for p in parts))})


# --- statistics ----------------------------------------------------------------------------------

def wilson_interval(successes: float, trials: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95 % for z = 1.96).

    >>> tuple(round(x, 4) for x in wilson_interval(80, 100))
    (0.7112, 0.8666)
    """
    if not trials > 0:
        raise SpecModelError("a confidence interval needs at least one trial")
    p = min(max(successes / trials, 0.0), 1.0)
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _as_float(value) -> float:
    """A sample's value as a float: an integer past the float range is ±Inf (then refused as a counter)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _prom_number(value: float) -> str:
    """A number as the exposition format writes it (NaN, +Inf, -Inf)."""
    return "NaN" if value != value else ("+Inf" if value == math.inf else "-Inf" if value == -math.inf else f"{value:g}")


def _check_count(name: str, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise SpecModelError(f"{name} in the window must be a count ≥ 0, got {value}")


def stats_from_window(w: SpecWindow) -> LiveStats:
    """Statistics of one window. See the module docstring for the conversions used."""
    _check_window(w)
    notes: list[Note] = list(w.notes)
    if w.counter_reset:
        notes.append(warning("a counter went down between the scrapes, so the server restarted: this window "
                             "counts from zero after the restart (as Prometheus rate() does); check the server's "
                             "uptime if that was unexpected"))
    k = None if w.k is None else acceptance.check_k(w.k)  # k = 0 or a fraction: refused, not divided by
    engine = engines.engine_of(w.server)
    max_len = len(w.per_position) if w.per_position else k
    drafted = w.draft_tokens if engine.counts_draft_tokens else None  # counted, not drafts · k
    k, k_source = judged_k(w, k, drafted, max_len)
    if not w.spec_enabled:
        notes.append(warning("speculative decoding is off on this server (no speculative-decoding metrics): "
                             "load and throughput are measured, the model predicts what speculation would do"))
        acc = _WindowAcceptance()
    elif w.drafts is not None and w.accepted is not None:
        acc = _acceptance_from_counters(w, engine, k, max_len, drafted)
    elif w.gauge_tokens_per_step is not None:
        acc = _acceptance_from_gauge(w, engine, k, drafted)
    elif k is None:
        acc = _WindowAcceptance(notes=(info("k (draft tokens per step) is unknown for this server, so acceptance "
                                            f"cannot be computed: give k ({w.k_source or 'not exposed'})"),))
    else:
        acc = _WindowAcceptance(notes=(info("the server exposes speculative-decoding metrics but none that give "
                                            "acceptance in this window"),))
    notes += acc.notes
    if w.spec_enabled and w.server in engines.ENGINES:
        # Before the window's own notes: the last note is the one a caller shows when E is missing.
        unknown_k = [engine.k_unknown] if k is None and engine.k_unknown else []
        notes[0:0] = [info(n) for n in (*unknown_k, *engine.cannot_know)]
    alpha, alpha_ci = _alpha_of(acc.e, acc.e_ci, k)
    gen_tok_s = None if w.generation_tokens is None else w.generation_tokens / w.window_s
    capacity = (w.num_gpu_blocks * w.block_size
                if w.num_gpu_blocks is not None and w.block_size is not None else None)
    return LiveStats(
        **{name: getattr(w, name) for name in _PASSED_ON}, k=k, window_s=float(w.window_s),
        tokens_per_step=acc.e, tokens_per_step_ci=acc.e_ci, alpha=alpha, alpha_ci=alpha_ci, survival=acc.survival,
        survival_ci=acc.survival_ci, conditional=acc.conditional, draft_acceptance_rate=acc.rate,
        draft_acceptance_rate_ci=acc.rate_ci, generation_tok_s=gen_tok_s, kv_capacity_tokens=capacity,
        source=acc.source, notes=tuple(notes), mean_draft_length=acc.mean_len, max_draft_length=max_len,
        rate_source=acc.rate_source, k_source=k_source,
        timing=step_timing(w.timing, w.generation_tokens, w.timing_series) if w.timing else None)


# What LiveStats passes on from its window as it is.
_PASSED_ON = ("server", "model_name", "spec_enabled", "drafts", "generation_tokens", "running", "waiting", "kv_usage",
              "num_gpu_blocks", "block_size", "running_end", "running_start", "running_low", "running_high")


def judged_k(w: SpecWindow, k: int | None, drafted: float | None, max_len: int | None) -> tuple[int | None, str]:
    """(the k a window is judged at, where it came from): where the engine counts the draft tokens and the drafts
    in the window are shorter on average than the longest (llama.cpp's --draft-p-min, vLLM's n-gram), the mean
    draft length, rounded: what was verified on average, not the longest draft; else the window's k."""
    if k is None or drafted is None or not (w.drafts or 0) > 0 or not drafted > 0:
        return k, w.k_source
    mean = drafted / w.drafts
    judged = acceptance.mean_length_k(mean)
    if judged >= k:
        return k, w.k_source
    return judged, (f"mean draft length {mean:.2f} (draft tokens ÷ drafts), rounded; the longest draft is "
                    f"{max_len or k} ({w.k_source})")


def _check_window(w: SpecWindow) -> None:
    """Refuse a window of no duration or with a count that is not a count."""
    if not (w.window_s is not None and math.isfinite(w.window_s) and w.window_s > 0):
        raise SpecModelError(f"the window must last more than 0 s, got {w.window_s}")
    for name in ("drafts", "draft_tokens", "accepted", "generation_tokens", "running", "waiting"):
        _check_count(name, getattr(w, name))
    for i, v in enumerate(w.per_position or ()):
        _check_count(f"accepted tokens at position {i}", v)


@dataclass(frozen=True)
class _WindowAcceptance:
    """What a window measures of acceptance (None where it does not), where it comes from, and notes on it."""

    e: float | None = None  # tokens per proposing step
    e_ci: tuple[float, float] | None = None
    rate: float | None = None  # accepted ÷ drafted tokens
    rate_ci: tuple[float, float] | None = None
    mean_len: float | None = None  # draft tokens per draft
    survival: tuple[float, ...] | None = None
    survival_ci: tuple[tuple[float, float], ...] | None = None
    conditional: tuple[float, ...] | None = None
    source: str = "none"
    notes: tuple[Note, ...] = ()
    rate_source: str | None = None  # which numbers the rate came from


# Where a window's draft acceptance rate comes from: the counted draft tokens, else E and k.
RATE_FROM_COUNTERS = "accepted / draft tokens counters"
RATE_FROM_E = "(E − 1) / k"


def decoded_without_drafts(drafts: float | None, generation_tokens: float | None) -> bool:
    """A window in which the server generated tokens and counted no draft (LiveStats.configured_off); an engine that
    counts no drafts at all (None: an average gauge of its own) is not one."""
    return drafts is not None and drafts <= 0 and generation_tokens is not None and generation_tokens > 0


def _acceptance_from_counters(w: SpecWindow, engine: engines.Engine, k: int | None, max_len: int | None,
                              drafted: float | None) -> _WindowAcceptance:
    """Acceptance from the drafts and accepted-tokens counters: E needs no k; the acceptance rate needs
    the drafted tokens or k; per-position survival needs k positions. Intervals count each draft as
    one trial."""
    if decoded_without_drafts(w.drafts, w.generation_tokens):  # decoding, not drafting: configured off
        return _WindowAcceptance(notes=(warning(
            f"no drafts were proposed in this {w.window_s:.0f} s window while the server generated "
            f"{w.generation_tokens:,.0f} tokens: speculation is configured but switched off at this load (a k = 0 "
            "band of a per-batch schedule, or a disabled draft), so acceptance is unknown here; configured and off "
            "is not free (docs/runs-review.md, \"Off is not free, measured\")"),))
    if w.drafts <= 0:
        return _WindowAcceptance(notes=(warning(
            f"no drafts were proposed in this {w.window_s:.0f} s window, so acceptance is "
            "unknown: the server is idle or decoding nothing; send traffic or widen the window"),))
    notes = []
    e_ci = rate_ci = survival = survival_ci = conditional = None
    n = w.drafts
    e = 1.0 + w.accepted / n  # needs no k (vLLM's mean acceptance length, bonus token in)
    rate, rate_source = _rate(w, drafted, k, e)
    mean_len = drafted / n if rate_source == RATE_FROM_COUNTERS else None if k is None else float(k)
    if max_len is not None:
        if e > max_len + 1 + 1e-6:
            raise SpecModelError(f"{w.accepted:g} accepted tokens from {n:g} drafts is more than k = {max_len} "
                                 "per draft: the counters do not belong together")
        e = min(e, max_len + 1.0)
    if k is not None and k < (max_len or k):  # judged at the mean draft length: E beyond k + 1 is read as k + 1
        e = min(e, k + 1.0)
    if rate is not None:
        # Tokens within one draft are correlated, so count each draft as one trial: conservative.
        rate_ci = wilson_interval(rate * n, n)
        e_ci = (1.0 + mean_len * rate_ci[0], 1.0 + mean_len * rate_ci[1])
    if k is not None and w.per_position and len(w.per_position) >= k:  # every position counted (up to the longest)
        p = np.minimum(np.asarray(w.per_position, dtype=float) / n, 1.0)
        p = np.minimum.accumulate(p)  # survival cannot rise; guards rounding between counters
        survival = tuple(float(x) for x in p)
        survival_ci = tuple(wilson_interval(x * n, n) for x in p)
        conditional = tuple(float(x) for x in acceptance.conditional_acceptance(p))
    if k is None:
        notes.append(_k_unknown(w, e))
    elif mean_len is not None and max_len and mean_len < max_len - 0.05:
        notes.append(info(f"the draft length varies: {mean_len:.2f} draft tokens per step on average, at most "
                          f"{max_len}; accepted ÷ drafted is {rate:.3f}; judged at k = {k}, the mean draft length "
                          f"rounded (what was verified on average, not the longest draft), and α is the per-token "
                          f"acceptance giving E at k = {k}"))
    return _WindowAcceptance(e, e_ci, rate, rate_ci, mean_len, survival, survival_ci, conditional, engine.e_source,
                             tuple(notes), rate_source)


def _acceptance_from_gauge(w: SpecWindow, engine: engines.Engine, k: int | None,
                           drafted: float | None) -> _WindowAcceptance:
    """Acceptance from the engine's own tokens-per-step average: no sample size, so no interval."""
    e = max(float(w.gauge_tokens_per_step), 1.0)
    if k is not None:
        e = min(e, k + 1.0)
    rate, rate_source = _rate(w, drafted, k, e)
    source = engine.gauge_source
    notes = [info(f"E comes from the engine's own {source.split(' ')[0]} average, which has no sample "
                  "size, so no confidence interval")]
    if k is None:
        notes.append(_k_unknown(w, e))
    return _WindowAcceptance(e=e, rate=rate, source=source, notes=tuple(notes), rate_source=rate_source)


def _rate(w: SpecWindow, drafted: float | None, k: int | None, e: float) -> tuple[float | None, str | None]:
    """(accepted ÷ drafted tokens, where it came from): the counted draft tokens, else (E − 1)/k."""
    if drafted is not None and drafted > 0 and w.accepted is not None:
        return min(w.accepted / drafted, 1.0), RATE_FROM_COUNTERS
    return (None, None) if k is None else ((e - 1.0) / k, RATE_FROM_E)


def _k_unknown(w: SpecWindow, e: float) -> Note:
    return info(f"k (draft tokens per step) is unknown ({w.k_source or 'not exposed'}): E = {e:.3f} "
                "tokens per step is measured, but α, break-even and the verdict need k: give k")


def _alpha_of(e: float | None, e_ci: tuple[float, float] | None, k: int | None):
    """(α, its interval) giving E at k; None where E or k is unknown."""
    alpha = alpha_ci = None
    if e is not None and k is not None:
        alpha = float(acceptance.alpha_from_tokens_per_step(e, k))
        if e_ci is not None:
            alpha_ci = tuple(float(acceptance.alpha_from_tokens_per_step(x, k)) for x in e_ci)
    return alpha, alpha_ci


def json_safe(obj):
    """JSON-safe copy: NaN/inf -> None, tuples -> lists."""
    if isinstance(obj, dict):
        return {key: json_safe(v) for key, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    return obj
