"""docs/development.md "Where code lives" names every module of specmodel/ and pages/parts/, and every
module it names exists.

How a name is read: the section is a list of bullets. A bullet that opens with a folder (`model/`:) is
about that folder, relative to its parent bullet's (`specmodel/`); a later folder in the bullet's text
(`figures/`, `pages/parts/`) is where the names after it live. A name `x.py` is looked for in the latest
folder, then in the bullet's own, then under specmodel/, then at the repository's root; the first that
exists is the module it names.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "development.md"
TOKEN = re.compile(r"`([^`\s]+)`")
BULLET = re.compile(r"^( *)- (.*)$")


def section(text: str, title: str = "## Where code lives") -> list[str]:
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def bullets(lines: list[str]) -> list[tuple[int, str]]:
    """(indent, whole text with its continuation lines) of each bullet."""
    out: list[tuple[int, str]] = []
    for line in lines:
        m = BULLET.match(line)
        if m:
            out.append((len(m.group(1)), m.group(2)))
        elif out and line.strip():
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
    return out


def _folder(token: str, *bases: str) -> str | None:
    for base in bases:
        if (ROOT / (base + token)).is_dir():
            return base + token
    return None


def _module(token: str, *bases: str) -> str | None:
    for base in bases:
        if (ROOT / (base + token)).is_file():
            return base + token
    return None


def named(lines: list[str]) -> tuple[set[str], list[str]]:
    """(modules the section names, names that lead to no file or folder)."""
    found: set[str] = set()
    missing: list[str] = []
    stack: list[tuple[int, str]] = []
    for indent, text in bullets(lines):
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        base = parent
        opening = re.match(r"`([\w./-]+/)`", text)
        if opening:
            base = _folder(opening.group(1), parent, "specmodel/", "") or parent
            if base == parent:
                missing.append(opening.group(1))
        stack.append((indent, base))
        current = base
        for token in TOKEN.findall(text):
            if re.fullmatch(r"[\w./-]+/", token):
                folder = _folder(token, base, "specmodel/", "")
                if folder is None:
                    missing.append(token)
                else:
                    current = folder
            elif re.fullmatch(r"[\w./-]+\.py", token):
                module = _module(token, current, base, "specmodel/", "")
                if module is None:
                    missing.append(token)
                else:
                    found.add(module)
    return found, missing


def modules() -> list[str]:
    """Every module of specmodel/ and pages/parts/: a package's __init__.py only where it is the package."""
    out = []
    for top in ("specmodel", "pages/parts"):
        for p in sorted((ROOT / top).rglob("*.py")):
            if p.name == "__init__.py" and len(list(p.parent.glob("*.py"))) > 1:
                continue
            out.append(p.relative_to(ROOT).as_posix())
    return out


def test_every_module_is_in_the_code_map():
    found, _ = named(section(DOC.read_text()))
    assert [m for m in modules() if m not in found] == [], "name these in docs/development.md, 'Where code lives'"


def test_every_name_in_the_code_map_exists():
    _, missing = named(section(DOC.read_text()))
    assert missing == [], "docs/development.md, 'Where code lives', names modules or folders that do not exist"


def test_the_reading_of_the_map(tmp_path):
    lines = [
        "- `specmodel/`: everything",
        "  - the base: `errors.py`, `gone.py`;",
        "  - `model/`: `presets.py`, `data/`, and `runs/row_scenario.py` from elsewhere;",
        "  - `show/`: `figures/` (`figures/runs.py`), `readouts.py`;",
        "- `pages/`: pages; `pages/parts/` shares `common.py`.",
    ]
    found, missing = named(lines)
    assert found == {"specmodel/errors.py", "specmodel/model/presets.py", "specmodel/runs/row_scenario.py",
                     "specmodel/show/figures/runs.py", "specmodel/show/readouts.py", "pages/parts/common.py"}
    assert missing == ["gone.py"]
