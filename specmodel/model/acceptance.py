"""Acceptance: tokens per verify step from α or a survival profile, and every engine's number to E.

Notation (docs/model.md, "Acceptance numbers"): k draft tokens per step, α the per-token acceptance probability,
E the expected tokens emitted per verify step including the target's bonus token (vLLM's
"mean acceptance length"), and p_i = P(at least i drafts accepted) the survival profile.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from specmodel.numbers import read_number
from specmodel.errors import SpecModelError
from specmodel.bounds import MAX_K, bounded_cache, check_k
from specmodel.model.distinct import per_distinct


def tokens_per_step(alpha, k):
    """Expected tokens per verify step, E = Σ_{i=0..k} α^i = (1 − α^(k+1)) / (1 − α).

    Broadcasts over numpy arrays; α = 1 gives k + 1 and k = 0 gives 1 (no division by zero).

    >>> round(float(tokens_per_step(0.7, 4)), 4)
    2.7731
    >>> float(tokens_per_step(1.0, 4)), float(tokens_per_step(0.5, 0))
    (5.0, 1.0)
    """
    a = np.asarray(alpha, dtype=float)
    kk = np.asarray(k, dtype=float)
    near_one = np.abs(1.0 - a) < 1e-9
    safe = np.where(near_one, 0.5, a)
    geometric = (1.0 - safe ** (kk + 1.0)) / (1.0 - safe)
    return np.where(near_one, kk + 1.0, geometric)


def emitted_per_step(tokens, rate):
    """Tokens a step emits per sequence when only a share `rate` of sequence-steps carries drafts (an
    n-gram proposer finds no match elsewhere and the sequence decodes one token): 1 + rate · (E − 1),
    E counted over the steps with a proposal (vLLM's convention).

    >>> float(emitted_per_step(2.0, 0.4))
    1.4
    """
    return 1.0 + np.asarray(rate, dtype=float) * (np.asarray(tokens, dtype=float) - 1.0)


def tokens_with_proposal(emitted: float, rate: float, k: int) -> float:
    """The inverse of emitted_per_step: E over the steps with a proposal, from tokens per step averaged
    over every step (a figure that counts the steps without a proposal), at most k + 1.

    >>> round(tokens_with_proposal(1.74, 0.4, 10), 4)  # Spec-Bench's PLD figure read for vLLM
    2.85
    """
    if not 0.0 < rate <= 1.0:
        raise SpecModelError(f"a proposal rate must lie in (0, 1], got {rate}")
    return min(1.0 + (float(emitted) - 1.0) / rate, k + 1.0)


def _listed(p) -> str:
    """A profile as a message shows it (4 significant digits; no overflow for huge values)."""
    return "[" + ", ".join(f"{x:.4g}" for x in p) + "]"


_SURVIVAL_SEPARATORS = re.compile(r"[,;\s|/\[\]]+")


def parse_survival(value, what: str = "the survival profile", validate: bool = True) -> tuple[float, ...]:
    """A per-position survival profile p_1..p_k from what people give: text with the numbers
    separated by commas, semicolons, spaces, '|' or '/' (brackets allowed), a list of numbers, or
    one number (a one-position profile). The one grammar of the page, the CLI and every reader.

    >>> parse_survival("0.80, 0.56; 0.35")
    (0.8, 0.56, 0.35)
    >>> parse_survival("[0.9 0.7]"), parse_survival([0.5]), parse_survival(0.6)
    ((0.9, 0.7), (0.5,), (0.6,))
    """
    if isinstance(value, str):
        items: list = [x for x in _SURVIVAL_SEPARATORS.split(value) if x]
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
    elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        items = [value]
    else:
        items = [None]  # true/false, an object, ...: refused below
    try:
        numbers = tuple(map(read_number, items))  # the one number parser: no 1_0, no other scripts' digits
    except (TypeError, ValueError, OverflowError):
        raise SpecModelError(f"{what} must be numbers p_1,...,p_k separated by commas (such as 0.80, 0.56, "
                             f"0.35), got '{_short(value)}'") from None
    if not numbers:
        raise SpecModelError(f"{what} is empty: give p_1,...,p_k such as 0.80, 0.56, 0.35")
    if validate:
        try:
            validate_survival(numbers)
        except SpecModelError as exc:
            raise SpecModelError(f"{what}: {exc}") from None
    return numbers


def _short(value, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def validate_survival(survival) -> np.ndarray:
    """Check a survival profile: values in [0, 1], never increasing with position."""
    items = list(survival)
    if len(items) > MAX_K:
        raise SpecModelError(f"a survival profile of {len(items):,} positions is longer than the {MAX_K} this "
                             "tool handles (one position per draft token)")
    p = np.asarray(items, dtype=float)
    if p.ndim != 1:
        raise SpecModelError("a survival profile is a list of numbers p_1..p_k")
    if np.any(~np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise SpecModelError(
            f"survival profile {_listed(p)} has values outside [0, 1]; "
            "p_i is the fraction of drafts with at least i tokens accepted")
    if np.any(np.diff(p) > 1e-9):
        raise SpecModelError(
            f"survival profile {_listed(p)} increases with position; "
            "p_i = P(at least i accepted) can only stay level or fall")
    return p


def conditional_acceptance(survival) -> np.ndarray:
    """Per-position conditional acceptance c_i = p_i / p_{i-1} (p_0 = 1); 0 where p_{i-1} = 0."""
    p = validate_survival(survival)
    prev = np.concatenate(([1.0], p[:-1]))
    return np.divide(p, prev, out=np.zeros_like(p), where=prev > 0)


def alpha_from_tokens_per_step(tokens, k, iterations: int = 60):
    """Invert E(α, k) by bisection: the constant α that gives E tokens per step with k drafts.

    E ≤ 1 gives 0 and E ≥ k + 1 gives 1. Broadcasts over arrays.

    >>> round(float(alpha_from_tokens_per_step(31 / 19, 4)), 3)
    0.393
    """
    if isinstance(tokens, (float, int, np.number)) and isinstance(k, (float, int, np.number)):
        return _alpha_from_tokens_scalar(float(tokens), float(k), iterations)  # one run: ~20x faster
    e = np.asarray(tokens, dtype=float)
    kk = np.asarray(k, dtype=float)
    if e.ndim == 0 and kk.ndim == 0:
        return _alpha_from_tokens_scalar(float(e), float(kk), iterations)
    return per_distinct(lambda e, kk: _alpha_from_tokens_array(e, kk, iterations), e, kk)  # runs repeat (E, k)


def _alpha_from_tokens_array(e: np.ndarray, kk: np.ndarray, iterations: int):
    """alpha_from_tokens_per_step's bisection over arrays, cell by cell."""
    e, kk = np.broadcast_arrays(e, kk)
    lo = np.zeros(e.shape)
    hi = np.ones(e.shape)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        below = tokens_per_step(mid, kk) < e
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    alpha = 0.5 * (lo + hi)
    alpha = np.where(e <= 1.0, 0.0, alpha)
    alpha = np.where(e >= kk + 1.0, 1.0, alpha)
    alpha = np.where(kk <= 0, np.nan, alpha)
    return alpha if alpha.ndim else float(alpha)


@lru_cache(maxsize=65536)  # run files repeat E to two decimals: each (E, k) is inverted once
def _alpha_from_tokens_scalar(e: float, k: float, iterations: int) -> float:
    """alpha_from_tokens_per_step for one E and k: the same bisection in Python floats (results
    agree with the array version to ~1e-14; pow may differ in the last bit between the two)."""
    if k <= 0:
        return float("nan")
    if e >= k + 1.0:
        return 1.0
    if e <= 1.0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(iterations):  # NaN E or k: every comparison is false, as in the array version
        mid = 0.5 * (lo + hi)
        tokens = k + 1.0 if abs(1.0 - mid) < 1e-9 else (1.0 - mid ** (k + 1.0)) / (1.0 - mid)
        if tokens < e:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def tokens_per_step_at_k(k_new, *, survival):
    """E for another number of drafts k' from a measured survival profile.

    A profile predicts k' ≤ len(profile) directly; beyond it the tail is geometric with the α
    fitted to the profile's E (callers should say so to the user).
    """
    k_arr = np.asarray(k_new, dtype=int)
    p = validate_survival(survival)
    k_meas = len(p)
    tail_alpha = alpha_from_tokens_per_step(1.0 + p.sum(), k_meas) if k_meas else 0.0
    k_max = int(np.max(k_arr)) if k_arr.size else 0
    extended = list(p)
    last = p[-1] if k_meas else 1.0
    for _ in range(max(0, k_max - k_meas)):
        last = last * tail_alpha
        extended.append(last)
    cumulative = np.concatenate(([1.0], 1.0 + np.cumsum(extended)))
    return cumulative[np.clip(k_arr, 0, len(cumulative) - 1)]


@dataclass(frozen=True)
class Acceptance:
    """Acceptance normalised from whatever an engine reported."""

    tokens_per_step: float  # E, bonus token included
    alpha: float  # constant per-token α giving the same E at this k
    k: int
    source: str  # what it was computed from, in words
    survival: tuple[float, ...] | None = None

    @property
    def draft_acceptance_rate(self) -> float:
        """vLLM's accepted / draft_tokens (not α): (E − 1) / k."""
        return (self.tokens_per_step - 1.0) / self.k if self.k else float("nan")


def _check_fraction(name: str, value: float) -> float:
    if value is None or not np.isfinite(value) or not 0.0 <= value <= 1.0:
        raise SpecModelError(f"{name} must lie in [0, 1], got {value}")
    return float(value)


def from_alpha(alpha: float, k: int) -> Acceptance:
    k = check_k(k)
    a = _check_fraction("α (per-token acceptance)", alpha)
    return Acceptance(float(tokens_per_step(a, k)), a, k, "α")


def from_tokens_per_step(tokens: float, k: int, source: str = "mean acceptance length") -> Acceptance:
    """From E (vLLM's mean acceptance length, SGLang's spec_accept_length)."""
    k = check_k(k)
    if tokens is None or not math.isfinite(tokens) or tokens < 1.0 or tokens > k + 1 + 1e-9:
        raise SpecModelError(
            f"{source} must lie in [1, k + 1] = [1, {k + 1}] (it counts the bonus token), got {tokens}")
    e = min(float(tokens), k + 1.0)
    return Acceptance(e, float(alpha_from_tokens_per_step(e, k)), k, source)


def from_survival(survival, source: str = "per-position acceptance") -> Acceptance:
    p = validate_survival(survival)
    if len(p) == 0:
        raise SpecModelError("a survival profile needs at least one position")
    e = 1.0 + float(p.sum())
    return Acceptance(e, float(alpha_from_tokens_per_step(e, len(p))), len(p), source,
                      tuple(float(x) for x in p))


@bounded_cache(4096)
def from_survival_once(survival: tuple[float, ...], source: str) -> Acceptance:
    """from_survival once per distinct profile (the Acceptance is frozen, so shared): a run file repeats its profiles."""
    return from_survival(survival, source)


@bounded_cache(4096)
def survival_of_text(text: str) -> tuple[float, ...]:
    """parse_survival(text, validate=False) once per distinct text (a survival cell of a run file)."""
    return parse_survival(text, validate=False)


def from_draft_acceptance_rate(rate: float, k: int) -> Acceptance:
    """vLLM's "draft acceptance rate" = accepted / draft_tokens, which is not α: E = 1 + k·rate."""
    k = check_k(k)
    r = _check_fraction("draft acceptance rate (accepted / draft tokens)", rate)
    return from_tokens_per_step(1.0 + k * r, k, "vLLM draft acceptance rate")


def from_vllm_percent(rate_percent: float, k: int) -> Acceptance:
    """`vllm bench serve`'s spec_decode_acceptance_rate, in percent of draft tokens."""
    if rate_percent is None or not np.isfinite(rate_percent) or not 0 <= rate_percent <= 100:
        raise SpecModelError(f"acceptance rate in percent must lie in [0, 100], got {rate_percent}")
    return from_draft_acceptance_rate(rate_percent / 100.0, k)


def mean_length_k(mean_draft_length: float) -> int:
    """The whole draft length a mean draft length (draft tokens ÷ drafts) is judged at: rounded half up, at least
    1 (5.2 -> 5, 2.5 -> 3), as PromQL's round() does in the rules. Variable-length drafts (llama.cpp's
    --draft-p-min, vLLM's n-gram) are judged at what was verified on average, not at the longest draft."""
    return max(1, int(np.floor(float(mean_draft_length) + 0.5)))


def from_counts(accepted: float, drafts: float, draft_tokens: float | None = None,
                k: int | None = None) -> Acceptance:
    """vLLM V1 counters (windowed deltas): E = 1 + accepted / drafts; k = draft_tokens / drafts."""
    if drafts is None or not np.isfinite(drafts) or drafts <= 0:
        raise SpecModelError("no drafts were proposed in this window, so acceptance is unknown")
    if accepted is None or not np.isfinite(accepted) or accepted < 0:
        raise SpecModelError(f"accepted token count must be ≥ 0, got {accepted}")
    if k is None:
        if draft_tokens is None or not np.isfinite(draft_tokens) or draft_tokens <= 0:
            raise SpecModelError("k is unknown: give k or the draft token count")
        k = mean_length_k(draft_tokens / drafts)
    return from_tokens_per_step(1.0 + accepted / drafts, k, "accepted / drafts counters")
