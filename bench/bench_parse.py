"""Parse-and-derive of a 5 MB /metrics exposition against prometheus_client's bare parse of the same text."""

from __future__ import annotations

import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bench import against_goal
from specmodel.metrics import live, prom
from specmodel.model.scenario import Scenario

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vllm_v1_specdecode_sample.txt"
TARGET_BYTES = 5 * 1024 * 1024


def exposition(target_bytes: int = TARGET_BYTES, bump: float = 0.0) -> str:
    """The vLLM V1 sample with every engine="0" series repeated for more engines until the text
    reaches target_bytes (a large data-parallel server); counters raised by `bump` per series."""
    lines = SAMPLE.read_text().splitlines()
    per_engine = sum(len(line) + 1 for line in lines if 'engine="0"' in line)
    engines = max(1, -(-(target_bytes - len(SAMPLE.read_text())) // per_engine) + 1)
    out = []
    for line in lines:
        if 'engine="0"' not in line:
            out.append(line)
            continue
        series, _, value = line.rpartition(" ")
        counted = series.split("{", 1)[0].endswith("_total")
        for e in range(engines):
            v = float(value) + (bump * (e + 1) if counted else 0.0)
            labelled = series.replace('engine="0"', 'engine="%d"' % e)
            out.append(f"{labelled} {v!r}")
    return "\n".join(out) + "\n"


def _best_of(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run():
    first, second = exposition(), exposition(bump=100.0)
    base = Scenario()

    def bare_parse():
        for family in text_string_to_metric_families(second):
            for _ in family.samples:
                pass

    def parse_and_derive():
        a = prom.parse_snapshot(first, at=0.0)
        b = prom.parse_snapshot(second, at=10.0)
        stats = prom.stats_from_window(prom.window_between(a, b))
        live.live_verdict(stats, base)

    parse_and_derive()  # warm caches (scenario compile) outside the timing
    bare = _best_of(bare_parse)
    ours = _best_of(parse_and_derive)
    yield f"exposition: {len(second) / 2**20:.1f} MB, {second.count(chr(10))} lines"
    yield f"prometheus_client bare parse of one scrape: {bare * 1e3:.0f} ms"
    yield f"two snapshots parsed + window + statistics + verdict: {ours * 1e3:.0f} ms"
    yield (f"ratio to one bare parse: {against_goal(ours / bare, 2.15)} (two full parses would be ≈ 2.0; histogram "
           "buckets, which no statistic reads, are left out before parsing)")
