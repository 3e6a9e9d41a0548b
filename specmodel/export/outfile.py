"""Write an output file whole or not at all: a failure never leaves a half-written `--out`, and only a
regular file or a new path is ever written (`files.write_file`)."""

from __future__ import annotations

import os
from pathlib import Path

from specmodel.files import write_file


def write_atomically(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to a temporary file beside `path`, then rename it over `path` (atomic on POSIX);
    a symlink, device or folder at `path` is refused."""
    return write_file(path, text)
