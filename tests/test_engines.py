"""Every engine's /metrics: recognised by its spec-decode counter schema, E read as the engine defines it.

The fixtures were written from each engine's own metric names (their headers cite the source file) and
state the values they imply; the replay tests serve them on 127.0.0.1 with counters advancing per scrape.
"""

import dataclasses
import json

import httpx
import pytest

from specmodel import Scenario, SpecModelError, cli, predict
from specmodel.metrics import fleet, prom, scrape
from specmodel.model import acceptance
from tests.replay import ReplayServer, fixture_text


def zeroed(s: prom.Snapshot) -> prom.Snapshot:
    return dataclasses.replace(s, at=s.at - 100.0, counters={k: 0.0 for k in s.counters},
                               per_position=tuple(0.0 for _ in s.per_position))


def lifetime(text: str, k=None) -> prom.LiveStats:
    s = prom.parse_snapshot(text, at=1000.0, k=k)
    return prom.stats_from_window(prom.window_between(zeroed(s), s))


# fixture, server, k, E, per-position survival, running requests (all stated in the fixture's header)
HEADERS = [
    ("llamacpp_specdecode_sample.txt", "llamacpp", 4, 2.8, (0.78, 0.54, 0.32, 0.16), 3.0),
    ("lmdeploy_specdecode_sample.txt", "lmdeploy", 3, 2.5, (0.7, 0.5, 0.3), 28.0),
    ("trtllm_specdecode_sample.txt", "trtllm", 3, 2.65, (0.8, 0.55, 0.3), 8.0),
    ("vllm_v1_specdecode_sample.txt", "vllm-v1", 3, 2.720, (0.8047, 0.5647, 0.3508), None),
]


@pytest.mark.parametrize("name, server, k, e, survival, running", HEADERS)
def test_each_engine_fixture_gives_the_values_its_header_states(name, server, k, e, survival, running):
    snap = prom.parse_snapshot(fixture_text(name), at=0.0)
    assert (snap.server, snap.k, snap.spec_enabled) == (server, k, True)
    stats = lifetime(fixture_text(name))
    assert stats.tokens_per_step == pytest.approx(e, abs=5e-4)
    assert stats.survival == pytest.approx(survival, abs=5e-5)
    if running is not None:
        assert stats.running == pytest.approx(running)


def test_tensorrt_llm_reads_the_same_under_dynamos_trtllm_colon_prefix():
    text = fixture_text("trtllm_specdecode_sample.txt").replace("trtllm_", "trtllm:")
    stats = lifetime(text)
    assert (stats.server, stats.k) == ("trtllm", 3)
    assert stats.tokens_per_step == pytest.approx(2.65)
    assert stats.draft_acceptance_rate == pytest.approx(6600 / 12000 * 3 / 3)


def test_tgi_gives_e_from_skipped_tokens_and_says_what_it_cannot_know():
    text = fixture_text("tgi_specdecode_sample.txt")
    without_k = lifetime(text)
    assert without_k.server == "tgi" and not without_k.measured
    # E is still stated, with the way to place it on the model.
    assert any("E = 2.140" in n and "give k" in n for n in without_k.notes)
    with_k = lifetime(text, k=4)
    assert with_k.tokens_per_step == pytest.approx(1 + 11400 / (10200 - 200))
    assert with_k.survival is None
    assert any(n.startswith("per-position acceptance") for n in with_k.notes)
    assert not any(n.startswith("k (the server") for n in with_k.notes)  # k was given
    assert with_k.running == 12


def test_an_unknown_engine_writing_vllms_counter_schema_is_read_and_named_by_its_prefix():
    text = fixture_text("llamacpp_specdecode_sample.txt").replace("llamacpp:", "acme:")
    stats = lifetime(text)
    assert (stats.server, stats.k) == ("other:acme", 4)
    assert stats.tokens_per_step == pytest.approx(2.8)


def test_a_response_without_any_engine_names_the_series_it_looked_for():
    with pytest.raises(SpecModelError) as err:
        prom.parse_snapshot("# TYPE node_load1 gauge\nnode_load1 0.5\n# TYPE process_cpu_seconds_total counter\n"
                            "process_cpu_seconds_total 3\n")
    message = str(err.value)
    for series in ("vllm:spec_decode_num_drafts_total", "llamacpp:", "lmdeploy:",
                   "trtllm_spec_decode_drafted_tokens_total{token_position}", "trtllm:", "/prometheus/metrics",
                   "sglang:spec_verify_calls_total", "tgi_request_skipped_tokens"):
        assert series in message


def test_a_response_mixing_two_engines_names_both():
    with pytest.raises(SpecModelError, match=r"mixes the metrics of 2 engines: llama\.cpp .*vLLM"):
        prom.parse_snapshot(fixture_text("vllm_v1_specdecode_sample.txt")
                            + fixture_text("llamacpp_specdecode_sample.txt"))


def test_counters_that_went_backwards_count_from_zero_and_say_the_server_restarted():
    text = fixture_text("llamacpp_specdecode_sample.txt")
    before = prom.parse_snapshot(text, at=0.0)
    after = dataclasses.replace(before, at=10.0, counters={k: v / 100 for k, v in before.counters.items()},
                                per_position=tuple(v / 100 for v in before.per_position))
    stats = prom.stats_from_window(prom.window_between(before, after))
    assert stats.tokens_per_step == pytest.approx(2.8)  # the post-restart counts alone: 90 / 50
    assert any("restarted" in n for n in stats.notes)


# --- real servers on 127.0.0.1 -----------------------------------------------------------------------

def scrape_json(capsys, url, *extra):
    code = cli.main(["scrape", url, "--window", "0.1", "--json", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


REPLAYS = [  # fixture, path served, increments per scrape, expected server, E, per-position
    ("llamacpp_specdecode_sample.txt", "/metrics", {
        "llamacpp:spec_decode_num_drafts_total": 100, "llamacpp:spec_decode_num_draft_tokens_total": 400,
        "llamacpp:spec_decode_num_accepted_tokens_total": 220,
        "llamacpp:spec_decode_num_accepted_tokens_per_pos_total": [80, 60, 50, 30],
        "llamacpp:tokens_predicted_total": 320}, "llamacpp", 3.2, [0.8, 0.6, 0.5, 0.3]),
    ("lmdeploy_specdecode_sample.txt", "/metrics", {  # two data-parallel engines, summed
        "lmdeploy:spec_decode_num_drafts_total": [60, 40], "lmdeploy:spec_decode_num_draft_tokens_total": [180, 120],
        "lmdeploy:spec_decode_num_accepted_tokens_total": [90, 60],
        "lmdeploy:spec_decode_num_accepted_tokens_per_pos_total": [42, 30, 18, 28, 20, 12],
        "lmdeploy:generation_tokens_total": [150, 100]}, "lmdeploy", 2.5, [0.7, 0.5, 0.3]),
    ("trtllm_specdecode_sample.txt", "/prometheus/metrics", {
        "trtllm_spec_decode_drafted_tokens_total": [100, 100, 100],
        "trtllm_spec_decode_accepted_tokens_total": [90, 60, 30],
        "trtllm_generation_tokens_total": 280}, "trtllm", 2.8, [0.9, 0.6, 0.3]),
]


@pytest.mark.parametrize("fixture, path, increments, server, e, survival", REPLAYS)
def test_scrape_reads_each_engine_served_on_localhost(capsys, fixture, path, increments, server, e, survival):
    with ReplayServer(fixture, increments=increments, path=path) as srv:
        code, data, err = scrape_json(capsys, srv.base_url + "/metrics")  # /metrics, even for TensorRT-LLM
    assert code == 0, err
    assert data["server"] == server and data["engine"]
    assert data["tokens_per_step"] == pytest.approx(e, abs=1e-9)
    assert data["per_position"] == pytest.approx(survival)
    assert data["verdict"] in ("pays off", "borderline", "loses")
    assert data["url_given"] == srv.base_url + "/metrics"
    assert data["url"] == data["metrics_url"] == srv.base_url + path  # `url` is the URL read, the given one beside
    if path != "/metrics":
        assert any("found at" in n and path in n for n in data["notes"])


def test_scrape_of_tgi_gives_e_without_k_and_says_alpha_needs_it_then_reads_alpha_with_it(capsys):
    inc = {"tgi_request_skipped_tokens_count": 1010, "tgi_request_skipped_tokens_sum": 1500,
           "tgi_request_count": 10, "tgi_request_generated_tokens_sum": 2510}
    with ReplayServer("tgi_specdecode_sample.txt", increments=inc) as srv:
        code, data, err = scrape_json(capsys, srv.url)
        assert code == 0, err
        # E = 1 + 1500 / (1010 - 10) = 2.5 needs no k; α, break-even and the verdict do, and say so.
        assert data["tokens_per_step"] == pytest.approx(2.5) and data["spec_decode_acceptance_length"] == 2.5
        assert (data["k"], data["alpha"], data["needs_k"], data["verdict"]) == (None, None, True, "unknown")
        assert "need k" in data["verdict_text"] and "--k" in data["advice"]
        assert cli.main(["scrape", srv.url, "--window", "0.1"]) == 0
        text = capsys.readouterr().out
        assert "tokens per step:  2.500" in text and "α needs k" in text
        code, data, err = scrape_json(capsys, srv.url, "--k", "4")
    assert code == 0, err
    assert (data["server"], data["k"], data["k_source"], data["needs_k"]) == ("tgi", 4, "given", False)
    assert data["tokens_per_step"] == pytest.approx(1 + 1500 / (1010 - 10))
    assert data["per_position"] is None and data["alpha"] is not None
    assert any("per-position acceptance" in n for n in data["notes"])


def test_a_tgi_server_is_judged_as_the_n_gram_it_runs_not_as_the_sidebars_draft_model(capsys):
    # TGI --speculate 2 at 16 running, E = 1 + 990 / (1010 - 10) = 1.99. TGI loads no draft model: --speculate without
    # Medusa heads is n-gram, drafting 2 tokens for every sequence at every step (huggingface/text-generation-inference
    # db931fc: server/text_generation_server/models/__init__.py, utils/tokens.py create_n_gram_speculation). Judged on
    # the default Llama 3.2 1B draft model it paid 1.15x on the L40S (break-even 1.73): draft passes TGI never runs.
    inc = {"tgi_request_skipped_tokens_count": 1010, "tgi_request_skipped_tokens_sum": 990, "tgi_request_count": 10}
    with ReplayServer("tgi_specdecode_sample.txt", increments=inc, gauges={"tgi_batch_current_size": 16}) as srv:
        code, data, err = scrape_json(capsys, srv.url, "--k", "2")
    assert code == 0, err
    alpha = float(acceptance.alpha_from_tokens_per_step(1.99, 2))
    as_draft_model = predict(Scenario.from_names(k=2, concurrency=16, alpha=alpha))
    as_ngram = predict(Scenario.from_names(k=2, concurrency=16, alpha=alpha, method="ngram", draft=None,
                                           proposal_rate=1.0))
    assert (data["concurrency"], data["verdict"]) == (16, "pays off")
    assert data["speedup"] == pytest.approx(float(as_ngram.speedup), rel=1e-3)
    assert data["speedup"] > float(as_draft_model.speedup) + 0.3  # 1.55x on the L40S, not 1.15x
    assert any("judged as n-gram, as TGI runs --speculate without Medusa heads" in n for n in data["notes"])


def test_spec_k_is_an_alias_of_k_that_says_it_is_deprecated(capsys):
    inc = {"tgi_request_skipped_tokens_count": 1010, "tgi_request_skipped_tokens_sum": 1500, "tgi_request_count": 10}
    with ReplayServer("tgi_specdecode_sample.txt", increments=inc) as srv:
        code, data, err = scrape_json(capsys, srv.url, "--spec-k", "4")
        assert code == 0, err
        assert (data["k"], data["k_source"]) == (4, "given")
        assert "--spec-k is deprecated: use --k" in err
        code, _data, err = scrape_json(capsys, srv.url, "--spec-k", "4", "--k", "2")
    assert code == 2 and "--k 2 and --spec-k 4 disagree" in err


def test_llamacpp_variable_draft_lengths_give_accepted_over_drafted_and_both_draft_lengths(capsys):
    # tests/fixtures/llamacpp_variable_draft_sample.txt (llama.cpp commit 17f5f8a), hand-computed in its header.
    stats = lifetime(fixture_text("llamacpp_variable_draft_sample.txt"))
    assert stats.tokens_per_step == pytest.approx(3.298)
    assert stats.draft_acceptance_rate == pytest.approx(2298 / 5200)  # 0.442, not (E - 1) / 8 = 0.287
    # judged at the mean draft length (5.2 -> k = 5), the longest draft (8) beside it
    assert (stats.mean_draft_length, stats.max_draft_length, stats.k) == (pytest.approx(5.2), 8, 5)
    assert any("draft length varies: 5.20" in n and "at most 8" in n and "judged at k = 5" in n for n in stats.notes)
    assert stats.alpha == pytest.approx(float(acceptance.alpha_from_tokens_per_step(3.298, 5)))
    assert len(stats.survival) == 8 and stats.k_source.startswith("mean draft length 5.20")
    inc = {"llamacpp:spec_decode_num_drafts_total": 100, "llamacpp:spec_decode_num_draft_tokens_total": 450,
           "llamacpp:spec_decode_num_accepted_tokens_total": 180,
           "llamacpp:spec_decode_num_accepted_tokens_per_pos_total": [70, 50, 30, 15, 8, 4, 2, 1]}
    with ReplayServer("llamacpp_variable_draft_sample.txt", increments=inc) as srv:
        code, data, err = scrape_json(capsys, srv.url)
        assert code == 0, err
        assert data["spec_decode_acceptance_length"] == pytest.approx(1 + 180 / 100)
        assert data["spec_decode_acceptance_rate"] == pytest.approx(180 / 450)
        assert data["draft_acceptance_rate"] == data["spec_decode_acceptance_rate"]
        assert (data["mean_draft_length"], data["max_draft_length"], data["k"]) == (pytest.approx(4.5), 8, 5)
        assert cli.main(["scrape", srv.url, "--window", "0.1"]) == 0
    assert "draft length:     mean 4.50, max 8" in capsys.readouterr().out


def test_tensorrt_llm_with_iteration_stats_only_reads_its_acceptance_length_gauge(capsys):
    # tests/fixtures/trtllm_iteration_stats_sample.txt (TensorRT-LLM commit 050f80d): no per-position counters.
    text = fixture_text("trtllm_iteration_stats_sample.txt")
    snap = prom.parse_snapshot(text, at=0.0)
    # k from the draft tokens and the acceptance-length gauge: 9000 · (2.5 − 1) / 5400 = 2.5, rounded half up
    assert (snap.server, snap.spec_enabled, snap.k) == ("trtllm", True, 3)
    assert "acceptance length − 1" in snap.k_source and "no per-token_position counters" in snap.k_source
    without_gauge = prom.parse_snapshot("\n".join(line for line in text.splitlines()
                                                  if "acceptance_length" not in line), at=0.0)
    assert without_gauge.k is None
    for there in ("spec_decode_num_draft_tokens_total", "spec_decode_num_accepted_tokens_total", "return_perf_metrics",
                  "https://nvidia.github.io/TensorRT-LLM/latest/examples/prometheus_metrics.html"):
        assert there in without_gauge.k_source
    stats = lifetime(text)
    assert (stats.tokens_per_step, stats.k, stats.needs_k, stats.measured) == (2.5, 3, False, True)
    # each figure labelled by where it comes from: E the gauge's, accepted ÷ drafted the counters'
    assert stats.draft_acceptance_rate == pytest.approx(5400 / 9000)
    assert stats.rate_source == prom.RATE_FROM_COUNTERS and "acceptance_length gauge" in stats.source
    inc = {"trtllm_spec_decode_num_draft_tokens_total": 300, "trtllm_spec_decode_num_accepted_tokens_total": 210}
    with ReplayServer(text, increments=inc, path="/prometheus/metrics") as srv:
        code, data, err = scrape_json(capsys, srv.base_url + "/metrics")
    assert code == 0, err
    assert (data["tokens_per_step"], data["needs_k"], data["spec_decode_acceptance_rate"]) == (2.5, False, 0.7)
    assert data["k"] in (2, 3) and "acceptance length − 1" in data["k_source"]
    assert data["draft_acceptance_rate_source"] == "accepted / draft tokens counters"
    assert "acceptance_length gauge" in data["tokens_per_step_source"]
    assert data["verdict"] in ("pays off", "borderline", "loses") and data["alpha"] > 0.4


def test_a_tensorrt_llm_server_answering_json_at_metrics_is_found_at_prometheus_metrics():
    text = fixture_text("trtllm_specdecode_sample.txt")

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/metrics":  # trtllm-serve's iteration stats
            return httpx.Response(200, json=[{"iter": 7, "numActiveRequests": 8}])
        if request.url.path == "/prometheus/metrics":
            return httpx.Response(200, text=text, headers={"content-type": "text/plain"})
        return httpx.Response(404)

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        snap = scrape.scrape_snapshot(client, "http://127.0.0.1:8000/metrics")
    assert (snap.server, snap.k, snap.source_url) == ("trtllm", 3, "http://127.0.0.1:8000/prometheus/metrics")


def test_when_neither_path_has_metrics_both_are_named():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="# TYPE up gauge\nup 1\n", headers={"content-type": "text/plain"})

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(SpecModelError) as err:
            scrape.scrape_snapshot(client, "http://127.0.0.1:8000/metrics")
    assert "http://127.0.0.1:8000/metrics" in str(err.value)
    assert "also tried http://127.0.0.1:8000/prometheus/metrics" in str(err.value)


def test_the_fleet_query_asks_prometheus_for_every_engines_series():
    q = fleet.fleet_promql("5m")
    for name in ("llamacpp:spec_decode_num_drafts_total", "lmdeploy:spec_decode_num_accepted_tokens_per_pos_total",
                 "trtllm_spec_decode_drafted_tokens_total", "trtllm:spec_decode_accepted_tokens_total",
                 "tgi_request_skipped_tokens_count", "tgi_batch_current_size"):
        assert name in q


def test_every_engine_row_names_its_source_and_the_engines_doc_lists_it():
    from pathlib import Path

    from specmodel.metrics import schemas

    doc = (Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text()
    for engine in schemas.ENGINES.values():
        assert engine.source and engine.convention, engine.server
        file_part = engine.source.split(" ")[0].rstrip(",")  # the source file, then where (commit or version)
        version = engine.source.rsplit(" ", 1)[-1].strip("()")
        assert file_part in doc and version in doc, (engine.server, file_part, version)
        assert f"`{engine.server}`" in doc


@pytest.mark.parametrize("fixture, drop, words", [
    ("sglang_specdecode_sample.txt", "sglang:spec_num_steps", "not exposed: no sglang:spec_num_steps gauge"),
    ("tgi_specdecode_sample.txt", None, "not exposed by TGI (it is the server's --speculate N): give k"),
    ("trtllm_iteration_stats_sample.txt", "trtllm_spec_decode_acceptance_length",
     "not exposed: this TensorRT-LLM exposition has"),
])
def test_why_k_is_not_known_reads_as_one_clause_not_unknown_twice(fixture, drop, words):
    text = "\n".join(line for line in fixture_text(fixture).splitlines() if not drop or not line.startswith(drop))
    snap = prom.parse_snapshot(text, at=0.0)
    stats = lifetime(text)
    assert snap.k is None and snap.k_source.startswith(words)
    said = " ".join((snap.k_source, *stats.notes))
    assert "unknown (unknown" not in said and "unknown: " not in said
    assert any("k (draft tokens per step) is unknown" in n and f"({words}" in n for n in stats.notes)
