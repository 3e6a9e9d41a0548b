"""Every `python -m specmodel` command written in README.md and docs/ still runs: concrete commands run
in-process (placeholders become real inputs: a sample file, a local replay server, a temporary file),
and their printed output, where the page shows it after `$ `, still matches; synopses (`[--flag …]`)
name only flags the command has. `fleet` examples are parsed here (tests/test_fleet.py runs fleet
against a real Prometheus)."""

import re
import shlex
from pathlib import Path

import pytest

from specmodel.cli import build_parser
from tests.cli_runner import run_cli
from tests.replay import ReplayServer

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"^(\$ )?python -m specmodel ")
SYNOPSIS = re.compile(r"[\[(…|]|\bFILE\b")
# Placeholders the docs use for the reader's own inputs, and what the test runs instead.
PLACEHOLDER_FILES = {"RUNS.csv": "sample_runs/multi_workload.csv", "NEXT_MONTH.csv": "sample_runs/seed_runs.csv"}


def doc_commands() -> list[tuple[str, int, str, list[str]]]:
    """(doc, line, command, the output lines printed under it) for every command in a code block."""
    found = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        in_block = False
        for i, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                in_block = not in_block
                continue
            text = line.strip()
            if not ((in_block or line.startswith("    ")) and COMMAND.match(text)):
                continue
            output = []
            if text.startswith("$ "):
                for after in lines[i + 1:]:
                    if after.lstrip().startswith(("```", "$ ")):
                        break
                    output.append(after.strip())
            code = re.sub(r"\s+#.*$", "", text.removeprefix("$ "))  # a trailing comment is prose
            for part in code.split("; "):
                found.append((doc.name, i + 1, part.strip(), output))
    return found


COMMANDS = doc_commands()


def test_the_docs_hold_the_commands_this_test_runs():
    assert len(COMMANDS) >= 20
    assert {doc for doc, *_ in COMMANDS} >= {"README.md", "whatif.md", "capacity.md", "model.md", "live-and-fleet.md"}


def _args(command: str) -> list[str]:
    return shlex.split(command.removeprefix("python -m specmodel "), comments=True)


def _options(command_name: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and command_name in a.choices).choices[command_name]
    return {s for a in sub._actions for s in a.option_strings}


@pytest.mark.parametrize(("doc", "line", "command", "output"), [c for c in COMMANDS if SYNOPSIS.search(c[2])],
                         ids=lambda v: v if isinstance(v, str) and v.endswith(".md") else None)
def test_a_synopsis_names_only_flags_the_command_has(doc, line, command, output):
    name = command.split()[3]
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", command))
    assert named, f"{doc}:{line}: no flag in {command!r}"
    assert named <= _options(name), f"{doc}:{line}: {sorted(named - _options(name))} are not flags of {name}"


@pytest.mark.slow  # every documented command run: in make test, not in make test-fast
@pytest.mark.parametrize(("doc", "line", "command", "output"), [c for c in COMMANDS if not SYNOPSIS.search(c[2])],
                         ids=lambda v: v if isinstance(v, str) and v.endswith(".md") else None)
def test_a_documented_command_runs_and_prints_what_the_docs_show(doc, line, command, output, tmp_path):
    args = [PLACEHOLDER_FILES.get(a, a) for a in _args(command)]
    args = [str(tmp_path / a) if a.endswith("cal.json") else a for a in args]
    if args[0] == "fleet":  # needs a Prometheus: the flags must parse (tests/test_fleet.py runs it for real)
        build_parser().parse_args(args)
        return
    if "--calibration" in args and not (tmp_path / "cal.json").exists():
        assert run_cli("runs", "sample_runs/multi_workload.csv", "--calibrate", "--save-calibration",
                       str(tmp_path / "cal.json")).returncode == 0
    with ReplayServer("vllm_v1_specdecode_sample.txt",
                      increments={"vllm:spec_decode_num_drafts_total": 1000,
                                  "vllm:spec_decode_num_accepted_tokens_per_pos_total": [800, 500, 300]}) as server:
        args = [server.url if a == "http://host:8000/metrics" else a for a in args]
        if args[0] == "scrape":  # the documented window, shortened: the replay advances per scrape, not per second
            args[args.index("--window") + 1] = "0.2"
        result = run_cli(*args)
    assert result.returncode == 0, f"{doc}:{line}: {command} exited {result.returncode}: {result.stderr}"
    printed = [row.strip() for row in result.stdout.splitlines()]
    for shown in output:
        prefix = shown.removesuffix("...").rstrip(", ")
        assert any(row.startswith(prefix) for row in printed), \
            f"{doc}:{line}: the docs show {shown!r}; {command} now prints:\n{result.stdout}"
