"""Scraping real HTTP servers on 127.0.0.1: the statistics they imply, and every way a scrape goes wrong."""

import socket

import pytest

from specmodel import SpecModelError
from specmodel.metrics import scrape
from tests import replay
from tests.replay import ReplayServer

# Generous limits for tests that are not about time: a replay on a loaded 2-core machine can take over a
# second to answer (the timeout tests below set their own short limits).
FAST = scrape.ScrapePolicy(connect_timeout_s=10.0, read_timeout_s=10.0, total_timeout_s=20.0)


def measure(url: str, policy=FAST, **kwargs):
    """Two scrapes and their window (no waiting: the replay advances counters per scrape)."""
    with scrape.make_client(policy) as client:
        return scrape.measure(client, url, 0.05, policy=policy, **kwargs)


def test_vllm_v1_window_matches_the_replayed_counters():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        first, last, stats = measure(srv.url)
    assert stats.server == "vllm-v1" and stats.k == 3
    assert stats.drafts == srv.expected_delta("vllm:spec_decode_num_drafts_total")
    assert stats.tokens_per_step == pytest.approx(1 + 1500 / 1000)
    assert stats.survival == pytest.approx([x / 1000 for x in srv.expected_delta(
        "vllm:spec_decode_num_accepted_tokens_per_pos_total")])
    assert stats.draft_acceptance_rate == pytest.approx(1500 / 3000)
    assert stats.alpha == pytest.approx(0.6914, abs=1e-4)  # E(0.6914, 3) = 2.5
    assert stats.running == 12 and stats.waiting == 2 and stats.kv_usage == 0.25
    assert stats.generation_tok_s == pytest.approx(2500 / stats.window_s)
    assert stats.window_s == pytest.approx(last.at - first.at)


def test_sglang_window_matches_the_replayed_counters():
    with ReplayServer("sglang_specdecode_sample.txt", increments=replay.SGLANG) as srv:
        _, _, stats = measure(srv.url)
    assert (stats.server, stats.k) == ("sglang", 3)
    assert stats.tokens_per_step == pytest.approx((2600 - 100) / 1000)
    assert stats.running == 31


def test_vllm_v0_reads_its_gauges_with_a_given_k():
    with ReplayServer("vllm_v0_specdecode_sample.txt", increments=replay.V0,
                      gauges={"vllm:spec_decode_efficiency": 0.7}) as srv:
        _, _, stats = measure(srv.url, k=4)
    assert (stats.server, stats.k) == ("vllm-v0", 4)
    assert stats.tokens_per_step == pytest.approx(0.7 * 5)
    assert stats.generation_tok_s == pytest.approx(3000 / stats.window_s)


def test_speculation_off_still_gives_load_and_throughput():
    with ReplayServer("vllm_v1_nospec_sample.txt", increments=replay.V1_NOSPEC, gauges=replay.V1_GAUGES) as srv:
        _, _, stats = measure(srv.url)
    assert not stats.spec_enabled and not stats.measured
    assert stats.running == 12 and stats.generation_tok_s == pytest.approx(4000 / stats.window_s)


def test_counters_reset_between_scrapes_count_from_zero_and_say_so():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, mode="reset") as srv:
        _, _, stats = measure(srv.url)
    assert stats.tokens_per_step == pytest.approx(2.5)  # the post-restart counts: one increment each
    assert any("restarted" in n for n in stats.notes)


def test_no_traffic_in_the_window_says_so():
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv:  # nothing advances
        _, _, stats = measure(srv.url)
    assert not stats.measured
    assert any("no drafts were proposed" in n for n in stats.notes)


def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: nothing listens there


@pytest.mark.parametrize("mode, message", [
    ("404", "HTTP 404 .*path is wrong"),
    ("500", "HTTP 500 .*server error"),
    ("html", "HTML page"),
    ("garbage", "not Prometheus metrics text"),
    ("trickle", "too slow: after 0.5 s only"),
    ("huge", "more than 1 MB, so reading stopped"),
    ("slow", "sent nothing for 0.5 s"),
])
def test_each_bad_server_gives_a_message_naming_the_url(mode, message):
    # short limits only where the limit is the point: on a loaded machine a 0.5 s read limit also caught
    # the garbage answer before it arrived
    # (the trickle's read limit far above its 0.2 s between bytes, so that its total deadline ends it)
    read_s, total_s = {"trickle": (5.0, 0.5), "slow": (0.5, 1.0)}.get(mode, (10.0, 20.0))
    policy = scrape.ScrapePolicy(connect_timeout_s=1.0 if mode in ("trickle", "slow") else 10.0,
                                 read_timeout_s=read_s, total_timeout_s=total_s, max_bytes=1024 * 1024)
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode=mode) as srv:
        with pytest.raises(SpecModelError, match=message) as info, scrape.make_client(policy) as client:
            scrape.scrape_snapshot(client, srv.url, policy=policy)
    assert srv.url in str(info.value)


def test_connection_refused_and_dns_failure():
    with pytest.raises(SpecModelError, match="cannot connect .*is the server running"):
        measure(f"http://127.0.0.1:{refused_port()}/metrics")
    with pytest.raises(SpecModelError, match="cannot resolve host 'no-such-host.invalid'"):
        measure("http://no-such-host.invalid/metrics")


def test_no_inference_metrics_and_an_unknown_model():
    with ReplayServer("# TYPE node_load1 gauge\nnode_load1 0.5\n") as srv:
        with pytest.raises(SpecModelError, match="no inference-server metrics"):
            measure(srv.url)
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv:
        with pytest.raises(SpecModelError, match="model 'other' is not served here"):
            measure(srv.url, model_name="other")


@pytest.mark.parametrize("url, message", [
    ("ftp://127.0.0.1/metrics", "only http:// and https://"),
    ("file:///etc/passwd", "only http:// and https://"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata address"),
    ("http://[fd00:ec2::254]/latest/", "cloud metadata address"),
    ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata address"),
    ("   ", "no URL given"),
    ("http://", "names no host|not a valid URL"),
])
def test_url_policy_refuses_before_any_request(url, message):
    with pytest.raises(SpecModelError, match=message):
        scrape.check_url(url)


def test_allow_list_from_the_environment():
    policy = scrape.ScrapePolicy.from_env({scrape.ALLOWED_HOSTS_ENV: "vllm.internal, *.svc.cluster.local"})
    assert policy.allowed_hosts == ("vllm.internal", "*.svc.cluster.local")
    with pytest.raises(SpecModelError, match="not in SPECMODEL_ALLOWED_HOSTS"):
        scrape.check_url("http://127.0.0.1:8000/metrics", policy)
    assert scrape.check_url("http://a.b.svc.cluster.local:8000/metrics", policy, resolve=False).host.endswith(
        "cluster.local")
    metadata_listed = scrape.ScrapePolicy.from_env({scrape.ALLOWED_HOSTS_ENV: "169.254.169.254"})
    with pytest.raises(SpecModelError, match="cloud metadata"):  # the allow-list only narrows
        scrape.check_url("http://169.254.169.254/", metadata_listed)
    assert scrape.ScrapePolicy.from_env({}).allowed_hosts is None
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv:
        port = srv.url.split(":")[2].split("/")[0]
        this_port = scrape.ScrapePolicy.from_env({scrape.ALLOWED_HOSTS_ENV: f"127.0.0.1:{port}"})
        with scrape.make_client(this_port) as client:
            assert scrape.scrape_snapshot(client, srv.url, policy=this_port).server == "vllm-v1"
        other_port = scrape.ScrapePolicy.from_env({scrape.ALLOWED_HOSTS_ENV: "127.0.0.1:1"})
        with pytest.raises(SpecModelError, match="not in SPECMODEL_ALLOWED_HOSTS"):
            scrape.check_url(srv.url, other_port)
    with pytest.raises(SpecModelError, match="cloud metadata"):
        scrape.check_url("http://[::ffff:169.254.169.254]/")  # the same address written as IPv6


def test_redirects_are_rechecked_and_followed_when_allowed():
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="redirect:http://169.254.169.254/") as srv:
        with pytest.raises(SpecModelError, match="redirected to http://169.254.169.254/, which is refused"):
            measure(srv.url)
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC) as target, \
            ReplayServer("vllm_v1_specdecode_sample.txt", mode="redirect:" + target.url) as hop:
        _, _, stats = measure(hop.url)
    assert stats.tokens_per_step == pytest.approx(2.5)


def test_bearer_token_is_sent_to_its_host_only_and_never_shown():
    secret = "s3cret-token-value"
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, token=secret) as srv:
        with pytest.raises(SpecModelError, match="HTTP 401 .*bearer token") as info:
            measure(srv.url, token="wrong")
        assert secret not in str(info.value) and "wrong" not in str(info.value)
        _, _, stats = measure(srv.url, token=secret)
        assert stats.tokens_per_step == pytest.approx(2.5)
    with ReplayServer("vllm_v1_specdecode_sample.txt") as other, \
            ReplayServer("vllm_v1_specdecode_sample.txt", mode="redirect:" + other.url) as hop:
        with scrape.make_client(FAST) as client:
            scrape.fetch_text(client, hop.url, token=secret, policy=FAST)
    assert hop.headers[-1].get("Authorization") == f"Bearer {secret}"
    assert "Authorization" not in other.headers[-1]  # another origin: the token stays behind


def test_credentials_in_the_url_are_masked_in_messages():
    with pytest.raises(SpecModelError) as info:
        measure(f"http://admin:hunter2@127.0.0.1:{refused_port()}/metrics")
    assert "hunter2" not in str(info.value) and "***" in str(info.value)


def test_a_scrape_never_outlasts_most_of_the_refresh_interval():
    assert scrape.ScrapePolicy.for_interval(5, {}).total_timeout_s == 4.0
    assert scrape.ScrapePolicy.for_interval(1, {}).total_timeout_s == 2.0  # but gets at least 2 s
    assert scrape.ScrapePolicy.for_interval(600, {}).total_timeout_s == scrape.ScrapePolicy().total_timeout_s
    assert scrape.ScrapePolicy.for_interval(5, {scrape.ALLOWED_HOSTS_ENV: "a"}).allowed_hosts == ("a",)
