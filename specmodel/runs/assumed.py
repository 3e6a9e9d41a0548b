"""What a row that does not state its k or its draft model is assumed to have, said in its remarks and
marked in its `assumed` column (the band then spans what it may have been: runs.review):

- k: the method's documented default for the engine (model.spec_defaults.default_k), else the k values it
  is commonly run at (spec_defaults.k_spread: the point at a stated central k, the band over all);
- a draft-model run naming no draft: the draft its benchmark's scripts run (spec_defaults.default_draft),
  else the target's default draft with the band over its family's drafts (presets.draft_candidates).
"""

from __future__ import annotations

from dataclasses import replace

from specmodel.errors import SpecModelError
from specmodel.model import presets, spec_defaults
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
