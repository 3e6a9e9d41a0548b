"""`make fuzz`: every target of tests/fuzz_targets.py with a long hypothesis profile.

Prints, per target and in total, how many inputs were tried and how many failed (with the first
failing input and its error) and every warning the inputs raised (where, how often), then the line
coverage of the modules each target reads through (fuzz_targets.COVERS; a module's import-time lines
count for every target); exits 1 if any input failed or a module is under COVERAGE_GOAL (85%). Runs
under a 4 GB address-space cap, so an input whose work is unbounded fails. Inputs per target:
FUZZ_EXAMPLES (default 2000); structured inputs up to FUZZ_MAX_BYTES (the Makefile: the upload limit).

    python -m tests.fuzz [name ...]     # only the targets whose name contains one of the words
    FUZZ_SHOW_MISSED=1 python -m tests.fuzz workloads   # and the lines a module under the goal missed
"""

from __future__ import annotations

import os
import re
import sys
import time
import traceback
import warnings
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings

ROOT = Path(__file__).resolve().parents[1]


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


def run_target(strategy, function, examples: int, allowed=(Exception,)) -> tuple[int, int, str | None, dict]:
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
            except allowed:
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


def _coverage():
    """A coverage.py measurement of specmodel/ with one context per target (None without coverage.py)."""
    try:
        import coverage
    except ImportError:
        return None
    return coverage.Coverage(data_file=None, include=[str(ROOT / "specmodel" / "*")])


def _lines_of(path: str, names: str) -> set[int]:
    """The line numbers of the named top-level functions and classes of a module ("a,b")."""
    import ast
    wanted = set(names.split(","))
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    return {n for node in tree.body if getattr(node, "name", None) in wanted
            for n in range(node.lineno, node.end_lineno + 1)}


def coverage_lines(cov, target: str, modules) -> list[tuple[str, float, list[int]]]:
    """(module, % of its statements run by `target` or at import, the lines not run) per module; "module::f,g" counts only
    the statements of those functions (the URL policy inside metrics/scrape.py). A target "a + b" counts what
    either ran (a module several readers share, such as runs/cells.py)."""
    data = cov.get_data()
    out = []
    for module in modules:
        file, _, names = module.partition("::")
        path = str(ROOT / "specmodel" / file)
        _, statements, _, _, _ = cov.analysis2(path)
        statements = set(statements) & _lines_of(path, names) if names else set(statements)
        data.set_query_contexts([f"^{re.escape(t)}$" for t in target.split(" + ")] + ["^$"])
        ran = set(data.lines(path) or ()) & statements
        out.append((file + (" (" + names.replace(",", ", ") + ")" if names else ""),
                    100.0 * len(ran) / max(1, len(statements)), sorted(statements - ran)))
    return out


def _ranges(lines: list[int]) -> str:
    """1,2,3,7 -> "1-3, 7"."""
    spans: list[list[int]] = []
    for n in lines:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)


def main(argv: list[str]) -> int:
    _cap_memory()
    cov = _coverage()
    if cov is not None:
        cov.start()  # before the targets import specmodel, so import-time lines count
    from tests.fuzz_targets import ALLOWED, COVERAGE_GOAL, COVERS, TARGETS
    examples = int(os.environ.get("FUZZ_EXAMPLES", "2000"))
    chosen = [t for t in TARGETS if not argv or any(w in t[0] for w in argv)]
    total_tried = total_failed = total_warned = 0
    print(f"fuzzing {len(chosen)} target(s), up to {examples} inputs each")
    for name, strategy, function in chosen:
        start = time.monotonic()
        if cov is not None:
            cov.switch_context(name)
        tried, failed, first, kinds, warned = run_target(strategy, function, examples, ALLOWED)
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
    under = 0
    if cov is not None:
        cov.stop()
        print(f"line coverage per target (goal {COVERAGE_GOAL:g}%):")
        names = {name for name, _, _ in chosen}
        for name, modules in COVERS.items():
            if not set(name.split(" + ")) <= names:
                continue
            for module, pct, missed in coverage_lines(cov, name, modules):
                low = pct < COVERAGE_GOAL
                under += low
                print(f"  {name:<20} {pct:5.1f}%  {module}{'  UNDER THE GOAL' if low else ''}")
                if low and os.environ.get("FUZZ_SHOW_MISSED"):  # where a new generator should reach
                    print(f"  {'':<20} lines not run: {_ranges(missed)}")
    else:
        print("line coverage: not measured (pip install -r requirements-dev.txt for coverage.py)")
    return 1 if total_failed or under else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
