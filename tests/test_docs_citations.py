"""Every `path.py:LINE` `function` cited in docs/ (and the README) points into that function, so a table
of where the model computes each term (docs/model.md, "One speculative step") cannot rot unseen."""
import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# `specmodel/model/scenario.py:571` `_plain_step_ms`: a repository file, a line, then the function holding it
CITATION = re.compile(r"`((?:specmodel|pages|bench|tests)/[\w/.-]+\.py|app\.py):(\d+)`(?:\s*`([\w.]+)`)?")


def citations(text: str):
    for m in CITATION.finditer(text):
        yield m.group(1), int(m.group(2)), m.group(3)


def spans(source: str, name: str) -> list[tuple[int, int]]:
    """(first line, last line) of every function or class called `name` (a dotted name: Class.method)."""
    *outer, last = name.split(".")
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == last:
            out.append((node.lineno, node.end_lineno))
    if outer:  # keep only those inside the named class
        classes = spans(source, ".".join(outer))
        out = [s for s in out if any(c[0] <= s[0] and s[1] <= c[1] for c in classes)]
    return out


def problems(text: str) -> list[str]:
    found = []
    for path, line, function in citations(text):
        file = ROOT / path
        if not file.is_file():
            found.append(f"{path}:{line}: no such file")
            continue
        source = file.read_text()
        if line > len(source.splitlines()):
            found.append(f"{path}:{line}: the file has {len(source.splitlines())} lines")
        elif function is None:
            found.append(f"{path}:{line}: name the function the line is in (`{path}:{line}` `name`)")
        elif not any(a <= line <= b for a, b in spans(source, function)):
            found.append(f"{path}:{line}: not inside `{function}`")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_cited_line_is_inside_its_function(doc):
    assert problems(doc.read_text()) == [], f"{doc.name}: update the citation to where the code is now"


def test_the_model_table_cites_lines():
    assert len(list(citations((ROOT / "docs" / "model.md").read_text()))) >= 20


def test_a_moved_line_is_caught():
    assert problems("`specmodel/model/memory.py:1` `kv_budget_bytes`") == [
        "specmodel/model/memory.py:1: not inside `kv_budget_bytes`"]
    assert problems("`specmodel/gone.py:3` `f`") == ["specmodel/gone.py:3: no such file"]
    assert problems("`specmodel/model/memory.py:2`")[0].endswith("name the function the line is in "
                                                               "(`specmodel/model/memory.py:2` `name`)")


def refresh(doc: Path, since: str) -> int:
    """Re-point the stale citations of `doc` after code moved: the line the citation named at git revision
    `since` is looked for (stripped) inside the function now, else the function's first line. Returns how
    many changed. `python -m tests.test_docs_citations REV` (REV: a commit from before the move)."""
    import subprocess

    text, changed = doc.read_text(), 0
    for path, line, function in set(citations(doc.read_text())):
        source = (ROOT / path).read_text()
        now = spans(source, function) if function else []
        if not now or any(a <= line <= b for a, b in now):
            continue
        old = subprocess.run(["git", "show", f"{since}:{path}"], cwd=ROOT, capture_output=True, text=True).stdout
        wanted = old.splitlines()[line - 1].strip() if line <= len(old.splitlines()) else None
        lines, (a, b) = source.splitlines(), now[0]
        hits = [i for i in range(a, b + 1) if wanted and lines[i - 1].strip() == wanted]
        text = text.replace(f"`{path}:{line}` `{function}`", f"`{path}:{hits[0] if hits else a}` `{function}`")
        changed += 1
    doc.write_text(text)
    return changed


if __name__ == "__main__":
    import sys

    print(sum(refresh(doc, sys.argv[1]) for doc in DOCS), "citations re-pointed")
