"""The one capped GET (specmodel.metrics.fetch) against real sockets on 127.0.0.1: each way a fetch fails is
told apart by the exception's type, and the message names the URL and says what to check.

Every case runs with a plain httpx.Client (the Fleet page's) and with scrape.make_client (the Live
page's, whose own network backend resolves and connects)."""

from __future__ import annotations

import re
import socket
import ssl

import httpx
import pytest

from specmodel import SpecModelError
from specmodel.metrics import fetch, scrape
from tests.replay import ReplayServer

LIMITS = fetch.GetLimits(connect_s=1.0, read_s=0.3, total_s=1.0, max_bytes=64 * 1024)


@pytest.fixture(params=["httpx.Client", "scrape.make_client"])
def client(request):
    with (httpx.Client() if request.param == "httpx.Client" else scrape.make_client()) as c:
        yield c


def failure(client, url: str, limits=LIMITS) -> fetch.FetchFailed:
    with pytest.raises(fetch.FetchFailed) as info:
        fetch.capped_get(client, url, where=url, limits=limits).check_status()
    assert isinstance(info.value, SpecModelError)
    return info.value


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: nothing listens there


def test_an_answer_comes_back_whole(client):
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv:
        got = fetch.capped_get(client, srv.url, where=srv.url, limits=fetch.GetLimits(max_bytes=2**20))
        expected = srv.body(0).encode()
    assert (got.status, got.body) == (200, expected)
    got.check_status()  # 200: nothing to say


def test_a_closed_port_is_refused(client):
    url = f"http://127.0.0.1:{closed_port()}/metrics"
    err = failure(client, url)
    assert err.kind == "refused"
    assert str(err) == (f"cannot connect to {url} (connection refused or unreachable): is the server running, "
                        "and is the port right?")


def test_a_server_that_never_answers_times_out():
    with socket.socket() as listener:  # the kernel accepts the connection; nobody ever reads or writes
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/metrics"
        for make in (httpx.Client, scrape.make_client):
            with make() as client:
                err = failure(client, url)
            assert err.kind == "read_timeout", make
            assert str(err) == (f"{url} accepted the connection but sent nothing for 0.3 s: the server is stuck "
                                "or overloaded")


def test_a_body_over_the_cap_stops_the_read(client):
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="huge") as srv:  # about 100 MB, streamed
        err = failure(client, srv.url)
    assert err.kind == "too_large"
    assert str(err) == f"{srv.url} sent more than 64 kB, so reading stopped: check the URL"


def test_a_name_under_the_reserved_invalid_domain_does_not_resolve(client):
    url = "http://no-such-host.invalid:8000/metrics"  # RFC 6761: .invalid never resolves
    err = failure(client, url)
    assert err.kind == "name_not_found"
    assert str(err) == f"cannot resolve the host of {url} (DNS): check the host name"


def test_https_to_a_plain_http_server_is_a_tls_failure(client):
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv:
        url = srv.url.replace("http://", "https://")
        err = failure(client, url)
    assert err.kind == "tls"
    assert str(err).startswith(f"the TLS connection to {url} failed (")
    assert "check that the server speaks the URL's scheme (http:// or https://)" in str(err)


def test_a_trickling_server_ends_at_the_total_deadline_with_part_of_the_body(client):
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="trickle") as srv:  # one byte every 0.2 s
        size = len(srv.body(0).encode())
        # a read limit far above the trickle's 0.2 s between bytes: a late byte on a loaded machine cannot
        # end it first; the total deadline does, as short as a few of the trickle's bytes
        err = failure(client, srv.url, fetch.GetLimits(connect_s=1.0, read_s=5.0, total_s=0.5))
    assert err.kind == "too_slow"
    m = re.fullmatch(rf"{re.escape(srv.url)} is too slow: after 0.5 s only part of the answer had arrived "
                     r"\((\d+) bytes\); the server or the network is overloaded", str(err))
    assert m, str(err)
    assert int(m.group(1)) < size / 10, f"{m.group(1)} of {size} bytes arrived: reading did not stop in time"


@pytest.mark.parametrize("mode, kind, text", [
    ("404", "not_found", "answered HTTP 404 (not found): check the path"),
    ("500", "server_error", "answered HTTP 500 (server error): the server is up but failing; check its logs"),
])
def test_http_errors_are_named_by_status(client, mode, kind, text):
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode=mode) as srv:
        err = failure(client, srv.url)
    assert (err.kind, err.status, str(err)) == (kind, int(mode), f"{srv.url} {text}")


# --- by type, not by text: the exceptions httpx raises, fed through a MockTransport ----------------

def _raising(cause: BaseException | None, message: str = "[Errno -2] Name or service not known"):
    def handler(request):
        raise httpx.ConnectError(message, request=request) from cause
    return httpx.Client(transport=httpx.MockTransport(handler))


@pytest.mark.parametrize("cause, kind", [
    (socket.gaierror(-2, "Name or service not known"), "name_not_found"),
    (None, "refused"),  # the words of a DNS failure, without the gaierror behind them: not read as DNS
    (ConnectionRefusedError(111, "Connection refused"), "refused"),
    (ssl.SSLCertVerificationError(1, "certificate verify failed"), "tls"),
])
def test_connect_errors_are_told_apart_by_their_cause(cause, kind):
    with _raising(cause) as client:
        assert failure(client, "http://prom.example:9090/api/v1/query").kind == kind


def test_a_certificate_failure_says_why():
    cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    cause.verify_message = "self-signed certificate"
    with _raising(cause, "certificate verify failed") as client:
        err = failure(client, "https://prom.example:9090/")
    assert "failed (self-signed certificate): check that the server speaks" in str(err)


def test_an_inner_deadline_never_extends_the_outer_one():
    with fetch.total_deadline(0.0):
        with fetch.total_deadline(3600.0):
            assert fetch.deadline_passed()
            with pytest.raises(fetch.DeadlinePassed):
                fetch.bounded_timeout(5.0)
    assert not fetch.deadline_passed()  # no deadline outside the blocks
