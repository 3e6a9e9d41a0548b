"""What a row's text says was measured: which quantity its speedup is (speedup_metric) and, for a row
given as a request rate, each arm's measured end-to-end latency (latencies_from_text), from which
model.rate reads the concurrency each arm ran at by Little's law."""

from __future__ import annotations

import re

from specmodel.bounds import MAX_NAME_TEXT, bounded_cache


# What a speedup column can measure, read from the row's notes and reference columns: the model
# predicts decode throughput (per-token latency at batch 1 is its inverse) and, at a request rate,
# end-to-end latency (review: Little's law); the others are refused, naming the metric.
REFUSED_METRICS = {"total_throughput": "a total (prefill + decode) token throughput ratio",
                   "request_throughput": "a request-throughput ratio", "ttft": "a time-to-first-token ratio"}


@bounded_cache(4096)  # a large file repeats the same few descriptions: each read once
def speedup_metric(text: str) -> str:
    """What a row's speedup measures, from the text that describes it: "e2e_latency", "total_throughput",
    "request_throughput", "ttft", else "decode_throughput" (tokens/s, ms/token, walltime at batch 1)."""
    low = (text or "").lower()
    if re.search(r"time[\s-]*to[\s-]*first[\s-]*token|\bttft\b", low):
        return "ttft"
    if re.search(r"end[\s-]*to[\s-]*end|\be2el?\b|request[\s-]*latency", low):
        return "e2e_latency"
    if re.search(r"request[\s-]*throughput|requests?\s*/\s*s\b|req/s|\brps\b", low):
        return "request_throughput"
    if re.search(r"total[\s-]*(?:token[\s-]*)?throughput|prefill\s*\+\s*decode|input\s*\+\s*output\s*tok", low):
        return "total_throughput"
    return "decode_throughput"


# A throughput a source gives per GPU ("output throughput tok/s/GPU", "tokens/s per GPU"): the model
# predicts a replica's throughput, so such a figure is multiplied by the replica's GPUs when read.
_PER_GPU = re.compile(r"(?:tok(?:en)?s?\s*/\s*s(?:ec)?|throughput)\s*(?:/|per)\s*(?:gpu|device|accelerator)\b")


def throughput_per_gpu(text: str) -> bool:
    """Whether a row's text says its throughputs are per GPU (vLLM's AMD Instinct post, S18 of the
    development set: "output throughput tok/s/GPU"), not per replica."""
    return bool(_PER_GPU.search((text or "")[:_LONGEST_NOTES].lower()))


def latencies_from_text(text) -> tuple[float, float] | None:
    """(plain, speculative) mean end-to-end request latency in seconds, from a text that labels each
    arm's figure: "avg end-to-end request latency: w/o SD 2.56 s, with SD 1.66 s" (the vLLM 2024 blog's
    bars), "E2E latency baseline 3.4 s / EAGLE-3 2.1 s", "request latency without speculation: 2560 ms;
    with speculation: 1660 ms", "2.56 s (baseline) vs 1.66 s (SD)". None unless the text speaks of an
    end-to-end or request latency and labels both arms; a time per token ("14.1 ms/token", TPOT, ITL)
    is not a request's latency."""
    return _latencies_from_str(text[:_LONGEST_NOTES]) if isinstance(text, str) else None


# A row's notes and reference columns together (a source's citation, its metric note, an enrichment
# note) run to a few thousand characters on the development set; the regexes below are linear in it.
_LONGEST_NOTES = 4 * MAX_NAME_TEXT  # chosen: four names' worth, above those few thousand


# An arm's label as sources write it, the plain arm's first ("w/o SD" before "SD").
_PLAIN_ARM = (r"w/o\s*(?:sd|spec\w*)|without\s+(?:sd|spec\w*(?:\s+decod\w*)?)|no[\s-]+(?:sd|spec\w*)|baseline|"
              r"vanilla|plain|non[\s-]*spec\w*|auto[\s-]*regressive|\bar\b")
_SPEC_ARM = r"w/\s*(?:sd|spec\w*)|with\s+[\w./-]+(?:\s+decod\w*)?|\bsd\b|spec\w*(?:\s+decod\w*)?|eagle[\w.-]*|" \
            r"mtp|n-?gram|medusa|draft(?:\s+model)?"
_SECONDS = r"(?P<value>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>ms|milliseconds?|s|secs?|seconds?)\b(?!\s*(?:/|per)\s*(?:tok|output))"
_ARM_FIRST = re.compile(rf"(?:(?P<plain>{_PLAIN_ARM})|(?P<spec>{_SPEC_ARM}))\s*(?:\)\s*)?(?:[:=]|\bis\b|\bof\b)?\s*"
                        + _SECONDS)
_VALUE_FIRST = re.compile(_SECONDS + rf"\s*\(?\s*(?:(?P<plain>{_PLAIN_ARM})|(?P<spec>{_SPEC_ARM}))")


_PER_TOKEN = re.compile(r"\btpot\b|\bitl\b|inter[\s-]*token|per[\s-]*output[\s-]*token")


@bounded_cache(4096)
def _latencies_from_str(text: str) -> tuple[float, float] | None:
    low = text.lower()
    if speedup_metric(low) != "e2e_latency" or _PER_TOKEN.search(low):
        return None
    for pattern in (_ARM_FIRST, _VALUE_FIRST):
        found: dict[str, float] = {}
        for m in pattern.finditer(low):
            value = float(m.group("value"))
            found.setdefault("plain" if m.group("plain") else "spec", value / 1e3 if m.group("unit")[0] == "m" else value)
        if len(found) == 2 and min(found.values()) > 0:
            return found["plain"], found["spec"]
    return None


RATE_NEEDS_LENGTH = ("a request rate without a concurrency needs the output length, or each arm's measured end-to-end "
                     "latency, to find the concurrency it makes (Little's law): give 'OSL N' in the workload, 'w/o SD "
                     "2.5 s, with SD 1.6 s' in the notes, or a concurrency")


def measured_latencies(values: dict, conc, rate, speedup, remarks: list[str]) -> tuple[float, float] | None:
    """(plain, speculative) measured mean end-to-end latency, s, of a row given as a request rate without a
    concurrency, from the text that states them (measured.latencies_from_text): the concurrency each arm
    ran at is read from them by Little's law (model.rate). None for any other row."""
    if conc is not None or rate is None:
        return None
    found = latencies_from_text(" ".join(str(values.get(key) or "") for key in ("_context", "notes", "workload")))
    if found is not None and speedup is not None and abs(found[0] / found[1] / speedup - 1) > 0.05:
        remarks.append(f"speedup {speedup:g} disagrees with the measured latencies {found[0]:g} s / {found[1]:g} s "
                       f"= {found[0] / found[1]:.3f}; the latencies set the concurrencies, the speedup is compared")
    return found
