"""Traffic mix: one pool serving several workloads, against splitting the GPUs by traffic shape.

A pool runs one method and one k for every sequence it holds (engines configure speculation per
server, not per request). Its verify step therefore carries all B·(k+1) query tokens, and its step
time is the What-if step time at the pool's batch; what differs between workloads is only the
tokens each emits per step, E(α_w, k). So a workload's per-sequence rate in a pool is exactly the
What-if prediction for that workload at the pool's batch, and the pool's aggregate is the
share-weighted sum of those rates: every number here comes from `scenario.predict`.

A pool on G GPUs runs G / tp replicas behind a load balancer; each replica sees an equal part of
the pool's sequences. A split assigns each workload to one pool with its own GPUs, method and k
(k = 0: speculation off); `compare` searches the splits of a fixed GPU budget and ranks them by
aggregate throughput at the same offered concurrency.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from specmodel.errors import SpecModelError
from specmodel.model.decide import BAND_RATIO, K_MAX
from specmodel.model.presets import METHODS, find_method
from specmodel.model.scenario import Scenario, predict, resolved_method, resolved_model
from specmodel.notes import Note, info, warning, warnings_in
from specmodel.plan.capacity import rounded
from specmodel.plan.workloads import SHARE_TOLERANCE, Workload, normalise_shares
from specmodel.words.decision_line import mix_pool_line, split_lines

MAX_WORKLOADS = 6  # chosen: workloads the split search separates (set partitions: 877 for 6 plus the rest)
MAX_GPU_UNITS = 32  # chosen: replicas to distribute in the split search
MAX_PLANS = 200_000  # chosen: plans the split search scores at most (a bound on its work)
# chosen: the best plan must beat one pool with speculation off by more than this fraction of its throughput to
# be recommended as a change (the page shows it as a success): 1 %, inside the model's own error.
WORTH_IT_GAIN = 0.01
OFF = "off"


@dataclass(frozen=True)
class WorkloadResult:
    """One workload inside one pool."""

    label: str
    sequences: float  # offered concurrent sequences of this workload
    running: float  # of those, how many run (the rest queue when the KV cache is full)
    tokens_per_step: float
    per_seq_tok_s: float
    itl_ms: float
    throughput_tok_s: float


@dataclass(frozen=True)
class PoolResult:
    """A pool: some workloads on some GPUs with one method and k (k = 0: speculation off)."""

    labels: tuple[str, ...]
    gpus: int
    replicas: int
    method: str  # OFF when k = 0
    k: int
    sequences: float  # offered to the pool
    per_replica_sequences: float
    max_per_replica: float  # sequences one replica can hold in its KV cache with this setting
    step_ms: float
    throughput_tok_s: float
    workloads: tuple[WorkloadResult, ...]

    @property
    def fits(self) -> bool:
        """True when every offered sequence runs; False marks a pool that queues (memory)."""
        return self.max_per_replica >= self.per_replica_sequences - 1e-9

    @property
    def queued(self) -> float:
        return float(self.sequences - sum(w.running for w in self.workloads))

    @property
    def setting(self) -> str:
        return OFF if self.k == 0 else f"{self.method} k={self.k}"


@dataclass(frozen=True)
class Plan:
    """One way of serving the whole mix on the GPU budget: one pool or several."""

    name: str
    kind: str  # "single_on" | "single_off" | "single_best" | "split"
    pools: tuple[PoolResult, ...]

    @property
    def throughput_tok_s(self) -> float:
        return float(sum(p.throughput_tok_s for p in self.pools))

    @property
    def fits(self) -> bool:
        return all(p.fits for p in self.pools)

    def workload(self, label: str) -> tuple[PoolResult, WorkloadResult]:
        return self._by_label[label]  # KeyError for a label no pool holds

    @functools.cached_property
    def _by_label(self) -> dict[str, tuple[PoolResult, WorkloadResult]]:
        """Each label's pool and result, the first pool holding it (one pass, not one per lookup: a mix
        at the workload cap looked every label up in every plan, 20,000 scans of 10,000 results)."""
        found: dict = {}
        for pool in self.pools:
            for w in pool.workloads:
                found.setdefault(w.label, (pool, w))
        return found

    def describe(self) -> str:
        parts = [f"{' + '.join(p.labels)} on {p.gpus} GPU{'s' if p.gpus != 1 else ''} ({p.setting})"
                 for p in self.pools]
        return "; ".join(parts)


@dataclass(frozen=True)
class MixReport:
    """The comparison: single pool on / off / best setting, and the best few splits."""

    scenario: Scenario
    workloads: tuple[Workload, ...]
    concurrency: int
    gpus: int
    single_on: Plan
    single_off: Plan
    single_best: Plan
    splits: tuple[Plan, ...]  # the best few plans with two or more pools, best first
    notes: tuple[str, ...]
    recommendation: str

    @property
    def plans(self) -> tuple[Plan, ...]:
        return (self.single_on, self.single_off, self.single_best, *self.splits)

    @property
    def best(self) -> Plan:
        """The highest aggregate throughput of the whole search; ties go to the simpler plan."""
        return max(self.plans, key=lambda p: (round(p.throughput_tok_s, 6), -len(p.pools)))

    @property
    def best_worth_it(self) -> bool:
        """True when the best plan beats one pool with speculation off by more than WORTH_IT_GAIN:
        a smaller gain is within the model's error and not worth a change of deployment."""
        return self.best.throughput_tok_s > self.single_off.throughput_tok_s * (1 + WORTH_IT_GAIN)

    def vs_off_band(self, plan: Plan) -> tuple[float, float]:
        """A plan's throughput over one pool with speculation off at the low and high end of the model's 80%
        band: every speculating pool's throughput × decide.BAND_RATIO (the band is of speculative over plain
        throughput at the same batch), pools with speculation off as predicted."""
        off = self.single_off.throughput_tok_s
        if off <= 0:
            return float("nan"), float("nan")
        spec = sum(p.throughput_tok_s for p in plan.pools if p.k > 0)
        rest = plan.throughput_tok_s - spec
        return (rest + spec * BAND_RATIO[0]) / off, (rest + spec * BAND_RATIO[1]) / off

    @property
    def uncertain(self) -> bool:
        """True where the band leaves the recommendation open: the best plan is worth it as predicted but not at
        the band's low end, or speculation off is best as predicted but some plan is worth it at the high end."""
        bar = 1 + WORTH_IT_GAIN
        if self.best_worth_it:
            return self.vs_off_band(self.best)[0] <= bar
        return any(self.vs_off_band(p)[1] > bar for p in self.plans)

    @property
    def tone(self) -> str:
        """How the recommendation reads (specmodel.notes.TONES): good when the best plan is worth it, caution
        where the band leaves that open."""
        return "caution" if self.uncertain else "good" if self.best_worth_it else "neutral"

    @property
    def decision_lines(self) -> list[str]:
        """The decision in lines (words.decision_line): a split that is worth it, one line per pool under its gain
        over one pool with speculation off; else the one pool's setting."""
        off = self.single_off.throughput_tok_s
        best = self.best
        if len(best.pools) > 1 and self.best_worth_it and off > 0:
            return split_lines(self.concurrency, best.throughput_tok_s / off, self.vs_off_band(best),
                               [(p.labels, p.k, p.gpus) for p in best.pools])
        single = self.single_best if self.single_best.throughput_tok_s > off * (1 + WORTH_IT_GAIN) else self.single_off
        shown = single if single.pools[0].k else self.single_on
        ratio = shown.throughput_tok_s / off if off > 0 else float("nan")
        return [mix_pool_line(self.concurrency, single.pools[0].k, ratio, self.vs_off_band(shown),
                              self.single_on.pools[0].k)]

    def table_rows(self) -> list[dict]:
        """One row per plan for a comparison table: aggregate and per-workload numbers, rounded."""
        off = self.single_off.throughput_tok_s
        rows = []
        for plan in self.plans:
            row = {"plan": plan.name, "pools": plan.describe(),
                   "aggregate tok/s": round(plan.throughput_tok_s, 1),
                   "vs off (×)": round(plan.throughput_tok_s / off, 3) if off > 0 else None,
                   "fits in memory": "yes" if plan.fits else
                   f"no: {sum(p.queued for p in plan.pools):.0f} sequences queue"}
            for w in self.workloads:
                _, r = plan.workload(w.label)
                row[f"{w.label}: ITL ms"] = round(r.itl_ms, 2) if math.isfinite(r.itl_ms) else None
                row[f"{w.label}: tok/s per sequence"] = round(r.per_seq_tok_s, 2)
            rows.append(row)
        return rows

    def to_dict(self) -> dict:
        s = self.scenario
        off = self.single_off.throughput_tok_s

        def pool(p: PoolResult) -> dict:
            return {"workloads": list(p.labels), "gpus": p.gpus, "replicas": p.replicas,
                    "method": p.method, "k": p.k, "setting": p.setting, "sequences": rounded(p.sequences),
                    "per_replica_sequences": rounded(p.per_replica_sequences),
                    "max_sequences_per_replica": rounded(p.max_per_replica), "fits": p.fits,
                    "queued": rounded(p.queued), "step_ms": rounded(p.step_ms), "throughput_tok_s": rounded(p.throughput_tok_s)}

        def plan(p: Plan) -> dict:
            per = {}
            for pr in p.pools:
                for w in pr.workloads:
                    per[w.label] = {"pool": list(pr.labels), "setting": pr.setting, "sequences": rounded(w.sequences),
                                    "running": rounded(w.running), "tokens_per_step": rounded(w.tokens_per_step),
                                    "per_sequence_tok_s": rounded(w.per_seq_tok_s), "itl_ms": rounded(w.itl_ms),
                                    "throughput_tok_s": rounded(w.throughput_tok_s)}
            return {"name": p.name, "kind": p.kind, "description": p.describe(),
                    "throughput_tok_s": rounded(p.throughput_tok_s),
                    "speedup_vs_off": rounded(p.throughput_tok_s / off) if off > 0 else None,
                    "fits": p.fits, "pools": [pool(x) for x in p.pools], "per_workload": per}

        return {
            "gpu": s.gpu.name, "target": s.target.name, "method": s.method.name,
            "draft": s.draft.name if s.method.name == "draft_model" and s.draft else None, "k": s.k, "tp": s.tp,
            "context_len": s.context_len, "concurrency": self.concurrency, "gpus": self.gpus,
            "workloads": [{"label": w.label, "share": rounded(w.share), "alpha": rounded(w.alpha),
                           "survival": list(w.survival) if w.survival else None,
                           "temperature": w.temperature, "notes": w.notes,
                           "alpha_by_method": dict(w.alpha_by_method)} for w in self.workloads],
            "single_on": plan(self.single_on), "single_off": plan(self.single_off),
            "single_best": plan(self.single_best), "splits": [plan(p) for p in self.splits],
            "best": plan(self.best), "recommendation": self.recommendation, "notes": list(self.notes),
            "best_worth_it": self.best_worth_it, "warnings": warnings_in(self.notes),
            # the best plan over speculation off at the ends of the model's 80% band, and whether that leaves it open
            "best_vs_off_low": rounded(self.vs_off_band(self.best)[0]),
            "best_vs_off_high": rounded(self.vs_off_band(self.best)[1]),
            "uncertain": self.uncertain,
            "decision_lines": self.decision_lines,  # the decision first, in the words every page and command uses
        }


# --- one pool ------------------------------------------------------------------------------------

def _scenario_for(base: Scenario, method: str, alpha: float, survival, k: int, concurrency) -> Scenario:
    """The What-if scenario of one workload running in a pool with this setting (draft_model: the target's
    default draft where the scenario names none)."""
    draft = base.draft
    if method == "draft_model" and not draft and base.target.default_draft:
        draft = resolved_model(base.target.default_draft)
    c = int(concurrency) if float(concurrency).is_integer() else base.concurrency
    return replace(base, method=resolved_method(method), draft=draft, alpha=alpha, survival=survival, k=int(k),
                   concurrency=c)


@dataclass(frozen=True)
class _Layout:
    """How a pool's sequences sit on its replicas."""

    replicas: int
    sequences: float  # offered to the pool
    busy: float  # replica-equivalents in use: all replicas unless sequences are fewer
    per_replica: float  # offered sequences per busy replica (may be < 1: a replica idles part of the time)
    batch: float  # the batch a step is timed at: per_replica, at least one sequence

    @property
    def weight(self) -> float:
        """Busy replicas × the fraction of time each is busy: multiplies one replica's throughput."""
        return self.busy * self.per_replica / self.batch


def _layout(base: Scenario, members, concurrency: float, gpus: int) -> _Layout:
    replicas = _replicas(base, gpus)
    total = float(sum(w.share * concurrency for w in members))
    busy = float(min(replicas, max(total, 1.0)))
    per_replica = total / busy
    return _Layout(replicas, total, busy, per_replica, max(per_replica, 1.0))


def _replicas(base: Scenario, gpus: int) -> int:
    if int(gpus) != gpus or gpus < 1:
        raise SpecModelError(f"a pool needs a whole number of GPUs ≥ 1, got {gpus}")
    if gpus % base.tp:
        raise SpecModelError(f"{gpus} GPUs do not divide into replicas of tensor parallelism {base.tp}")
    return int(gpus) // base.tp


def pool_result(base: Scenario, members: list[Workload], concurrency: float, gpus: int, method: str,
                k: int) -> PoolResult:
    """Predict one pool: `members` (their shares are of the whole mix) get share × concurrency
    sequences each, spread over gpus / tp replicas, all served with `method` and `k`."""
    m = method if k > 0 else base.method.name
    if m != base.method.name and any(w.acceptance(m, base.method.name) is None for w in members):
        missing = [w.label for w in members if w.acceptance(m, base.method.name) is None]
        raise SpecModelError(f"acceptance of {', '.join(missing)} under {m} is unknown: add a column alpha_{m}")
    lay = _layout(base, members, concurrency, gpus)
    results: list = [None] * len(members)
    step = max_fit = np.nan
    for idx, p in _member_predictions(base, members, m, int(k), lay.batch, int(k), lay.batch):
        arm = p.spec if k > 0 else p.plain
        n = len(idx)
        cols = [np.broadcast_to(np.asarray(x, dtype=float), (n,)) for x in
                (arm.batch, p.tokens_per_step, arm.per_seq_tok_s, arm.itl_ms, arm.throughput_tok_s)]
        step, max_fit = float(np.ravel(arm.step_ms)[0]), float(np.ravel(arm.max_concurrency)[0])
        for j, i in enumerate(idx):
            w = members[i]
            seqs = w.share * concurrency
            part = seqs / lay.sequences  # this workload's part of one replica's sequences
            batch, tokens, per_seq, itl, thr = (float(c[j]) for c in cols)
            results[i] = WorkloadResult(w.label, float(seqs), batch * part * lay.weight, tokens if k > 0 else 1.0,
                                        per_seq, itl, thr * part * lay.weight)
    return PoolResult(tuple(w.label for w in members), int(gpus), lay.replicas, m if k > 0 else OFF,
                      int(k), lay.sequences, lay.per_replica, max_fit, step,
                      float(sum(r.throughput_tok_s for r in results)), tuple(results))


def _member_predictions(base: Scenario, members, method: str, k_scenario: int, concurrency, k, batch):
    """The members' predictions in a pool served with `method` (k and batch may be arrays), as
    (member indices, Prediction) pairs. Members known by α alone share one predict vectorised over
    their α values along a new first axis (the step does not depend on α, only the tokens each step
    emits), so a pool of thousands of workloads costs one call; a member with a survival profile
    gets its own call (indices of one)."""
    acc = [w.acceptance(method, base.method.name) for w in members]
    by_alpha = [i for i, (_a, survival) in enumerate(acc) if survival is None]
    if by_alpha:
        alphas = np.array([acc[i][0] for i in by_alpha])
        shape = (len(alphas),) + (1,) * max(np.ndim(k), np.ndim(batch))
        s = _scenario_for(base, method, float(alphas[0]), None, k_scenario, concurrency)
        yield by_alpha, predict(s, alpha=alphas.reshape(shape), k=k, concurrency=batch)
    for i, (alpha, survival) in enumerate(acc):
        if survival is not None:
            s = _scenario_for(base, method, alpha, survival, k_scenario, concurrency)
            yield [i], predict(s, k=k, concurrency=batch)


def _pool_throughputs(base: Scenario, members: tuple[Workload, ...], concurrency: float, gpu_counts: list[int],
                      method: str, ks: np.ndarray) -> np.ndarray:
    """Aggregate tok/s of one pool for every k in `ks` (rows) and GPU count (columns). Same
    arithmetic as pool_result, which builds the detailed result for the chosen setting."""
    lays = [_layout(base, members, concurrency, g) for g in gpu_counts]
    batch = np.array([lay.batch for lay in lays])[None, :]
    weight = np.array([lay.weight for lay in lays])[None, :]
    kk = ks[:, None]
    out = np.zeros((len(ks), len(gpu_counts)))
    for idx, p in _member_predictions(base, members, method, int(ks.max()), base.concurrency, kk, batch):
        thr = np.where(kk > 0, p.spec.throughput_tok_s, p.plain.throughput_tok_s)  # (members, k, GPU counts)
        shares = np.array([members[i].share for i in idx])[:, None, None]
        thr = np.broadcast_to(thr, (len(idx),) + out.shape)
        out += (thr * shares).sum(axis=0) * (concurrency / lays[0].sequences) * weight
    return out


# --- the comparison ------------------------------------------------------------------------------

def _best_settings(base: Scenario, members: tuple[Workload, ...], concurrency: float, gpu_counts: list[int],
                   methods: tuple[str, ...], k_max: int) -> dict[int, tuple[str, int, float]]:
    """For each GPU count, (method, k, tok/s) with the highest aggregate throughput; ties go to
    off, then to the earlier method and the smaller k."""
    ks = np.arange(0, k_max + 1)
    best = {g: (base.method.name, 0, -1.0) for g in gpu_counts}
    for method in [m for m in methods if all(w.acceptance(m, base.method.name) is not None for w in members)]:
        grid = np.nan_to_num(_pool_throughputs(base, members, concurrency, gpu_counts, method, ks), nan=0.0)
        for j, g in enumerate(gpu_counts):
            if best[g][2] < 0:
                best[g] = (method, 0, float(grid[0, j]))
            for k in ks[1:]:
                if grid[k, j] > best[g][2] * (1 + 1e-9):
                    best[g] = (method, int(k), float(grid[k, j]))
    return best


def _set_partitions(items: list[int]):
    """Every way to split `items` into non-empty groups (Bell-number many)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]
        yield [[first]] + part


def _compositions(total: int, parts: int):
    """Ways to write `total` as an ordered sum of `parts` whole numbers ≥ 1."""
    for cuts in itertools.combinations(range(1, total), parts - 1):
        bounds = (0, *cuts, total)
        yield tuple(bounds[i + 1] - bounds[i] for i in range(parts))


def search_methods(base: Scenario, workloads: list[Workload], methods=None) -> tuple[str, ...]:
    """Methods the split search tries: the pool's own and any with per-method acceptance given."""
    if methods:
        found = tuple(dict.fromkeys(find_method(m).name for m in methods))
    else:
        extra = [m for w in workloads for m, _ in w.alpha_by_method]
        found = tuple(dict.fromkeys([base.method.name, *extra]))
    return tuple(m for m in METHODS if m in found)


def busiest(workloads: list[Workload], n: int = MAX_WORKLOADS) -> list[str]:
    """Labels of the `n` workloads with the largest shares (ties: in table order), in table order.

    >>> from specmodel.plan.workloads import Workload
    >>> busiest([Workload(f"w{i}", s, 0.5) for i, s in enumerate([0.1, 0.3, 0.05, 0.3, 0.25])], 3)
    ['w1', 'w3', 'w4']
    """
    ranked = sorted(range(len(workloads)), key=lambda i: (-workloads[i].share, i))[:n]
    return [workloads[i].label for i in sorted(ranked)]


def _split_blocks(workloads: list[Workload], split_among) -> tuple[list[tuple[int, ...]], list[str]]:
    """The items the split search places in pools: each chosen workload alone, and the others
    together as one block (they always share a pool). Also the labels of the others."""
    labels = [w.label for w in workloads]
    if split_among is None:
        split_among = busiest(workloads) if len(workloads) > MAX_WORKLOADS else labels
    chosen = list(dict.fromkeys(split_among))
    unknown = [c for c in chosen if c not in labels]
    if unknown:
        raise SpecModelError(f"workload(s) {', '.join(repr(u) for u in unknown)} to split are not in the table; "
                             f"choose among: {', '.join(labels)}")
    if len(chosen) > MAX_WORKLOADS:
        raise SpecModelError(f"{len(chosen)} workloads chosen to split apart: the split search handles at most "
                             f"{MAX_WORKLOADS}; the others share one pool")
    blocks = [(labels.index(c),) for c in sorted(chosen, key=labels.index)]
    rest = tuple(i for i, label in enumerate(labels) if label not in chosen)
    return blocks + ([rest] if rest else []), [labels[i] for i in rest]


def compare(base: Scenario, workloads: list[Workload], concurrency: int, gpus: int = 1, *,
            methods=None, k_max: int = K_MAX, top: int = 3, split_among=None) -> MixReport:
    """Single pool with the scenario's method and k, single pool off, the best single-pool setting,
    and the `top` best ways to split the workloads over `gpus` GPUs (best first).

    The single pool takes every workload. The split search separates at most MAX_WORKLOADS of them:
    `split_among` (labels; by default the busiest when there are more); the others always share
    one pool. When the splits are too many to search, the report says so and lists no split."""
    if not workloads:
        raise SpecModelError("no workloads to compare")
    units = _replica_units(base, concurrency, gpus)
    workloads = _checked_workloads(workloads)
    base = base.validated()
    notes: list[Note] = []
    members = tuple(workloads)
    best_for = _BestSettings(base, members, concurrency, [u * base.tp for u in range(1, units + 1)],
                             search_methods(base, workloads, methods), max(int(k_max), int(base.k)))

    single_on = Plan(f"single pool, {base.method.name} k={base.k}" if base.k else "single pool, off",
                     "single_on", (pool_result(base, list(members), concurrency, gpus, base.method.name, base.k),))
    single_off = Plan("single pool, speculation off", "single_off",
                      (pool_result(base, list(members), concurrency, gpus, base.method.name, 0),))
    m, k, _ = best_for(tuple(range(len(members))), gpus)
    single_best = Plan("single pool, best setting", "single_best",
                       (pool_result(base, list(members), concurrency, gpus, m, k),))

    blocks, together = _split_blocks(list(members), split_among)
    if together:
        notes.append(info(f"the split search separates {len(blocks) - 1} workloads; the other {len(together)} "
                          f"({', '.join(together)}) share one pool in every split"))
    partitions, too_many = _partitions_to_search(len(blocks), units)
    notes += too_many
    scored = _scored_splits(partitions, blocks, units, base.tp, best_for)
    splits = _top_splits(scored, top, best_for, base, members, concurrency)
    notes += _mix_notes(units, members, (single_on, single_off, single_best, *splits))
    report = MixReport(base, members, int(concurrency), int(gpus), single_on, single_off, single_best,
                       tuple(splits), tuple(notes), "")
    return replace(report, recommendation=recommend(report))


def _replica_units(base: Scenario, concurrency, gpus) -> int:
    """Replicas of the scenario's tensor parallelism in `gpus` GPUs, the concurrency and GPU count checked."""
    if int(concurrency) != concurrency or concurrency < 1:
        raise SpecModelError(f"concurrency must be a whole number ≥ 1, got {concurrency}")
    if int(gpus) != gpus or gpus < 1:
        raise SpecModelError(f"the GPU count must be a whole number ≥ 1, got {gpus}")
    if gpus % base.tp:
        raise SpecModelError(f"{gpus} GPUs cannot run replicas of tensor parallelism {base.tp}: "
                             f"give a multiple of {base.tp}")
    units = gpus // base.tp
    if units > MAX_GPU_UNITS:
        raise SpecModelError(f"{units} replicas: the split search handles at most {MAX_GPU_UNITS}")
    return units


def _checked_workloads(workloads: list[Workload]) -> list[Workload]:
    """The workloads, each with an acceptance, a share ≥ 0 and its own label; shares that do not sum to
    1 normalised."""
    label_counts = collections.Counter(w.label for w in workloads)
    for w in workloads:
        if w.alpha is None and w.survival is None:
            raise SpecModelError(f"workload '{w.label}' has no acceptance: give its α or a survival profile")
        if not math.isfinite(w.share) or w.share < 0:
            raise SpecModelError(f"workload '{w.label}' has share {w.share}; a share is a number ≥ 0")
        if label_counts[w.label] > 1:
            raise SpecModelError(f"label '{w.label}' appears twice; give each workload its own label")
    if abs(sum(w.share for w in workloads) - 1.0) > SHARE_TOLERANCE:
        workloads, _ = normalise_shares(workloads)
    return workloads


class _BestSettings:
    """best(group, g): the best (method, k, throughput) of a group of workloads (indices into members)
    sharing a pool of g GPUs; every GPU count of a group is searched in one vectorised pass, once."""

    def __init__(self, base: Scenario, members: tuple[Workload, ...], concurrency, gpu_counts: list[int],
                 methods: tuple[str, ...], k_max: int):
        self.base, self.members, self.concurrency = base, members, concurrency
        self.gpu_counts, self.methods, self.k_max = gpu_counts, methods, k_max
        self._by_group: dict = {}

    def __call__(self, group: tuple[int, ...], g: int):
        if group not in self._by_group:
            ws = tuple(self.members[i] for i in group)
            self._by_group[group] = _best_settings(self.base, ws, self.concurrency, self.gpu_counts, self.methods,
                                                   self.k_max)
        return self._by_group[group][g]


def _partitions_to_search(n_blocks: int, units: int) -> tuple[list, list[Note]]:
    """The ways to group the blocks into at most `units` pools, and a note instead where they and the
    GPUs' allocations to them are more than MAX_PLANS."""
    partitions = [p for p in _set_partitions(list(range(n_blocks))) if len(p) <= units]
    count = sum(math.comb(units - 1, len(p) - 1) for p in partitions)
    if count > MAX_PLANS:
        return [], [info(f"{count:,} possible splits are too many to search: only the single pool is compared; "
                         "choose fewer workloads to split apart, or fewer GPUs")]
    return partitions, []


def _scored_splits(partitions: list, blocks: list[tuple[int, ...]], units: int, tp: int,
                   best_for: _BestSettings) -> list[tuple]:
    """(throughput, pools, groups of workloads, replicas per group) of every partition and allocation of
    the replicas, best throughput first; among equals, fewer pools (simpler to run)."""
    scored = []
    for part in partitions:
        groups = [tuple(sorted(i for b in g for i in blocks[b])) for g in part]
        for alloc in _compositions(units, len(groups)):
            total = sum(best_for(g, a * tp)[2] for g, a in zip(groups, alloc))
            scored.append((total, len(groups), groups, alloc))
    scored.sort(key=lambda x: (-round(x[0], 6), x[1]))
    return scored


def _top_splits(scored: list[tuple], top: int, best_for: _BestSettings, base: Scenario,
                members: tuple[Workload, ...], concurrency) -> list[Plan]:
    """The `top` best splits as plans, each pool at its best setting. The one-pool partition is searched
    too (so `best` is the optimum of the whole space) but listed as single_best, not a split."""
    splits = []
    for _total, n_pools, groups, alloc in scored:
        if len(splits) >= max(0, top):
            break
        if n_pools == 1:
            continue
        pools = []
        for g, a in zip(groups, alloc):
            meth, kk, _ = best_for(g, a * base.tp)
            pools.append(pool_result(base, [members[i] for i in g], concurrency, a * base.tp, meth, kk))
        pools.sort(key=lambda p: [w.label for w in members].index(p.labels[0]))
        splits.append(Plan(f"split #{len(splits) + 1}", "split", tuple(pools)))
    return splits


def _mix_notes(units: int, members: tuple[Workload, ...], plans: tuple[Plan, ...]) -> list[Note]:
    """Notes on what a split cannot do here, and on each plan that does not fit in memory."""
    notes = []
    if units == 1:
        notes.append(info("one GPU: there is nothing to split; give more GPUs to compare splits"))
    if len(members) == 1:
        notes.append(info("one workload: a split cannot separate traffic shapes"))
    for plan in plans:
        if not plan.fits:
            queued = sum(p.queued for p in plan.pools)
            notes.append(warning(f"{plan.name} does not fit in memory: {queued:.0f} sequences wait in the queue"))
    return notes


def recommend(report: MixReport) -> str:
    """The comparison in words: what to deploy, and what it costs each workload."""
    off = report.single_off
    on = report.single_on
    best = report.best
    base_thr = off.throughput_tok_s
    on_change = on.throughput_tok_s / base_thr - 1 if base_thr > 0 else float("nan")
    words = [f"One pool with speculation on ({on.pools[0].setting}) "
             f"{'gains' if on_change >= 0 else 'loses'} {abs(on_change):.0%} aggregate throughput against "
             f"speculation off ({on.throughput_tok_s:,.0f} vs {base_thr:,.0f} tok/s)."]
    gain = best.throughput_tok_s / base_thr - 1 if base_thr > 0 else float("nan")
    if len(best.pools) > 1:
        words.append(f"Best: split — {best.describe()}: {best.throughput_tok_s:,.0f} tok/s, "
                     f"{gain:+.0%} against one pool with speculation off.")
    elif best.pools[0].k == 0:
        words.append("Best: keep one pool with speculation off; no split of these GPUs does better.")
    else:
        words.append(f"Best: keep one pool with {best.pools[0].setting} ({best.throughput_tok_s:,.0f} tok/s, "
                     f"{gain:+.0%}); no split of these GPUs does better.")
    changes = []
    for w in report.workloads:
        _, before = off.workload(w.label)
        _, after = best.workload(w.label)
        if before.itl_ms > 0 and math.isfinite(after.itl_ms):
            changes.append(f"{w.label} {after.itl_ms:.1f} ms ({after.itl_ms / before.itl_ms - 1:+.0%})")
    if changes:
        words.append("Inter-token latency there, against one pool off: " + ", ".join(changes) + ".")
    if not best.fits:
        words.append("Warning: that plan does not hold every sequence in memory; some queue.")
    if report.uncertain and report.best_worth_it:
        low, high = report.vs_off_band(best)
        words.append(f"Uncertain: across the model's 80% band that plan gives {low:.2f}x to {high:.2f}x the throughput "
                     "of one pool with speculation off; measure its speculating pools against speculation off before "
                     "moving GPUs.")
    elif report.uncertain:
        top = max(report.plans, key=lambda p: report.vs_off_band(p)[1])
        words.append(f"Uncertain: at the high end of the model's 80% band, {top.describe()} would give "
                     f"{report.vs_off_band(top)[1]:.2f}x; a measurement with speculation on would settle it.")
    return " ".join(words)


def report_json(report: MixReport) -> str:
    import json

    return json.dumps(report.to_dict(), indent=2, allow_nan=False)


def workloads_by_fit(report, fit) -> dict:
    """Each workload's speedup in the single pool by a step fit's measured step times (fit.steps.StepFit of the
    user's runs at the pool's k and method), at the sequences a replica runs there and at the workload's own tokens
    per step (its α at the pool's k): {batch, workloads: [{label, tokens_per_step, speedup, speedup_low,
    speedup_high, decision}], batches}."""
    from specmodel.model.acceptance import tokens_per_step
    from specmodel.words.step_fit import fit_decision

    k = report.scenario.k
    batch = max(float(report.single_on.pools[0].per_replica_sequences), 1.0)
    rows = []
    for w in report.workloads:
        e = float(tokens_per_step(w.alpha, k))
        speedup, low, high = (round(float(v), 4) for v in fit.speedup(batch, e))
        rows.append({"label": w.label, "tokens_per_step": round(e, 4), "speedup": speedup, "speedup_low": low,
                     "speedup_high": high, "decision": fit_decision(fit, batch, e)[0]})
    return {"batch": batch, "workloads": rows, "batches": list(fit.batches)}
