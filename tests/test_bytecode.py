"""`make run` byte-compiles the app's own modules first (`make bytecode`), so that a fresh server loads
them instead of compiling ~40 modules for its first page where Python may not write __pycache__
(PYTHONDONTWRITEBYTECODE); `bench first_page` reports the same count when it measures."""

import re
import subprocess

from bench.bench_first_page import bytecode_state
from tests.conftest import ROOT


def test_make_bytecode_leaves_every_module_of_the_app_compiled_and_make_run_does_it_first():
    done = subprocess.run(["make", "-s", "bytecode"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    fresh, total = map(int, re.search(r"(\d+) of (\d+)", bytecode_state()).groups())
    assert total > 100 and fresh == total  # app.py, pages/ and specmodel/: what the What-if page imports
    dry = subprocess.run(["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    assert dry.index("compileall") < dry.index("streamlit run")
