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
    MAX_TP, MAX_GPUS       tensor parallelism per replica, GPUs named in one hardware text ("8x H100")
    MAX_CONCURRENCY        concurrent sequences of a setting (a flag, a page, a run row)
    MAX_CONTEXT            tokens in a sequence's KV cache (and a self_spec draft's KV budget)
    MAX_BRANCHING          tree drafting: tokens per sequence in a draft pass

`write_file(path, text)` is the one way to write one: only a regular file or a new path is written
(a symlink, a device, a pipe or a folder is refused before anything is written), whole or not at all.

`read_file(path)` is the command line's way to read a file: `stat` first (devices, pipes and
folders are refused), then a read capped at the limit. `load_json(text)` parses JSON within the
depth and integer bounds and says what was wrong instead of raising RecursionError or ValueError.
"""

from __future__ import annotations

import json
import os
import stat
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
MAX_TP = 64  # the largest NVLink domains (GB200 NVL72) run TP <= 64 per replica
MAX_GPUS = 100_000  # GPUs named in one hardware text; a count beyond it is a typo, not a cluster
MAX_CONCURRENCY = 65_536  # concurrent sequences; engines cap max_num_seqs far below (vLLM default 256-1024)
MAX_CONTEXT = 1_048_576  # 1M tokens: the longest context any preset model serves
MAX_BRANCHING = MAX_K  # a tree pass proposes at most as many tokens as a step verifies


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
        too_deep = json_depth(doc) > MAX_JSON_DEPTH
    if too_deep:
        raise SpecModelError(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep; a benchmark result "
                             "or a Prometheus answer is a few levels deep: check the file")
    return doc


def clean_name(value, limit: int = MAX_LABEL_CHARS) -> tuple[str, bool]:
    """A name as it may be shown: control and format characters removed (NUL, escapes, bidi
    overrides), whitespace collapsed, at most `limit` characters. Returns (name, changed)."""
    text = str(value)
    kept = "".join(" " if c in "\t\r\n" else c for c in text
                   if c in "\t\r\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn"))
    kept = " ".join(kept.split())
    if len(kept) > limit:
        kept = kept[:limit - 1] + "…"
    return kept, any(unicodedata.category(c)[0] == "C" for c in text)
