"""`pip install .` gives the importable package with its data and a `specmodel` command."""

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT


@pytest.mark.slow  # builds the wheel with pip: in make test, not in make test-fast
def test_the_wheel_carries_the_package_its_presets_and_the_specmodel_command(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copytree(ROOT / "specmodel", src / "specmodel", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("specmodel-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert {"specmodel/__init__.py", "specmodel/cli/router.py", "specmodel/model/data/presets.json",
                "specmodel/model/engines.py", "specmodel/metrics/schemas.py", "specmodel/export/rules.py",
                "specmodel/runs/__init__.py", "specmodel/runs/review.py",
                "specmodel/export/templates/report.html.j2"} <= names  # the run readers' package
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "specmodel = specmodel.cli:main" in z.read(entry_points).decode()
    assert not any(n.startswith(("pages/", "tests/", "app.py")) for n in names)
