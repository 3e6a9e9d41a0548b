"""Every file of this repository that a comment, a docstring or a doc names exists (issue 43, item 5: no reference
dangles). A reference is a path under one of the repository's own folders with a file's suffix
(`specmodel/model/off_state.py`, `bench/evidence/off_cost.csv`, `tests/test_fleet.py`), found in the comments and
docstrings of the Python files and in the README and docs/; other projects' paths (vllm/config/speculative.py) do
not start with these folders. A path with a placeholder in it (NAME, NNN, x.csv) is an example, not a reference."""

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("specmodel", "pages", "tests", "bench", "sample_runs")
SUFFIXES = ("py", "md", "json", "csv", "toml", "txt", "yaml", "yml", "html", "j2", "ini", "jsonl", "log", "js")
REFERENCE = re.compile(r"(?<![\w/.-])((?:%s)/[\w./-]*\.(?:%s))\b" % ("|".join(FOLDERS), "|".join(SUFFIXES)))
# Made by a run, not kept in the repository (the Makefile's and the lab's work folders).
GENERATED = ("bench/real_engine/work/", "tests/__pycache__/", "tests/grafana/node_modules/")
PLACEHOLDER = re.compile(r"NAME|NNN|/x\.|/gone\.|/probe\.")


def _python_text(path: Path) -> str:
    """The comments and docstrings (every triple-quoted string) of a Python file."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.string.lstrip("rbuRBUfF")[:3] in
                                             ('"""', "'''")):
            out.append(tok.string)
    return "\n".join(out)


def dangling(text: str, root: Path = ROOT) -> list[str]:
    """The repository paths `text` names that are not there."""
    return sorted({ref for ref in REFERENCE.findall(text) if not ref.startswith(GENERATED)
                   and not PLACEHOLDER.search(ref) and not (root / ref).exists()})


def _sources() -> list[Path]:
    files = [ROOT / "app.py", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in ("specmodel", "pages", "tests", "bench"):
        files += sorted(p for p in (ROOT / folder).rglob("*.py") if "evidence" not in p.parts
                        and "node_modules" not in p.parts)
    return files


def test_every_file_a_comment_or_doc_names_exists():
    found = [f"{path.relative_to(ROOT).as_posix()}: {ref}" for path in _sources()
             for ref in dangling(_python_text(path) if path.suffix == ".py" else path.read_text(encoding="utf-8"))]
    assert found == [], "files named that are not in the repository:\n" + "\n".join(found)


def test_a_dangling_reference_is_caught(tmp_path):
    text = ("# see specmodel/model/off_state.py and tests/test_runs_block.py\n"
            "vllm/config/speculative.py; bench/real_engine/work/models/x.json; bench/evidence/NAME.csv")
    assert dangling(text) == ["tests/test_runs_block.py"]
    probe = tmp_path / "probe.py"
    probe.write_text('"""Reads specmodel/gone_a.py."""\n# and specmodel/gone_b.py\nX = "specmodel/gone_c.py"\n')
    assert dangling(_python_text(probe)) == ["specmodel/gone_a.py", "specmodel/gone_b.py"]
