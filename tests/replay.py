"""A real HTTP server on 127.0.0.1 that replays a `/metrics` sample with counters advancing per scrape.

    from tests.replay import ReplayServer, fixture_text

    with ReplayServer("vllm_v1_specdecode_sample.txt",
                      increments={"vllm:spec_decode_num_drafts_total": 1000,
                                  "vllm:spec_decode_num_accepted_tokens_per_pos_total": [800, 500, 300]},
                      gauges={"vllm:num_requests_running": 12}) as server:
        httpx.get(server.url)          # scrape 0: the sample as it is (plus gauges)
        httpx.get(server.url)          # scrape 1: every listed counter advanced by its increment

API (kept small: the Fleet tests import it too):
- `ReplayServer(fixture, increments=None, gauges=None, mode="ok", path="/metrics", token=None)`; a
  context manager; `.url` (the metrics URL), `.base_url`, `.scrapes` (requests served on `path`),
  `.mode` (assignable at any time), `.headers` (the headers of every request, in order), `.close()`.
- `token`: when set, requests without `Authorization: Bearer <token>` get HTTP 401.
- `fixture`: a file name in tests/fixtures/ or a path, or the exposition text itself if it contains a newline.
- `increments`: sample name (with `_total`) -> added at every scrape, either one number for every
  series of that name, or a list with one number per series in file order (per position, per engine).
- `gauges`: sample name -> value set on every series of that name.
- `expected_delta(name, scrapes=1)`: what one series' counter rose by over that many scrapes (a
  list for a per-series increment), so tests compare against what the replay implies.
- modes: "ok"; "404"; "500"; "html" (a login page); "garbage" (not Prometheus text); "trickle"
  (one byte of the sample every 0.2 s, never finishing quickly); "huge" (an endless body, streamed);
  "reset" (from the second scrape on, counters restart from zero and advance from there, as after
  a server restart: scrape n serves n · increment);
  "slow" (waits 30 s before answering); "redirect:URL" (302 to URL);
  "gzip" (the sample gzipped); "bomb:ENCODINGS:MB" (MB megabytes of zeros compressed once per listed encoding, sent with
  `Content-Encoding: ENCODINGS`, e.g. "bomb:gzip, gzip:2048": a few kB on the wire).
"""

from __future__ import annotations

import functools
import gzip
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_text(name: str) -> str:
    """The text of a file in tests/fixtures/ (or of a path)."""
    path = Path(name)
    if not path.is_absolute() and not path.exists():
        path = FIXTURES / name
    return path.read_text()


def _split(line: str) -> tuple[str, str, str] | None:
    """A sample line -> (series, name, value text); None for comments and blank lines."""
    if not line or line.startswith("#"):
        return None
    series, _, value = line.rpartition(" ")
    name = series.split("{", 1)[0]
    return series, name, value


@functools.lru_cache(maxsize=4)
def bomb(encodings: str, megabytes: int) -> bytes:
    """`megabytes` MB of zeros compressed once per encoding in `encodings` ("gzip, deflate"), outermost
    last as HTTP lists them; built in 1 MB pieces so the zeros never sit in memory."""
    zero = bytes(2**20)
    layers = [c.strip() for c in encodings.split(",") if c.strip()]

    def compressor(coding):
        return zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS)

    first = compressor(layers[0])
    data = b"".join(first.compress(zero) for _ in range(megabytes)) + first.flush()
    for coding in layers[1:]:
        c = compressor(coding)
        data = c.compress(data) + c.flush()
    return data


class ReplayServer:
    def __init__(self, fixture: str, increments: dict | None = None, gauges: dict | None = None,
                 mode: str = "ok", path: str = "/metrics", token: str | None = None):
        self.text = fixture if "\n" in fixture else fixture_text(fixture)
        self.increments = dict(increments or {})
        self.gauges = dict(gauges or {})
        self.mode = mode
        self.path = path
        self.scrapes = 0
        self.token = token
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": POLL_S},
                                        daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.url = self.base_url + path

    # -- the body ---------------------------------------------------------------------------------
    def body(self, scrape: int) -> str:
        """The exposition for the given scrape number (0 = the sample as it is)."""
        counted: dict[str, int] = {}
        out = []
        reset = self.mode == "reset" and scrape >= 1
        for line in self.text.splitlines():
            parts = _split(line)
            if parts is None:
                out.append(line)
                continue
            series, name, value = parts
            if name in self.increments:
                i = counted.get(name, 0)
                counted[name] = i + 1
                inc = self.increments[name]
                if isinstance(inc, (list, tuple)) and i >= len(inc):
                    raise ValueError(f"increments for {name} give {len(inc)} values, but the sample has more "
                                     "series of that name (one value per series, in file order)")
                step = inc[i] if isinstance(inc, (list, tuple)) else inc
                base = 0.0 if reset else float(value)
                out.append(f"{series} {base + scrape * float(step)!r}")
            elif name in self.gauges:
                out.append(f"{series} {float(self.gauges[name])!r}")
            else:
                out.append(line)
        return "\n".join(out) + "\n"

    def expected_delta(self, name: str, scrapes: int = 1):
        inc = self.increments[name]
        if isinstance(inc, (list, tuple)):
            return [float(x) * scrapes for x in inc]
        return float(inc) * scrapes

    # -- HTTP -------------------------------------------------------------------------------------
    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, code: int, body: bytes, ctype: str = "text/plain; version=0.0.4; charset=utf-8"):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):  # noqa: N802 (http.server's naming)
                server.headers.append(dict(self.headers.items()))
                if server.token is not None and self.headers.get("Authorization") != f"Bearer {server.token}":
                    self._send(401, b"Unauthorized\n")
                    return
                if self.path.split("?", 1)[0] != server.path:
                    self._send(404, b"404 page not found\n")
                    return
                with server._lock:
                    n = server.scrapes
                    server.scrapes += 1
                mode = server.mode
                try:
                    if mode == "404":
                        self._send(404, b"Not Found\n")
                    elif mode == "500":
                        self._send(500, b"Internal Server Error\n")
                    elif mode == "html":
                        self._send(200, b"<!DOCTYPE html><html><head><title>Sign in</title></head>"
                                        b"<body><form>login</form></body></html>", "text/html")
                    elif mode == "garbage":
                        self._send(200, b"this is not {prometheus text\n\x00\x01 at all = 3\n")
                    elif mode == "slow":
                        time.sleep(30)
                        self._send(200, server.body(n).encode())
                    elif mode == "trickle":
                        body = server.body(n).encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "text/plain")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        for i in range(len(body)):
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.2)
                    elif mode == "huge":
                        self.send_response(200)
                        self.send_header("Content-Type", "text/plain")
                        self.end_headers()
                        chunk = b"# padding padding padding padding padding padding padding padding\n" * 16384
                        for _ in range(100 * 1024 * 1024 // len(chunk) + 1):  # about 100 MB
                            self.wfile.write(chunk)
                    elif mode == "gzip":  # the sample gzipped, as Prometheus' client libraries do when asked
                        body = gzip.compress(server.body(n).encode())
                        self.send_response(200)
                        self.send_header("Content-Type", "text/plain; version=0.0.4")
                        self.send_header("Content-Encoding", "gzip")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    elif mode.startswith("bomb:"):
                        _, encodings, megabytes = mode.split(":")
                        body = bomb(encodings, int(megabytes))
                        self.send_response(200)
                        self.send_header("Content-Type", "text/plain; version=0.0.4")
                        self.send_header("Content-Encoding", encodings)
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    elif mode.startswith("redirect:"):
                        self.send_response(302)
                        self.send_header("Location", mode.split(":", 1)[1])
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    else:
                        self._send(200, server.body(n).encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading, as it should for huge/trickle

        return Handler

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "ReplayServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# Ready-made per-scrape increments (and what one scrape interval implies), shared by the tests.
V1_SPEC = {  # k = 3: E = 1 + 1500/1000 = 2.5; p = 0.8, 0.5, 0.2; draft acceptance rate 0.5
    "vllm:spec_decode_num_drafts_total": 1000,
    "vllm:spec_decode_num_draft_tokens_total": 3000,
    "vllm:spec_decode_num_accepted_tokens_total": 1500,
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": [800, 500, 200],
    "vllm:generation_tokens_total": 2500,
}
V1_GAUGES = {"vllm:num_requests_running": 12, "vllm:num_requests_waiting": 2, "vllm:kv_cache_usage_perc": 0.25}
V1_NOSPEC = {"vllm:generation_tokens_total": 4000}
SGLANG = {  # k = 3 (spec_num_steps): E = (2600 − 100) / 1000 = 2.5
    "sglang:spec_verify_calls_total": 1000,
    "sglang:generation_tokens_total": 2600,
    "sglang:num_requests_total": 100,
}
V0 = {"vllm:generation_tokens_total": 3000}  # V0's E comes from its efficiency gauge: 0.68267 · 5 = 3.413


class QuietServer(ThreadingHTTPServer):
    """A 127.0.0.1 test server in a daemon thread that does not print a client that hung up early."""

    daemon_threads = True

    def handle_error(self, request, client_address):  # a client that hung up early (a refused answer) is no news
        pass


# chosen: how often a test server's loop looks for shutdown(); serve_forever's default 0.5 s made every
# `with` block around a server end up to half a second after its test was done (measured 2026-12-07: 0.5 s
# of waiting in each of tests/test_real_engine_scrape.py's 14 tests)
POLL_S = 0.01


def start_quiet_server(handler) -> QuietServer:
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True).start()
    return server
