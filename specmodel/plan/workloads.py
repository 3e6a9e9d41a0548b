"""Workloads of a traffic mix: the Workload record, and reading it from a CSV/JSON file, an edited
table or a table of past runs (specmodel.runs). Rows with a problem are left out and named; the
others still load."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from specmodel.numbers import read_number
from specmodel.errors import SpecModelError
from specmodel.bounds import MAX_MIX_WORKLOADS, MAX_ROWS_PER_FILE
from specmodel.files import json_validator, load_json, read_file
from specmodel.model.acceptance import from_survival, parse_survival
from specmodel.text import clean_name
from specmodel.model.presets import find_method
from specmodel.notes import info

SHARE_TOLERANCE = 1e-6  # chosen: shares summing to 1 within this are taken as given

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Workload:
    """One kind of traffic in the pool.

    `alpha` / `survival` are the acceptance measured with the pool's own method (the scenario's);
    `alpha_by_method` holds acceptance measured with other methods ((method, α) pairs): a split may
    give a workload another method only when its acceptance under that method is known.
    """

    label: str
    share: float  # fraction of the offered concurrent sequences
    alpha: float | None = None
    survival: tuple[float, ...] | None = None
    temperature: float | None = None
    notes: str = ""
    alpha_by_method: tuple[tuple[str, float], ...] = ()

    def acceptance(self, method: str, pool_method: str) -> tuple[float, tuple[float, ...] | None] | None:
        """(α, survival) under `method`, or None when this workload's acceptance there is unknown."""
        for name, value in self.alpha_by_method:
            if name == method:
                return float(value), None
        if method == pool_method:
            if self.survival is not None:
                return float(self.alpha if self.alpha is not None else 0.0), self.survival
            return float(self.alpha), None
        return None


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str)
                                                                                and not value.strip())


def _number(value):
    """A cell as the row schema reads it: a number where the one number parser reads one (specmodel.numbers:
    a CSV cell is text), else the cell as text (a boolean, a list, an unreadable string: the schema's "type"
    refuses it)."""
    try:
        return read_number(value)
    except (TypeError, ValueError, OverflowError):
        return str(value)


_FRACTION = {"type": "number", "format": "finite", "minimum": 0, "maximum": 1}


def _row_schema(method_columns) -> dict:
    """One workload row, its blank cells left out and its numbers read (_number): share ≥ 0, α and each
    α-per-method column in [0, 1], a number for temperature, and an acceptance (alpha or survival)."""
    return {"type": "object", "properties": {
        "share": {"type": "number", "format": "finite", "minimum": 0}, "alpha": _FRACTION,
        "temperature": {"type": "number"}, **{c: _FRACTION for c in method_columns}},
        "anyOf": [{"required": ["alpha"]}, {"required": ["survival"]}]}


def _row_problem(errors, r: dict, order: list[str]) -> tuple[int, str] | None:
    """A row's first error in the columns' order (`order`; "" for the missing acceptance) as (its place in
    `order`, its message in the words each column has always had); None for a row without one."""
    found = []
    for e in errors:
        column = e.path[0] if e.path else ("share" if e.validator == "required" else "")
        found.append((order.index(column), column, e.validator))
    if not found:
        return None
    place, column, kind = min(found)
    return place, _message(column, kind, r.get(column))


def _message(column: str, kind: str, value) -> str:
    if column == "":
        return ("has no acceptance: fill 'alpha' (per-token acceptance α) or 'survival' "
                "(p_1,...,p_k) measured with the pool's method")
    if kind == "required":
        return "column 'share' is empty; give the workload's fraction of the sequences"
    if column in ("share", "temperature"):
        return (f"column '{column}' must be a number, got '{value}'" if kind == "type"
                else f"column 'share' must be a number ≥ 0, got {value}")
    return (f"column '{column}' must be a number in [0, 1], got '{value}'" if kind == "type"
            else f"column '{column}' must lie in [0, 1], got {value}")


def _method_of_column(column: str) -> str | None:
    """'alpha_ngram' / 'alpha ngram' -> 'ngram' (None when not an α-per-method column)."""
    c = column.strip().lower()
    for prefix in ("alpha_", "alpha ", "α_", "α "):
        if c.startswith(prefix) and len(c) > len(prefix):
            try:
                return find_method(c[len(prefix):]).name
            except SpecModelError:
                return None
    return None


_LABEL_KEYS = ("label", "workload", "name")


def parse_workloads(records: list[dict], source: str = "workloads",
                    rows: list[int] | None = None) -> tuple[list[Workload], list[str], list[str]]:
    """Records (one dict per workload, e.g. CSV rows) -> (workloads, problems, notes). `rows` are the
    row numbers messages name (a file's lines); without them the records count from 1.

    A row with a problem (no acceptance, a bad number) is left out and its problem, naming the
    workload and the column, goes to `problems`; the other rows still load. Shares that do not sum
    to one are normalised and `notes` says so; a file without a share column gets equal shares.
    """
    workloads: list[Workload] = []
    problems: list[str] = []
    notes: list[str] = []
    seen: set[str] = set()
    if len(records) > MAX_MIX_WORKLOADS:
        problems.append(f"{source} has {len(records):,} rows: the first {MAX_MIX_WORKLOADS:,} load, the other "
                        f"{len(records) - MAX_MIX_WORKLOADS:,} were left out; merge workloads of similar acceptance")
        records = records[:MAX_MIX_WORKLOADS]
    has_share = any(not _blank(r.get("share")) for r in records)
    validators: dict = {}  # one row schema per set of α-per-method columns, for this call only
    if records and not has_share:
        notes.append(info(f"{source} gives no shares: every workload gets an equal share of the sequences"))
    for n, raw in enumerate(records, start=1):
        i = rows[n - 1] if rows is not None else n
        r = {str(k).strip().lower(): v for k, v in raw.items() if k is not None}
        label = next((str(r[k]).strip() for k in _LABEL_KEYS if not _blank(r.get(k))), "")
        label, changed = clean_name(label)
        if changed:
            notes.append(info(f"{source}, row {i}: control characters were removed from the label ('{label}')"))
        where = f"{source}, row {i}" + (f" ('{label}')" if label else "")
        if not label:
            if all(_blank(v) for v in r.values()):
                continue  # an empty editor row
            label = f"workload {i}"
        try:
            if label in seen:
                raise SpecModelError(f"label '{label}' appears twice; give each workload its own label")
            workloads.append(_workload(label, r, has_share, validators))
        except SpecModelError as exc:
            problems.append(f"{where}: workload '{label}' refused: {exc}")
            continue
        seen.add(label)
    if not workloads:
        if not problems:
            problems.append(f"{source} holds no workloads: give at least one row with a label, share and alpha")
        return [], problems, notes
    try:
        workloads, share_note = normalise_shares(workloads)
    except SpecModelError as exc:
        return [], problems + [f"{source}: {exc}"], notes
    if share_note:
        notes.append(info(share_note))
    return workloads, problems, notes


def _workload(label: str, r: dict, has_share: bool, validators: dict) -> Workload:
    """One row as a Workload, checked by the row schema (_row_schema) and the survival grammar; SpecModelError
    with the first problem in the columns' order (share, alpha, survival, α per method, acceptance, temperature)."""
    methods = {column: m for column in r if (m := _method_of_column(column))}
    if (tuple(methods), has_share) not in validators:
        schema = _row_schema(methods)
        validators[tuple(methods), has_share] = json_validator({**schema, "required": ["share"]} if has_share else schema)
    cells = ("share",) * has_share + ("alpha", "temperature", *methods)
    row = {c: _number(r[c]) for c in cells if not _blank(r.get(c))}
    if not _blank(r.get("survival")):
        row["survival"] = r["survival"]
    order = ["share", "alpha", "survival", *methods, "", "temperature"]
    problem = _row_problem(validators[tuple(methods), has_share].iter_errors(row), r, order)
    survival = None
    if "survival" in row and (problem is None or problem[0] > order.index("survival")):
        survival = parse_survival(row["survival"], "column 'survival'")  # its grammar's own message
    if problem is not None:
        raise SpecModelError(problem[1])
    alpha = row.get("alpha")
    if alpha is None:
        alpha = from_survival(survival).alpha
    return Workload(label, row.get("share", 1.0), alpha, survival, row.get("temperature"),
                    "" if _blank(r.get("notes")) else str(r["notes"]), tuple((m, row[c]) for c, m in methods.items() if c in row))


def normalise_shares(workloads: list[Workload]) -> tuple[list[Workload], str | None]:
    """Scale shares to sum to one; the note says what was done (None when nothing changed)."""
    total = sum(w.share for w in workloads)
    if total <= 0:
        raise SpecModelError("every workload's share is 0: give at least one a positive share")
    if abs(total - 1.0) <= SHARE_TOLERANCE:
        return list(workloads), None
    scaled = [replace(w, share=w.share / total) for w in workloads]
    listed = ", ".join(f"{w.label} {w.share:.3g}" for w in scaled)
    return scaled, f"shares summed to {total:.4g}, not 1: normalised to {listed}"


def read_workloads(path: str) -> tuple[list[Workload], list[str], list[str]]:
    """Read a CSV (a header row; columns label, share, alpha, survival, temperature, notes,
    alpha_<method>) or a JSON file (a list of such objects, or {"workloads": [...]})."""
    from specmodel.runs import decode_bytes

    p = Path(path)
    text, problem, warning = decode_bytes(read_file(p))  # size checked before reading; devices and folders refused
    if text is None:
        raise SpecModelError(f"{path}: {problem}")
    if not text.strip():
        raise SpecModelError(f"{path} is empty: give a CSV with a header row or a JSON list of workloads")
    if p.suffix.lower() == ".json" or text.lstrip()[:1] in "[{":
        try:
            data = load_json(text)
        except json.JSONDecodeError as exc:
            raise SpecModelError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        except SpecModelError as exc:
            raise SpecModelError(f"{path}: {exc}") from None
        if isinstance(data, dict):
            data = data.get("workloads")
        if not json_validator({"type": "array", "items": {"type": "object"}}).is_valid(data):
            raise SpecModelError(f"{path}: expected a JSON list of workload objects (or {{\"workloads\": [...]}})")
        records, lines, read_problems = data, None, []
    else:
        records, lines, read_problems = _csv_records(text, p.name)
    found, errors, notes = parse_workloads(records, source=p.name, rows=lines)
    errors = read_problems + errors
    if warning is not None:  # a bad byte or a Windows-1252 file: said, never silently
        notes = [f"{p.name}, row {warning[0]}: {warning[1]}", *notes]
    return found, errors, notes


def _csv_records(text: str, path: str) -> tuple[list[dict], list[int], list[str]]:
    """Rows of a workload CSV as dicts, the file line each starts on, and the rows not loaded, each
    named by file, line and what to do. The records come from runs.csv_rows (the one CSV rule): a row
    with an unclosed quote or a cell over bounds.MAX_CELL_CHARS is refused alone and the rows after it
    still load; a row with fewer or more cells than the header is refused (its values would sit
    under the wrong columns). Two headers with the same name refuse the file."""
    from specmodel.runs.csv_rows import csv_records

    problems: list[str] = []
    header = None
    records_iter = csv_records(text, ",")
    for line, cells, trouble in records_iter:
        if trouble is not None:
            problems.append(f"{path}, row {line}: {trouble}")
        elif any(c.strip() for c in cells):
            header = [h.strip() for h in cells]
            break
    if header is None:
        if problems:
            raise SpecModelError(f"{path}: no header row could be read ({problems[0]})")
        raise SpecModelError(f"{path} is empty: give a CSV with a header row or a JSON list of workloads")
    seen: dict[str, int] = {}
    for i, h in enumerate(header):
        if h and h.lower() in seen:
            raise SpecModelError(f"{path}: columns {seen[h.lower()] + 1} and {i + 1} are both named '{h}'; "
                                 "keep one of them")
        seen[h.lower()] = i
    if not {h.lower() for h in header} & set(_LABEL_KEYS):
        raise SpecModelError(f"{path}: no 'label' (or 'workload') column; the header has "
                             f"{', '.join(clean_name(h, 40)[0] for h in header[:12])}")
    records: list[dict] = []
    lines: list[int] = []
    rows_seen = 0
    for line, cells, trouble in records_iter:
        if trouble is not None:
            problems.append(f"{path}, row {line}: {trouble}")
            continue
        if not any(c.strip() for c in cells):
            continue  # a blank line is not a workload
        rows_seen += 1
        if rows_seen > MAX_ROWS_PER_FILE:
            continue  # counted for the message below, not read
        if len(cells) > len(header) and any(c.strip() for c in cells[len(header):]):
            extra = clean_name(next(c for c in cells[len(header):] if c.strip()).strip(), 40)[0]
            problems.append(f"{path}, row {line}: {len(cells)} cells where the header has {len(header)} "
                            f"(extra: '{extra}'); row not loaded: remove the stray delimiter or add the missing header")
            continue
        if len(cells) < len(header):
            missing = header[len(cells)] or f"column {len(cells) + 1}"
            problems.append(f"{path}, row {line}: {len(cells)} cells where the header has {len(header)} (no cell "
                            f"for '{clean_name(missing, 40)[0]}'), so its values would sit under the wrong columns: "
                            "row not loaded; give every column a cell (an empty one between two delimiters where "
                            "a value is unknown)")
            continue
        records.append({h: cells[i] for i, h in enumerate(header) if h})
        lines.append(line)
    if rows_seen > MAX_ROWS_PER_FILE:
        raise SpecModelError(f"{path} has {rows_seen:,} rows: a traffic mix has a few workloads")
    return records, lines, problems


def workload_records(workloads) -> list[dict]:
    """Workloads as table rows (the columns parse_workloads reads), e.g. for an editable table."""
    rows = []
    for w in workloads:
        by = dict(w.alpha_by_method)
        rows.append({"label": w.label, "share": w.share, "alpha": w.alpha,
                     "survival": ", ".join(f"{x:g}" for x in w.survival) if w.survival else "",
                     "alpha_ngram": by.get("ngram"), "temperature": w.temperature, "notes": w.notes})
    return rows


def workload_records_from_runs(runs: "pd.DataFrame") -> list[dict]:
    """One row per workload of a canonical run table (specmodel.runs): α is the mean of its runs'
    α, share is proportional to its mean concurrency, temperature and notes from its first run."""
    import pandas as pd

    if "workload" not in runs.columns or "alpha" not in runs.columns or runs.empty:
        return []
    frame = runs.copy()
    frame["alpha"] = pd.to_numeric(frame["alpha"], errors="coerce")
    conc = pd.to_numeric(frame["concurrency"], errors="coerce") if "concurrency" in frame else None
    frame["_conc"] = conc.fillna(1.0) if conc is not None else 1.0
    rows = []
    for label, group in frame.groupby("workload", sort=False):
        first = group.iloc[0]
        temperature = pd.to_numeric(pd.Series([first.get("temperature")]), errors="coerce").iloc[0]
        alpha = group["alpha"].mean()
        rows.append({"label": str(label), "share": float(group["_conc"].mean()),
                     "alpha": None if pd.isna(alpha) else round(float(alpha), 4), "survival": "",
                     "alpha_ngram": None, "temperature": None if pd.isna(temperature) else float(temperature),
                     "notes": "" if pd.isna(first.get("notes")) else str(first.get("notes") or "")})
    total = sum(r["share"] for r in rows)
    for r in rows:
        r["share"] = round(r["share"] / total, 4) if total > 0 else None
    return rows


def mixed_from_whatif(alpha: float, runs: "pd.DataFrame | None" = None) -> tuple[list[dict], str]:
    """Traffic mix rows for What-if's "my traffic is mixed": the workloads of the runs loaded on Past
    runs when they carry α; else What-if's α as one workload beside the example's lower-acceptance chat
    traffic (α 0.4 at temperature 0.8), half the sequences each; and a line saying where the rows came from."""
    from_runs = workload_records_from_runs(runs) if runs is not None else []
    if len(from_runs) >= 2 and all(r["alpha"] is not None for r in from_runs):
        return from_runs, "the workloads of the runs loaded on Past runs"
    chat = next(w for w in example_workloads() if w.label == "chat")
    rows = [{"label": "this traffic (What-if α)", "share": 0.5, "alpha": round(float(alpha), 4), "survival": "",
             "alpha_ngram": None, "temperature": None, "notes": "the α set on What-if"},
            {**workload_records((chat,))[0], "label": "chat at temperature 0.8 (example)",
             "notes": "an example second workload: replace its α and share with yours"}]
    return rows, "What-if's α and an example chat workload to replace with yours"


@lru_cache(maxsize=1)
def example_workloads() -> tuple[Workload, ...]:
    """The case this project started from (bench/evidence/seed_runs.csv): JSON extraction at
    temperature 0 (α ≈ 0.7) and a chat assistant at temperature 0.8 (α ≈ 0.4), half the sequences each."""
    return (Workload("extraction", 0.5, 0.7, None, 0.0, "JSON extraction, copies text from its input"),
            Workload("chat", 0.5, 0.4, None, 0.8, "chat assistant"))
