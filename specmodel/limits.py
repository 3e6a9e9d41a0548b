"""Bounds on the work any one input may cause, in one table, and the readers that enforce them.

A shared instance reads files people upload and answers from servers people name, so every
quantity that work grows with has a stated maximum (docs/deploy.md lists them):

    MAX_K                  draft tokens per step (and tree width) in every reader, parser and flag
    MAX_ROWS_PER_FILE      runs read from one file: the first ones load, the rest are named in a message
    MAX_ROWS_TOTAL         runs read from all files of one load, the same way
    MAX_FILE_BYTES         one uploaded or named file (the app's upload limit, 20 MB = 20,000,000 bytes)
    MAX_JSON_DEPTH         nesting of a JSON document (files and Prometheus answers)
    MAX_INT_DIGITS         digits of a JSON integer before it is read as a float (inf: not a number)
    MAX_LABEL_CHARS        a name (workload, model) shown back to the user
    MAX_MIX_WORKLOADS      workloads in one traffic mix: the first ones load, the rest are named in a message
    MAX_CELL_CHARS         characters of one CSV cell: a longer cell refuses its row, the rest loads
    MAX_COLUMNS            columns of a CSV header that are read: the rest are named in one warning
    MAX_TP                 tensor parallelism per replica (a GPU text's count, "8x H100", is its TP)
    MAX_CONCURRENCY        concurrent sequences of a setting (a flag, a page, a run row)
    MAX_CONTEXT            tokens in a sequence's KV cache (and a self_spec draft's KV budget)
    MAX_BRANCHING          tree drafting: tokens per sequence in a draft pass
    MAX_NAME_TEXT          characters of a hardware, model, method or engine text the name readers look at
                           (`reads_name`): the rest of a longer cell is not read
    MAX_WORK_S             seconds of parsing and processing of one answer (`work_deadline`, `out_of_time`)
    MAX_LOAD_S             the same for one load of run files (read_runs)
    MAX_CACHED_KEY_CHARS   characters of text in one call's arguments that a module-level cache keeps:
                           a longer call is computed afresh, so no cache holds a user's 5 MB name

`write_file(path, text)` is the one way to write one: only a regular file or a new path is written
(a symlink, a device, a pipe or a folder is refused before anything is written), whole or not at all.

`read_file(path)` is the command line's way to read a file: `stat` first (devices, pipes and
folders are refused), then a read capped at the limit. `load_json(text)` parses JSON within the
depth and integer bounds and says what was wrong instead of raising RecursionError or ValueError;
`json_validator(schema)` checks what it read against a JSON Schema (jsonschema).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
import stat
import time
import unicodedata

from specmodel.errors import SpecModelError

MAX_K = 64  # no engine drafts more than a few dozen tokens per step; vLLM's trees stay under 64 wide
MAX_ROWS_PER_FILE = 200_000
MAX_ROWS_TOTAL = 200_000  # runs of all files loaded at once (the Past runs page and the runs command)
MAX_UPLOAD_MB = 20  # .streamlit/config.toml server.maxUploadSize
# Streamlit's uploader counts that limit in the browser, where 1 MB is 10^6 bytes (2^20 only on Windows;
# the server itself allows 2^20): the smaller is the limit every user meets, so the reader uses it too.
MAX_FILE_BYTES = MAX_UPLOAD_MB * 1_000_000
MAX_JSON_DEPTH = 64  # a benchmark file is 4-5 levels deep; Prometheus answers 5
MAX_INT_DIGITS = 30  # longer integers are read as floats (a 400-digit count is infinite for the model)
MAX_LABEL_CHARS = 200
MAX_MIX_WORKLOADS = 10_000  # a traffic mix has a few kinds of traffic; 10,000 compare in ~3 s
# One CSV cell: the csv module's field limit (csv.field_size_limit(), 131,072 by default), which it enforces
# while reading: a longer cell refuses its row only.
MAX_CELL_CHARS = 131_072
MAX_COLUMNS = 10_000  # a run file has a few dozen columns; 10,000 are read in well under a second
MAX_TP = 64  # the largest NVLink domains (GB200 NVL72) run TP <= 64 per replica
MAX_CONCURRENCY = 65_536  # concurrent sequences; engines cap max_num_seqs far below (vLLM default 256-1024)
# 16M tokens: above the longest context a released model serves (Llama 4 Scout: 10M,
# max_position_embeddings 10,485,760 in its config.json)
MAX_CONTEXT = 16_777_216
MAX_BRANCHING = MAX_K  # a tree pass proposes at most as many tokens as a step verifies


# Seconds of parsing and processing one input may take once its bytes are here (a file read into runs,
# a scrape parsed, a Fleet answer judged instance by instance): past it the work stops and says how far
# it got (12,000 Fleet instances took 46.6 s). The HTTP exchange before it has its own total deadline.
# Sample lines of one /metrics page (histogram buckets, which are skipped, and comments not counted):
# one engine's page holds a few hundred to a few thousand (the reference pages: under 300), so 50,000 is
# dozens of data-parallel engines at k = 64; prometheus_client reads ~25-55 µs a sample, so the bound
# keeps a page's parse within a few seconds (2,000 engines x 64 positions took 8.7 s of CPU).
MAX_METRICS_SAMPLES = 50_000
MAX_WORK_S = 30.0
# A load of run files is a heavier job a user starts and watches (a progress bar): the largest accepted
# file (200,000 runs) took 39 s on a busy 2-core machine, so it gets more before it is cut.
MAX_LOAD_S = 120.0
PROMETHEUS_TIMEOUT_S = 15.0  # one Prometheus query waits this long by default (metrics.promapi, `fleet --timeout`)

MAX_CACHED_KEY_CHARS = 256
MAX_NAME_TEXT = 1_000  # the longest real name ("8x H100 80GB HBM3 (TP=8, ...)") is under 200 characters


class Deadline:
    """One kind of deadline that nests, the one home of that rule: inside `until(seconds)`, `left()` counts
    down to `seconds` after the block started, or to an enclosing block's end if that is sooner (a
    deadline set inside another never extends it); outside every block `left()` is None. `clock` is
    called each time (a function, so a test may step the clock it reads). The work deadline below and
    the HTTP exchange's total deadline (metrics/fetch.py) are two of them."""

    def __init__(self, name: str, clock):
        self._end: contextvars.ContextVar[float | None] = contextvars.ContextVar(name, default=None)
        self._clock = clock

    @contextlib.contextmanager
    def until(self, seconds: float):
        end = self._clock() + seconds
        outer = self._end.get()
        token = self._end.set(end if outer is None else min(outer, end))
        try:
            yield
        finally:
            self._end.reset(token)

    def left(self) -> float | None:
        """Seconds left before the current deadline (≤ 0 once it passed), None outside every block."""
        end = self._end.get()
        return None if end is None else end - self._clock()


clock = time.monotonic  # the work deadline's clock (a test may step it)
_WORK = Deadline("specmodel_work_deadline", lambda: clock())


def work_deadline(seconds: float | None = None):
    """Inside this block `out_of_time()` turns true `seconds` from now (default MAX_WORK_S, read when the
    block starts), or at an enclosing block's deadline if that is sooner: a deadline inside another never
    extends it. Loops over an input's parts (rows, instances, metric families) ask `out_of_time()` between
    parts and stop saying how far they got."""
    return _WORK.until(MAX_WORK_S if seconds is None else seconds)


def out_of_time() -> bool:
    """Whether the current work deadline (if any) has passed."""
    left = _WORK.left()
    return left is not None and left <= 0


def reads_name(fn):
    """Decorator for a reader of free text (a GPU, model, method or engine name): its first argument
    is cut to MAX_NAME_TEXT characters before any pattern runs, so its time is bounded whatever the
    cell holds (a 5 MB name took minutes in one backtracking pattern)."""
    import functools

    @functools.wraps(fn)
    def read(text, *args, **kwargs):
        if isinstance(text, str) and len(text) > MAX_NAME_TEXT:
            text = text[:MAX_NAME_TEXT]
        return fn(text, *args, **kwargs)

    return read


_SCALARS = frozenset({int, float, bool, type(None)})
_FROZEN_CHARS: dict[int, tuple[object, int]] = {}  # id -> (the frozen dataclass, its characters), kept alive


def _key_chars(values) -> int:
    """Characters of text in call arguments: strings, and strings inside tuples, lists and dataclasses.
    A frozen dataclass (RunDefaults, passed with every row of a file) is counted once."""
    total, stack = 0, list(values)
    while stack:
        v = stack.pop()
        kind = type(v)
        if kind is str:
            total += len(v)
            if total > MAX_CACHED_KEY_CHARS:
                break
            continue
        if kind in _SCALARS or v is None:
            continue
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, (tuple, list, frozenset, set)):
            if not _SCALARS.issuperset(map(type, v)):  # a tuple of numbers (a profile) holds no text: not walked
                stack.extend(v)
        elif hasattr(v, "__dataclass_fields__"):
            total += _dataclass_chars(v)
        if total > MAX_CACHED_KEY_CHARS:
            break
    return total


def _dataclass_chars(v) -> int:
    frozen = getattr(getattr(v, "__dataclass_params__", None), "frozen", False)
    if frozen and id(v) in _FROZEN_CHARS and _FROZEN_CHARS[id(v)][0] is v:
        return _FROZEN_CHARS[id(v)][1]
    # a resolved preset names the fields that identify it (KEY_FIELDS); the rest is its shared data
    chars = _key_chars(getattr(v, name, None) for name in getattr(v, "KEY_FIELDS", v.__dataclass_fields__))
    if frozen:
        if len(_FROZEN_CHARS) >= 256:
            _FROZEN_CHARS.clear()
        _FROZEN_CHARS[id(v)] = (v, chars)
    return chars


def bounded_cache(maxsize: int, key_args: int | None = None):
    """functools.lru_cache(maxsize) for calls whose text arguments hold at most MAX_CACHED_KEY_CHARS
    characters; a longer call runs uncached. A cache shared by every session is then bounded in bytes
    (maxsize x 256 characters of keys), not only in entries: 20 uploads with a 5 MB name held 100 MB.
    `key_args=n`: only the first n positional arguments key the cache (the rest are derived from them
    and passed through, like a Streamlit cache's _underscored arguments) and must be hashable; a page
    keys by its frozen Scenario this way in microseconds, where Streamlit's own hashing of one takes ~9 ms.
    That one is a cachetools.LRUCache behind a lock (sessions run on threads of one process; two sessions
    missing the same key at once both compute it)."""
    import functools

    def keyed(*args):
        return args[:key_args]

    def too_long(args, kwargs) -> bool:  # the text that would key the cache
        if key_args is not None:
            return _key_chars(args[:key_args]) > MAX_CACHED_KEY_CHARS
        return _key_chars(args) + (_key_chars(kwargs.values()) if kwargs else 0) > MAX_CACHED_KEY_CHARS

    def wrap(fn):
        if key_args is not None:
            import threading

            import cachetools

            cached = cachetools.cached(cachetools.LRUCache(maxsize), key=keyed, lock=threading.Lock(), info=True)(fn)
        else:
            cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if too_long(args, kwargs):
                return fn(*args, **kwargs)
            return cached(*args, **kwargs)

        call.cache_clear, call.cache_info = cached.cache_clear, cached.cache_info
        return call

    return wrap


def check_setting(value, what: str, lo: float, hi: float, *, whole: bool = True):
    """`value` as a number in [lo, hi] (an int where `whole`), else SpecModelError naming `what` and the
    bound: a setting is bounded at the door, before any work is sized by it (tp 10^9, concurrency
    1e308 and branching 10^9 were accepted)."""
    import math

    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = float("nan")
    if isinstance(value, bool) or not math.isfinite(number):
        raise SpecModelError(f"{what} must be a finite number, got {clean_name(value, 40)[0]}")
    if whole and number != int(number):
        raise SpecModelError(f"{what} must be a whole number, got {clean_name(value, 40)[0]}")
    if number < lo:
        raise SpecModelError(f"{what} must be ≥ {lo:g}, got {number:g}")
    if number > hi:
        raise SpecModelError(f"{what} is {number:,.0f}, above the {hi:,.0f} this tool handles: check the value"
                             if whole else f"{what} must be ≤ {hi:g}, got {number:g}")
    return int(number) if whole else number


def check_k(k, what: str = "k (draft tokens per step)") -> int:
    """k as an int if it is a whole number in [1, MAX_K], else SpecModelError naming `what`."""
    try:
        bad = k is None or isinstance(k, bool) or not float(k) == float(k) or k < 1 or int(k) != k
    except (TypeError, ValueError, OverflowError):  # a string, a list, inf, ...: not a k either
        bad = True
    if bad:
        raise SpecModelError(f"{what} must be a whole number ≥ 1, got {k}")
    if k > MAX_K:
        raise SpecModelError(f"{what} is {int(k):,}, above the {MAX_K} this tool handles (no engine drafts "
                             "more per step): check the value")
    return int(k)


def read_file(path, max_bytes: int = MAX_FILE_BYTES, expected: str = "a CSV or JSON file") -> bytes:
    """The bytes of a regular file of at most `max_bytes`: its size is checked before reading, and the
    read stops one byte past the limit (a file that grows meanwhile is still refused)."""
    shown = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SpecModelError(f"{shown}: cannot read the file (no such file)") from None
    except OSError as exc:
        raise SpecModelError(f"{shown}: cannot read the file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
        raise SpecModelError(f"{shown} is {kind}, not a regular file: give {expected}")
    if info.st_size > max_bytes:
        raise SpecModelError(f"{shown}: the file is {info.st_size / 1e6:.1f} MB, over the "
                             f"{max_bytes / 1e6:.0f} MB limit; split it or keep only the summary rows")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise SpecModelError(f"{shown}: cannot read the file ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise SpecModelError(f"{shown}: the file is over the {max_bytes / 1e6:.0f} MB limit; split it")
    return data


def write_file(path, text: str, what: str = "") -> "os.PathLike":
    """Write `text` to `path` atomically (a temporary file beside it, then a rename), only where `path`
    is a regular file or does not exist yet: a symlink, device, pipe, socket or folder is refused by
    name (a rename over a device node or a link replaced it and exited 0). `what` names the output
    ("the calibration") in messages. Returns the path written."""
    from pathlib import Path
    import tempfile

    target = Path(path)
    label = f"cannot write {what + ' to ' if what else ''}{target}"
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise SpecModelError(f"{label}: {exc.strerror or exc}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(info.st_mode) else "a folder" if stat.S_ISDIR(info.st_mode)
                else "a device, pipe or socket")
        raise SpecModelError(f"{label}: it is {kind}, not a regular file; give the name of a new or ordinary file")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise SpecModelError(f"{label}: the folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise SpecModelError(f"{label}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise SpecModelError(f"{label}: {exc.strerror or exc}") from None
    return target


def _parse_int(text: str):
    # Python refuses int() of more than 4,300 digits; no count or setting needs more than 30.
    return int(text) if len(text) <= MAX_INT_DIGITS else float(text)


def json_depth(doc) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), without recursion."""
    deepest, stack = 0, [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


# The depth of JSON text is its deepest bracket outside strings: counted on the text with two patterns
# and one cumulative sum, not by visiting each of a document's millions of values (a 20 MB benchmark list
# took 7 s in json_depth). A container's children sit one level below its bracket, so the value depth is
# the bracket depth or one less (an empty container): only a text exactly one bracket past the limit
# needs json_depth's walk to decide.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_JSON_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NOT_BRACKET_BYTES = re.compile(rb"[^\[\]{}]+")


def _bracket_depth(text: str | bytes) -> int | None:
    """The deepest bracket of JSON text that json.loads read (None: bytes not in UTF-8, count the values)."""
    import numpy as np

    if isinstance(text, (bytes, bytearray)):
        if json.detect_encoding(text) not in ("utf-8", "utf-8-sig"):
            return None
        brackets = _NOT_BRACKET_BYTES.sub(b"", _JSON_STRING_BYTES.sub(b"", text))
    else:
        brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).encode("ascii")
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, np.uint8)
    return int(np.cumsum(np.where((codes == 0x5B) | (codes == 0x7B), 1, -1)).max())


def load_json(text: str | bytes):
    """json.loads within the bounds above. Raises SpecModelError for nesting deeper than
    MAX_JSON_DEPTH; json.JSONDecodeError (with line and column) for text that is not JSON.
    Integers longer than MAX_INT_DIGITS become floats (inf when beyond any float)."""
    try:
        doc = json.loads(text, parse_int=_parse_int)
    except RecursionError:
        doc = None
        too_deep = True
    else:
        depth = _bracket_depth(text)
        too_deep = (json_depth(doc) > MAX_JSON_DEPTH if depth is None or depth == MAX_JSON_DEPTH + 1
                    else depth > MAX_JSON_DEPTH)
    if too_deep:
        raise SpecModelError(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep; a benchmark result "
                             "or a Prometheus answer is a few levels deep: check the file")
    return doc


def json_validator(schema: dict):
    """A jsonschema validator (Draft 2020-12) of `schema` for a document load_json read, with one format of
    its own: "finite", a number that is neither NaN nor infinite (json.loads reads NaN and Infinity, and an
    integer longer than MAX_INT_DIGITS is a float). Callers turn its errors into their own messages."""
    import math

    import jsonschema

    formats = jsonschema.FormatChecker(formats=())

    @formats.checks("finite")
    def finite(value) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return True  # a format applies to its own type: "type" refuses the rest
        try:
            return math.isfinite(value)
        except OverflowError:  # an integer beyond any float
            return False

    return jsonschema.Draft202012Validator(schema, format_checker=formats)


MAX_MESSAGE_CHARS = 2_000  # a message shown on a page or a terminal line: a few sentences

# Markdown that user text must not trigger where Streamlit renders Markdown: emphasis, code, links, HTML,
# headings, tables and maths; and the bare URLs (`http://`, `www.`) and e-mail addresses Streamlit turns
# into links (an escape inside them breaks the pattern; the text reads the same).
_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|~$@!"})
_MESSAGE_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`@<"})  # a message keeps its own **bold**
_CODE_MESSAGE_SPECIAL = str.maketrans({c: "\\" + c for c in "\\@<"})  # ... and, for the app's own words, `code`
_AUTOLINK = re.compile(r"(?i)(://|www\.)")
_LINE_START = re.compile(r"(?m)^([ \t]*)(\d{1,9}(?=[.)]\s)|)([#>=|]|[.)+*-](?=\s))")


def _no_autolinks(escaped: str) -> str:
    return _AUTOLINK.sub(lambda m: "\\:\\/\\/" if m.group(1) == "://" else m.group(1)[:3] + "\\.", escaped)


def safe_text(value, limit: int = MAX_LABEL_CHARS, markdown: str | None = None) -> str:
    """THE text-safety function: every string from a user or a server that reaches a page or a
    terminal goes through it. Control and format characters removed (a forged terminal line, bidi
    overrides), whitespace collapsed, cut to `limit` characters (200 for a name), and where the text
    is rendered as Markdown made inert:

        markdown=None       a terminal line or st.code/st.text: nothing to escape
        markdown="plain"    a user value inside Markdown: no formatting, link, image, HTML, heading or maths
        markdown="message"  a whole message for st.error/st.warning/st.info/st.caption quoting user
                            text: no link, image, HTML or code; its own **bold** and punctuation stay
        markdown="code_message"  the same for the app's own words that mark `code` (a launch flag, a
                            config key): its code spans stay code; no link, image or HTML
    """
    if markdown in ("message", "code_message"):  # line breaks stay; each line is cleaned and its start made inert
        lines = [clean_name(line, limit)[0] for line in str(value)[:limit * 4 + 64].split("\n")]
        text = "\n".join(lines)
        if len(text) > limit:
            text = text[:limit - 1] + "…"
        special = _MESSAGE_SPECIAL if markdown == "message" else _CODE_MESSAGE_SPECIAL
        text = _no_autolinks(text.translate(special).replace("](", "]\\(").replace("![", "!\\["))
        # a heading, quote, list or rule at a line's start is escaped: "\\# ", "1\\. "
        return _LINE_START.sub(lambda m: m.group(1) + m.group(2) + "\\" + m.group(3), text)
    text = clean_name(value, limit)[0]
    if markdown == "plain":
        return _no_autolinks(text.translate(_MARKDOWN_SPECIAL))
    return text


PRINTABLE_ASCII = bytes(range(0x20, 0x7f)) + b"\n\t"  # what terminal_text keeps of ASCII as it is


def terminal_text(text: str) -> str:
    """What reaches a terminal: `text` with control and format characters removed (escape sequences,
    carriage returns, backspaces, text-direction overrides: a line forged inside a label), line breaks
    and tabs kept and the layout untouched (no cut, no collapsing: tables stay aligned, JSON stays JSON).
    The command line's stdout and stderr pass everything through it (cli.output.SafeStream); names are
    also cut and cleaned where they are read (clean_name)."""
    if text.isascii():  # 300 MB of `runs --json` in a fraction of a second: bytes with no control character
        data = text.encode("ascii")
        if not data.translate(None, PRINTABLE_ASCII):
            return text
    elif text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "".join(c if c in "\n\t" or c.isprintable() else " " if unicodedata.category(c) in ("Zs", "Zl", "Zp")
                   else "" for c in text)


def clean_name(value, limit: int = MAX_LABEL_CHARS) -> tuple[str, bool]:
    """A name as it may be shown: control and format characters removed (NUL, escapes, bidi
    overrides), whitespace collapsed, at most `limit` characters. Returns (name, changed)."""
    text = str(value)
    cut = len(text) > limit * 4 + 64
    if cut:  # never more than needed is looked at: the rest is cut anyway
        text = text[:limit * 4 + 64]
    if text.isprintable():  # no control, format or other C-category character: nothing to look at one by one
        kept = " ".join(text.split())
        return (kept[:limit - 1] + "…" if len(kept) > limit or cut else kept), cut
    kept = "".join(" " if c in "\t\r\n" else c for c in text
                   if c in "\t\r\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn"))
    kept = " ".join(kept.split())
    if len(kept) > limit or cut:
        kept = kept[:limit - 1] + "…"
    return kept, cut or any(unicodedata.category(c)[0] == "C" for c in text)
