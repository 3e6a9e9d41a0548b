"""Where the checkout's own files are: the sample runs a newcomer can load, and the measurements the
model's defaults cite (bench/evidence/, each with its source). Used by every layer."""

from __future__ import annotations

from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = CHECKOUT / "sample_runs"
EVIDENCE_DIR = CHECKOUT / "bench" / "evidence"


def tool_version() -> str:
    """specmodel's version: the installed package's, else the checkout's (specmodel/version.py, which
    pyproject.toml reads too; `make run`)."""
    from importlib import metadata

    try:
        return metadata.version("specmodel")
    except metadata.PackageNotFoundError:
        from specmodel.version import VERSION

        return VERSION
