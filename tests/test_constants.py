"""Every module-level numeric constant in specmodel/ says what it is (issue 43, item 5).

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




def _numeric(v) -> bool:
    if isinstance(v, ast.Constant):
        return isinstance(v.value, (int, float)) and not isinstance(v.value, bool)
    if isinstance(v, ast.UnaryOp):
        return _numeric(v.operand)
    if isinstance(v, ast.BinOp):
        return _numeric(v.left) and _numeric(v.right)
    if isinstance(v, (ast.Tuple, ast.List)):
        return bool(v.elts) and all(
            _numeric(e) or (isinstance(e, ast.Tuple) and any(_numeric(x) for x in e.elts)) for e in v.elts)
    return False


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
    )
    assert unlabelled(source) == ["A (line 2)", "_E (line 8)", "G (line 12)"]


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
