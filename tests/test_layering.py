"""The seams between specmodel's modules, checked from their source with `ast`.

A module's private names (a leading underscore) are its own: another module that needs one needs a
public name in the module that owns the idea. The JSON shapes of results live beside the results, so
only the command-line modules (`cmd_*`, `cli`) import from a command module. specmodel never imports
streamlit: the pages wire widgets to it, not the other way round.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specmodel"
MODULES = sorted(PACKAGE.rglob("*.py"))  # with the subpackage specmodel/runs/


def _module_name(path):
    """A module's name inside specmodel ("prom", "runs.records", "runs" for runs/__init__.py); a file
    outside the package (the checker's own tests) is named by its stem."""
    try:
        parts = list(path.resolve().relative_to(PACKAGE).with_suffix("").parts)
    except ValueError:
        return path.stem
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path):
    """The package a module's relative imports start from ("" for specmodel itself, "runs" for specmodel/runs/)."""
    try:
        return ".".join(path.resolve().relative_to(PACKAGE).parent.parts)
    except ValueError:
        return ""


OWN = {_module_name(path) for path in MODULES}


def _is_cli(stem):
    return stem == "cli" or stem.startswith("cmd_")


def _specmodel_module(node, package):
    """The specmodel module an ImportFrom names, relative to specmodel ("" for specmodel itself):
    `from .x import`, `from ..x import` or `from specmodel.x import`; None for one outside the package."""
    if node.level >= 1:
        base = package.split(".") if package else []
        if node.level - 1 > len(base):
            return None
        base = base[:len(base) - (node.level - 1)]
        return ".".join([*base, *([node.module] if node.module else [])])
    parts = (node.module or "").split(".")
    if parts[0] == "specmodel":
        return ".".join(parts[1:])
    return None


def _violations(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    stem, own, package = path.stem, _module_name(path), _package_of(path)
    found = []
    imported_modules = {}  # local name -> specmodel module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] == "streamlit":
                found.append(f"{path.name}:{node.lineno}: imports from streamlit")
            module = _specmodel_module(node, package)
            if module is None:
                continue
            where = f"{path.name}:{node.lineno}"
            if module.startswith("cmd_") and not _is_cli(stem):
                found.append(f"{where}: imports from the command module {module} outside cmd_*/cli")
            for alias in node.names:
                submodule = f"{module}.{alias.name}" if module else alias.name
                if submodule in OWN or (module == "" and alias.name in OWN):  # `from . import prom`
                    imported_modules[alias.asname or alias.name] = submodule
                    if alias.name.startswith("cmd_") and not _is_cli(stem):
                        found.append(f"{where}: imports the command module {alias.name} outside cmd_*/cli")
                elif alias.name.startswith("_") and module != own:
                    found.append(f"{where}: imports the private name {alias.name} from {module or 'specmodel'}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "streamlit":
                    found.append(f"{path.name}:{node.lineno}: imports streamlit")
                if alias.name.startswith("specmodel."):
                    imported_modules[alias.asname or alias.name] = alias.name.split(".", 1)[1]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in imported_modules
                and imported_modules[node.value.id] != own):
            found.append(f"{path.name}:{node.lineno}: reads the private name "
                         f"{imported_modules[node.value.id]}.{node.attr}")
    return found


def test_the_package_has_modules_to_check():
    assert len(MODULES) > 30, f"found only {len(MODULES)} modules under {PACKAGE}"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_reaches_into_another_modules_private_names(path):
    assert _violations(path) == []


@pytest.mark.parametrize("source, expected", [
    ("from .prom import _finite\n", "imports the private name _finite from prom"),
    ("from specmodel.prom import _finite\n", "imports the private name _finite from prom"),
    ("from . import prom\nprom._COUNTERS\n", "reads the private name prom._COUNTERS"),
    ("from .runs.names import _default_draft\n", "imports the private name _default_draft from runs.names"),
    ("from .runs import names\nnames._clean({})\n", "reads the private name runs.names._clean"),
    ("from .cmd_scrape import result_dict\n", "imports from the command module cmd_scrape"),
    ("import streamlit as st\n", "imports streamlit"),
    ("from streamlit import session_state\n", "imports from streamlit"),
])
def test_the_checker_catches_each_kind_of_leak(tmp_path, source, expected):
    module = tmp_path / "model_module.py"
    module.write_text(source, encoding="utf-8")
    assert any(expected in line for line in _violations(module)), _violations(module)


def test_the_checker_lets_a_module_use_its_own_private_names_and_the_cli_import_commands(tmp_path):
    own = tmp_path / "prom.py"
    own.write_text("from .prom import _finite\n", encoding="utf-8")
    cli = tmp_path / "cmd_fleet.py"
    cli.write_text("from .cmd_args import number\nfrom .cmd_predict import add_scenario_arguments\n",
                   encoding="utf-8")
    assert _violations(own) == [] and _violations(cli) == []


# --- the run readers: a package of small modules, one job each ------------------------------------------

RUNS = PACKAGE / "runs"


def test_the_run_readers_are_a_package_and_the_old_module_is_gone():
    assert (RUNS / "__init__.py").is_file()
    assert not (PACKAGE / "runs.py").exists(), "specmodel/runs.py beside specmodel/runs/ would be shadowed"
    assert not any((PACKAGE / name).exists() for name in ("runs_logs.py", "runs_spec.py", "runs_view.py",
                                                          "breakeven.py"))


@pytest.mark.parametrize("path", sorted(RUNS.glob("*.py")), ids=lambda path: path.name)
def test_no_run_reader_module_exceeds_400_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 400, f"{path.name} has {lines} lines; split it by job"


def test_a_module_inside_the_runs_package_is_checked_with_its_relative_imports():
    module = RUNS / "validate.py"
    assert _module_name(module) == "runs.validate" and _package_of(module) == "runs"
    node = ast.parse("from ..limits import MAX_K").body[0]
    assert _specmodel_module(node, "runs") == "limits"
    node = ast.parse("from .names import names_of").body[0]
    assert _specmodel_module(node, "runs") == "runs.names"


# --- pages tell warnings from notes by severity, never by their text ------------------------------

PAGES = sorted((PACKAGE.parent / "pages").glob("*.py"))


def _note_text_tests(path):
    """Places where a page decides something from a note's words: `"restarted" in note`,
    `note.startswith(...)`, for names bound to notes (a loop over anything called *notes*)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    note_names = {"note", "notes"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and "note" in ast.unparse(node.iter).lower():
            note_names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}

    def about_notes(expr):
        return (any(isinstance(n, ast.Name) and n.id in note_names for n in ast.walk(expr))
                or any(isinstance(n, ast.Attribute) and "note" in n.attr for n in ast.walk(expr)))

    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
                and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
                and about_notes(node.comparators[0])):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("startswith", "endswith", "find", "index") and about_notes(node.func.value)):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_there_are_pages_to_check():
    assert {"live.py", "mix.py", "whatif.py", "fleet.py", "capacity.py"} <= {p.name for p in PAGES}


@pytest.mark.parametrize("path", PAGES, ids=lambda path: path.name)
def test_no_page_sorts_notes_by_their_words(path):
    assert _note_text_tests(path) == []


@pytest.mark.parametrize("source", [
    'for note in stats.notes + verdict.notes:\n    if "restarted" in note or "no drafts" in note:\n        pass\n',
    'for n in report.notes:\n    if "does not fit" in n:\n        pass\n',
    'warn = [x for x in result.notes if x.startswith("k ")]\n',
    'if "does not fit" in report.notes[0]:\n    pass\n',
])
def test_the_note_checker_catches_each_way_of_reading_a_notes_words(tmp_path, source):
    page = tmp_path / "page.py"
    page.write_text(source, encoding="utf-8")
    assert _note_text_tests(page), source


# --- pages are wiring: short files --------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted((PACKAGE.parent / "pages").glob("*.py")), ids=lambda path: path.name)
def test_every_page_file_is_at_most_150_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 150, f"pages/{path.name} has {lines} lines: move what it computes or decides into specmodel"


def test_no_cli_module_is_imported_outside_the_cli():
    """The JSON shapes of results live beside the results: only cli.py and cmd_*.py import a cmd_ module."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "cli.py" or path.name.startswith("cmd_"):
            continue
        found += [f"{path.name}: {line.strip()}" for line in path.read_text(encoding="utf-8").splitlines()
                  if line.lstrip().startswith(("from .cmd_", "from specmodel.cmd_", "import specmodel.cmd_"))]
    assert found == []


def test_building_the_command_line_imports_neither_pandas_nor_scipy():
    """Every command builds every command's parser: `predict` answers without loading pandas, scipy
    or the run readers (the heavy imports sit in the commands that use them)."""
    import subprocess
    import sys

    code = ("import sys; from specmodel import cli; cli.build_parser(); "
            "print(sorted(m for m in ('pandas', 'scipy', 'specmodel.runs', 'plotly') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent).stdout
    assert out.strip() == "[]"


def test_pages_bench_and_tests_use_only_public_names_of_the_project():
    """Outside specmodel too: pages, benchmarks and tests import the project's public names only."""
    root = PACKAGE.parent
    found = []
    for path in sorted([*root.glob("pages/*.py"), *root.glob("bench/*.py"), *root.glob("tests/*.py"), root / "app.py"]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("specmodel", "pages"):
                found += [f"{path.relative_to(root)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == []
