"""Each command once as a real subprocess, as a pipeline runs it (`python -m specmodel ...`): the
module entry point, exit codes and one line on stderr for a failure. Every other CLI test runs
in-process through tests/cli_runner.py."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading

import pytest

from tests.cli_runner import run_cli
from tests.conftest import FIXTURES, ROOT


def sub(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specmodel", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_predict_prints_the_seed_numbers_as_json():
    r = sub("predict", "--alpha", "0.7", "--k", "4", "--t-target-ms", "19", "--t-draft-ms", "3", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["speedup"] == pytest.approx(1.6996, abs=0.005) and out["tokens_per_step"] == pytest.approx(2.7731)


def test_presets_lists_gpus_models_and_methods():
    r = sub("presets", "--json")
    assert r.returncode == 0 and {"gpus", "models", "methods"} <= set(json.loads(r.stdout))


def test_runs_reads_a_file_and_calibrates():
    r = sub("runs", str(FIXTURES / "seed_runs.csv"), "--calibrate", "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["rows"]) == 3


def test_mix_compares_one_pool_with_a_split(tmp_path):
    path = tmp_path / "mix.csv"
    path.write_text("label,share,alpha\nextraction,0.5,0.7\nchat,0.5,0.4\n")
    r = sub("mix", str(path), "--gpus", "2", "--concurrency", "32", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)


@pytest.mark.parametrize("args", [
    ("capacity", "--users", "64", "--min-user-tok-s", "20", "--json"),
    ("rules",),
    ("dashboard",),
])
def test_commands_that_need_no_server_answer(args):
    r = sub(*args)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()


@pytest.mark.parametrize("command", ["scrape", "fleet"])
def test_a_server_that_is_not_there_is_one_line_and_exit_2(command):
    r = sub(command, "http://127.0.0.1:9/metrics" if command == "scrape" else "http://127.0.0.1:9")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_version_prints_the_package_version():
    from specmodel import __version__

    r = sub("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"python -m specmodel {__version__}"


def test_a_bare_call_prints_the_usage_and_every_command():
    r = sub()
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("usage: python -m specmodel")
    assert all(command in r.stderr for command in ("predict", "runs", "scrape", "fleet", "rules", "dashboard"))


def test_runs_reads_standard_input_for_a_dash_within_the_file_limit(monkeypatch):
    from specmodel.bounds import MAX_FILE_BYTES

    csv = (FIXTURES / "seed_runs.csv").read_bytes()
    piped = subprocess.run([sys.executable, "-m", "specmodel", "runs", "-", "--json"], input=csv, cwd=ROOT,
                           capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    from_file = run_cli("runs", str(FIXTURES / "seed_runs.csv"), "--json")  # the file, in-process: the same rows
    rows = json.loads(piped.stdout)["rows"]
    assert [r["verdict"] for r in rows] == [r["verdict"] for r in json.loads(from_file.stdout)["rows"]]
    assert {r["file"] for r in rows} == {"stdin"}
    huge = _runs_from_a_pipe(b"x" * (MAX_FILE_BYTES + 10), monkeypatch)  # the same pipe, in-process
    assert huge.returncode == 2 and "standard input is over the 20 MB limit" in huge.stderr


def _runs_from_a_pipe(data: bytes, monkeypatch) -> subprocess.CompletedProcess:
    """`runs -` in-process, its standard input a real pipe that a thread writes `data` into."""
    read_end, write_end = os.pipe()

    def write():
        with open(write_end, "wb") as pipe, contextlib.suppress(BrokenPipeError):  # the reader may stop early
            pipe.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with open(read_end, "rb") as pipe:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(pipe))
        result = run_cli("runs", "-")
    writer.join(timeout=60)
    return result
