"""The Prometheus HTTP API client against real 127.0.0.1 servers that answer like Prometheus, or do not."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel import SpecModelError
from specmodel.metrics import fleet, promapi
from specmodel.metrics.scrape import ScrapePolicy
from tests.browser import free_port
from tests.replay import POLL_S, ReplayServer

VECTOR = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"job": "vllm", "instance": "gpu-1:8000"}, "value": [1795975000.0, "42"]}]}}) + "\n"


def prometheus_like(body: str, **kwargs) -> ReplayServer:
    """A real server answering /api/v1/query with `body` (the replay passes non-metric lines through)."""
    return ReplayServer(body, path="/api/v1/query", **kwargs)


class JSONError:
    """A real server answering every request with one HTTP status and a Prometheus error body."""

    def __init__(self, status: int, error_type: str, error: str):
        body = json.dumps({"status": "error", "errorType": error_type, "error": error}).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": POLL_S},
                         daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def ask(url: str, **server_kwargs):
    with httpx.Client() as client:
        return promapi.query(client, promapi.PromServer(url, **server_kwargs), "up")


@given(st.integers(min_value=1, max_value=10 * 365 * 86400))
def test_durations_round_trip(seconds):
    assert promapi.parse_duration(promapi.format_duration(seconds)) == seconds


@pytest.mark.parametrize("text", ["", "5", "m", "5x", "-5m", "5 m"])
def test_a_window_that_is_not_a_duration_is_refused(text):
    with pytest.raises(SpecModelError, match="is not a time window"):
        promapi.parse_duration(text)


def test_urls_are_normalised_and_checked_by_the_url_policy():
    assert promapi.PromServer("prom:9090/graph/").url == "http://prom:9090"
    with pytest.raises(SpecModelError, match="only http:// and https://"):
        promapi.PromServer("ftp://prom:9090")
    with pytest.raises(SpecModelError, match="cloud metadata address"):
        promapi.PromServer("http://169.254.169.254/")
    with pytest.raises(SpecModelError, match="not in SPECMODEL_ALLOWED_HOSTS"):
        promapi.PromServer("http://prom:9090", policy=ScrapePolicy(allowed_hosts=("metrics.internal",)))


def test_a_successful_query_returns_labels_and_values():
    with prometheus_like(VECTOR) as server:
        [sample] = ask(server.base_url)
    assert sample.labels == {"job": "vllm", "instance": "gpu-1:8000"} and sample.value == 42.0


def test_bearer_token_is_sent_and_never_shown():
    secret = "s3cr3t-token-value"
    with prometheus_like(VECTOR, token=secret) as server:
        with pytest.raises(SpecModelError) as err:
            ask(server.base_url, auth=promapi.PromAuth(bearer_token="wrong-" + secret))
        assert "refused the request (HTTP 401)" in str(err.value) and secret not in str(err.value)
        assert ask(server.base_url, auth=promapi.PromAuth(bearer_token=secret))[0].value == 42.0
        assert server.headers[-1]["Authorization"] == f"Bearer {secret}"
    assert secret not in repr(promapi.PromAuth(bearer_token=secret))


def test_basic_auth_is_sent_and_the_password_hidden():
    with prometheus_like(VECTOR) as server:
        ask(server.base_url, auth=promapi.PromAuth("reviewer", "pa55word"))
        assert server.headers[-1]["Authorization"] == httpx.BasicAuth("reviewer", "pa55word")._auth_header
    assert "pa55word" not in repr(promapi.PromAuth("reviewer", "pa55word"))
    with pytest.raises(SpecModelError, match="not both"):
        promapi.PromAuth("reviewer", "pa55word", bearer_token="t")


def test_user_info_in_the_url_is_masked_in_messages():
    port = free_port()
    with pytest.raises(SpecModelError) as err:
        ask(f"http://admin:hunter2@127.0.0.1:{port}")
    assert "hunter2" not in str(err.value) and f"127.0.0.1:{port}" in str(err.value)


def test_prometheus_down():
    port = free_port()
    with pytest.raises(SpecModelError, match=f"cannot reach Prometheus at http://127.0.0.1:{port}: "
                                             "connection refused"):
        ask(f"http://127.0.0.1:{port}")


@pytest.mark.parametrize("mode, expected", [
    ("html", "did not answer like a Prometheus server (got text/html)"),
    ("500", "answered HTTP 500"),
    ("redirect:http://169.254.169.254/latest/meta-data/", "redirects to http://169.254.169.254/"),
])
def test_servers_that_are_not_prometheus(mode, expected):
    with prometheus_like(VECTOR, mode=mode) as server:
        with pytest.raises(SpecModelError) as err:
            ask(server.base_url)
    assert expected in str(err.value)


def test_a_metrics_endpoint_is_not_a_prometheus_server():
    with ReplayServer("vllm_v1_specdecode_sample.txt") as server:  # /api/v1/query is a 404 there
        with pytest.raises(SpecModelError, match="has no Prometheus API at /api/v1/query .HTTP 404.: give the "
                                                 "server's base URL"):
            ask(server.base_url)


def test_a_slow_server_times_out(monkeypatch):
    monkeypatch.setattr(promapi, "EXCHANGE_MARGIN_S", 0.4)  # from its 2 s: the test waits 0.5 s, not 2.5
    with prometheus_like(VECTOR, mode="slow") as server:
        with pytest.raises(SpecModelError, match=r"did not answer within 0\.5 s"):
            ask(server.base_url, timeout_s=0.1)


def test_a_runaway_response_is_cut_off():
    with prometheus_like(VECTOR, mode="huge") as server:
        with pytest.raises(SpecModelError, match="sent more than 1 MB, so reading stopped"):
            ask(server.base_url, policy=ScrapePolicy(max_bytes=2**20))


@pytest.mark.parametrize("status, error_type, expected", [
    (503, "timeout", "gave up on the query (timeout: query timed out in expression evaluation)"),
    (422, "execution", "could not run the query (execution: many-to-many matching not allowed)"),
])
def test_prometheus_errors_are_reported_with_their_type(status, error_type, expected):
    detail = expected.split(": ", 1)[1].rstrip(")")
    with JSONError(status, error_type, detail) as server:
        with pytest.raises(SpecModelError) as err:
            ask(server.url)
    assert expected in str(err.value)


def test_label_filters_with_braces_or_ranges_are_refused():
    assert fleet.check_selector('{job="vllm"}') == 'job="vllm"'
    with pytest.raises(SpecModelError, match="label matchers only"):
        fleet.check_selector('job="vllm"}[5m]')


def test_instance_rows_become_samples_with_their_labels_as_given_and_no_nan():
    """The samples keep the label as given; the snapshot's model name is the one shown (issue 41, 5: no
    line break, which forged a line of `scrape`)."""
    odd = 'odd "name" \\ with\nnewline'
    rows = [({fleet.SERIES_LABEL: "vllm:generation_tokens_total", "job": "j", "instance": "i",
              "model_name": odd}, 12.5),
            ({fleet.SERIES_LABEL: "vllm:num_requests_running", "job": "j", "instance": "i",
              "model_name": odd}, float("nan"))]
    assert [(s.name, s.labels, s.value) for s in fleet.samples_of(rows)] == [
        ("vllm:generation_tokens_total", {"model_name": odd}, 12.5)]
    [(snap, window)] = fleet.windows_for_instance(rows, window_s=4.0, at_s=100.0)
    assert snap.model_name == odd.replace("\n", " ") and snap.model_names == (odd.replace("\n", " "),)
    assert snap.counters["generation_tokens"] == 12.5 and "running" not in snap.gauges
    assert window.generation_tokens == 12.5 and window.window_s == 4.0


def test_an_instance_whose_every_value_is_nan_is_a_problem_said_in_words():
    rows = [({fleet.SERIES_LABEL: "vllm:generation_tokens_total", "job": "j", "instance": "i"}, float("nan"))]
    with pytest.raises(SpecModelError, match="every series of this instance is NaN or infinite"):
        fleet.windows_for_instance(rows, window_s=4.0, at_s=100.0)


def test_cli_refuses_two_ways_to_log_in_with_one_line(monkeypatch, capsys):
    from specmodel import cli

    monkeypatch.setenv("SPECMODEL_PROMETHEUS_TOKEN", "tok-123")
    assert cli.main(["fleet", "http://127.0.0.1:9", "--user", "reviewer"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --user and $SPECMODEL_PROMETHEUS_TOKEN are both set: use one way to log in\n"
    assert "tok-123" not in err
