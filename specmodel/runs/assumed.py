"""What a row that does not state its k or its draft model is assumed to have, said in its remarks and
marked in its `assumed` column (the band then spans what it may have been: runs.review):

- k: the method's documented default for the engine (model.spec_defaults.default_k), else the k values it
  is commonly run at (spec_defaults.k_spread: the point at a stated central k, the band over all);
- a draft-model run naming no draft: the draft its benchmark's scripts run (spec_defaults.default_draft),
  else the target's default draft with the band over its family's drafts (presets.draft_candidates);
- no engine named: the default engine's overheads, said and counted (not spread in the band: the
  shipped band ratio was derived from residuals that already include these rows' engine error, and a
  spread over engines on top held 93% of the measurements leave-one-source-out, past the 90% an 80%
  interval may hold); an engine given for the files (`--engine`) takes its place.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from specmodel.errors import SpecModelError
from specmodel.model import engines, presets, spec_defaults
from specmodel.model.scenario import default_proposal_rate, resolved_engine, resolved_method
from specmodel.runs.records import RunRecord


def spread_k(rec: RunRecord, names, assumed: list[str], remarks: list[str]):
    """(k, the k values the band spans) for a row with no k and no documented default, or (None, None)."""
    method_text = str(rec.values.get("method") or "")
    spread = spec_defaults.k_spread(names.method, names.engine, _row_text(rec), method_text)
    if spread is None:
        return None, None
    assumed.append("k")
    remarks.append(f"k not stated and no documented default: predicted at k = {spread.k}, the band spans k = "
                   f"{_ks_text(spread.ks)} ({spread.source})")
    return spread.k, spread.ks


def _row_text(rec: RunRecord) -> str:
    """The text a table entry's `when` is looked for in: the row's workload, notes, source and references."""
    return " ".join(str(rec.values.get(key) or "") for key in ("workload", "notes", "source", "_context"))


def _ks_text(ks) -> str:
    ks = sorted(ks)
    return f"{ks[0]}-{ks[-1]}" if ks == list(range(ks[0], ks[-1] + 1)) and len(ks) > 2 else ", ".join(map(str, ks))


def default_k(rec: RunRecord, names):
    """The method's documented default k (model.spec_defaults) for a row that gives none, or None."""
    try:
        target = presets.find_model(names.target)
    except SpecModelError:
        return None
    return spec_defaults.default_k(names.method, names.engine, target.family, target.mtp_layers, _row_text(rec),
                                   str(rec.values.get("method") or ""))


def assumed_draft(rec: RunRecord, names, assumed: list[str], remarks: list[str]):
    """(names, draft spread) for a draft-model run that names no draft (refused "draft_missing" by the
    names): the draft its benchmark's scripts run where they are documented (model.spec_defaults), else
    the target's default draft with the band over every draft its family offers (presets.draft_candidates);
    the names as they were where neither exists. Either way "draft" is assumed and said."""
    if not any(reason == "draft_missing" for reason, _ in names.refused):
        return names, None
    method_text = str(rec.values.get("method") or "")
    rest = tuple((reason, message) for reason, message in names.refused if reason != "draft_missing")
    documented = spec_defaults.default_draft("draft_model", _row_text(rec), method_text)
    if documented is not None:
        assumed.append("draft")
        remarks.append(f"draft not named in '{method_text}': {documented.draft} assumed, the draft the benchmark's "
                       f"scripts run ({documented.source})")
        return replace(names, method="draft_model", draft=documented.draft, refused=rest,
                       remarks=_without_draft_guess(names.remarks)), None
    candidates = presets.draft_candidates(names.target)
    if not candidates:
        return names, None
    point = names.draft if names.draft in candidates else candidates[0]
    assumed.append("draft")
    remarks.append(f"draft not named in '{method_text}': predicted with {point}"
                   + (f", the default draft of {names.target}" if point == names.draft else "")
                   + f"; the band spans every draft preset of its family at most 1/{presets.DRAFT_SIZE_RATIO:g} of "
                     f"its size: {', '.join(candidates)}")
    return replace(names, method="draft_model", draft=point, refused=rest,
                   remarks=_without_draft_guess(names.remarks)), candidates


def _without_draft_guess(said: tuple) -> tuple:
    """The names' remarks less their own guess at a draft the row does not name (said again, with its basis)."""
    return tuple(r for r in said if not r.startswith(("draft not named in", "no draft model named and no default")))


ENGINE_ASSUMED = ("no engine named: predicted with {default}'s overheads and verify kernels (the default engine); "
                  "{others} pack the verify pass's GQA group on every GPU where vLLM does not on Ampere and Ada, "
                  "which on those GPUs can decide the verdict: give the engine column or --engine")


def assumed_engine(names, assumed: list[str], remarks: list[str]) -> None:
    """Mark a row that names no engine (names.engine None): it runs on engines.DEFAULT_ENGINE, said."""
    if names.engine is None:
        assumed.append("engine")
        remarks.append(_engine_assumed_remark())


@functools.cache
def _engine_assumed_remark() -> str:
    """The remark of a row naming no engine: the same words on every such row, worded once per process."""
    return ENGINE_ASSUMED.format(default=engines.find_engine(None).label, others=" and ".join(
        engines.find_engine(e).label for e in engines.UNNAMED_ENGINE_OTHERS))


def given_engine(rows, engine: str):
    """The rows with `engine` (e.g. --engine) in place of an unnamed one: no longer assumed, nor said."""
    rows = rows.copy()
    if "engine" not in rows.columns:
        rows["engine"] = None
    unnamed = rows["engine"].isna() | (rows["engine"].astype(str) == "")
    rows.loc[unnamed, "engine"] = engine
    if "assumed" in rows.columns:
        rows.loc[unnamed, "assumed"] = rows.loc[unnamed, "assumed"].fillna("").astype(str).map(
            lambda a: ", ".join(x for x in a.split(", ") if x and x != "engine"))
    if "remarks" in rows.columns:
        rows.loc[unnamed, "remarks"] = rows.loc[unnamed, "remarks"].fillna("").astype(str).map(
            lambda r: "; ".join(x for x in r.split("; ") if x and not x.startswith("no engine named:")))
    return rows


def benchmark_proposal_rate(rec: RunRecord, names, remarks: list[str]) -> float:
    """The share of steps that verify drafts where the row's benchmark code fixes it (model.spec_defaults:
    Spec-Bench's PLD verifies every step, so its accepted length counts every step), said in the remarks;
    NaN elsewhere (the engine's own default applies: scenario.default_proposal_rate)."""
    found = spec_defaults.benchmark_proposal_rate(names.method, names.engine, _row_text(rec),
                                                  str(rec.values.get("method") or ""))
    if found is None:
        return float("nan")
    rate, source = found
    remarks.append(f"proposal rate {rate:g}: its benchmark verifies drafts at every step and counts its accepted "
                   f"length over every step ({source})")
    return rate


def published_acceptance(row: dict):
    """The published acceptance figure nearest to a row that has none (model.spec_defaults), read in the
    convention of the row's engine, or None where its method has none."""
    try:
        family = presets.find_model(row["target_preset"]).family
    except SpecModelError:
        family = None
    rate = row.get("proposal_rate")
    if rate is None or rate != rate:  # the share of steps the row verifies drafts on: how a figure is read
        try:
            rate = default_proposal_rate(resolved_method(row["method"]), resolved_engine(row.get("engine") or None))
        except SpecModelError:
            rate = 1.0
    return spec_defaults.assumed_acceptance(row["method"], family, row.get("workload") or "", row.get("context_len"),
                                            rate)
