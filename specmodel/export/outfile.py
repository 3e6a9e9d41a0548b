"""Write an output file whole or not at all: a failure never leaves a half-written `--out`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from specmodel.errors import SpecModelError


def write_atomically(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to a temporary file beside `path`, then rename it over `path` (atomic on POSIX)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise SpecModelError(f"cannot write {target}: the folder {folder} does not exist")
    if target.is_dir():
        raise SpecModelError(f"cannot write {target}: it is a folder; give a file name")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise SpecModelError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise SpecModelError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target
