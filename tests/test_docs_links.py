"""The README stays a front page, and every relative link in it and in docs/ leads to a file."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def relative_links(path):
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # URLs and in-page anchors
        yield target.split("#")[0]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_points_to_an_existing_file(doc):
    broken = [t for t in relative_links(doc) if not (doc.parent / t).exists()]
    assert broken == [], f"{doc.name}: broken links {broken}"


def test_the_readme_is_at_most_200_lines():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_a_broken_link_is_caught(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("[gone](missing.md) [web](https://example.com) [here](#top)")
    assert list(relative_links(doc)) == ["missing.md"]
