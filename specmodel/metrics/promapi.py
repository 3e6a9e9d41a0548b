"""Query a Prometheus server's HTTP API (/api/v1/query, /api/v1/query_range) and say clearly what went wrong.

An `httpx.Client` is passed in (the testing seam; `scrape.make_client` makes a suitable one).
The Live page's URL policy applies (`scrape.check_url`: http/https only, the SPECMODEL_ALLOWED_HOSTS
allow-list, cloud metadata addresses refused) and redirects are not followed. Credentials (basic
auth or a bearer token) travel in `PromAuth`, whose repr hides them, and never appear in a
message (`scrape.display_url` masks user:password in URLs). Every failure becomes a SpecModelError
naming the server and what to check.
Response format: https://prometheus.io/docs/prometheus/latest/querying/api/
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field

import httpx
import numpy as np

from specmodel.numbers import read_number, whole_number
from specmodel.errors import SpecModelError
from specmodel.bounds import PROMETHEUS_TIMEOUT_S
from specmodel.files import load_json
from specmodel.text import MAX_MESSAGE_CHARS, clean_name, safe_text
from specmodel.metrics.fetch import GetLimits, Wording, capped_get, check_token
from specmodel.metrics.scrape import ScrapePolicy, check_url, display_url

DEFAULT_TIMEOUT_S = PROMETHEUS_TIMEOUT_S
EXCHANGE_MARGIN_S = 2.0  # chosen: one exchange may last the query timeout plus this (connect, transfer)
# documented: Prometheus's query_range answers "exceeded maximum resolution of 11,000 points per timeseries"
MAX_RANGE_POINTS = 11_000  # Prometheus refuses more than 11,000 points per series

_DURATION = re.compile(r"^(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m(?!s))?(?:([0-9]+)s)?"
                       r"(?:([0-9]+)ms)?$")
# documented: Prometheus's time durations (y = 365d, w = 7d, d, h, m, s, ms; no leap days)
_UNIT_S = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)


MAX_WINDOW_S = 10 * 366 * 86400  # chosen: ten years: a window or history (Prometheus keeps 15 days by default, Thanos years)


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus duration such as "5m", "90s" or "1h30m".

    >>> parse_duration("5m"), parse_duration("1h30m"), parse_duration("1500ms")
    (300.0, 5400.0, 1.5)
    """
    m = _DURATION.match(str(text).strip())
    # each number through the one parser; one of more than 12 digits is past any window (10^12 ms is 31 years)
    seconds = sum(whole_number(v[:13], "a window") * unit for v, unit in zip(m.groups(), _UNIT_S) if v) \
        if m and text.strip() else 0.0
    if not seconds:
        raise SpecModelError(f"'{clean_name(text, 40)[0]}' is not a time window: write a Prometheus duration such "
                             "as 30s, 5m, 1h or 1h30m")
    if seconds > MAX_WINDOW_S:
        raise SpecModelError(f"'{clean_name(text, 40)[0]}' is longer than the {MAX_WINDOW_S // 86400} days a window "
                             "or history may span here: choose a shorter one")
    return float(seconds)


def format_duration(seconds: float) -> str:
    """The shortest Prometheus duration for a whole number of seconds (or milliseconds).

    >>> format_duration(300), format_duration(5400), format_duration(1.5)
    ('5m', '1h30m', '1500ms')
    """
    ms = int(round(seconds * 1000))
    if ms <= 0:
        raise SpecModelError(f"a time window must be positive, got {seconds} s")
    if ms % 1000:
        return f"{ms}ms"
    s, out = ms // 1000, ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if s >= size:
            out += f"{s // size}{unit}"
            s %= size
    return out


@dataclass(frozen=True)
class PromAuth:
    """Optional credentials for a Prometheus behind a proxy: basic auth or a bearer token (not both)."""

    username: str | None = None
    password: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.bearer_token and (self.username or self.password):
            raise SpecModelError("give either a user name and password or a bearer token, not both")
        if self.password and not self.username:
            raise SpecModelError("a password needs a user name too")
        check_token(self.bearer_token)

    def apply(self) -> tuple[httpx.Auth | None, dict[str, str]]:
        if self.bearer_token:
            return None, {"Authorization": f"Bearer {self.bearer_token}"}
        if self.username:
            return httpx.BasicAuth(self.username, self.password or ""), {}
        return None, {}


@dataclass(frozen=True)
class PromServer:
    """Where a Prometheus server answers and how to talk to it."""

    url: str
    auth: PromAuth = field(default_factory=PromAuth)
    timeout_s: float = DEFAULT_TIMEOUT_S
    policy: ScrapePolicy = field(default_factory=ScrapePolicy.from_env)

    def __post_init__(self):
        object.__setattr__(self, "url", normalise_url(self.url, self.policy))
        if self.auth.bearer_token and httpx.URL(self.url).userinfo:  # the token was silently dropped
            raise SpecModelError(f"{display_url(self.url)} carries a user name and password and a bearer token is "
                                 "given too; a request sends one or the other: remove one of them")
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise SpecModelError(f"timeout must be a positive number of seconds, got {self.timeout_s}")

    @property
    def shown(self) -> str:
        """The URL as it may be shown: any user:password masked."""
        return display_url(self.url)


def normalise_url(url: str, policy: ScrapePolicy | None = None) -> str:
    """Check a Prometheus base URL against the URL policy; add http:// if missing; drop a trailing
    / or the UI path a user may paste (/graph, /query, /targets).

    >>> normalise_url("prometheus:9090/graph"), normalise_url("https://prom.example.com/monitoring/")
    ('http://prometheus:9090', 'https://prom.example.com/monitoring')
    """
    text = (url or "").strip()
    if not text:
        raise SpecModelError("give the URL of a Prometheus server, e.g. http://prometheus:9090")
    if "://" not in text:
        text = "http://" + text
    u = check_url(text, policy, resolve=False)
    path = re.sub(r"/(graph|query|targets)?/?$", "", u.path)
    return str(u.copy_with(path=path or "/", query=None, fragment=None)).rstrip("/")


@dataclass(frozen=True)
class Sample:
    """One series of an instant query: its labels and value at the evaluation time."""

    labels: dict
    value: float


@dataclass(frozen=True)
class Series:
    """One series of a range query: labels, unix timestamps (s) and values."""

    labels: dict
    times_s: np.ndarray
    values: np.ndarray


def query(client: httpx.Client, server: PromServer, promql: str, at_s: float | None = None) -> list[Sample]:
    """Evaluate an instant query (at unix time `at_s`, or the server's now)."""
    params = {"query": promql, "timeout": format_duration(server.timeout_s)}
    if at_s is not None:
        params["time"] = f"{at_s:.3f}"
    data = _call(client, server, "/api/v1/query", params, promql)
    try:
        if data.get("resultType") == "scalar":
            return [Sample({}, _number(data["result"][1]))]
        if data.get("resultType") != "vector":
            raise SpecModelError(f"Prometheus at {server.shown} answered `{promql}` with a "
                                 f"{data.get('resultType')}, expected an instant vector")
        return [Sample(_labels(r.get("metric", {})), _number(r["value"][1])) for r in data["result"]]
    except _SHAPE_ERRORS:
        raise _malformed(server, "an instant query") from None


def query_range(client: httpx.Client, server: PromServer, promql: str, start_s: float, end_s: float,
                step_s: float) -> list[Series]:
    """Evaluate a range query from start_s to end_s (unix seconds) every step_s seconds."""
    if not (end_s > start_s and step_s > 0):
        raise SpecModelError("a range query needs end after start and a positive step")
    if (end_s - start_s) / step_s > MAX_RANGE_POINTS:
        raise SpecModelError(f"{(end_s - start_s) / step_s:.0f} points per series is more than Prometheus "
                             f"returns ({MAX_RANGE_POINTS}): choose a shorter history or a longer step")
    params = {"query": promql, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}",
              "step": format_duration(step_s), "timeout": format_duration(server.timeout_s)}
    data = _call(client, server, "/api/v1/query_range", params, promql)
    if data.get("resultType") != "matrix":
        raise SpecModelError(f"Prometheus at {server.shown} answered a range query with a "
                             f"{data.get('resultType')}, expected a matrix")
    out = []
    try:
        for r in data["result"]:
            values = r.get("values") or []
            out.append(Series(_labels(r.get("metric", {})), np.array([read_number(v[0]) for v in values]),
                              np.array([_number(v[1]) for v in values])))
    except _SHAPE_ERRORS:
        raise _malformed(server, "a range query") from None
    return out


def targets(client: httpx.Client, server: PromServer) -> list[dict]:
    """The active scrape targets with job, instance, health ("up", "down", "unknown"), last error and
    all their labels (a relabelled `model` label names what the target serves)."""
    data = _call(client, server, "/api/v1/targets", {"state": "active"}, None)
    out = []
    try:
        for t in data.get("activeTargets", []):
            labels = _labels(t.get("labels", {}))
            last_error = safe_text(t.get("lastError") or "", MAX_MESSAGE_CHARS)
            out.append({"job": labels.get("job", ""), "instance": labels.get("instance", ""),
                        "health": safe_text(t.get("health", "unknown")), "last_error": last_error,
                        "scrape_url": display_url(t.get("scrapeUrl", "")), "labels": labels})
    except _SHAPE_ERRORS:
        raise _malformed(server, "the targets list") from None
    return out


# A JSON answer of the wrong shape (a list where an object belongs, a missing field, ...)
_SHAPE_ERRORS = (KeyError, IndexError, TypeError, AttributeError, ValueError)


def _labels(metric) -> dict[str, str]:
    """A series' labels as they may be shown: each name and value through the one text-safety function
    (no line break or control character, at most MAX_LABEL_CHARS: a 200,000-character instance label hung
    the Fleet page's table, a newline in one forged a line of `fleet`), the same for every query, so the
    table, its history and the targets list still match."""
    if not isinstance(metric, dict):
        raise TypeError("labels are not an object")
    return {safe_text(key): safe_text(value) for key, value in metric.items()}


def _malformed(server: PromServer, what: str) -> SpecModelError:
    return SpecModelError(f"Prometheus at {server.shown} answered {what} with JSON of an unexpected shape: "
                          "give the base URL of a Prometheus server (or a compatible API), e.g. "
                          "http://prometheus:9090")


def _number(text) -> float:
    """A sample's value as Prometheus writes it ("0.5", "NaN", "+Inf"), through the one number parser; NaN
    where it is none ("1_0", 400 digits)."""
    try:
        return read_number(text)
    except ValueError:
        return float("nan")


def _wording(server: PromServer, path: str) -> Wording:
    """Failures of a Prometheus API call: the remedy for slowness is a smaller query."""
    smaller = "choose a shorter window or history, or raise the timeout"
    unreachable = "check the URL and that Prometheus is running"
    return Wording(
        name_not_found=f"cannot reach {{where}}: the host name does not resolve; {unreachable}",
        refused=f"cannot reach {{where}}: connection refused or unreachable; {unreachable}",
        connect_timeout=("{where} did not accept a connection within {connect_s:g} s: check the URL and that the "
                         "server is reachable from here"),
        read_timeout=f"{{where}} did not answer within {{read_s:g}} s: {smaller}",
        timeout=f"{{where}} did not answer within {{read_s:g}} s: {smaller}",
        too_slow=(f"{{where}} did not finish answering within {{total_s:g}} s (the query timeout "
                  f"{server.timeout_s:g} s + {EXCHANGE_MARGIN_S:g} s): {smaller}"),
        too_large="{where} sent more than {max_size}, so reading stopped: narrow the query with a label filter or a "
                  "shorter history",
        failed="{where} failed ({error}): check the URL",
        unauthorised=("{where} refused the request (HTTP {status}): give a user name and password or a bearer "
                      "token that may read it"),
        not_found=(f"{{where}} has no Prometheus API at {path} (HTTP 404): give the server's base URL, e.g. "
                   "http://prometheus:9090"),
        server_error="{where} answered HTTP {status}: check the URL and the server's health",
        status="{where} answered HTTP {status}: check the URL and the server's health",
    )


def _call(client: httpx.Client, server: PromServer, path: str, params: dict, promql: str | None) -> dict:
    url = check_url(server.url + path, server.policy)  # resolves the host: metadata addresses refused
    auth, headers = server.auth.apply()
    where = f"Prometheus at {server.shown}"
    total_s = server.timeout_s + EXCHANGE_MARGIN_S
    limits = GetLimits(connect_s=min(server.policy.connect_timeout_s, server.timeout_s), read_s=total_s,
                       total_s=total_s, max_bytes=server.policy.max_bytes)
    got = capped_get(client, url, where=where, limits=limits, wording=_wording(server, path), headers=headers,
                     params=params, auth=auth)
    if got.is_redirect:
        raise SpecModelError(f"{where} redirects to {display_url(got.headers.get('location', '?'))}: "
                             "give the URL it redirects to")
    payload = None
    with contextlib.suppress(ValueError):  # SpecModelError past the depth limit (a ValueError too)
        payload = load_json(got.body)
    if isinstance(payload, dict) and payload.get("status") == "error":
        raise SpecModelError(_api_error(where, payload, promql))
    got.check_status(ok=range(400))
    if not isinstance(payload, dict) or payload.get("status") != "success" or not isinstance(payload.get("data"), dict):
        kind = clean_name(got.headers.get("content-type", "unknown content").split(";")[0], 40)[0]
        raise SpecModelError(f"{where} did not answer like a Prometheus server (got {kind}): give the base "
                             "URL of a Prometheus server, e.g. http://prometheus:9090")
    return payload["data"]


# Prometheus' own error messages ("parse error at char 5: ...", "query timed out") help with a
# query; anything else a server sends is not shown (the URL may be any internal service).
_PROMETHEUS_ERRORS = re.compile(r"^(1:\d+: )?(parse error|invalid parameter|query (timed out|processing)|"
                                r"expanding series|exceeded maximum|bad_data|unknown function|many-to-many|"
                                r"found duplicate series|vector cannot contain)")


def _safe_detail(detail: str) -> str:
    text = clean_name(detail, 120)[0]
    return text if _PROMETHEUS_ERRORS.match(text) else "the server's message is not shown"


def _api_error(where: str, payload: dict, promql: str | None) -> str:
    kind = clean_name(payload.get("errorType", "error"), 20)[0]
    detail = _safe_detail(str(payload.get("error", "")).strip())
    if kind == "bad_data":
        shown = f" `{clean_name(promql, 160)[0]}`" if promql else ""  # the reason after it must fit a message
        return f"{where} rejected the query{shown}: {detail}; check the label filter"
    if kind in ("timeout", "canceled"):
        return f"{where} gave up on the query ({kind}: {detail}): choose a shorter window or history"
    return f"{where} could not run the query ({kind}: {detail})"
