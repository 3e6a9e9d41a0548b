"""One HTTP GET for specmodel: timeouts, a total deadline, a byte cap, and failures told apart by type.

    limits = GetLimits(connect_s=3, read_s=10, total_s=20, max_bytes=32 * 2**20)
    got = capped_get(client, url, where="http://10.0.0.7:8000/metrics", limits=limits)
    got.check_status(ok={200})               # HTTP errors in the same words
    text = got.body.decode()

`where` names the server in every message: the caller passes the URL as it may be shown (with
user:password masked, `scrape.display_url`), or "Prometheus at <url>". The words for each kind of
failure come from a `Wording`: a /metrics page and a Prometheus query call for different advice,
so each caller may replace any of them. Which kind a failure is comes from the exception's type and
the exceptions that caused it, never from the text of its message:

    name_not_found   httpx.ConnectError caused by socket.gaierror (or a name that cannot be encoded)
    tls              httpx.ConnectError caused by ssl.SSLError (handshake, certificate)
    refused          any other httpx.ConnectError (connection refused, host unreachable)
    connect_timeout  httpx.ConnectTimeout
    read_timeout     httpx.ReadTimeout: the server went silent for longer than `read_s`
    timeout          any other httpx.TimeoutException (write, pool)
    too_slow         the total deadline `total_s` passed, however slowly the server trickled
    too_large        the body grew past `max_bytes`: reading stops there. The cap counts decoded bytes:
                     gzip and deflate are decompressed here, never more than the cap at a time, so a
                     small compressed answer cannot grow past it inside one chunk
    encoding         a content encoding other than identity, gzip or deflate, or several stacked
                     (`gzip, gzip`): refused before anything is decoded
    broken           httpx.RemoteProtocolError or httpx.ReadError: the server broke off
    failed           any other httpx.HTTPError
    unauthorised, not_found, server_error, status    HTTP 401/403, 404, 5xx, others (`check_status`)

Every failure is a `FetchFailed` (a SpecModelError) whose `kind` is one of these names.

The total deadline: inside `total_deadline(seconds)` (capped_get sets one of `total_s`), each request
gets httpx timeouts no longer than the time left, and the body, streamed (`client.stream`), is read
chunk by chunk with the deadline checked after each one: a server that trickles a byte at a time stops
at the first chunk past the deadline. A read waiting when the deadline passes ends at its read timeout
(`read_s`, or the time that was left when the request started if shorter), so a server that falls silent
just before the deadline holds the exchange at most that long past it. A deadline set inside another
never extends it.
"""

from __future__ import annotations

import socket
import ssl
import time
import zlib
from collections.abc import Callable, Container
from dataclasses import dataclass, field

import httpx

from specmodel.errors import SpecModelError
from specmodel.bounds import Deadline
from specmodel.text import clean_name


@dataclass(frozen=True)
class GetLimits:
    """How long and how much one GET may take."""

    connect_s: float = 3.0
    read_s: float = 10.0  # the longest silence between two chunks
    total_s: float = 20.0  # the whole exchange, however it trickles
    max_bytes: int = 32 * 1024 * 1024

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect_s, read=self.read_s, write=self.read_s, pool=self.connect_s)


@dataclass(frozen=True)
class Wording:
    """What a person reads for each kind of failure: templates formatted with `where`, `connect_s`,
    `read_s`, `total_s`, `max_size` ("32 MB"), `received` (bytes of the body that arrived), `error`
    (the exception's type), `detail` (the TLS library's reason), `status` and `reason` (HTTP)."""

    name_not_found: str = "cannot resolve the host of {where} (DNS): check the host name"
    tls: str = ("the TLS connection to {where} failed ({detail}): check that the server speaks the URL's scheme "
                "(http:// or https://) and that its certificate is valid for this host name")
    refused: str = ("cannot connect to {where} (connection refused or unreachable): is the server running, and is "
                    "the port right?")
    connect_timeout: str = ("no connection to {where} within {connect_s:g} s: check the host and port, and any "
                            "firewall between here and the server")
    read_timeout: str = "{where} accepted the connection but sent nothing for {read_s:g} s: the server is stuck or overloaded"
    timeout: str = "{where} timed out: check that the server is healthy"
    too_slow: str = ("{where} is too slow: after {total_s:g} s only part of the answer had arrived ({received} bytes); "
                     "the server or the network is overloaded")
    too_large: str = "{where} sent more than {max_size}, so reading stopped: check the URL"
    encoding: str = ("{where} sent its answer with Content-Encoding '{detail}', which is not read here (only one "
                     "layer of gzip or deflate is): check the server or any proxy in front of it")
    broken: str = ("{where} broke off the response ({error}): the server closed the connection; try again or check "
                   "its logs")
    failed: str = "fetching {where} failed ({error}): check the URL"
    unauthorised: str = "{where} answered HTTP {status} ({reason}): check the credentials"
    not_found: str = "{where} answered HTTP 404 (not found): check the path"
    server_error: str = "{where} answered HTTP {status} (server error): the server is up but failing; check its logs"
    status: str = "{where} answered HTTP {status}: check the URL"


WORDING = Wording()


class FetchFailed(SpecModelError):
    """A GET that failed; `kind` names how (see the module docstring), `status` the HTTP status if any."""

    def __init__(self, message: str, kind: str, status: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status


@dataclass(frozen=True)
class Fetched:
    """An answer: status, headers and the body (empty where it was not read, e.g. a redirect)."""

    url: httpx.URL
    status: int
    headers: httpx.Headers
    body: bytes
    where: str = field(repr=False)
    wording: Wording = field(repr=False)

    @property
    def is_redirect(self) -> bool:
        return self.status in (301, 302, 303, 307, 308) and "location" in self.headers

    def check_status(self, ok: Container[int] = (200,)) -> None:
        """FetchFailed in the answer's wording unless the status is in `ok`."""
        code = self.status
        if code in ok:
            return
        kind = ("unauthorised" if code in (401, 403) else "not_found" if code == 404
                else "server_error" if code >= 500 else "status")
        reason = {401: "unauthorised", 403: "forbidden", 404: "not found"}.get(code, "")
        raise FetchFailed(getattr(self.wording, kind).format(where=self.where, status=code, reason=reason),
                          kind, code)


def check_token(token: str | None) -> None:
    """SpecModelError unless a bearer token is sendable: printable ASCII without spaces (RFC 6750's
    token characters and more), at most 16 kB. A non-ASCII token was a traceback from the encoder."""
    if not token:
        return
    if len(token) > 16384:
        raise SpecModelError(f"the bearer token is {len(token):,} characters long, over the 16,384 allowed: check it")
    bad = next((i for i, c in enumerate(token) if not "!" <= c <= "~"), None)
    if bad is not None:
        raise SpecModelError(f"the bearer token has a character an HTTP header cannot carry at position {bad + 1} "
                             "(only printable ASCII, no spaces): copy it again without extra characters")


def capped_get(client: httpx.Client, url, *, where: str, limits: GetLimits = GetLimits(),
               wording: Wording = WORDING, headers: dict | None = None, params: dict | None = None,
               auth: httpx.Auth | None = None,
               read_body_if: Callable[[httpx.Response], bool] | None = None) -> Fetched:
    """GET `url` without following redirects; read the body (unless `read_body_if(response)` says
    not to, or it is a redirect) up to `limits.max_bytes`, all within `limits.total_s`. Raises
    FetchFailed, in `wording`, naming `where`; a SpecModelError from the transport (a refused
    address) passes through unchanged."""
    facts = {"where": where, "connect_s": limits.connect_s, "read_s": limits.read_s, "total_s": limits.total_s,
             "max_size": _size(limits.max_bytes), "received": 0, "error": "", "detail": ""}
    received, answered = [0], [False]  # bytes of the body so far; whether the status line and headers came

    def failed(kind: str, **more) -> FetchFailed:
        return FetchFailed(getattr(wording, kind).format(**{**facts, "received": received[0], **more}), kind)

    with total_deadline(limits.total_s):
        try:
            with client.stream("GET", url, params=params, headers=headers,
                               auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT,
                               timeout=_within_deadline(limits.timeout()), follow_redirects=False) as response:
                answered[0] = True
                body = b""
                if not response.is_redirect and (read_body_if is None or read_body_if(response)):
                    body = _read_capped(response, limits.max_bytes, received, failed)
                return Fetched(response.url, response.status_code, response.headers, body, where, wording)
        except DeadlinePassed:
            raise failed("too_slow") from None
        except httpx.TimeoutException as exc:
            raise failed(_timeout_kind(exc, answered[0])) from None
        except httpx.ConnectError as exc:
            kind, detail = _connect_failure(exc)
            raise failed(kind, detail=detail) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise failed("broken", error=type(exc).__name__) from None
        except httpx.HTTPError as exc:
            raise failed("failed", error=type(exc).__name__) from None


def _timeout_kind(exc: httpx.TimeoutException, answered: bool) -> str:
    """A timeout in the body that ended at the total deadline is the deadline passing (too_slow); before
    any answer, a silent server (read_timeout), however long it was given."""
    if answered and deadline_passed(margin_s=0.01):
        return "too_slow"
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect_timeout"
    return "read_timeout" if isinstance(exc, httpx.ReadTimeout) else "timeout"


def _within_deadline(timeout: httpx.Timeout) -> httpx.Timeout:
    """`timeout` with each part no longer than the time left before the total deadline."""
    return httpx.Timeout(**{part: bounded_timeout(s) for part, s in timeout.as_dict().items()})


def _read_capped(response: httpx.Response, max_bytes: int, received: list, failed) -> bytes:
    """The decoded body, never more than `max_bytes` + 1 bytes of it in memory: the raw bytes are
    decompressed here with an output bound (httpx's own decoders inflate a whole chunk at once)."""
    body = bytearray()
    if response.is_stream_consumed:  # an answer already in memory (a test transport): decoded by httpx
        chunks, inflate = [response.content], (lambda chunk, room: [chunk])
    else:
        chunks, inflate = response.iter_raw(), _decoder(response.headers, failed)
    for chunk in chunks:
        for part in inflate(chunk, max_bytes + 1 - len(body)):
            body += part
            received[0] = len(body)
            if len(body) > max_bytes:
                raise failed("too_large")
        if deadline_passed():  # a trickle: every chunk came within the read timeout, the whole is too slow
            raise DeadlinePassed("the server did not finish answering within the total time allowed")
    return bytes(body)


# documented (Python's zlib.decompressobj): wbits 16 + MAX_WBITS reads a gzip header, MAX_WBITS a zlib one
_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def _decoder(headers: httpx.Headers, failed):
    """A function (raw chunk, room) -> decoded parts, each at most `room` bytes in all, for the
    answer's Content-Encoding; FetchFailed('encoding') for stacked or unknown encodings."""
    codings = [c.strip().lower() for c in headers.get_list("content-encoding", split_commas=True)]
    codings = [c for c in codings if c not in ("", "identity")]
    if not codings:
        return lambda chunk, room: [chunk] if chunk else []
    if len(codings) > 1 or codings[0] not in _ZLIB_WBITS:
        raise failed("encoding", detail=clean_name(", ".join(codings), 60)[0])
    state = {"z": zlib.decompressobj(_ZLIB_WBITS[codings[0]]), "first": True, "deflate": codings[0] == "deflate"}

    def inflate(chunk: bytes, room: int) -> list[bytes]:
        parts, data = [], chunk
        while data and not state["z"].eof:
            try:
                out = state["z"].decompress(data, max(room, 1))
            except zlib.error:
                if state["first"] and state["deflate"]:  # raw deflate without the zlib header, as httpx allows
                    state["z"], state["first"] = zlib.decompressobj(-zlib.MAX_WBITS), False
                    continue
                raise failed("failed", error=f"corrupt {codings[0]} data") from None
            state["first"] = False
            parts.append(out)
            room -= len(out)
            if room <= 0:
                break  # the caller refuses the body: over the cap
            data = state["z"].unconsumed_tail
        return parts

    return inflate


def _causes(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _connect_failure(exc: httpx.ConnectError) -> tuple[str, str]:
    """(kind, detail) of a failed connection, from the exceptions that caused it."""
    for cause in _causes(exc):
        if isinstance(cause, (socket.gaierror, UnicodeError)):
            return "name_not_found", ""
        if isinstance(cause, ssl.SSLError):
            reason = getattr(cause, "verify_message", None) or getattr(cause, "reason", None) or type(cause).__name__
            return "tls", clean_name(reason, 120)[0]
    return "refused", ""


def _size(n: int) -> str:
    if n >= 2**20:
        return f"{n / 2**20:.0f} MB"
    if n >= 1024:
        return f"{n / 1024:.0f} kB"
    return f"{n} bytes"


# --- the total deadline ---------------------------------------------------------------------------

class DeadlinePassed(SpecModelError):
    """An HTTP exchange ran past its total deadline (however slowly the server trickled)."""


_deadline = Deadline("specmodel_http_deadline", time.monotonic)  # the nesting rule lives in bounds


def total_deadline(seconds: float):
    """Every request capped_get makes inside this block ends by `seconds` from now (or by an enclosing
    block's deadline, if that is sooner): the whole exchange, not only each silence between two bytes."""
    return _deadline.until(seconds)


def deadline_passed(margin_s: float = 0.0) -> bool:
    """Whether the current total deadline (if any) is less than `margin_s` away."""
    left = _deadline.left()
    return left is not None and left <= margin_s


def bounded_timeout(timeout: float | None) -> float | None:
    """`timeout`, shortened to the time left before the total deadline; DeadlinePassed if none is left."""
    left = _deadline.left()
    if left is None:
        return timeout
    if left <= 0:
        raise DeadlinePassed("the server did not finish answering within the total time allowed")
    return left if timeout is None else min(timeout, left)
