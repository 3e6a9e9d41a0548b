"""The house by layer, checked from the source with `ast`.

specmodel is a folder per layer, each importing only the layers before it (LAYERS), with no import
loop between modules, late imports inside functions included. A module's private names (a leading
underscore) are its own: another module that needs one needs a public name in the module that owns
the idea. Only the command line (specmodel/cli/) imports a command module. specmodel never imports
streamlit: the pages wire widgets to it, not the other way round; pages/parts/ holds what the pages
share and never imports a page.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "specmodel"
MODULES = sorted(PACKAGE.rglob("*.py"))

# The layers, bottom first: a module may import its own layer and those before it.
BASE = {"errors", "notes", "bounds", "text", "numbers", "files", "paths", "version"}  # used by every layer
LAYERS = ["base", "model", "fit", "words", "runs", "metrics", "plan", "export", "show", "cli"]
FACADE = {"", "__main__"}  # specmodel/__init__.py (the public API) and __main__.py sit above everything


def _module_name(path):
    """A module's name inside specmodel ("metrics.prom", "runs" for runs/__init__.py, "" for the
    package itself); a file outside the package (the checker's own tests) is named by its stem."""
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


def layer_of(module: str) -> str:
    """The layer of a module named relative to specmodel ("model.scenario" -> "model", "bounds" -> "base")."""
    if module in FACADE:
        return "facade"
    top = module.split(".")[0]
    return "base" if top in BASE else top


def _is_cli(module):
    return layer_of(module) == "cli"


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


def imports_of(path) -> list[tuple[int, str]]:
    """(line, specmodel module) for every import in the file, late ones inside functions included;
    `from specmodel.model import scenario` names the module specmodel.model.scenario."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _package_of(path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _specmodel_module(node, package)
            if module is None:
                continue
            subs = [f"{module}.{a.name}" if module else a.name for a in node.names]
            named = [s for s in subs if s in OWN]
            found += [(node.lineno, s) for s in named]
            if len(named) < len(subs):  # names from the module itself (not submodules of it)
                found.append((node.lineno, module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".", 1)[1]) for a in node.names if a.name.startswith("specmodel.")]
    return found


def _violations(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own, package = _module_name(path), _package_of(path)
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
            for alias in node.names:
                submodule = f"{module}.{alias.name}" if module else alias.name
                if submodule in OWN:  # `from specmodel.metrics import prom`
                    imported_modules[alias.asname or alias.name] = submodule
                    if _is_cli(submodule) and submodule != "cli" and not _is_cli(own) and own not in FACADE:
                        found.append(f"{where}: imports the command module {submodule} outside specmodel/cli/")
                elif alias.name.startswith("_") and module != own:
                    found.append(f"{where}: imports the private name {alias.name} from {module or 'specmodel'}")
            if _is_cli(module) and module != "cli" and not _is_cli(own) and own not in FACADE:
                found.append(f"{where}: imports from the command module {module} outside specmodel/cli/")
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


# --- the folders are the layers ------------------------------------------------------------------------

def test_every_module_lives_in_a_layer_folder_or_the_base():
    flat = sorted(p.name for p in PACKAGE.glob("*.py") if p.stem not in BASE | {"__init__", "__main__"})
    assert flat == [], f"modules outside a layer folder: {flat} (put each in the folder of its job)"
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert folders == sorted(LAYERS[1:]), folders


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_its_own(path):
    own = _module_name(path)
    if own in FACADE:
        return
    rank = LAYERS.index(layer_of(own))
    upward = [f"{path.relative_to(PACKAGE)}:{line}: {own} ({layer_of(own)}) imports {module} ({layer_of(module)})"
              for line, module in imports_of(path)
              if layer_of(module) == "facade" or LAYERS.index(layer_of(module)) > rank]
    assert upward == []


def _graph():
    return {_module_name(p): {m for _, m in imports_of(p) if m != _module_name(p) and m in OWN} for p in MODULES}


def _cycle(graph):
    """One import loop in the graph as a list of modules, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
            if nxt not in state:
                found = visit(nxt, trail + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_no_import_loop_between_modules():
    graph = {m: deps for m, deps in _graph().items() if m not in FACADE}
    # a package's __init__ that re-exports its modules is not a loop with them
    for m in graph:
        graph[m] = {d for d in graph[m] if not (m.startswith(d + ".") and d in OWN)}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_loop_finder_finds_a_loop_and_accepts_a_chain():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("module, layer", [("model.scenario", "model"), ("bounds", "base"), ("runs", "runs"),
                                           ("show.figures.live", "show"), ("cli.predict", "cli"), ("", "facade")])
def test_layer_of_reads_the_folder(module, layer):
    assert layer_of(module) == layer


def test_the_import_reader_sees_late_imports_and_modules_named_in_a_from_list(tmp_path):
    fake = tmp_path / "fake.py"
    fake.write_text("import numpy\nfrom specmodel.metrics import prom, scrape\n\n\ndef f():\n"
                    "    from specmodel.cli.output import print_json\n", encoding="utf-8")
    found = imports_of(fake)
    assert found == [(2, "metrics.prom"), (2, "metrics.scrape"), (6, "cli.output")]
    assert LAYERS.index(layer_of("cli.output")) > LAYERS.index(layer_of("model.scenario"))


# --- private names, streamlit, command modules ------------------------------------------------------------

@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_reaches_into_another_modules_private_names(path):
    assert _violations(path) == []


@pytest.mark.parametrize("source, expected", [
    ("from specmodel.metrics.prom import _finite\n", "imports the private name _finite from metrics.prom"),
    ("from specmodel.metrics import prom\nprom._families\n", "reads the private name metrics.prom._families"),
    ("from specmodel.runs.names import _default_draft\n", "imports the private name _default_draft from runs.names"),
    ("from specmodel.runs import names\nnames._clean({})\n", "reads the private name runs.names._clean"),
    ("from specmodel.cli.scrape import result_dict\n", "imports from the command module cli.scrape"),
    ("from specmodel.cli import scrape\n", "imports the command module cli.scrape"),
    ("import streamlit as st\n", "imports streamlit"),
    ("from streamlit import session_state\n", "imports from streamlit"),
])
def test_the_checker_catches_each_kind_of_leak(tmp_path, source, expected):
    module = tmp_path / "model_module.py"
    module.write_text(source, encoding="utf-8")
    assert any(expected in line for line in _violations(module)), _violations(module)


def test_the_checker_lets_a_module_use_its_own_private_names_and_the_cli_import_commands():
    assert _violations(PACKAGE / "cli" / "router.py") == []
    assert all("private" not in v for v in _violations(PACKAGE / "metrics" / "prom.py"))


def test_building_the_command_line_imports_neither_pandas_nor_scipy():
    """Every command builds every command's parser: `predict` answers without loading pandas, scipy
    or the run readers (the heavy imports sit in the commands that use them)."""
    code = ("import sys; from specmodel import cli; cli.build_parser(); "
            "print(sorted(m for m in ('pandas', 'scipy', 'specmodel.runs', 'plotly') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


def test_the_what_if_page_draws_without_pandas_scipy_or_the_scrapers():
    """The first page a reviewer opens runs the model and draws its charts: pandas, scipy, the HTTP
    client, the /metrics parser and the run readers load with the pages that use them; Streamlit's
    emoji catalog (one regex of every emoji, loaded by an alert box whose text is not ASCII unless it
    is told there is no icon: pages/parts/display.py alert) is not loaded either, nor numpy.ma (a
    plain np.unique asks it whether its array is masked: ~80 ms of a fresh server's first page)."""
    code = ("import sys; from streamlit.testing.v1 import AppTest; at = AppTest.from_file(sys.argv[1], default_timeout=120)"
            ".run(); assert not at.exception and at.title[0].value.startswith('What-if'), at.exception; "
            "print(sorted(m for m in ('pandas', 'scipy', 'httpx', 'prometheus_client', 'specmodel.runs', "
            "'specmodel.metrics', 'streamlit.emojis', 'numpy.ma') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "app.py")], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip().splitlines()[-1] == "[]"


# --- the run readers: a package of small modules, one job each ------------------------------------------

RUNS = PACKAGE / "runs"


def test_the_old_flat_modules_are_gone():
    assert not (PACKAGE / "runs.py").exists(), "specmodel/runs.py beside specmodel/runs/ would be shadowed"
    gone = ("scenario.py", "presets.py", "prom.py", "fit.py", "capacity.py", "cli.py", "figures.py", "cmd_args.py")
    assert not [name for name in gone if (PACKAGE / name).exists()]


@pytest.mark.parametrize("path", sorted(RUNS.glob("*.py")), ids=lambda path: path.name)
def test_no_run_reader_module_exceeds_400_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 400, f"{path.name} has {lines} lines; split it by job"


def test_a_module_inside_a_layer_is_named_with_its_folder():
    module = RUNS / "validate.py"
    assert _module_name(module) == "runs.validate" and _package_of(module) == "runs"
    node = ast.parse("from ..bounds import MAX_K").body[0]
    assert _specmodel_module(node, "runs") == "bounds"
    node = ast.parse("from .names import names_of").body[0]
    assert _specmodel_module(node, "runs") == "runs.names"


# --- pages tell warnings from notes by severity, never by their text ------------------------------

PAGES = sorted((ROOT / "pages").glob("*.py"))
PARTS = sorted((ROOT / "pages" / "parts").glob("*.py"))


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


def test_the_six_pages_are_in_pages_and_what_they_share_in_parts():
    assert {p.name for p in PAGES} == {"whatif.py", "past-runs.py", "live.py", "fleet.py", "mix.py", "capacity.py"}
    assert {"common.py", "display.py", "text.py"} <= {p.name for p in PARTS}


@pytest.mark.parametrize("path", PAGES + PARTS, ids=lambda path: str(path.relative_to(ROOT)))
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


@pytest.mark.parametrize("path", PAGES + PARTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_page_file_is_at_most_150_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 150, f"{path.relative_to(ROOT)} has {lines} lines: move what it computes or decides into specmodel"


@pytest.mark.parametrize("path", PAGES + PARTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_pages_import_parts_and_parts_import_no_page(path):
    """A page imports pages/parts/ and specmodel, never another page; parts never import a page; no
    page or part imports the command line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wrong = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] == "pages" and parts[1:2] != ["parts"]:
                wrong.append(node.module)
            if parts[:2] == ["specmodel", "cli"]:
                wrong.append(node.module)
    assert wrong == []


def test_pages_bench_and_tests_use_only_public_names_of_the_project():
    """Outside specmodel too: pages, benchmarks and tests import the project's public names only."""
    found = []
    files = [*PAGES, *PARTS, *ROOT.glob("bench/*.py"), *ROOT.glob("tests/*.py"), ROOT / "app.py"]
    for path in sorted(files):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("specmodel", "pages"):
                found += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == []
