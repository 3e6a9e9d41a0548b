"""Capacity at a latency target: how many GPUs a load needs with and without speculation.

Speculation trades aggregate throughput for per-user speed. The frontier makes the trade visible:
for each arm (plain decoding, and speculation at each k) and every batch B per replica, the
per-user speed and the aggregate tokens/s per GPU. A plan reads the frontier for one load and one
latency target:

    concurrent users N:  the fewest replicas r such that ceil(N / r) users per replica still see
                         the target speed (and fit in the KV cache);
    request rate λ with mean output T tokens: the replicas must produce λ·T tokens/s; each
                         replica can give at most the throughput of the largest batch that still
                         meets the target, so r = ceil(λ·T / that throughput); Little's law gives
                         the concurrency that results (λ · T / per-user speed).

A plan never queues users: a queued user sees no tokens at all until a slot frees, so the batch
per replica is at most what fits in the KV cache. The frontier still shows the queueing tail
(offered users beyond what fits: throughput stops growing, per-user speed falls).

Every number comes from one `scenario.predict` call over a grid of k and batch: a calibrated
Scenario (its `efficiency`) is all it takes to plan with calibrated parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from specmodel.errors import DoesNotFit, SpecModelError
from specmodel.model.decide import K_MAX, speedup_band
from specmodel.model.scenario import Scenario, predict
from specmodel.words.capacity import arm_missed, capacity_notes, capacity_uncertain, capacity_verdict, fit_replicas_words

MAX_BATCH = 4096  # chosen: sequences per replica the plan considers (engines cap max_num_seqs well below)
BATCHES = np.arange(1, MAX_BATCH + 1)  # chosen: every batch up to MAX_BATCH
REL_TOL = 1e-9  # chosen: a speed within this fraction of the target meets it (targets read off the model itself)
MAX_USERS = 1e9  # chosen: a bound on the input far above any deployment, not a measured limit
# How each verdict's headline reads (specmodel.notes.TONES).
VERDICT_TONES = {"saves GPUs": "good", "only spec meets the target": "good", "same": "neutral",
                 "costs GPUs": "caution", "neither meets the target": "bad"}


# --- inputs --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Load:
    """What must be served: concurrent users, or a request rate with a mean output length."""

    users: float | None = None  # concurrent users (sequences decoding at once)
    rps: float | None = None  # requests per second
    output_tokens: float | None = None  # mean generated tokens per request (with rps)

    def validated(self) -> "Load":
        if (self.users is None) == (self.rps is None):
            raise SpecModelError("give the load as concurrent users or as a request rate with mean output "
                                 "tokens (one of the two)")
        if self.users is not None:
            u = self.users
            if not _is_finite_number(u) or u < 1 or u != int(u):
                raise SpecModelError(f"concurrent users must be a whole number ≥ 1, got {_show(u)}")
            if u > MAX_USERS:
                raise SpecModelError(f"concurrent users must be at most {MAX_USERS:.0e}, got {_show(u)}")
            if self.output_tokens is not None:
                raise SpecModelError("mean output tokens go with a request rate, not with concurrent users")
            return self
        if not _is_finite_number(self.rps) or self.rps <= 0:
            raise SpecModelError(f"the request rate must be a number of requests per second > 0, got {_show(self.rps)}")
        if self.output_tokens is None:
            raise SpecModelError("a request rate needs the mean output tokens per request too (Little's law)")
        if not _is_finite_number(self.output_tokens) or self.output_tokens < 1:
            raise SpecModelError(f"mean output tokens per request must be ≥ 1, got {_show(self.output_tokens)}")
        if self.rps * self.output_tokens > MAX_USERS * 1e3:
            raise SpecModelError(f"{_show(self.rps)} requests/s × {_show(self.output_tokens)} tokens is beyond any "
                                 "fleet this model plans for: check the units")
        return self

    @property
    def token_rate_tok_s(self) -> float | None:
        """Generated tokens per second the fleet must produce (request-rate loads only)."""
        return None if self.rps is None else float(self.rps) * float(self.output_tokens)

    def describe(self) -> str:
        if self.users is not None:
            return f"{int(self.users):,} concurrent users"
        return f"{self.rps:g} requests/s × {self.output_tokens:g} output tokens"


@dataclass(frozen=True)
class Target:
    """The latency every user must see: a minimum per-user speed or a maximum inter-token latency."""

    min_user_tok_s: float | None = None
    max_itl_ms: float | None = None

    def validated(self) -> "Target":
        if (self.min_user_tok_s is None) == (self.max_itl_ms is None):
            raise SpecModelError("give one latency target: a minimum per-user speed (tok/s) or a maximum "
                                 "inter-token latency (ms)")
        value = self.min_user_tok_s if self.max_itl_ms is None else self.max_itl_ms
        what = "per-user speed target" if self.max_itl_ms is None else "inter-token latency target"
        unit = "tokens/s" if self.max_itl_ms is None else "ms"
        if not _is_finite_number(value) or value <= 0:
            raise SpecModelError(f"the {what} must be a number of {unit} > 0, got {_show(value)}")
        return self

    @property
    def user_tok_s(self) -> float:
        """The target as a minimum per-user speed (ITL = 1000 / speed)."""
        return float(self.min_user_tok_s) if self.max_itl_ms is None else 1e3 / float(self.max_itl_ms)

    @property
    def is_itl(self) -> bool:
        return self.max_itl_ms is not None

    def describe(self) -> str:
        if self.is_itl:
            return f"inter-token latency ≤ {self.max_itl_ms:g} ms"
        return f"≥ {self.min_user_tok_s:g} tok/s per user"

    def reach(self, user_tok_s: float) -> str:
        """A per-user speed in the target's own unit ('42.0 tok/s per user' or 'ITL 23.8 ms')."""
        if self.is_itl:
            return f"ITL {_itl(user_tok_s):.1f} ms"
        return f"{user_tok_s:.1f} tok/s per user"


# --- the frontier --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Frontier:
    """Per-user speed against throughput per GPU, for each k (row; k = 0 is plain decoding) and each
    offered batch per replica (column). Offered users beyond what fits queue: they count in the
    per-user speed (throughput ÷ offered users) but add no throughput."""

    scenario: Scenario
    ks: np.ndarray  # [nk] k per row; 0 = plain decoding
    batches: np.ndarray  # [nb] offered users per replica: 1, 2, ..., MAX_BATCH
    user_tok_s: np.ndarray  # [nk, nb] tokens/s each offered user sees (queued users included)
    replica_tok_s: np.ndarray  # [nk, nb] aggregate generated tokens/s of one replica
    max_batch: np.ndarray  # [nk] sequences one replica holds in its KV cache (0: not even one)

    @property
    def throughput_tok_s_per_gpu(self) -> np.ndarray:
        return self.replica_tok_s / self.scenario.tp

    @property
    def itl_ms(self) -> np.ndarray:
        return _itl(self.user_tok_s)

    def row(self, k: int) -> int:
        hits = np.flatnonzero(self.ks == k)
        if hits.size == 0:
            raise SpecModelError(f"k = {k} is not on this frontier (k = {', '.join(map(str, self.ks))})")
        return int(hits[0])

    def fits(self) -> np.ndarray:
        """[nk, nb] True where the offered users all fit in one replica's KV cache."""
        return self.batches[None, :] <= self.max_batch[:, None]


def frontier(s: Scenario, ks=None, k_max: int = K_MAX) -> Frontier:
    """The frontier of plain decoding (k = 0) and speculation at each k in ks (default 1..k_max),
    for batches 1..MAX_BATCH per replica: one predict() call over the k × batch grid."""
    ks = np.arange(1, k_max + 1) if ks is None else np.asarray(ks, dtype=int).ravel()
    ks = np.unique(np.concatenate([[0], ks]))
    shape = (ks.size, BATCHES.size)
    try:
        with np.errstate(divide="ignore", invalid="ignore"):  # an arm where nothing fits divides 0 by 0
            p = predict(s, k=ks[:, None], concurrency=BATCHES[None, :])
    except DoesNotFit:  # not one sequence fits beside the target's weights: no arm serves anyone
        zeros = np.zeros(shape)
        return Frontier(s, ks, BATCHES, zeros, zeros, np.zeros(ks.size))
    plain_tok_s = np.broadcast_to(np.asarray(p.plain.throughput_tok_s, dtype=float), shape)[0]
    replica = np.array(np.broadcast_to(np.asarray(p.spec.throughput_tok_s, dtype=float), shape))
    replica[ks == 0] = plain_tok_s  # the k = 0 row is plain decoding, read from the plain arm
    fits_spec = np.broadcast_to(np.asarray(p.spec.max_concurrency, dtype=float), shape)[:, 0]
    fits_plain = float(np.broadcast_to(np.asarray(p.plain.max_concurrency, dtype=float), shape)[0, 0])
    max_batch = np.where(ks == 0, fits_plain, fits_spec)
    replica = np.nan_to_num(replica, nan=0.0, posinf=0.0)
    return Frontier(s, ks, BATCHES, replica / BATCHES[None, :], replica, max_batch)


# --- the plan ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArmPlan:
    """One arm (plain decoding, or speculation at its best k) serving the load at the target."""

    arm: str  # "plain" | "spec"
    k: int  # 0 for plain
    meets_target: bool
    replicas: int | None  # None when no batch meets the target
    gpus: int | None  # replicas × tensor-parallel GPUs per replica
    batch_per_replica: int | None  # users on the fullest replica
    concurrency: float | None  # concurrent users in all: given, or λ·T ÷ per-user speed (Little's law)
    user_tok_s: float  # per-user speed on the fullest replica; if the target is missed, the best reachable
    throughput_tok_s_per_gpu: float  # at that operating point
    max_batch_per_replica: float  # sequences one replica holds in its KV cache
    best_reachable_user_tok_s: float  # the fastest any user can be served with this arm
    best_reachable_batch: int  # the batch per replica where that is (1 unless the model says otherwise)
    reason: str = ""  # why the target is missed (empty when met)

    @property
    def itl_ms(self) -> float:
        return float(_itl(self.user_tok_s))

    def to_dict(self) -> dict:
        return {"gpus": self.gpus, "replicas": self.replicas, "batch_per_replica": self.batch_per_replica,
                "user_tok_s": rounded(self.user_tok_s), "itl_ms": rounded(self.itl_ms),
                "throughput_tok_s_per_gpu": rounded(self.throughput_tok_s_per_gpu), "k": self.k,
                "meets_target": self.meets_target, "concurrency": rounded(self.concurrency),
                "max_batch_per_replica": int_or_none(self.max_batch_per_replica),
                "best_reachable_user_tok_s": rounded(self.best_reachable_user_tok_s),
                "best_reachable_itl_ms": rounded(_itl(self.best_reachable_user_tok_s)),
                "best_reachable_batch": self.best_reachable_batch,
                "reason": self.reason or None}


@dataclass(frozen=True)
class CapacityPlan:
    scenario: Scenario
    load: Load
    target: Target
    plain: ArmPlan
    spec: ArmPlan
    k_fixed: bool  # True when the speculative arm's k was given, not searched
    spec_ks: tuple[int, ...]  # the k values the speculative arm was allowed
    verdict: str  # a key of VERDICT_TONES
    verdict_text: str  # one sentence with the numbers
    advice: str  # what to deploy
    notes: tuple[str, ...]
    # The speculative arm planned again at the ends of the model's 80% band (decide.speedup_band at its
    # operating point): (low end, high end); None where there is no speculative operating point to judge.
    spec_band: tuple[ArmPlan, ArmPlan] | None = None
    band_verdicts: tuple[str, str] | None = None  # the verdict at each end

    @property
    def uncertain(self) -> bool:
        """True where the band's ends disagree on whether speculation is worth deploying for this load."""
        return _disagree(self.band_verdicts)

    @property
    def tone(self) -> str:
        return "caution" if self.uncertain else VERDICT_TONES[self.verdict]

    def _saved_at(self, end: int) -> int | None:
        return _gpus_saved(self.plain, self.spec_band[end] if self.spec_band else None)

    def table_rows(self) -> list[dict]:
        """One row per arm for the page's table: whether it meets the target, GPUs, replicas, speed."""
        rows = []
        for name, arm in (("plain", self.plain), (f"speculation, k = {self.spec.k}", self.spec)):
            d = arm.to_dict()
            rows.append({"arm": name, "meets target": "yes" if arm.meets_target else "no",
                         "GPUs": d["gpus"], "replicas": d["replicas"], "users per replica": d["batch_per_replica"],
                         "tok/s per user": d["user_tok_s"], "ITL ms": d["itl_ms"],
                         "tok/s per GPU": d["throughput_tok_s_per_gpu"], "fit per replica": d["max_batch_per_replica"]})
        return rows

    @property
    def gpus_saved(self) -> int | None:
        return _gpus_saved(self.plain, self.spec)

    def to_dict(self) -> dict:
        s = self.scenario
        return {
            "gpu": s.gpu.name, "tp": s.tp, "target": s.target.name, "method": s.method.name,
            "draft": s.draft.name if s.method.name == "draft_model" and s.draft else None,
            "alpha": rounded(s.alpha) if s.survival is None else None,
            "survival": list(s.survival) if s.survival is not None else None,
            "context_len": s.context_len, "timings": "measured" if s.t_target_ms is not None else "hardware",
            "load": {"users": None if self.load.users is None else int(self.load.users), "rps": self.load.rps,
                     "output_tokens": self.load.output_tokens,
                     "token_rate_tok_s": rounded(self.load.token_rate_tok_s)},
            "latency_target": {"min_user_tok_s": rounded(self.target.user_tok_s),
                               "max_itl_ms": rounded(_itl(self.target.user_tok_s)),
                               "given_as": "max_itl_ms" if self.target.is_itl else "min_user_tok_s"},
            "spec_k_candidates": list(self.spec_ks), "k_fixed": self.k_fixed,
            "plain": self.plain.to_dict(), "spec": self.spec.to_dict(),
            "gpus_saved": self.gpus_saved, "verdict": self.verdict, "verdict_text": self.verdict_text,
            "advice": self.advice, "notes": list(self.notes),
            # the speculative arm at the ends of the model's 80% band: GPUs saved (negative: cost) and verdicts
            "gpus_saved_low": self._saved_at(0), "gpus_saved_high": self._saved_at(1),
            "verdict_low": self.band_verdicts[0] if self.band_verdicts else None,
            "verdict_high": self.band_verdicts[1] if self.band_verdicts else None, "uncertain": self.uncertain,
        }


def plan(s: Scenario, load: Load, target: Target, k: int | None = None, k_max: int = K_MAX) -> CapacityPlan:
    """GPUs each arm needs to serve the load with every user at the target. The speculative arm
    uses k when given, else the k in 1..k_max that needs the fewest GPUs (then the fastest users,
    then the smaller k). Missing the target is an answer ("impossible" with the best reachable
    speed), not an error."""
    load, target = load.validated(), target.validated()
    if k is not None and (k != int(k) or k < 1):
        raise SpecModelError(f"the speculative arm needs k ≥ 1 draft tokens (plain decoding is k = 0), got {k}")
    if k is None and (k_max != int(k_max) or k_max < 1):
        raise SpecModelError(f"k_max must be a whole number ≥ 1, got {k_max}")
    f = frontier(s, ks=None if k is None else [int(k)], k_max=int(k_max))
    return plan_on(f, load, target, k)


def plan_on(f: Frontier, load: Load, target: Target, k: int | None = None) -> CapacityPlan:
    """plan() on a frontier already computed (the page draws the same one); k fixes the
    speculative arm's k (it must be on the frontier), None searches every k > 0 of the frontier."""
    load, target = load.validated(), target.validated()
    plain, spec, spec_rows = _arms(f, load, target, k)
    k_fixed = k is not None
    capped = [a for a in (plain, spec)
              if a.meets_target and a.batch_per_replica >= MAX_BATCH and a.max_batch_per_replica > MAX_BATCH]
    notes = capacity_notes(capped, MAX_BATCH, by_rate=load.rps is not None)
    verdict, text, advice = capacity_verdict(f.scenario, load, target, plain, spec, k_fixed)
    ends = _band_ends(f, load, target, k, spec)
    band_verdicts = tuple(capacity_verdict(f.scenario, load, target, plain, e, k_fixed)[0] for e in ends) \
        if ends else None
    if _disagree(band_verdicts):
        text = capacity_uncertain(text, [_gpus_saved(plain, e) for e in ends],
                                  spec.batch_per_replica or spec.best_reachable_batch)
    return CapacityPlan(f.scenario, load, target, plain, spec, k_fixed, tuple(int(a.k) for a in spec_rows), verdict,
                        text, advice, tuple(notes), ends, band_verdicts)


def _gpus_saved(plain: ArmPlan, spec: ArmPlan | None) -> int | None:
    """Plain GPUs − speculative GPUs (negative: speculation costs GPUs); None unless both meet the target."""
    return None if spec is None or spec.gpus is None or plain.gpus is None else plain.gpus - spec.gpus


GAINS = ("saves GPUs", "only spec meets the target")  # the verdicts that say: deploy speculation for this load


def _disagree(ends: tuple[str, str] | None) -> bool:
    """True where one end of the band says deploy speculation (GAINS) and the other does not (it saves GPUs
    at one end and costs or saves none at the other; or only it meets the target at one end and nothing
    does at the other); costing 1 GPU at one end and none at the other says the same: leave it off."""
    return ends is not None and (ends[0] in GAINS) != (ends[1] in GAINS)


def _arms(f: Frontier, load: Load, target: Target, k: int | None) -> tuple[ArmPlan, ArmPlan, list[ArmPlan]]:
    """(plain arm, the speculative arm chosen, every speculative arm allowed) on a frontier: the speculative
    arm is k's when given, else the one needing the fewest replicas, then the fastest users, then the smaller k."""
    arms = _solve(f, load, target.user_tok_s)
    spec_rows = [arms[f.row(int(k))]] if k is not None else [arms[i] for i in range(f.ks.size) if f.ks[i] > 0]
    spec = min(spec_rows, key=lambda a: (a.replicas if a.meets_target else math.inf, -a.user_tok_s, a.k))
    return arms[f.row(0)], spec, spec_rows


def _band_ends(f: Frontier, load: Load, target: Target, k: int | None, spec: ArmPlan) -> tuple[ArmPlan, ArmPlan] | None:
    """The speculative arm planned with every speculative row of the frontier scaled to the low and to the
    high end of the model's 80% band at the chosen arm's operating point (decide.speedup_band: the model's
    error, an engine version not given): the band is of speculative over plain throughput at the same
    batch, so each user's speed scales with it. None where that point cannot be predicted."""
    batch = spec.batch_per_replica or spec.best_reachable_batch
    if not batch or spec.best_reachable_user_tok_s <= 0:
        return None
    point = replace(f.scenario, k=int(spec.k), concurrency=int(batch))
    try:
        speedup = float(predict(point).speedup)
        low, high = speedup_band(point, speedup=speedup)
    except SpecModelError:
        return None
    if not (speedup > 0 and math.isfinite(low) and math.isfinite(high)):
        return None
    return tuple(_arms(_scaled(f, r), load, target, k)[1] for r in (low / speedup, high / speedup))


def _scaled(f: Frontier, ratio: float) -> Frontier:
    """The frontier with every speculative row's throughput, and so each user's speed, times `ratio`."""
    spec = (f.ks > 0)[:, None]
    return replace(f, user_tok_s=np.where(spec, f.user_tok_s * ratio, f.user_tok_s),
                   replica_tok_s=np.where(spec, f.replica_tok_s * ratio, f.replica_tok_s))


def _solve(f: Frontier, load: Load, need_tok_s: float) -> list[ArmPlan]:
    """Every row of the frontier against the load and target, vectorised over k and batch."""
    b = f.batches
    fits = f.fits()
    speed = f.user_tok_s
    allowed = fits & (speed >= need_tok_s * (1 - REL_TOL)) & (f.replica_tok_s > 0)
    nk = f.ks.size
    rows = np.arange(nk)
    if load.users is not None:
        n = float(load.users)
        r = np.ceil(n / b)  # replicas if each holds at most b users
        fullest = np.ceil(n / r).astype(int)  # users on the fullest of those replicas (≤ b)
        ok = allowed[:, fullest - 1]
        replicas = np.where(ok, r[None, :], np.inf).min(axis=1)
        met = np.isfinite(replicas)
        batch = np.where(met, np.ceil(n / np.where(met, replicas, 1.0)), 1).astype(int)
        concurrency = np.full(nk, n)
    else:
        demand = load.token_rate_tok_s
        best = np.where(allowed, f.replica_tok_s, 0.0).max(axis=1)
        met = best > 0
        replicas = np.where(met, np.maximum(1.0, np.ceil(demand / np.where(met, best, 1.0) * (1 - REL_TOL))), np.inf)
        per_replica = demand / np.where(met, replicas, 1.0)
        enough = allowed & (f.replica_tok_s >= per_replica[:, None] * (1 - REL_TOL))
        batch = np.where(met, b[np.argmax(enough, axis=1)], 1)
        concurrency = demand / speed[rows, batch - 1]
    reach_speed = np.where(fits, speed, -np.inf)
    reach_col = np.argmax(reach_speed, axis=1)
    reach = reach_speed[rows, reach_col]
    out = []
    for i in range(nk):
        kk = int(f.ks[i])
        arm = "plain" if kk == 0 else "spec"
        fits_i = float(f.max_batch[i])
        best_i = float(reach[i]) if np.isfinite(reach[i]) else 0.0
        if met[i]:
            col = batch[i] - 1
            reps = int(replicas[i])
            out.append(ArmPlan(arm, kk, True, reps, reps * f.scenario.tp, int(batch[i]), float(concurrency[i]),
                               float(speed[i, col]), float(f.throughput_tok_s_per_gpu[i, col]), fits_i, best_i,
                               int(reach_col[i]) + 1))
            continue
        col = int(reach_col[i])
        why = arm_missed(kk, fits_i, best_i, _itl(best_i), col + 1)
        if fits_i < 1:
            user, thr = 0.0, 0.0
        else:
            user, thr = float(speed[i, col]), float(f.throughput_tok_s_per_gpu[i, col])
        out.append(ArmPlan(arm, kk, False, None, None, None, None, user, thr, fits_i, best_i, col + 1, why))
    return out


# --- helpers -------------------------------------------------------------------------------------

def _itl(user_tok_s):
    u = np.asarray(user_tok_s, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.where(u > 0, 1e3 / np.where(u > 0, u, 1.0), np.inf)
    return out.item() if out.ndim == 0 else out


def _is_finite_number(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _show(x) -> str:
    try:
        return f"{float(x):g}"
    except (TypeError, ValueError):
        return repr(x)


def rounded(x, digits: int = 4):
    """A number as the JSON outputs give it: rounded, None where it is None, infinite or NaN."""
    if x is None:
        return None
    x = float(x)
    return round(x, digits) if math.isfinite(x) else None


def int_or_none(x):
    x = float(x)
    return int(x) if math.isfinite(x) else None


def replicas_by_fit(fit, load: Load, target: Target, tokens_per_step: float | None = None) -> dict:
    """The replicas each arm needs by a step fit's measured step times (fit.steps.StepFit, the user's runs): per arm
    the largest batch a replica holds while every sequence gets a token within the target's inter-token time
    (StepFit.largest_batch, at the fit and at its band's slow edge) and the replicas for the load's users (a request
    rate's by Little's law at the target), and the words; `tokens_per_step`: the speculative arm at another E than
    the runs' (an acceptance given). Replicas are None where not even batch 1 meets the target."""
    max_ms = target.max_itl_ms if target.max_itl_ms else 1000.0 / target.min_user_tok_s
    users = load.users if load.users else load.rps * load.output_tokens * max_ms / 1000.0
    arms = {}
    for arm in ("plain", "spec"):
        batch, slow = fit.largest_batch(arm, max_ms, tokens_per_step)
        arms[arm] = {"batch_per_replica": batch, "replicas": math.ceil(users / batch) if batch else None,
                     "batch_per_replica_slow": slow, "replicas_slow": math.ceil(users / slow) if slow else None}
    return {"users": users, "max_ms_per_token": max_ms, **arms,
            "words": fit_replicas_words(arms["plain"]["replicas"], arms["spec"]["replicas"]),
            "batches": list(fit.batches)}
