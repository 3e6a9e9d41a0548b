"""No function in specmodel/ runs over MAX_FUNCTION_LINES lines (issue 43): a longer one is split into
helpers that each do one job, named for it. Checked from the source with `ast`; methods and nested
functions count on their own, from the `def` line to the last line of the body."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "specmodel"
MAX_FUNCTION_LINES = 80



def _long_functions(path: Path, root: Path = ROOT) -> list[str]:
    """'file:line name (n lines)' of each function in the file over MAX_FUNCTION_LINES, in line order."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = sorted((node.lineno, node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return [f"{path.relative_to(root).as_posix()}:{line} {name} ({lines} lines)" for line, name, lines in found
            if lines > MAX_FUNCTION_LINES]


def test_no_function_in_specmodel_is_over_80_lines():
    found = [f for path in sorted(PACKAGE.rglob("*.py")) for f in _long_functions(path)]
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines (split them into helpers):\n" + "\n".join(found)


def test_the_check_finds_a_long_function_a_long_method_and_a_long_nested_one(tmp_path):
    """A check that cannot fail proves nothing: 81 lines are found, 80 are not."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))  # + the def line: 81 lines
    indented = body.replace("    ", "        ")
    source = (f"def long():\n{body}\n\n\ndef just_short():\n{body[body.index(chr(10)) + 1:]}\n\n\n"
              f"class C:\n    def method(self):\n{indented}\n\n\n"
              f"def outer():\n    def inner():\n{indented}\n    return inner\n")
    (tmp_path / "probe.py").write_text(source, encoding="utf-8")
    found = _long_functions(tmp_path / "probe.py", tmp_path)
    assert [f.split()[1] for f in found] == ["long", "method", "outer", "inner"], found
    assert found[0] == "probe.py:1 long (81 lines)"
