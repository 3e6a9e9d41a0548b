"""`make bench`: run every bench/bench_*.py module's run() and print its lines.

Each benchmark reports ratios measured in one run (both sides timed on this machine, now), never
absolute pass/fail thresholds in tests."""

import importlib
import pkgutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(selected: list[str]) -> int:
    names = sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if m.name.startswith("bench_"))
    if selected:
        names = [n for n in names if any(s in n for s in selected)]
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"== {name}: {(module.__doc__ or '').strip().splitlines()[0]}")
        start = time.perf_counter()
        for line in module.run():
            print(f"   {line}", flush=True)
        print(f"   ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
