"""Command line: `python -m specmodel <command> ...`. Each command lives in its own module of
specmodel/cli/ with `add_parser(subparsers)` and `run(args) -> int`; this file only routes and turns
errors into one line. The commands import this folder's args and output, never this router.

Exit codes: 0 success, 2 bad arguments or nothing usable (one clear line on stderr, no traceback). A bare
`python -m specmodel` prints the usage and the commands on stderr and exits 2; `--version` prints the version.
"""

from __future__ import annotations

import argparse
import sys

from specmodel.cli import capacity, dashboard, fleet, mix, plan, predict, rules, runs, scrape
from specmodel.cli.output import SafeStream
from specmodel.errors import SpecModelError
from specmodel.text import MAX_MESSAGE_CHARS, safe_text
from specmodel.version import VERSION

# Modules that each contribute one subcommand (see specmodel/cli/predict.py for the shape).
COMMAND_MODULES = (predict, plan, scrape, fleet, mix, runs, rules, dashboard, capacity)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage too; keep it short)
        sys.stderr.write(f"{self.prog}: error: {safe_text(message, MAX_MESSAGE_CHARS)}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m specmodel",
                     description="Does speculative decoding pay off? A concurrency-aware cost model.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMAND_MODULES:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(out), SafeStream(err)  # every printed character, argparse's too
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # a bare call: what the commands are, not one line about a missing argument
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.run(args) or 0)
    except SpecModelError as exc:
        sys.stderr.write(f"error: {safe_text(exc, MAX_MESSAGE_CHARS)}\n")  # one line, however the text ran
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
