"""Every module-level numeric constant in specmodel/ says what it is (issue 43, item 5): a number, and a table,
grid, style or object holding numbers (a dict of bounds, np.arange(1, K + 1), dict(width=2), Bound(1, 10)); a
JSON Schema's numbers (a dict with a "type" key) and an index (`parents[1]`) are not constants of their own.

A constant's own line(s), or the comment block right above it, name its kind with one of:
- measured: where (a file under bench/evidence/ or tests/fixtures/, and the probe that wrote it);
- fitted: to which data;
- chosen: why this value (where no measurement was found, the comment says so);
- published / documented: a figure from a named source (a datasheet, an engine default with its file
  or URL, a paper).
The engines' numbers in specmodel/model/data/engines.json say the same in their source texts.
"""
import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KIND = re.compile(r"\b(measured|fitted|chosen|published|documented)\b", re.IGNORECASE)




def _number(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _indices(v) -> set[int]:
    return {id(n) for s in ast.walk(v) if isinstance(s, ast.Subscript) for n in ast.walk(s.slice)}


def _numeric(v) -> bool:
    """A value that holds a number of its own: any number in it but an index or a JSON Schema's."""
    if isinstance(v, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "type" for k in v.keys):
        return False  # a JSON Schema: its bounds are the ones said where they are defined
    skip = _indices(v)
    return any(_number(n) and id(n) not in skip for n in ast.walk(v))


def numeric_constants(source: str):
    """(name, line, the text that may label it) of each module-level UPPER_CASE numeric constant."""
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None or not _numeric(node.value):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names or not names[0].lstrip("_").isupper():
            continue
        text = lines[node.lineno - 1: node.end_lineno]
        i = node.lineno - 2
        while i >= 0 and lines[i].lstrip().startswith("#"):
            text.insert(0, lines[i])
            i -= 1
        yield names[0], node.lineno, "\n".join(text)


def unlabelled(source: str) -> list[str]:
    return [f"{name} (line {line})" for name, line, text in numeric_constants(source) if not KIND.search(text)]


MODULES = sorted(p for p in (ROOT / "specmodel").rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_numeric_constant_says_what_it_is(path):
    rel = path.relative_to(ROOT).as_posix()
    assert unlabelled(path.read_text()) == [], (
        f"{rel}: say whether each is measured (where), fitted (to what), chosen (why) or "
        "published/documented (which source), on its line or in the comment block above it")


def test_the_rule_catches_and_passes():
    source = (
        "import x\n"
        "A = 4  # a count\n"
        "# chosen: round\n"
        "B = 2.0\n"
        "C = (1, 2)  # published: vendor datasheet\n"
        "D = 'text'\n"
        "lower = 3\n"
        "_E = -1e-6\n"
        "# measured: bench/evidence/x.csv\n"
        "F = (\n"
        "    1, 2)\n"
        "G: float = 3 * 4\n"
        "H = {'a': (1, 'one'), 'b': (2, 'two')}\n"
        "I = np.arange(1, K + 1)\n"
        "J = dict(color='#fff', width=2)  # chosen: thin\n"
        "CHECKOUT = Path(__file__).parents[1]\n"
        "SCHEMA = {'type': 'number', 'minimum': 0}\n"
        "NAMES = ('a', 'b')\n"
    )
    assert unlabelled(source) == ["A (line 2)", "_E (line 8)", "G (line 12)", "H (line 13)", "I (line 14)"]


ENGINES = json.loads((ROOT / "specmodel/model/data/engines.json").read_text())


@pytest.mark.parametrize("engine", [k for k in ENGINES if not k.startswith("_")])
def test_every_engine_number_says_what_it_is(engine):
    """Each top-level number of an engine is named in its source texts in a clause with its kind."""
    row = ENGINES[engine]
    text = " ".join(v for k, v in row.items() if isinstance(v, str) and k != "label")
    missing = []
    for key, value in row.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        clauses = [c for c in re.split(r"(?<=[.;])\s", text) if re.search(rf"(?<![\w-]){key}(?![\w-])", c)]
        if not any(KIND.search(c) for c in clauses):
            missing.append(key)
    assert missing == [], f"{engine}: name each of {missing} in a sentence of its source that says its kind"
