"""Benchmarks: `python -m bench [name ...]`; each prints ratios measured in one run beside its goal."""


def against_goal(ratio: float, goal: float, at_least: bool = False, unit: str = "x") -> str:
    """"2.31x (goal ≤ 1.5x: NOT met)": a measured ratio beside the goal set for it."""
    met = ratio >= goal if at_least else ratio <= goal
    return f"{ratio:.2f}{unit} (goal {'≥' if at_least else '≤'} {goal:g}{unit}: {'met' if met else 'NOT met'})"


def timed_run(at) -> float:
    """Seconds of one AppTest run of a page whose widgets were just set; a run that raised fails the bench."""
    import time

    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    assert not at.exception, at.exception
    return elapsed
