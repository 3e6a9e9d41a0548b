"""Pairing one-arm runs: a speculative run measured alone gets the throughput of its baseline run.

A baseline is matched on model, dataset and concurrency (or request rate), the first unused one in
file order; where every match is used, the first one no run of the same arm (method, draft, k) used:
one baseline file serves every speculative arm of its model, dataset and concurrency in one upload
(plain + n-gram + draft model), while repeated runs of one arm still take a baseline each. `pairs`
({speculative file: baseline file}) fixes the baseline file by hand. A baseline left over, or a
speculative run without one, is said in a warning or a remark.
"""

from __future__ import annotations

from specmodel.runs.cells import number
from specmodel.runs.records import PLAIN_JOINED, Problem, RunRecord


def pair_arms(records: list[RunRecord], pairs: dict[str, str]) -> tuple[list[RunRecord], list[Problem]]:
    """The records with each speculative arm given its baseline's throughput (baselines themselves
    drop out), and the throughput of a run with speculation configured and off at its model, dataset and
    concurrency (off_state; such runs drop out too), and warnings for arms left without a partner."""
    out = [r for r in records if r.arm == "pair"]
    specs = [r for r in records if r.arm == "spec"]
    bases = [r for r in records if r.arm == "baseline"]
    problems_off = _attach_off([r for r in records if r.arm == "off"], specs)
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

    whole = {id(group): list(group) for group in (*by_key.values(), *by_level.values())}
    used_by: dict[tuple, set[int]] = {}  # arm -> the baselines its runs took

    def first_unused(group: list, fits=lambda b: True, arm=None) -> list:
        if arm is None:
            return _first_unused(group, used, fits)
        group = whole.get(id(group), group)  # the baselines a run used left the group's front: all of them again
        return next(([b] for b in group if id(b) not in used_by.get(arm, ()) and fits(b)), [])

    for s in specs:
        forced = pairs.get(s.file)
        if forced is not None:
            candidates = by_file.get(forced, [])
            same_level = [b for b in candidates if b.pair_key[2] == s.pair_key[2]]
            candidates = same_level or (candidates if len(candidates) == 1 else [])
        else:
            arm = _arm(s)
            level = by_level.get((s.pair_key[0], s.pair_key[2]), [])
            unnamed = lambda b, s=s: not (b.pair_key[1] and s.pair_key[1])  # noqa: E731 - a dataset named on one side only
            candidates = first_unused(by_key.get(s.pair_key, [])) or first_unused(level, unnamed) or \
                first_unused(by_key.get(s.pair_key, []), arm=arm) or first_unused(level, unnamed, arm)
        if forced is not None and not candidates:
            problems.append(Problem(s.file, s.row, None, f"the chosen baseline file '{forced}' has no run at "
                                    f"concurrency {s.values.get('concurrency')}; compared with nothing", "warning"))
        if candidates:
            b = candidates[0]
            used.add(id(b))
            if forced is None:
                used_by.setdefault(arm, set()).add(id(b))
            s.values["baseline_tok_s"] = b.values["baseline_tok_s"]
            where = b.file if b.row is None else f"{b.file} row {b.row}"
            s.remarks.append(f"baseline from {where}")
        elif forced is None:
            s.remarks.append("no baseline run found for this model, dataset and concurrency: the measured "
                             "speedup is unknown (upload the baseline run or choose it)")
        out.append(s)
    _join_plain_rows(out)
    alone = bases and not out  # only baselines given: said once more where nothing else loads (why_empty)
    left = [b for b in bases if id(b) not in used]
    joined = _join_step_fits(left, specs)
    for b in left:
        n = len(joined.get(id(b), ()))
        what = "not used" if not n else PLAIN_STEP_JOINS.format(runs="speculative run" if n == 1 else f"{n} speculative runs")
        problems.append(Problem(b.file, b.row, None, "a run without speculation and no speculative run to "
                                f"compare it with (concurrency {_batch(b.values.get('concurrency'))}); {what}",
                                "warning", ONLY_BASELINES if alone else None))
    return out, problems + problems_off


# What a baseline with no speculative run at its concurrency still gives: the plain server's step at that batch
# (the server running today), which the step fit (runs.step_points) of the same model's speculative runs uses.
PLAIN_STEP_JOINS = "its plain step is used in the step fit of the {runs} of its model and dataset"


def _join_step_fits(left: list[RunRecord], specs: list[RunRecord]) -> dict[int, list[RunRecord]]:
    """Each left-over baseline at a concurrency (not a request rate) added to the `plain_runs` of every speculative
    run of its model and dataset (pair_key's first two parts) as [concurrency, tokens/s, where]; {id(baseline):
    the runs it joined}."""
    by_setup: dict[tuple, list[RunRecord]] = {}
    for s in specs:
        if s.pair_key is not None:
            by_setup.setdefault(tuple(s.pair_key[:2]), []).append(s)
    joined = {}
    for b in left:
        level, tok_s = b.pair_key[2] if b.pair_key else None, b.values.get("baseline_tok_s")
        takers = by_setup.get(tuple(b.pair_key[:2])) if b.pair_key else None
        if not takers or not isinstance(level, (int, float)) or not isinstance(tok_s, (int, float)):
            continue
        where = b.file if b.row is None else f"{b.file} row {b.row}"
        for s in takers:
            s.values["plain_runs"] = (*s.values.get("plain_runs", ()), (float(level), float(tok_s), where))
        joined[id(b)] = takers
    return joined


# What makes a row of a table (both arms in one row) the same setup as another: all it names but its load.
_SETUP_VALUES = ("workload", "gpu", "target_model", "draft_model", "method", "k", "engine", "tp")


def _join_plain_rows(rows: list[RunRecord]) -> None:
    """A table's row that measured only the plain server (a baseline throughput, no speculative throughput or
    speedup) at a concurrency is a plain run, as a baseline file is: its plain step joins the `plain_runs` of the
    other rows of its file and setup (_SETUP_VALUES as written), for their step fit, and the row is marked
    (PLAIN_JOINED): validation says so, beside its prediction, or in place of its names' refusal where no preset
    predicts it."""
    # a reader leaves an empty cell out of `values`: a key there is a value given (the test is by key alone, so that
    # a sweep of 200,000 paired rows costs one look at each)
    plain = [r for r in rows if "spec_tok_s" not in r.values and "speedup" not in r.values
             and "baseline_tok_s" in r.values and "concurrency" in r.values and r.arm == "pair"]
    if not plain:  # a sweep of paired rows: nothing to join, no row keyed
        return
    by_setup: dict[tuple, list[RunRecord]] = {}
    for r in rows:
        if r.arm == "pair" and ("spec_tok_s" in r.values or "speedup" in r.values):
            by_setup.setdefault(_setup_key(r), []).append(r)
    for p in plain:
        level, tok_s = number(p.values["concurrency"]), number(p.values["baseline_tok_s"])
        takers = by_setup.get(_setup_key(p), [])
        if not takers or level is None or tok_s is None or level <= 0 or tok_s <= 0:
            continue
        where = p.file if p.row is None else f"{p.file} row {p.row}"
        for r in takers:
            r.values["plain_runs"] = (*r.values.get("plain_runs", ()), (level, tok_s, where))
        p.values[PLAIN_JOINED] = True


def _setup_key(r: RunRecord) -> tuple:
    return (r.file, *(str(r.values.get(c, "")).strip().lower() for c in _SETUP_VALUES))


def _attach_off(offs: list[RunRecord], specs: list[RunRecord]) -> list[Problem]:
    """Each run with speculation configured and off gives its throughput (`off_tok_s`) to the first speculative
    run of its model, dataset and concurrency that has none; one left over is said in a warning."""
    waiting: dict[tuple, list[RunRecord]] = {}
    for s in specs:
        waiting.setdefault(s.pair_key, []).append(s)
    problems = []
    for o in offs:
        takers = [s for s in waiting.get(o.pair_key, []) if "off_tok_s" not in s.values]
        if takers:
            takers[0].values["off_tok_s"] = o.values["off_tok_s"]
            takers[0].remarks.append(f"off run from {o.file if o.row is None else f'{o.file} row {o.row}'}")
        else:
            problems.append(Problem(o.file, o.row, None, "a run with speculation configured and off and no speculative "
                                    f"run of its model, dataset and concurrency ({o.values.get('concurrency')}); not "
                                    "used", "warning"))
    return problems


ONLY_BASELINES = "only_baselines"  # Problem.reason of a baseline in an upload of baselines only


def why_empty(problems: list[Problem], files_named: str = "the file(s)") -> str:
    """The sentence for an upload from which no run loaded: that only baseline runs were given, where so."""
    levels = sorted({_level(p.message) for p in problems if p.reason == ONLY_BASELINES}, key=lambda c: (len(c), c))
    if levels:
        return (f"only baseline runs (without speculation) were given, at concurrency {', '.join(levels)}: a "
                "speculative run of the same model and dataset at the same concurrency is needed to compare each "
                "with; add it to the same upload")
    return f"no run could be read from {files_named}; see the lines above"



def _first_unused(group: list, used: set[int], fits) -> list:
    """[the first baseline of group no run used that fits], or []; used ones leave the front for good."""
    while group and id(group[0]) in used:
        group.pop(0)
    return next(([b] for b in group if id(b) not in used and fits(b)), [])


def _arm(rec: RunRecord) -> tuple:
    """What tells one speculative arm from another: its method, draft and k as written, and its file where
    it names none of them (a `vllm bench serve` JSON records no method: one arm per file)."""
    named = tuple(str(rec.values.get(key) or "") for key in ("method", "draft_model", "k"))
    return named if any(named) else (rec.file,)


def _level(message: str) -> str:
    """The concurrency an unused baseline's warning names ("4.0" -> "4")."""
    text = message.rsplit("(concurrency ", 1)[-1].split(")")[0]
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


def _batch(value) -> str:
    """A run's concurrency as said in a message: "4", not "4.0"; as read where it is no number."""
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)
