"""Parsing /metrics text and turning two snapshots into windowed spec-decode statistics."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel import SpecModelError
from specmodel.metrics import prom
from tests.conftest import examples
from tests.replay import fixture_text

V1 = fixture_text("vllm_v1_specdecode_sample.txt")
V1_OFF = fixture_text("vllm_v1_nospec_sample.txt")
V0 = fixture_text("vllm_v0_specdecode_sample.txt")
SGL = fixture_text("sglang_specdecode_sample.txt")


def zeroed(s: prom.Snapshot, seconds_before: float = 100.0) -> prom.Snapshot:
    """The same server at start-up: every counter zero, seconds_before earlier."""
    return dataclasses.replace(s, at=s.at - seconds_before, counters={k: 0.0 for k in s.counters},
                               per_position=tuple(0.0 for _ in s.per_position))


def lifetime_stats(text: str) -> prom.LiveStats:
    s = prom.parse_snapshot(text, at=1000.0)
    return prom.stats_from_window(prom.window_between(zeroed(s), s))


def test_vllm_v1_sample_gives_the_values_its_header_states():
    s = prom.parse_snapshot(V1, at=0.0)
    assert (s.server, s.k, s.spec_enabled, s.engines) == ("vllm-v1", 3, True, 1)
    assert s.model_name == "meta-llama/Llama-3.1-8B-Instruct"
    # _created gauges (timestamps near 1.8e9) must never be added to the counts.
    assert s.counters["drafts"] == 28250 and s.counters["accepted"] == 48594
    assert s.per_position == (22732, 15952, 9910)
    assert (s.num_gpu_blocks, s.block_size) == (7500, 16)
    st_ = lifetime_stats(V1)
    assert st_.tokens_per_step == pytest.approx(2.720, abs=5e-4)
    assert st_.draft_acceptance_rate == pytest.approx(0.5734, abs=5e-5)
    assert st_.survival == pytest.approx((0.8047, 0.5647, 0.3508), abs=5e-5)
    assert st_.conditional[1] == pytest.approx(0.5647 / 0.8047, abs=1e-3)
    assert st_.kv_capacity_tokens == 120_000
    lo, hi = st_.tokens_per_step_ci
    assert lo < st_.tokens_per_step < hi
    assert st_.alpha_ci[0] < st_.alpha < st_.alpha_ci[1]


def test_speculation_off_still_measures_load_and_throughput():
    s = prom.parse_snapshot(V1_OFF, at=0.0)
    assert (s.server, s.spec_enabled, s.k) == ("vllm-v1", False, None)
    st_ = lifetime_stats(V1_OFF)
    assert not st_.measured and st_.tokens_per_step is None
    assert st_.generation_tok_s == pytest.approx(76800 / 100)
    assert any("speculative decoding is off" in n for n in st_.notes)


def test_vllm_v0_uses_the_efficiency_gauge_and_infers_k():
    s = prom.parse_snapshot(V0, at=0.0)
    assert (s.server, s.k) == ("vllm-v0", 4)
    st_ = lifetime_stats(V0)
    assert st_.tokens_per_step == pytest.approx(0.6826666 * 5, abs=1e-5)
    assert st_.running == 24 and st_.waiting == 3 and st_.kv_usage == pytest.approx(0.4137)
    assert st_.tokens_per_step_ci is None  # a gauge has no sample size
    given = prom.parse_snapshot(V0, at=0.0, k=7)
    assert (given.k, given.k_source) == (7, "given")


def test_sglang_counter_form_matches_its_gauge():
    s = prom.parse_snapshot(SGL, at=0.0)
    assert (s.server, s.k, s.gauges["accept_length"]) == ("sglang", 3, 2.74)
    st_ = lifetime_stats(SGL)
    assert st_.tokens_per_step == pytest.approx(s.gauges["accept_length"], abs=1e-3)
    assert st_.running == 31 and st_.waiting == 2


def engines_text(values: dict[str, tuple[float, float]], model: str = "m") -> str:
    lines = []
    for name, (e0, e1) in values.items():
        lines.append(f"# TYPE {name} counter")
        for engine, v in (("0", e0), ("1", e1)):
            lines.append(f'{name}_total{{engine="{engine}",model_name="{model}"}} {v}')
            lines.append(f'{name}_created{{engine="{engine}",model_name="{model}"}} 1.79e9')
    return "\n".join(lines) + "\n"


def test_series_are_summed_over_engines_and_created_samples_ignored():
    text = engines_text({"vllm:spec_decode_num_drafts": (10, 30), "vllm:spec_decode_num_accepted_tokens": (15, 25),
                         "vllm:spec_decode_num_draft_tokens": (30, 90)})
    s = prom.parse_snapshot(text, at=0.0)
    assert s.engines == 2
    assert s.counters == {"drafts": 40.0, "accepted": 40.0, "draft_tokens": 120.0}
    assert s.k == 3  # no position labels: draft tokens / drafts


def test_several_models_are_listed_and_one_chosen():
    text = ("# TYPE vllm:generation_tokens counter\n"
            'vllm:generation_tokens_total{engine="0",model_name="small"} 5\n'
            'vllm:generation_tokens_total{engine="0",model_name="big"} 500\n')
    s = prom.parse_snapshot(text, at=0.0)
    assert s.model_names == ("big", "small") and s.model_name == "big"
    assert prom.parse_snapshot(text, model_name="small").counters["generation_tokens"] == 5
    with pytest.raises(SpecModelError, match="model 'tiny' is not served here.*big, small"):
        prom.parse_snapshot(text, model_name="tiny")


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("<!DOCTYPE html><html><body>login</body></html>", "HTML page"),
    ("this is {not prometheus\n", "not Prometheus metrics text"),
    ("# TYPE node_load1 gauge\nnode_load1 0.5\n", "no inference-server metrics .*looked for vllm:spec_decode_num_drafts_total"),
])
def test_text_that_is_not_an_inference_server_says_what_it_is(text, message):
    with pytest.raises(SpecModelError, match=message):
        prom.parse_snapshot(text)


def test_counter_reset_counts_from_zero_like_rate_and_is_reported():
    b = prom.parse_snapshot(V1, at=10.0)
    after_restart = dataclasses.replace(
        b, at=20.0, counters={k: 100.0 for k in b.counters}, per_position=(80.0, 50.0, 20.0))
    w = prom.window_between(b, after_restart)
    assert w.counter_reset and w.drafts == 100 and w.per_position == (80, 50, 20)
    stats = prom.stats_from_window(w)
    assert stats.tokens_per_step == pytest.approx(2.0)
    assert any("restarted" in n for n in stats.notes)


def test_window_over_sums_neighbour_increases_across_a_restart():
    a = prom.parse_snapshot(V1, at=0.0)
    bump = lambda s, at, add: dataclasses.replace(  # noqa: E731
        s, at=at, counters={k: v + add for k, v in s.counters.items()},
        per_position=tuple(v + add for v in s.per_position))
    b = bump(a, 5.0, 10.0)
    restarted = dataclasses.replace(b, at=10.0, counters={k: 7.0 for k in b.counters}, per_position=(7.0,) * 3)
    w = prom.window_over([a, b, restarted])
    assert w.window_s == 10.0 and w.drafts == 17.0 and w.counter_reset
    with pytest.raises(SpecModelError, match="two scrapes"):
        prom.window_over([a])


def test_no_drafts_in_the_window_is_a_note_not_a_number():
    s = prom.parse_snapshot(V1, at=0.0)
    later = dataclasses.replace(s, at=5.0)
    stats = prom.stats_from_window(prom.window_between(s, later))
    assert not stats.measured
    assert any("no drafts were proposed" in n for n in stats.notes)


def test_windows_must_move_forward_and_stay_on_one_server():
    s = prom.parse_snapshot(V1, at=5.0)
    with pytest.raises(SpecModelError, match="later"):
        prom.window_between(s, s)
    with pytest.raises(SpecModelError, match="server changed"):
        prom.window_between(prom.parse_snapshot(SGL, at=0.0), s)


@settings(max_examples=examples(200), deadline=None)
@given(k=st.integers(1, 8), drafts=st.integers(1, 10_000), data=st.data())
def test_statistics_stay_in_range_and_intervals_hold_the_estimate(k, drafts, data):
    # A survival profile from counts: position counts never increase and never exceed drafts.
    counts = sorted(data.draw(st.lists(st.integers(0, drafts), min_size=k, max_size=k)), reverse=True)
    w = prom.SpecWindow(server="vllm-v1", k=k, window_s=10.0, drafts=drafts, draft_tokens=drafts * k,
                        accepted=sum(counts), per_position=tuple(counts))
    s = prom.stats_from_window(w)
    assert 1.0 <= s.tokens_per_step <= k + 1
    assert s.tokens_per_step == pytest.approx(1 + sum(s.survival))
    assert 0.0 <= s.alpha <= 1.0
    lo, hi = s.tokens_per_step_ci
    assert lo - 1e-9 <= s.tokens_per_step <= hi + 1e-9
    for p, (plo, phi) in zip(s.survival, s.survival_ci):
        assert plo - 1e-9 <= p <= phi + 1e-9
    assert all(0.0 <= c <= 1.0 for c in s.conditional)


def test_impossible_windows_are_refused():
    with pytest.raises(SpecModelError, match="more than k"):
        prom.stats_from_window(prom.SpecWindow(server="vllm-v1", k=2, window_s=1.0, drafts=10, accepted=50))
    with pytest.raises(SpecModelError, match="window must last"):
        prom.stats_from_window(prom.SpecWindow(server="vllm-v1", k=2, window_s=0.0))
    with pytest.raises(SpecModelError, match="count ≥ 0"):
        prom.stats_from_window(prom.SpecWindow(server="vllm-v1", k=2, window_s=1.0, drafts=-1, accepted=0))


@settings(max_examples=examples(150), deadline=None)
@given(pos=st.integers(0, len(V1) - 1), cut=st.integers(0, 200), junk=st.text(max_size=30))
def test_damaged_text_gives_a_message_or_a_snapshot_never_a_crash(pos, cut, junk):
    try:
        snap = prom.parse_snapshot(V1[:pos] + junk + V1[pos + cut:], at=0.0)
    except SpecModelError as exc:
        assert str(exc)
    else:
        assert snap.server in prom.SERVERS or snap.server.startswith("other:")


def test_vllm_v0_without_a_recognisable_k_asks_for_it():
    s = prom.parse_snapshot(V0, at=0.0)
    odd = dataclasses.replace(s, k=None, k_source="not exposed by vLLM V0: give k")
    stats = prom.stats_from_window(prom.window_between(zeroed(odd), odd))
    assert not stats.measured
    assert any("k (draft tokens per step) is unknown" in n and "give k" in n for n in stats.notes)


@pytest.mark.parametrize("name", ["vllm_v1_specdecode_sample.txt", "vllm_v1_nospec_sample.txt",
                                  "vllm_v0_specdecode_sample.txt", "sglang_specdecode_sample.txt",
                                  "tgi_specdecode_sample.txt", "trtllm_specdecode_sample.txt"])
def test_leaving_histogram_buckets_unparsed_changes_no_figure(name):
    """Buckets are skipped before parsing (no statistic reads them): the snapshot is the one every
    sample of the full parse gives."""
    from prometheus_client.parser import text_string_to_metric_families

    text = fixture_text(name)
    everything = [s for fam in text_string_to_metric_families(text) for s in fam.samples]
    assert prom.parse_snapshot(text, at=5.0) == prom.snapshot_from_samples(everything, at=5.0)


def test_a_damaged_bucket_line_is_still_refused():
    line = next(li for li in V1.splitlines() if "_bucket{" in li)
    broken = V1.replace(line, line.replace("}", "", 1), 1)
    with pytest.raises(SpecModelError, match="not Prometheus metrics text"):
        prom.parse_snapshot(broken, at=0.0)
