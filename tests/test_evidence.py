"""The measurements the model cites live in the repository (bench/evidence/), and the test inputs
copied from them have not drifted: a fresh clone reproduces every figure docs/model.md prints."""

import re
from pathlib import Path

import pytest

from specmodel.paths import EVIDENCE_DIR

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("name", ["h200_steptime.csv", "published_dev.csv", "leviathan_2023.csv",
                                  "seed_cost_table.csv", "seed_runs.csv"])
def test_a_fixture_copied_from_the_evidence_is_the_same_file(name):
    assert (FIXTURES / name).read_bytes() == (EVIDENCE_DIR / name).read_bytes()


def test_every_evidence_file_a_source_names_is_in_the_repository():
    """Every `bench/evidence/NAME` the code, data and docs cite exists, and nothing cites a path
    outside the checkout (../shared)."""
    cited, outside = set(), []
    for path in [*ROOT.glob("specmodel/**/*.py"), *ROOT.glob("specmodel/**/*.json"), *ROOT.glob("docs/*.md"),
                 *ROOT.glob("bench/*.py"), ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        cited |= set(re.findall(r"bench/evidence/([\w.]+\.(?:csv|py|md))", text))
        if "../shared" in text or "shared/validation" in text:
            outside.append(str(path.relative_to(ROOT)))
    assert outside == []
    assert {"h200_steptime.csv", "h200_gqa_verify.csv", "published_dev.csv"} <= cited
    assert [name for name in sorted(cited) if not (EVIDENCE_DIR / name).is_file()] == []
