"""Run `python -m specmodel ...` in-process through `cli.main`: the same parser, commands and exit
codes as the subprocess, without starting Python for every case (tests/test_cli_smoke.py keeps one
real subprocess per command)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess

from specmodel.cli import main
from tests.conftest import ROOT


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """A CompletedProcess with the exit code and the text written to stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)  # as the subprocess ran: relative paths are the project's
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors exit 2
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        os.chdir(cwd)
    return subprocess.CompletedProcess(["python", "-m", "specmodel", *args], code, out.getvalue(), err.getvalue())
