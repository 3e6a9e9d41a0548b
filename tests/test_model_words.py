"""specmodel/model/ writes no verdict, advice or message (issue 43, item 2): it returns numbers and labels, and
specmodel/words/ (or errors.py, for an exception's own words) says them. Checked from the source with `ast`: a
string constant of six words or more in specmodel/model/*.py is prose, unless it is a docstring, sits inside a
`raise` statement (an exception's message) or is a regular expression (an argument of an `re` function). At
most MAX_PROSE such strings stay: the parameter descriptions (parameters.py) and the names a few exception
messages give an input."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "specmodel" / "model"
MIN_WORDS = 6  # chosen (issue 43's target): a label is a few words; a sentence that says something is six or more
MAX_PROSE = 12  # chosen (issue 43's target): the parameter descriptions and a few names of inputs in messages


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _exempt(tree: ast.AST) -> set[int]:
    """Ids of the constants that are not prose: docstrings, anything inside a `raise`, a pattern given to `re`."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        is_re_call = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and isinstance(node.func.value, ast.Name) and node.func.value.id == "re")
        if isinstance(node, ast.Raise) or is_re_call:
            skip.update(id(n) for n in ast.walk(node))
    return skip


def prose(path: Path, root: Path = ROOT) -> list[str]:
    """'file:line: text' of each string constant of MIN_WORDS words or more in the file that is not exempt."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _exempt(tree)
    return [f"{path.relative_to(root).as_posix()}:{node.lineno}: {node.value[:80]!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
            and len(node.value.split()) >= MIN_WORDS]


def test_the_model_writes_no_sentences():
    found = [f for path in sorted(MODEL.glob("*.py")) for f in prose(path)]
    assert len(found) <= MAX_PROSE, (
        f"{len(found)} strings of {MIN_WORDS}+ words in specmodel/model/ (at most {MAX_PROSE}): return numbers "
        "and labels, and write the sentence in specmodel/words/:\n" + "\n".join(found))


def test_the_count_finds_prose_and_passes_docstrings_messages_and_patterns(tmp_path):
    """A check that cannot fail proves nothing: a verdict in a constant, a note in a return and a brief in a
    dataclass field are found; a docstring, a raised message and a regular expression are not."""
    source = '''"""A module docstring of more than six words here."""
import re

NOTE = "speculation configured but off still costs a share"


def f(x):
    """A function docstring of more than six words here."""
    if x:
        raise ValueError("x must lie in the range zero to one, got more")
    return re.compile(r"a | b | c | d | e | f")


def g():
    return "the draft is not smaller than the target", "a label"


BRIEF = dict(brief="none: no off band in the server")
'''
    (tmp_path / "probe.py").write_text(source, encoding="utf-8")
    found = prose(tmp_path / "probe.py", tmp_path)
    assert [f.split(":")[1] for f in found] == ["4", "15", "18"], found
