"""Pairing one-arm runs: a speculative run measured alone gets the throughput of its baseline run.

A baseline is matched on model, dataset and concurrency (or request rate), the first unused one in
file order; `pairs` ({speculative file: baseline file}) fixes the baseline file by hand. A baseline
left over, or a speculative run without one, is said in a warning or a remark.
"""

from __future__ import annotations

from specmodel.runs.records import Problem, RunRecord


def pair_arms(records: list[RunRecord], pairs: dict[str, str]) -> tuple[list[RunRecord], list[Problem]]:
    """The records with each speculative arm given its baseline's throughput (baselines themselves
    drop out), and warnings for arms left without a partner."""
    out = [r for r in records if r.arm == "pair"]
    specs = [r for r in records if r.arm == "spec"]
    bases = [r for r in records if r.arm == "baseline"]
    used: set[int] = set()
    problems = []
    # Baselines indexed by what a speculative run is matched on (file order kept in each list), so a
    # file of many one-arm runs pairs in linear time.
    by_file: dict[str, list] = {}
    by_key: dict[tuple, list] = {}
    by_level: dict[tuple, list] = {}
    for b in bases:
        by_file.setdefault(b.file, []).append(b)
        by_key.setdefault(b.pair_key, []).append(b)
        by_level.setdefault((b.pair_key[0], b.pair_key[2]), []).append(b)

    def first_unused(group: list, fits=lambda b: True) -> list:
        while group and id(group[0]) in used:  # used ones leave the front for good
            group.pop(0)
        return next(([b] for b in group if id(b) not in used and fits(b)), [])

    for s in specs:
        forced = pairs.get(s.file)
        if forced is not None:
            candidates = by_file.get(forced, [])
            same_level = [b for b in candidates if b.pair_key[2] == s.pair_key[2]]
            candidates = same_level or (candidates if len(candidates) == 1 else [])
        else:
            candidates = first_unused(by_key.get(s.pair_key, [])) or first_unused(
                by_level.get((s.pair_key[0], s.pair_key[2]), []), lambda b, s=s: not (b.pair_key[1] and s.pair_key[1]))
        if forced is not None and not candidates:
            problems.append(Problem(s.file, s.row, None, f"the chosen baseline file '{forced}' has no run at "
                                    f"concurrency {s.values.get('concurrency')}; compared with nothing", "warning"))
        if candidates:
            b = candidates[0]
            used.add(id(b))
            s.values["baseline_tok_s"] = b.values["baseline_tok_s"]
            where = b.file if b.row is None else f"{b.file} row {b.row}"
            s.remarks.append(f"baseline from {where}")
        elif forced is None:
            s.remarks.append("no baseline run found for this model, dataset and concurrency: the measured "
                             "speedup is unknown (upload the baseline run or choose it)")
        out.append(s)
    for b in bases:
        if id(b) not in used:
            problems.append(Problem(b.file, b.row, None, "a run without speculation and no speculative run to "
                                    f"compare it with (concurrency {b.values.get('concurrency')}); not used",
                                    "warning"))
    return out, problems

