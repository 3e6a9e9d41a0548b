"""Bounds on the work any one input may cause, in one table, and what enforces them.

A shared instance reads files people upload and answers from servers people name, so every
quantity that work grows with has a stated maximum (docs/deploy.md lists them):

    MAX_K                  draft tokens per step (and tree width) in every reader, parser and flag
    MAX_ROWS_PER_FILE      runs read from one file: the first ones load, the rest are named in a message
    MAX_ROWS_TOTAL         runs read from all files of one load, the same way
    MAX_FILE_BYTES         one uploaded or named file (the app's upload limit, 20 MB = 20,000,000 bytes)
    MAX_JSON_DEPTH         nesting of a JSON document (files and Prometheus answers)
    MAX_INT_DIGITS         digits of a JSON integer before it is read as a float (inf: not a number)
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
                           (`bounded_cache`)

`check_setting` and `check_k` bound a setting at the door. The bounds on text shown back (a name's
length, a message's) live with the text they bound (specmodel.text); reading and writing files within
these bounds is specmodel.files.
"""

from __future__ import annotations

import contextlib
import contextvars
import time

from specmodel.errors import SpecModelError
from specmodel.text import clean_name

MAX_K = 64  # chosen: no engine drafts more than a few dozen tokens per step; vLLM's trees stay under 64 wide
MAX_ROWS_PER_FILE = 200_000  # chosen: a year of hourly sweeps is far fewer; 200,000 load in seconds (bench runs_large)
MAX_ROWS_TOTAL = 200_000  # chosen: runs of all files loaded at once (the Past runs page and the runs command)
MAX_UPLOAD_MB = 20  # chosen, and set in .streamlit/config.toml server.maxUploadSize
# Streamlit's uploader counts that limit in the browser, where 1 MB is 10^6 bytes (2^20 only on Windows;
# the server itself allows 2^20): the smaller is the limit every user meets, so the reader uses it too.
MAX_FILE_BYTES = MAX_UPLOAD_MB * 1_000_000  # chosen: the upload limit above, in the browser's bytes
MAX_JSON_DEPTH = 64  # chosen: a benchmark file is 4-5 levels deep; Prometheus answers 5
MAX_INT_DIGITS = 30  # chosen: longer integers are read as floats (a 400-digit count is infinite for the model)
MAX_MIX_WORKLOADS = 10_000  # chosen: a traffic mix has a few kinds of traffic; 10,000 compare in ~3 s
# One CSV cell, documented: the csv module's field limit (csv.field_size_limit(), 131,072 by default), which it enforces
# while reading: a longer cell refuses its row only.
MAX_CELL_CHARS = 131_072
MAX_COLUMNS = 10_000  # chosen: a run file has a few dozen columns; 10,000 are read in well under a second
MAX_TP = 64  # chosen: the largest NVLink domains (GB200 NVL72) run TP <= 64 per replica
MAX_CONCURRENCY = 65_536  # chosen: concurrent sequences; engines cap max_num_seqs far below (vLLM default 256-1024)
# chosen, 16M tokens: above the longest context a released model serves (Llama 4 Scout: 10M,
# max_position_embeddings 10,485,760 in its config.json)
MAX_CONTEXT = 16_777_216
MAX_BRANCHING = MAX_K  # a tree pass proposes at most as many tokens as a step verifies


# Seconds of parsing and processing one input may take once its bytes are here (a file read into runs,
# a scrape parsed, a Fleet answer judged instance by instance): past it the work stops and says how far
# it got (12,000 Fleet instances took 46.6 s). The HTTP exchange before it has its own total deadline.
# Sample lines of one /metrics page (histogram buckets, which are skipped, and comments not counted):
# one engine's page holds a few hundred to a few thousand (the reference pages: under 300), so 50,000 is
# dozens of data-parallel engines at k = 64; prometheus_client reads ~25-55 µs a sample, so the bound
# keeps a page's parse within a few seconds (2,000 engines x 64 positions took 8.7 s of CPU). Chosen.
MAX_METRICS_SAMPLES = 50_000
MAX_WORK_S = 30.0  # chosen (see the comment above MAX_METRICS_SAMPLES)
# A load of run files is a heavier job a user starts and watches (a progress bar): the largest accepted
# file (200,000 runs) took 39 s on a busy 2-core machine, so it gets more before it is cut (chosen).
MAX_LOAD_S = 120.0
PROMETHEUS_TIMEOUT_S = 15.0  # chosen: one Prometheus query waits this long by default (metrics.promapi, `fleet --timeout`)

MAX_CACHED_KEY_CHARS = 256  # chosen: a cache key longer than this (a hostile name) is not kept
MAX_NAME_TEXT = 1_000  # chosen: the longest real name ("8x H100 80GB HBM3 (TP=8, ...)") is under 200 characters


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


CHECK_EVERY = 0x4000  # chosen: parts of an input (lines, records, pieces of a line) between two looks at the clock


def stop_due(i: int) -> bool:
    """Whether a loop over an input's parts stops before part `i`: the work deadline has passed, looked at
    every CHECK_EVERY parts (every loop that runs over input asks, so no file holds a core past the limit)."""
    return bool(i) and not i % CHECK_EVERY and out_of_time()


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
# A plain dict emptied at 256 entries, not a cachetools.LRUCache: it is read on every call of every bounded cache
# (a run file's rows pass the same RunDefaults), and an LRUCache there needs a lock (sessions share it from threads):
# 1.5 µs a read against 0.3 µs, on a 4.7 µs key check (measured 2026-12-07, shared 2-core machine).


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
