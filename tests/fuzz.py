"""`make fuzz`: every target of tests/fuzz_targets.py with a long hypothesis profile.

Prints, per target and in total, how many inputs were tried and how many failed (with the first
failing input and its error) and every warning the inputs raised (where, how often); exits 1 if any
failed. Runs under a 4 GB address-space cap, so an input whose work is unbounded fails. Inputs per target:
FUZZ_EXAMPLES (default 2000).

    python -m tests.fuzz [name ...]     # only the targets whose name contains one of the words
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import warnings
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz_targets import ALLOWED, TARGETS


def _where(exc: BaseException) -> str:
    """Exception type and the innermost project frame: failures with the same one are one bug."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/specmodel/" in f.filename] or \
        traceback.extract_tb(exc.__traceback__)[-1:]
    f = frames[-1] if frames else None
    return f"{type(exc).__name__} at {f.filename.rsplit('/', 2)[-2]}/{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" \
        if f else type(exc).__name__


MEMORY_CAP = 4 * 2**30  # bytes of address space for the whole run: an input that needs more fails loudly


def _cap_memory() -> None:
    """Run under an address-space cap, so an input whose work is not bounded fails (MemoryError,
    counted like any escape) instead of swapping the machine."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = MEMORY_CAP if hard == resource.RLIM_INFINITY else min(MEMORY_CAP, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass


def _warning_where(w: warnings.WarningMessage) -> str:
    return f"{w.category.__name__} at {Path(w.filename).parent.name}/{Path(w.filename).name}:{w.lineno}: " \
           f"{str(w.message)[:80]}"


def run_target(strategy, function, examples: int) -> tuple[int, int, str | None, dict]:
    tried = failed = 0
    first: list[str] = []
    kinds: dict[str, int] = {}
    warned: dict[str, int] = {}

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def body(value):
        nonlocal tried, failed
        tried += 1
        with warnings.catch_warnings(record=True) as caught:  # shown, not hidden: each is a place to look
            warnings.simplefilter("always")
            try:
                function(value)
            except ALLOWED:
                pass
            except Exception as exc:  # noqa: BLE001 - counting every escape is the point
                failed += 1
                kinds[_where(exc)] = kinds.get(_where(exc), 0) + 1
                if not first:
                    tb = traceback.format_exception(exc)
                    first.append(f"input: {value!r:.1500}\n" + "".join(tb[-6:]))
        for w in caught:
            warned[_warning_where(w)] = warned.get(_warning_where(w), 0) + 1

    body()
    return tried, failed, first[0] if first else None, kinds, warned


def main(argv: list[str]) -> int:
    _cap_memory()
    examples = int(os.environ.get("FUZZ_EXAMPLES", "2000"))
    chosen = [t for t in TARGETS if not argv or any(w in t[0] for w in argv)]
    total_tried = total_failed = total_warned = 0
    print(f"fuzzing {len(chosen)} target(s), up to {examples} inputs each")
    for name, strategy, function in chosen:
        start = time.monotonic()
        tried, failed, first, kinds, warned = run_target(strategy, function, examples)
        total_tried += tried
        total_failed += failed
        total_warned += sum(warned.values())
        print(f"{name:<20} tried {tried:>6}  failed {failed:>5}  warnings {sum(warned.values()):>5}  "
              f"({time.monotonic() - start:.0f} s)", flush=True)
        for where, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print(f"  {n:>5} x {where}")
        for where, n in sorted(warned.items(), key=lambda kv: -kv[1]):
            print(f"  {n:>5} warnings: {where}")
        if first:
            print("  first failure:\n    " + first.replace("\n", "\n    "))
    print(f"{'total':<20} tried {total_tried:>6}  failed {total_failed:>5}  warnings {total_warned:>5}")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
