"""Sessions of one server import the app's modules in their own threads. Two pages' first runs importing at once
met Python's import deadlock avoidance, which handed one of them a half-made module: "cannot import name
'PROGRESS_EVERY' from partially initialized module 'specmodel.runs.load'" (found with two shared links opened on
a fresh server; 10 of 12 fresh interpreters failed so before specmodel.runs imported its names lazily). With the
six pages run from the pages folder at once (links opened on a fresh server before any session ran app.py), a
half-made pandas ("has no attribute 'Series'") or specmodel.show.figures.whatif in 6 of 6 interpreters, until
every page's imports took their turn (pages/parts/streamlit_mode.py, 5: imports_in_turn).
Each interpreter runs what the six page files run before through_app() (their imports), in six threads at once,
switching threads every microsecond so that the imports interleave as a loaded server's do; four of them."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT

RACE = r'''
import ast, sys, threading
sys.path.insert(0, ROOT)
import streamlit, plotly.graph_objects, numpy  # loaded before any session's first page in a server
sys.setswitchinterval(1e-6)


def imports_of(page):
    """The page file's statements before its through_app() call: its imports, in turn or not."""
    tree = ast.parse(open(f"{ROOT}/pages/{page}.py", encoding="utf-8").read())
    calls = [i for i, n in enumerate(tree.body) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
             and getattr(n.value.func, "id", "") == "through_app"]
    return compile(ast.Module(tree.body[:calls[0]], []), page, "exec")


errors = []


def run(code, path):
    try:
        exec(code, {"__name__": "page", "__file__": path})
    except Exception as exc:  # noqa: BLE001 - what a session would have shown
        errors.append(f"{type(exc).__name__}: {exc}")


PAGES = ("whatif", "past-runs", "live", "fleet", "mix", "capacity")
threads = [threading.Thread(target=run, args=(imports_of(p), f"{ROOT}/pages/{p}.py")) for p in PAGES]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors[0] if errors else "ok")
'''


@pytest.mark.slow  # fresh interpreters, each importing the app: in make test, not in make test-fast
def test_six_pages_importing_at_once_all_get_whole_modules():
    runs = [subprocess.Popen([sys.executable, "-c", f"ROOT = {str(ROOT)!r}\n" + RACE], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, cwd=ROOT) for _ in range(4)]  # at once: 4 servers
    results = [run.communicate(timeout=120)[0].strip().splitlines()[-1:] for run in runs]
    assert results == [["ok"]] * 4  # before the fix 0 of 6 passed
