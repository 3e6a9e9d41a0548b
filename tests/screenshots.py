"""Regenerate the README's and docs' screenshots from the current app: `python -m tests.screenshots`.

Runs the browser walks of issue 23's incident (tests/test_browser_incident.py, 1280×720, one walk per
page) with SPECMODEL_SCREENSHOTS pointing at pages/screenshots/, so every picture is the page a walk
has just checked: What-if (light and dark), Past runs, Live, Fleet, Traffic mix and Capacity."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

OUT = ROOT / "pages" / "screenshots"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPECMODEL_SCREENSHOTS": str(OUT)}
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-n", "0",
                            str(ROOT / "tests" / "test_browser_incident.py")], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
