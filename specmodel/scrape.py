"""Fetch a server's `/metrics` safely: URL policy, timeouts, a size cap, errors for people.

    policy = ScrapePolicy.from_env()          # SPECMODEL_ALLOWED_HOSTS, if set, limits the hosts
    with make_client(policy) as client:       # or any httpx.Client (the testing seam)
        snap = scrape_snapshot(client, "http://10.0.0.7:8000/metrics", policy=policy)
        first, last, stats = measure(client, url, window_s=10, policy=policy)

The policy: http and https only; when SPECMODEL_ALLOWED_HOSTS is set (comma-separated host names
or IP addresses, `*.example.com` wildcards, optional `:port`), only those hosts; cloud metadata
endpoints (169.254.169.254, fd00:ec2::254, metadata.google.internal, ...) and any name resolving
to them are refused unless the allow-list names them explicitly. Every redirect is checked again,
and the bearer token is sent only to the origin it was given for. The token never appears in a
message (user:password in a URL is masked too). Reading stops past `max_bytes`, and a whole
request, however slowly it trickles, ends after `total_timeout_s`.

Every failure raises SpecModelError with what happened and what to check, naming the URL.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import ipaddress
import os
import socket
import time
from dataclasses import dataclass

import httpx

from .errors import SpecModelError
from .prom import LiveStats, Snapshot, parse_snapshot, stats_from_window, window_between

ALLOWED_HOSTS_ENV = "SPECMODEL_ALLOWED_HOSTS"

# Instance-metadata endpoints of the big clouds: reading them from a server can leak credentials.
METADATA_HOSTS = frozenset({
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
    "fd00:ec2::254",  # AWS IPv6
    "169.254.170.2",  # AWS ECS task metadata
    "100.100.100.200",  # Alibaba Cloud
    "metadata.google.internal", "metadata.goog", "metadata",
})


@dataclass(frozen=True)
class ScrapePolicy:
    """Where and how much to fetch. Defaults suit a /metrics page (a few hundred kB)."""

    allowed_hosts: tuple[str, ...] | None = None  # None: any host except cloud metadata
    max_bytes: int = 32 * 1024 * 1024
    connect_timeout_s: float = 3.0
    read_timeout_s: float = 10.0  # longest silence between two chunks
    total_timeout_s: float = 20.0  # the whole request, however it trickles
    max_redirects: int = 3

    @classmethod
    def for_interval(cls, interval_s: float, environ=None) -> "ScrapePolicy":
        """The policy for scraping every interval_s seconds: a scrape may not outlast most of it."""
        return cls.from_env(environ, total_timeout_s=min(cls.total_timeout_s, max(2.0, 0.8 * interval_s)))

    @classmethod
    def from_env(cls, environ=None, **overrides) -> "ScrapePolicy":
        """The allow-list from SPECMODEL_ALLOWED_HOSTS (unset or empty: no allow-list)."""
        raw = (os.environ if environ is None else environ).get(ALLOWED_HOSTS_ENV, "")
        hosts = tuple(h.strip().lower() for h in raw.split(",") if h.strip())
        return cls(allowed_hosts=hosts or None, **overrides)


def display_url(url) -> str:
    """The URL as it may be shown: any user:password replaced by ***."""
    try:
        u = httpx.URL(str(url))
    except (httpx.InvalidURL, TypeError, ValueError):
        return "<invalid URL>"
    if u.userinfo:
        u = u.copy_with(username="***", password=None)
    return str(u)


def _host_allowed(host: str, port: int, allowed: tuple[str, ...]) -> bool:
    for entry in allowed:
        name, _, want_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if not name:
            name, want_port = entry, ""
        if want_port and want_port != str(port):
            continue
        if fnmatch.fnmatch(host, name.strip("[]")):
            return True
    return False


def _is_metadata(address: str) -> bool:
    if address.lower() in METADATA_HOSTS:
        return True
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip) in METADATA_HOSTS or ip.is_link_local


def check_url(url: str, policy: ScrapePolicy | None = None, *, resolve: bool = True) -> httpx.URL:
    """The URL if the policy allows fetching it, else SpecModelError saying why."""
    policy = policy or ScrapePolicy()
    text = (url or "").strip()
    if not text:
        raise SpecModelError("no URL given: enter the server's metrics URL, e.g. http://host:8000/metrics")
    try:
        u = httpx.URL(text)
    except (httpx.InvalidURL, ValueError) as exc:
        raise SpecModelError(f"'{display_url(text)}' is not a valid URL ({exc}): "
                             "write it as http://host:port/metrics") from None
    if u.scheme not in ("http", "https"):
        raise SpecModelError(f"'{display_url(text)}' uses '{u.scheme or 'no'}' scheme; only http:// and "
                             "https:// URLs can be scraped (e.g. http://host:8000/metrics)")
    host = (u.host or "").lower()
    if not host:
        raise SpecModelError(f"'{display_url(text)}' names no host: write it as http://host:port/metrics")
    port = u.port or (443 if u.scheme == "https" else 80)
    allowed = policy.allowed_hosts
    explicitly = allowed is not None and _host_allowed(host, port, allowed)
    if allowed is not None and not explicitly:
        raise SpecModelError(f"host '{host}' is not in {ALLOWED_HOSTS_ENV} ({', '.join(allowed)}): ask "
                             "whoever runs this dashboard to add it, or use an allowed host")
    if not explicitly:
        if _is_metadata(host):
            raise SpecModelError(f"'{host}' is a cloud metadata address, which is never scraped unless "
                                 f"{ALLOWED_HOSTS_ENV} names it: use the inference server's own address")
        if resolve:
            for address in _resolve(host, port, text):
                if _is_metadata(address):
                    raise SpecModelError(f"'{host}' resolves to {address}, a cloud metadata or link-local "
                                         f"address, which is never scraped unless {ALLOWED_HOSTS_ENV} names "
                                         "it: use the inference server's own address")
    return u


def _resolve(host: str, port: int, url: str) -> list[str]:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return [host.strip("[]")]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise SpecModelError(f"cannot resolve host '{host}' of {display_url(url)} (DNS: {exc.args[-1] if exc.args else exc}): "
                             "check the host name, or use an IP address") from None
    return sorted({info[4][0] for info in infos})


def make_client(policy: ScrapePolicy | None = None) -> httpx.Client:
    """An httpx client with the policy's timeouts, no automatic redirects (each is re-checked) and
    no proxy or .netrc from the environment (so neither can route around the URL policy)."""
    policy = policy or ScrapePolicy()
    return httpx.Client(timeout=_timeout(policy), follow_redirects=False, trust_env=False,
                        headers={"Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1"})


def _timeout(policy: ScrapePolicy) -> httpx.Timeout:
    return httpx.Timeout(connect=policy.connect_timeout_s, read=policy.read_timeout_s,
                         write=policy.read_timeout_s, pool=policy.connect_timeout_s)


def _status_message(code: int, shown: str) -> str:
    if code in (401, 403):
        return (f"{shown} answered HTTP {code} ({'unauthorised' if code == 401 else 'forbidden'}): the "
                "server wants a bearer token, or rejected the one given; check the token")
    if code == 404:
        return (f"{shown} answered HTTP 404 (not found): the path is wrong; vLLM and SGLang serve "
                "their metrics at /metrics")
    if code >= 500:
        return (f"{shown} answered HTTP {code} (server error): the server is up but failing; check its logs")
    return f"{shown} answered HTTP {code}: expected 200 with Prometheus metrics text"


def fetch_text(client: httpx.Client, url: str, *, token: str | None = None,
               policy: ScrapePolicy | None = None) -> str:
    """GET the URL under the policy and return the body as text."""
    policy = policy or ScrapePolicy()
    current = check_url(url, policy)
    origin = (current.scheme, current.host, current.port)
    shown = display_url(current)
    deadline = time.monotonic() + policy.total_timeout_s
    for _hop in range(policy.max_redirects + 1):
        headers = {}
        if token and (current.scheme, current.host, current.port) == origin:
            headers["Authorization"] = f"Bearer {token}"
        try:
            with client.stream("GET", current, headers=headers, timeout=_timeout(policy),
                               follow_redirects=False) as response:
                if response.is_redirect:
                    location = response.headers.get("location", "")
                    try:
                        target = current.join(location)
                    except (httpx.InvalidURL, ValueError):
                        raise SpecModelError(f"{shown} redirected to an invalid location") from None
                    try:
                        current = check_url(str(target), policy)
                    except SpecModelError as exc:
                        raise SpecModelError(f"{shown} redirected to {display_url(target)}, which is refused: "
                                             f"{exc}") from None
                    continue
                if response.status_code != 200:
                    raise SpecModelError(_status_message(response.status_code, shown))
                ctype = response.headers.get("content-type", "").lower()
                if "html" in ctype:
                    raise SpecModelError(f"{shown} returned an HTML page, not Prometheus metrics text: check "
                                         "the path (usually /metrics) and that no login page or proxy sits in front")
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > policy.max_bytes:
                        raise SpecModelError(
                            f"{shown} sent more than {policy.max_bytes / 2**20:.0f} MB, so reading stopped: "
                            "a /metrics page is normally well under 1 MB; check the URL")
                    if time.monotonic() > deadline:
                        raise SpecModelError(
                            f"{shown} is too slow: after {policy.total_timeout_s:g} s only {len(body)} bytes had "
                            "arrived; the server or the network is overloaded")
                return body.decode("utf-8", errors="replace")
        except httpx.ConnectTimeout:
            raise SpecModelError(f"no connection to {shown} within {policy.connect_timeout_s:g} s: check the "
                                 "host and port, and any firewall between here and the server") from None
        except httpx.ReadTimeout:
            raise SpecModelError(f"{shown} accepted the connection but sent nothing for "
                                 f"{policy.read_timeout_s:g} s: the server is stuck or overloaded") from None
        except httpx.TimeoutException:
            raise SpecModelError(f"{shown} timed out: check that the server is healthy") from None
        except httpx.ConnectError as exc:
            reason = str(exc).lower()
            if "name or service" in reason or "nodename" in reason or "resolution" in reason:
                raise SpecModelError(f"cannot resolve the host of {shown} (DNS): check the host name") from None
            raise SpecModelError(f"cannot connect to {shown} (connection refused or unreachable): is the "
                                 "server running, and is the port right?") from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise SpecModelError(f"{shown} broke off the response ({type(exc).__name__}): the server "
                                 "closed the connection; try again or check its logs") from None
        except httpx.HTTPError as exc:
            raise SpecModelError(f"fetching {shown} failed ({type(exc).__name__}): check the URL") from None
    raise SpecModelError(f"{shown} redirected more than {policy.max_redirects} times: use the final URL")


TRTLLM_METRICS_PATH = "/prometheus/metrics"  # trtllm-serve's Prometheus text; its /metrics answers JSON


def _alternative_url(url: str) -> str | None:
    """The same server's /prometheus/metrics for a URL ending in /metrics (TensorRT-LLM's trtllm-serve)."""
    try:
        u = httpx.URL(str(url).strip())
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    path = u.path.rstrip("/")
    if not path.endswith("/metrics") or path.endswith(TRTLLM_METRICS_PATH):
        return None
    return str(u.copy_with(path=path[: -len("/metrics")] + TRTLLM_METRICS_PATH, query=None))


def scrape_snapshot(client: httpx.Client, url: str, *, token: str | None = None,
                    policy: ScrapePolicy | None = None, model_name: str | None = None,
                    k: int | None = None) -> Snapshot:
    """Fetch and parse one snapshot; the scrape time is taken when the body has arrived.

    When a `/metrics` URL answers 404, something that is not Prometheus text (trtllm-serve answers
    JSON there) or no inference-server series, the same server's `/prometheus/metrics` is tried;
    the snapshot's `source_url` then says where the metrics were found."""
    try:
        text = fetch_text(client, url, token=token, policy=policy)
    except SpecModelError as exc:
        if "HTTP 404" not in str(exc) or _alternative_url(url) is None:
            raise
        first_error = exc
    else:
        try:
            return parse_snapshot(text, model_name=model_name, at=time.time(), k=k)
        except SpecModelError as exc:
            first_error = SpecModelError(f"{display_url(url)}: {exc}")
            if _alternative_url(url) is None:
                raise first_error from None
    alt = _alternative_url(url)
    try:
        text = fetch_text(client, alt, token=token, policy=policy)
        snap = parse_snapshot(text, model_name=model_name, at=time.time(), k=k)
    except SpecModelError as exc:
        raise SpecModelError(f"{first_error} (also tried {display_url(alt)}, where TensorRT-LLM serves its "
                             f"metrics: {exc})") from None
    return dataclasses.replace(snap, source_url=alt)


def measure(client: httpx.Client, url: str, window_s: float, *, token: str | None = None,
            policy: ScrapePolicy | None = None, model_name: str | None = None, k: int | None = None,
            sleep=time.sleep) -> tuple[Snapshot, Snapshot, LiveStats]:
    """Two snapshots `window_s` apart and the statistics of the window between them."""
    if not window_s > 0:
        raise SpecModelError(f"the window must be longer than 0 s, got {window_s}")
    first = scrape_snapshot(client, url, token=token, policy=policy, model_name=model_name, k=k)
    sleep(window_s)
    last = scrape_snapshot(client, first.source_url or url, token=token, policy=policy,
                           model_name=first.model_name, k=k)
    if first.source_url and not last.source_url:
        last = dataclasses.replace(last, source_url=first.source_url)
    return first, last, stats_from_window(window_between(first, last))
