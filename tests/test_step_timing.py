"""The server's own step timing (specmodel.metrics.timing) and what a window's verdict rests on
(specmodel.metrics.timed), on Prometheus text parsed as a scrape parses it."""

import pytest

from specmodel.fit.saved import SavedFit
from specmodel.fit.steps import StepPoint, fit_steps
from specmodel.metrics import timed
from specmodel.metrics.prom import parse_snapshot, stats_from_window, window_between, window_over
from specmodel.metrics.timing import step_timing


def page(itl_sum: float, itl_count: float, generated: float, first: float, steps: float,
         latency: str = "inter_token_latency_seconds") -> str:
    """A vLLM V1 page with speculation on (k = 2) and its timing histograms' sums and counts."""
    m = 'engine="0",model_name="m"'
    return "\n".join([
        f"vllm:spec_decode_num_drafts_total{{{m}}} {itl_count}",
        f"vllm:spec_decode_num_draft_tokens_total{{{m}}} {2 * itl_count}",
        f"vllm:spec_decode_num_accepted_tokens_total{{{m}}} {itl_count}",
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{m},position="0"}} {0.6 * itl_count}',
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{m},position="1"}} {0.4 * itl_count}',
        f"vllm:generation_tokens_total{{{m}}} {generated}",
        f"vllm:{latency}_sum{{{m}}} {itl_sum}", f"vllm:{latency}_count{{{m}}} {itl_count}",
        f"vllm:time_to_first_token_seconds_sum{{{m}}} {first * 0.05}",
        f"vllm:time_to_first_token_seconds_count{{{m}}} {first}",
        f"vllm:iteration_tokens_total_sum{{{m}}} {generated}", f"vllm:iteration_tokens_total_count{{{m}}} {steps}",
    ]) + "\n"


def test_a_plain_servers_increases_extrapolated_by_prometheus_still_time_its_steps():
    """Prometheus multiplies each series' increase over a window by one extrapolation factor per target; a plain
    server emits exactly one token a request and step, so its decode tokens equal its observations, and at this
    factor (one of 12.6% of factors) (5000·f·4 − 50·f·4) < 4950·f·4 in floating point: the fleet judged such an
    instance on presets (tests/test_fleet.py's v1-off, 1 run in 8)."""
    f = 1.086258776328987
    timing = {"decode_latency_s": 74.25 * 4 * f, "decode_observations": 4950 * 4 * f, "first_tokens": 50 * 4 * f,
              "engine_steps": 78 * 4 * f}
    assert 5000 * 4 * f - 50 * 4 * f < 4950 * 4 * f  # the rounding this test is about
    t = step_timing(timing, 5000 * 4 * f, "vllm:inter_token_latency_seconds")
    assert t is not None and t.tokens_per_request_step == pytest.approx(1.0)
    assert t.ms_per_token == pytest.approx(1000 * 74.25 / 4950)
    assert step_timing({**timing, "decode_observations": 4951 * 4 * f}, 5000 * 4 * f, "s") is None  # a token short


def test_time_per_token_step_and_batch_come_from_the_histograms_increases():
    a = parse_snapshot(page(10.0, 1000, 3000, 100, 300), at=0.0)
    b = parse_snapshot(page(11.0, 1100, 3220, 120, 325), at=10.0)
    t = stats_from_window(window_between(a, b)).timing
    # 100 request steps took 1.0 s; (220 − 20) decode tokens; 25 engine steps
    assert t.ms_per_token == pytest.approx(5.0) and t.step_ms == pytest.approx(10.0)
    assert t.batch == pytest.approx(4.0) and t.tokens_per_request_step == pytest.approx(2.0)
    assert t.series == "vllm:inter_token_latency_seconds"


def test_older_builds_time_per_output_token_is_read_the_same_way():
    a = parse_snapshot(page(10.0, 1000, 3000, 100, 300, "time_per_output_token_seconds"), at=0.0)
    b = parse_snapshot(page(11.0, 1100, 3220, 120, 325, "time_per_output_token_seconds"), at=10.0)
    t = stats_from_window(window_between(a, b)).timing
    assert t.series == "vllm:time_per_output_token_seconds" and t.ms_per_token == pytest.approx(5.0)


def test_a_window_over_several_scrapes_sums_them_and_a_restart_counts_from_zero():
    snaps = [parse_snapshot(page(*v), at=t) for t, v in enumerate([(10.0, 1000, 3000, 100, 300),
                                                                    (10.5, 1050, 3110, 110, 312),
                                                                    (0.5, 50, 110, 10, 13)])]
    t = stats_from_window(window_over(snaps)).timing
    # 0.5 s + 0.5 s over (110 − 10) + (110 − 10) decode tokens: the restarted server counted from zero
    assert t.ms_per_token == pytest.approx(5.0) and t.observations == 100


@pytest.mark.parametrize("timing, generated", [({}, 100.0), ({"decode_latency_s": 0.0, "decode_observations": 0.0}, 0.0),
                                                ({"decode_latency_s": 1.0, "decode_observations": 50.0,
                                                  "first_tokens": 80.0}, 100.0)])
def test_a_window_that_timed_no_decode_step_has_no_timing(timing, generated):
    assert step_timing(timing, generated, "vllm:inter_token_latency_seconds") is None


def _saved(target: str, method: str, k: int) -> SavedFit:
    fit = fit_steps([StepPoint(1, 10.0, 4.0, tokens_per_step=2.5), StepPoint(8, 12.0, 9.0, tokens_per_step=2.5)], k=k)
    return SavedFit("w", method, target, method, fit)


def test_the_fit_of_the_served_model_is_chosen_and_several_that_would_do_are_named():
    fits = [_saved("m", "draft_model", 2), _saved("m", "ngram", 2), _saved("other", "draft_model", 2)]
    assert timed.fit_for_server(fits, 2, "ngram", "m")[0] is fits[1]
    chosen, why = timed.fit_for_server(fits, 2, None, "m")
    assert chosen is None and "holds 3 step fits" in why and "give the method (--method)" in why
    # a fleet of several models: only a fit of the instance's own model, and no note for another model
    assert timed.fit_for_server(fits, 2, "draft_model", "x", own_model_only=True) == (None, None)
    assert timed.fit_for_server(fits, 2, "draft_model", "other", own_model_only=True)[0] is fits[2]


def test_a_saved_label_from_a_file_is_made_inert_in_the_note():
    fits = [_saved("m\x1b[2K", "draft_model", 2), _saved("m", "x\u202e\x08y", 2)]
    _chosen, why = timed.fit_for_server(fits, 2, None, None)
    assert "\x1b" not in why and "\u202e" not in why and "\x08" not in why


def test_a_fit_whose_line_crosses_zero_at_the_windows_batch_is_not_applied():
    # plain 10 ms at batch 1 and 9.6 at 4: within the fit's tolerance, but below zero by batch 77 (the speculative
    # step, 2 × 6 and 2 × 7 ms, stays above the plain one, so the fit takes the runs as they are)
    fit = fit_steps([StepPoint(1, 10.0, 6.0, tokens_per_step=2.0), StepPoint(4, 9.6, 7.0, tokens_per_step=2.0)], k=2)
    assert fit.usable
    a = parse_snapshot(page(10.0, 1000, 3000, 100, 300), at=0.0)
    b = parse_snapshot(page(110.0, 11000, 23100, 200, 400), at=10.0)  # batch 100
    from specmodel.model.scenario import Scenario

    j = timed.judge(stats_from_window(window_between(a, b)), Scenario(), 1, saved=SavedFit("w", "d", "m", "draft_model", fit))
    assert j.rests_on == "presets" and j.fit is None
    assert "gives no positive step time at batch 100: not applied here" in j.notes[0]
