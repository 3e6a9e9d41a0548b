"""Files and JSON within the bounds (specmodel.bounds): the one way to read a file, to write one and
to parse JSON.

`write_file(path, text)` is the one way to write one: only a regular file or a new path is written
(a symlink, a device, a pipe or a folder is refused before anything is written), whole or not at all.

`read_file(path)` is the command line's way to read a file: `stat` first (devices, pipes and
folders are refused), then a read capped at the limit; `read_stdin()` reads standard input (`-` for a
file name) with the same cap. `load_json(text)` parses JSON within the
depth and integer bounds and says what was wrong instead of raising RecursionError or ValueError;
`json_validator(schema)` checks what it read against a JSON Schema (jsonschema).
"""

from __future__ import annotations

import json
import os
import re
import stat

from specmodel.bounds import MAX_FILE_BYTES, MAX_INT_DIGITS, MAX_JSON_DEPTH
from specmodel.errors import SpecModelError


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


def read_stdin(max_bytes: int = MAX_FILE_BYTES, stream=None) -> bytes:
    """Standard input's bytes (a file name `-`), within the same limit as a file: the read stops one byte
    past it, so a pipe that never ends is refused, not read into memory."""
    import sys

    stream = stream if stream is not None else sys.stdin.buffer
    try:
        data = stream.read(max_bytes + 1)
    except OSError as exc:
        raise SpecModelError(f"-: cannot read standard input ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise SpecModelError(f"-: standard input is over the {max_bytes / 1e6:.0f} MB limit; split it or keep only "
                             "the summary rows")
    return data


def writable(path, what: str = ""):
    """(the path, its folder) where write_file may write `path`: a regular file or a new name in a folder that
    exists; SpecModelError naming the path and why not otherwise. A command that works for seconds before it
    writes asks first, so a bad output path is refused before the work, not after it."""
    from pathlib import Path

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
    return target, folder


def write_file(path, text: str, what: str = "") -> "os.PathLike":
    """Write `text` to `path` atomically (a temporary file beside it, then a rename), only where `path`
    is a regular file or does not exist yet: a symlink, device, pipe, socket or folder is refused by
    name (a rename over a device node or a link replaced it and exited 0). `what` names the output
    ("the calibration") in messages. Returns the path written."""
    import tempfile

    target, folder = writable(path, what)
    label = f"cannot write {what + ' to ' if what else ''}{target}"
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
