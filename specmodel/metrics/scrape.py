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

Every failure raises SpecModelError with what happened and what to check, naming the URL (the GET
itself, its bounds and its failures by type: `specmodel.metrics.fetch`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import ipaddress
import os
import re
import socket
import time
from dataclasses import dataclass
from urllib.parse import quote, unquote

import httpcore
import httpcore._backends.sync
import httpx

from specmodel.errors import SpecModelError
from specmodel.text import clean_name
from specmodel.metrics.fetch import (DeadlinePassed, FetchFailed, GetLimits, Wording,
                                     bounded_timeout, capped_get, check_token, deadline_passed, total_deadline)
from specmodel.metrics.prom import LiveStats, Snapshot, parse_snapshot, stats_from_window, window_between

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

    def limits(self) -> GetLimits:
        return GetLimits(connect_s=self.connect_timeout_s, read_s=self.read_timeout_s,
                         total_s=self.total_timeout_s, max_bytes=self.max_bytes)

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


_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)?(?P<userinfo>[^/?#@]*)@(?P<rest>.*)$", re.S)


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """(the URL without `user:password@`, user, password); user is None when the URL has none.
    Works without a scheme too (`admin:pw@host:8000`), where a URL parser would see 'admin' as one.

    >>> split_credentials("http://admin:p%40ss@host:8000/metrics")
    ('http://host:8000/metrics', 'admin', 'p@ss')
    """
    text = (url or "").strip()
    m = _USERINFO.match(text)
    if not m:
        return text, None, None
    user, _, password = m.group("userinfo").partition(":")
    return (m.group("scheme") or "") + m.group("rest"), unquote(user), unquote(password) or None


def with_credentials(url: str, user: str | None, password: str | None) -> str:
    """The URL with `user:password@` put back (for the request only; never shown or linked)."""
    if not user:
        return url
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "http", url
    userinfo = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    return f"{scheme}://{userinfo}@{rest}"


def display_url(url) -> str:
    """The URL as it may be shown: any user:password replaced by *** (with or without a scheme)."""
    text, user, _password = split_credentials(str(url))
    if user is not None:
        scheme, sep, rest = text.partition("://")
        text = f"{scheme}://***@{rest}" if sep else f"***@{text}"
    try:
        httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError):
        return "<invalid URL>"
    return clean_name(text, 300)[0]


def _host_allowed(host: str, port: int, allowed: tuple[str, ...]) -> bool:
    """Whether host:port is on the allow-list. A leading `*.` stands for one or more name labels
    (`*.svc.cluster.local` admits `vllm.prod.svc.cluster.local`); any other `*` for one label or one
    number of an IPv4 address, never for a dot: `10.0.0.*` admits `10.0.0.7`, not `10.0.0.7.evil.example`."""
    host = host.strip("[]").lower()
    for entry in allowed:
        name, want_port = _allow_entry(entry)
        if want_port and want_port != str(port):
            continue
        pattern = name.lower()
        if pattern == "*":
            return True
        if _same_ip(pattern, host):
            return True
        want, got = pattern.split("."), host.split(".")
        if want[0] == "*" and len(want) > 1 and len(got) >= len(want):
            got = got[len(got) - len(want) + 1:]
            want = want[1:]
        if len(want) == len(got) and all(fnmatch.fnmatchcase(g, w) for w, g in zip(want, got)):
            return True
    return False


def _allow_entry(entry: str) -> tuple[str, str]:
    """(host pattern, port or "") of one allow-list entry: `host`, `host:port`, `[v6]`, `[v6]:port`
    or a bare IPv6 address (`::1`, no port)."""
    entry = entry.strip()
    if entry.startswith("["):
        inside, _, after = entry[1:].partition("]")
        return inside, after[1:] if after.startswith(":") else ""
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return (name, port) if name else (entry, "")
    return entry, ""


def _same_ip(pattern: str, host: str) -> bool:
    """Whether both are IP addresses and the same one (`0:0::1` is `::1`)."""
    try:
        return ipaddress.ip_address(pattern) == ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries, if any: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
    (::ffff:0:a.b.c.d, RFC 2765), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96, RFC 6052), ISATAP
    (an interface id of 0:5efe or 200:5efe, RFC 5214), 6to4 (2002::/16), Teredo. The local-use NAT64
    prefix 64:ff9b:1::/48 may place the address at any RFC 6052 offset: `embedded_ipv4s` lists each."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    value, high = int(ip), int(ip) >> 32
    if ((high == 0 and value > 1)  # ::a.b.c.d (deprecated, still routed by some stacks)
            or high == 0xFFFF0000 or ip in _NAT64 or ip in _NAT64_LOCAL  # ::ffff:0:a.b.c.d, 64:ff9b::a.b.c.d
            or high & 0xFDFFFFFF == 0x5EFE):  # ISATAP: ...:0:5efe:a.b.c.d or ...:200:5efe:a.b.c.d
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def embedded_ipv4s(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address the IPv6 address may carry: `_embedded_ipv4`'s, and for the local-use NAT64
    prefix each RFC 6052 layout it allows (prefix length 48, 56, 64, 96; bits 64-71 skipped)."""
    found = [a for a in [_embedded_ipv4(ip)] if a is not None]
    if ip in _NAT64_LOCAL:
        bits = int(ip)
        for prefix in (48, 56, 64):
            # the 32 IPv4 bits follow the prefix, jumping over bits 64..71 (the "u" octet)
            octets = []
            pos = prefix
            while len(octets) < 4:
                if pos == 64:
                    pos += 8
                octets.append((bits >> (120 - pos)) & 0xFF)
                pos += 8
            found.append(ipaddress.IPv4Address(bytes(octets)))
    return found


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def refused_address(address: str) -> str | None:
    """Why this host name or IP address is never fetched (None: it may be). Checks the literal
    metadata names and addresses, link-local ranges, and the IPv4 address inside IPv6 forms."""
    text = address.strip("[]").lower()
    if text in METADATA_HOSTS:
        return "a cloud metadata address"
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    shown = "" if str(ip) == text else f" (= {ip})"
    if isinstance(ip, ipaddress.IPv6Address):
        for inner in embedded_ipv4s(ip):
            reason = refused_address(str(inner))
            if reason:
                return f"{reason.split(' (= ')[0]} ({inner}, inside the IPv6 address {ip})"
    if str(ip) in METADATA_HOSTS:
        return "a cloud metadata address" + shown
    if ip.is_link_local:
        return "a link-local address (where cloud metadata services live)" + shown
    return None


def check_url(url: str, policy: ScrapePolicy | None = None, *, resolve: bool = True) -> httpx.URL:
    """The URL if the policy allows fetching it, else SpecModelError saying why.

    The allow-list only narrows: metadata and link-local addresses are refused whatever it says,
    and a name is resolved and every address checked. (The connection itself checks the address it
    connects to once more: `make_client`.)"""
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
        if not u.scheme or not text.lower().startswith(u.scheme + "://"):  # no scheme, host:port, user:pw@host
            raise SpecModelError(f"'{display_url(text)}' has no http:// or https:// in front: write it as "
                                 "http://host:port/metrics")
        raise SpecModelError(f"'{display_url(text)}' uses '{(u.scheme or 'no')[:20]}' scheme; only http:// and "
                             "https:// URLs can be scraped (e.g. http://host:8000/metrics)")
    host = (u.host or "").lower()
    if not host:
        raise SpecModelError(f"'{display_url(text)}' names no host: write it as http://host:port/metrics")
    port = u.port or (443 if u.scheme == "https" else 80)
    allowed = policy.allowed_hosts
    if allowed is not None and not _host_allowed(host, port, allowed):
        raise SpecModelError(f"host '{host}' is not in {ALLOWED_HOSTS_ENV} ({', '.join(allowed)}): ask "
                             "whoever runs this dashboard to add it, or use an allowed host")
    reason = refused_address(host)
    if reason:
        raise SpecModelError(f"'{host}' is {reason}, which is never scraped: use the inference server's own "
                             "address")
    if resolve:
        _check_resolved(host, _resolve(host, port, text))
    return u


def _check_resolved(host: str, addresses) -> None:
    """SpecModelError where the host resolves to an address that is never fetched."""
    for address in addresses:
        reason = refused_address(address)
        if reason:
            raise SpecModelError(f"'{host}' resolves to {address}, {reason}, which is never scraped: use "
                                 "the inference server's own address")


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


# --- the connection: the address checked is the address connected to, within a total deadline ------

class _CheckedBackend(httpcore.SyncBackend):
    """Resolves the host once, checks every address against the URL policy and connects to an
    allowed one by its IP address. httpcore keeps the URL's host name for the Host header and for
    TLS (SNI and certificate checks), so only where the bytes go is pinned, not what is asked for."""

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        name = host.decode() if isinstance(host, bytes) else str(host)
        timeout = bounded_timeout(timeout)
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError, OSError) as exc:  # kept as the cause: fetch tells DNS by it
            raise httpcore.ConnectError(f"name resolution failed: {exc}") from exc
        _check_resolved(name, [address[0] for *_, address in infos])
        last: Exception | None = None
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(timeout)
                if local_address is not None:
                    sock.bind((local_address, 0))
                sock.connect(address)  # the IP checked above: no second lookup
                for option in socket_options or ():
                    sock.setsockopt(*option)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except socket.timeout:
                sock.close()
                if deadline_passed(margin_s=0.01):
                    raise DeadlinePassed("no connection within the total time allowed") from None
                raise httpcore.ConnectTimeout(f"no connection to {address[0]} within {timeout} s") from None
            except OSError as exc:
                sock.close()
                last = exc
                continue
            return httpcore._backends.sync.SyncStream(sock)
        raise httpcore.ConnectError(str(last or "no address to connect to")) from last


class _CheckedTransport(httpx.HTTPTransport):
    """httpx's transport with the checked network backend (httpx has no argument for it; its pool
    keeps the backend in `_network_backend`, stable across httpcore 1.x)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._pool._network_backend = _CheckedBackend()


def make_client(policy: ScrapePolicy | None = None) -> httpx.Client:
    """An httpx client with the policy's timeouts, no automatic redirects (each is re-checked) and
    no proxy or .netrc from the environment (so neither can route around the URL policy)."""
    policy = policy or ScrapePolicy()
    return httpx.Client(timeout=policy.limits().timeout(), follow_redirects=False, trust_env=False,
                        transport=_CheckedTransport(trust_env=False),
                        headers={"Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1"})


# A /metrics page: where a failure is the server's or the URL's, and what it should have sent.
METRICS_PAGE = Wording(
    too_large=("{where} sent more than {max_size}, so reading stopped: a /metrics page is normally well under "
               "1 MB; check the URL"),
    unauthorised=("{where} answered HTTP {status} ({reason}): the server wants a bearer token, or rejected the "
                  "one given; check the token"),
    not_found="{where} answered HTTP 404 (not found): the path is wrong; vLLM and SGLang serve their metrics at /metrics",
    status="{where} answered HTTP {status}: expected 200 with Prometheus metrics text",
)


def _is_metrics_answer(response: httpx.Response) -> bool:
    return response.status_code == 200 and "html" not in response.headers.get("content-type", "").lower()


def fetch_text(client: httpx.Client, url: str, *, token: str | None = None,
               policy: ScrapePolicy | None = None) -> str:
    """GET the URL under the policy and return the body as text. Redirects are followed by hand,
    each target checked again; the bearer token goes only to the origin it was given for; all hops
    together end within the policy's total time."""
    policy = policy or ScrapePolicy()
    current = check_url(url, policy)
    check_token(token)
    if token and current.userinfo:  # one Authorization header per request: the token was silently dropped
        raise SpecModelError(f"{display_url(current)} carries a user name and password and a bearer token is given "
                             "too; a request sends one or the other: remove the user:password from the URL or "
                             "clear the token")
    origin = (current.scheme, current.host, current.port)
    shown = display_url(current)
    with total_deadline(policy.total_timeout_s):
        for hop in range(policy.max_redirects + 1):
            headers = {}
            if token and (current.scheme, current.host, current.port) == origin:
                headers["Authorization"] = f"Bearer {token}"
            here = shown if not hop else f"{display_url(current)} (redirected from {shown})"  # the hop that failed
            got = capped_get(client, current, where=here, limits=policy.limits(), wording=METRICS_PAGE,
                             headers=headers, read_body_if=_is_metrics_answer)
            if got.is_redirect:
                try:
                    target = current.join(got.headers.get("location", ""))
                except (httpx.InvalidURL, ValueError):
                    raise SpecModelError(f"{shown} redirected to an invalid location") from None
                try:
                    current = check_url(str(target), policy)
                except SpecModelError as exc:
                    raise SpecModelError(f"{shown} redirected to {display_url(target)}, which is refused: "
                                         f"{exc}") from None
                continue
            got.check_status(ok={200})
            if "html" in got.headers.get("content-type", "").lower():
                raise SpecModelError(f"{here} returned an HTML page, not Prometheus metrics text: check "
                                     "the path (usually /metrics) and that no login page or proxy sits in front")
            return got.body.decode("utf-8", errors="replace")
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
    except FetchFailed as exc:
        if exc.status != 404 or _alternative_url(url) is None:
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
    first, last, stats, _plain = measure_beside(client, url, None, window_s, token=token, policy=policy,
                                                model_name=model_name, k=k, sleep=sleep)
    return first, last, stats


def _same_origin(a: str, b: str) -> bool:
    try:
        x, y = httpx.URL(a), httpx.URL(b)
    except (httpx.InvalidURL, TypeError, ValueError):
        return False
    return (x.scheme, x.host, x.port) == (y.scheme, y.host, y.port)


def measure_beside(client: httpx.Client, url: str, plain_url: str | None, window_s: float, *,
                   token: str | None = None, policy: ScrapePolicy | None = None, model_name: str | None = None,
                   k: int | None = None, sleep=time.sleep) -> tuple[Snapshot, Snapshot, LiveStats, LiveStats | None]:
    """`measure` of the server at url and, over the same window, of a plain server at plain_url (its busiest
    model; None: none): (first, last, the window's statistics, the plain server's or None). The bearer token
    goes to the plain server only where it shares url's origin."""
    if not window_s > 0:
        raise SpecModelError(f"the window must be longer than 0 s, got {window_s}")
    plain_token = token if plain_url and _same_origin(url, plain_url) else None
    first = scrape_snapshot(client, url, token=token, policy=policy, model_name=model_name, k=k)
    plain_first = scrape_snapshot(client, plain_url, token=plain_token, policy=policy) if plain_url else None
    sleep(window_s)
    last = scrape_snapshot(client, first.source_url or url, token=token, policy=policy,
                           model_name=first.model_name, k=k)
    if first.source_url and not last.source_url:
        last = dataclasses.replace(last, source_url=first.source_url)
    plain = None
    if plain_first is not None:
        plain_last = scrape_snapshot(client, plain_first.source_url or plain_url, token=plain_token, policy=policy,
                                     model_name=plain_first.model_name)
        plain = stats_from_window(window_between(plain_first, plain_last))
    return first, last, stats_from_window(window_between(first, last)), plain
