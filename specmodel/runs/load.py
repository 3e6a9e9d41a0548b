"""read_runs: run files -> one RunTable. Each file goes to its reader (specmodel.runs.sniff), one-arm
runs are paired (pairing), every record goes through one validation path (validate), and rows
without an acceptance borrow their file's mean α."""

from __future__ import annotations

import gc
import logging
import math
from contextlib import contextmanager
from typing import Callable

import numpy as np
import pandas as pd

from specmodel import bounds
from specmodel.errors import SpecModelError
from specmodel.text import safe_text
from specmodel.model import acceptance
from specmodel.paths import SAMPLE_DIR
from specmodel.runs.assumed import published_acceptance
from specmodel.runs.frames import frame_of
from specmodel.runs.pairing import pair_arms
from specmodel.runs.plausible import plausibility
from specmodel.runs.row_scenario import rate_prediction
from specmodel.runs.records import COLUMNS, Problem, RunDefaults, RunRecord, RunTable
from specmodel.runs.sniff import name_and_bytes, read_one
from specmodel.runs.alike import Alike
from specmodel.runs.readings import FILE_MEAN, PUBLISHED_FIGURE, PUBLISHED_FROM
from specmodel.words import published_remark, rate_remark

PROGRESS_EVERY = 5000  # chosen: rows between two progress reports (a 200,000-row file reports 40 times)
# NaN where unknown (draft_depth: NaN = a chain, depth k)
_NUMERIC = ["concurrency", "request_rate", "k", "temperature", "alpha", "tokens_per_step", "baseline_tok_s",
            "spec_tok_s", "measured_speedup", "context_len", "t_target_ms", "t_draft_ms", "tp", "draft_depth",
            "branching", "ep", "draft_kv_budget", "alpha_assumed", "proposal_rate", "off_tok_s", "draft_acceptance_rate",
            "max_draft_length"]


def read_runs(files, defaults: RunDefaults | None = None, pairs: dict[str, str] | None = None,
              progress: Callable[[int, int], None] | None = None) -> RunTable:
    """Read several run files into one table.

    files: iterable of (name, bytes) or paths. pairs: {speculative file name: baseline file name}
    fixes which baseline a one-arm speculative file is compared with (otherwise matched on model,
    dataset and concurrency or request rate). progress(done, total) is called every
    PROGRESS_EVERY runs while rows are checked; an exception it raises stops the reading.
    At most MAX_ROWS_PER_FILE runs of one file and MAX_ROWS_TOTAL of all files are read (the first
    ones); a warning says how many were left out.
    """
    with paused_gc(), bounds.work_deadline(bounds.MAX_LOAD_S):
        return _read_runs(files, defaults or RunDefaults(), pairs, progress)


@contextmanager
def paused_gc():
    """Pause Python's cyclic garbage collector while a large file's objects are built: it would walk
    every live object again and again (reading 200,000 rows took twice as long with it). Nothing
    built here is a reference cycle; the collector resumes afterwards if it was on."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def read_run_file(name: str, data: bytes, defaults: RunDefaults | None = None) -> RunTable:
    return read_runs([(name, data)], defaults)


def _read_runs(files, defaults: RunDefaults, pairs, progress) -> RunTable:
    records, problems = _records(files, defaults)
    # files are named as they may be shown (sniff.name_and_bytes): the pairs name them the same way
    records, pair_problems = pair_arms(records, {safe_text(k): safe_text(v) for k, v in (pairs or {}).items()})
    problems.extend(pair_problems)
    rows = _Rows()
    same_tree: list[bool] = []
    fallbacks = {"rows": 0, "gpu": {}, "target": {}, "draft": {}}
    total = len(records)
    validate, append, keep = Alike().validate, rows.append, same_tree.append  # rows alike but for their numbers: checked once
    for i, rec in enumerate(records):
        if i % PROGRESS_EVERY == 0:
            if progress is not None:
                progress(i, total)
            if i and bounds.out_of_time():
                problems.extend(_not_checked(records[i:]))
                break
        cells, probs, used, same = validate(rec, defaults)
        records[i] = None  # its text is in the row now
        if probs:
            problems.extend(probs)
        if cells is not None:
            if used:
                _count_fallback(fallbacks, used)
            keep(same)
            append(cells)
    rows.done()
    if progress is not None:
        progress(total, total)
    _fill_spread_k(rows)
    _fill_missing_alpha(rows)
    _fill_same_tree(rows, same_tree)
    _fill_rate_concurrency(rows)
    frame = frame_of(rows.columns, COLUMNS, _NUMERIC)  # empties rows.columns as it goes
    frame["row"] = pd.to_numeric(frame["row"], errors="coerce").astype("Int64")
    flags, implausible = plausibility(frame)  # a speedup above its E: the two runs are not comparable
    frame["measured_plausible"] = pd.Series(flags, index=frame.index, dtype=object)
    problems.extend(implausible)
    return RunTable(frame, problems, fallbacks, defaults)


def _not_checked(left: list[RunRecord]) -> list[Problem]:
    """One warning per file whose runs were left unchecked when the work deadline passed."""
    counts: dict[str, int] = {}
    first = {}
    for rec in left:
        counts[rec.file] = counts.get(rec.file, 0) + 1
        first.setdefault(rec.file, rec.row)
    return [Problem(name, first[name], None, f"{n:,} runs from this row on were not loaded: reading stopped after "
                    f"the {bounds.MAX_LOAD_S:g} s limit on processing one load; split the file or load fewer files "
                    "at once", "warning") for name, n in counts.items()]


def _records(files, defaults: RunDefaults) -> tuple[list[RunRecord], list[Problem]]:
    """Every file's records, the first bounds.MAX_ROWS_TOTAL of them, and the files' problems."""
    records: list[RunRecord] = []
    problems: list[Problem] = []
    for item in files:
        name, data = name_and_bytes(item)
        if bounds.out_of_time():
            problems.append(Problem(name, None, None, f"not read: reading stopped after the {bounds.MAX_LOAD_S:g} s "
                                    "limit on processing one load; load fewer files at once"))
            continue
        recs, probs = _read_one_file(name, data, defaults)
        count, loaded = len(recs), len(records)
        if loaded + count > bounds.MAX_ROWS_TOTAL:
            kept = max(0, bounds.MAX_ROWS_TOTAL - loaded)
            probs = [*probs, Problem(name, None, None, f"{count - kept:,} of its {count:,} runs were not "
                                     f"loaded: {bounds.MAX_ROWS_TOTAL:,} runs in all files is the limit; load fewer "
                                     "files at once", "warning")]
            recs = recs[:kept]
        records.extend(recs)
        problems.extend(probs)
    return records, problems


# What a reader may raise on input it should have refused in words: one file's bug must not lose the other
# files of an upload (a 400-digit k in one log lost every file; issue 41, 4). SpecModelError never gets here.
_UNEXPECTED = (ArithmeticError, ValueError, TypeError, IndexError, KeyError, AttributeError, RecursionError,
               UnicodeError)
UNEXPECTED = "could not be read: its reader met something it does not handle"  # the problem's words (fuzz looks)


def _read_one_file(name: str, data: bytes, defaults: RunDefaults) -> tuple[list[RunRecord], list[Problem]]:
    """sniff.read_one, where an unexpected error in a reader is that file's problem (its traceback goes to
    the log), so the other files of the upload still load; a message for a person, never a traceback."""
    try:
        return read_one(name, data, defaults)
    except _UNEXPECTED as exc:
        logging.getLogger(__name__).exception("reading %s", name)
        return [], [Problem(name, None, None, f"{UNEXPECTED} ({type(exc).__name__}); the other files were read: "
                            "please report it with the file")]


class _Rows:
    """The validated rows while the file's rows are filled in (acceptance, same tree, rate): a list per
    column (COLUMNS), so a large file's rows are never one object each; rows[i] reads and writes row i
    like a dict. Rows are appended as their cells and moved into the columns a few thousand at a time (done())."""

    CHUNK = 4096

    def __init__(self):
        self.columns: dict[str, list] = {c: [] for c in COLUMNS}
        self._pending: list = []

    def __len__(self) -> int:
        return len(self.columns["file"])

    def __getitem__(self, i: int) -> "_RowView":
        return _RowView(self.columns, i)

    def __iter__(self):
        return (_RowView(self.columns, i) for i in range(len(self)))

    def append(self, cells) -> None:
        """Append a row given as its cells in COLUMNS order."""
        self._pending.append(cells)
        if len(self._pending) >= self.CHUNK:
            self.done()

    def done(self) -> None:
        """Move the rows appended since the last call into the columns."""
        if self._pending:
            for values, cells in zip(self.columns.values(), zip(*self._pending)):
                values.extend(cells)
            self._pending.clear()


class _RowView:
    """Row i of a _Rows, read and written like a dict."""

    __slots__ = ("_columns", "_i")

    def __init__(self, columns: dict, i: int):
        self._columns, self._i = columns, i

    def __getitem__(self, key):
        return self._columns[key][self._i]

    def __setitem__(self, key, value):
        self._columns[key][self._i] = value

    def get(self, key, default=None):
        column = self._columns.get(key)
        return default if column is None else column[self._i]

    def to_dict(self) -> dict:
        return {c: values[self._i] for c, values in self._columns.items()}


def _count_fallback(out: dict, used: dict, rows: int = 1) -> None:
    """Count rows predicted on one fallback preset, and which names as written were not recognised
    (with their row counts)."""
    if used:
        out["rows"] += rows
    for kind, name in used.items():
        out[kind][name] = out[kind].get(name, 0) + rows


def _fill_same_tree(rows: _Rows, same_tree: list[bool]) -> None:
    """A method that says "same tree" (same_tree[i]) takes the draft depth and branching of the nearest
    earlier row of the same file and source with the same method and k."""
    for i in [i for i, flag in enumerate(same_tree) if flag]:
        row = rows[i]
        if row["draft_depth"] is not None:
            continue
        for prev in map(rows.__getitem__, range(i - 1, -1, -1)):
            if (prev["file"], prev["source"], prev["method"], prev["k"]) == \
                    (row["file"], row["source"], row["method"], row["k"]) and prev["draft_depth"] is not None:
                row["draft_depth"], row["branching"] = prev["draft_depth"], prev["branching"]
                row["remarks"] = "; ".join(filter(None, [row["remarks"], f"same tree as row {prev['row']}: depth "
                                                        f"{prev['draft_depth']}, branching {prev['branching']}"]))
                break


def _fill_spread_k(rows: _Rows) -> None:
    """A row predicted across a spread of k (no k stated, no documented default) is predicted at the k
    its source's other rows of the same method state, where they do (the most common one), instead of
    the spread's central k; the band still spans the spread and that k. An α read from the row's
    measured tokens per step is read again at that k."""
    spread = [i for i, ks in enumerate(rows.columns["k_spread"]) if ks is not None]
    if not spread:
        return
    columns = rows.columns
    stated: dict[tuple, list[int]] = {}
    for file, source, method, k, ks, assumed in zip(columns["file"], columns["source"], columns["method"],
                                                     columns["k"], columns["k_spread"], columns["assumed"]):
        if ks is None and "k" not in str(assumed or "").split(", ") and k is not None:
            stated.setdefault((file, source, method), []).append(int(k))
    for row in map(rows.__getitem__, spread):
        if not row.get("source"):
            continue
        found = stated.get((row["file"], row["source"], row["method"]))
        if not found:
            continue
        k = max(set(found), key=found.count)
        e = row["tokens_per_step"]
        if e == e and e is not None and e > k + 1:
            continue
        row["k_spread"] = tuple(sorted(set(row["k_spread"]) | {k}))
        row["k"] = k
        if e == e and e is not None:
            row["alpha_assumed"] = acceptance.from_tokens_per_step(float(e), k).alpha
        row["remarks"] = "; ".join(filter(None, [row["remarks"], f"k = {k}, the k this source states on its {len(found)} other "
                                                 f"{row['method']} rows"]))


def _fill_missing_alpha(rows: _Rows) -> None:
    """A row with a measured speedup but no acceptance is predicted with, in this order and saying so
    (its "assumed" column gains "acceptance", which widens its band):
    - the mean α of the rows of the same file, source, target and draft that have one (another
      dataset of the same source's same setup);
    - else the published figure for its method nearest to it (model.spec_defaults: same model family
      and dataset preferred), never another source's row;
    - else nothing: not predicted."""
    alphas = rows.columns["alpha"]
    todo = [i for i, (alpha, assumed, unpredicted) in enumerate(zip(alphas, rows.columns["alpha_assumed"],
                                                                     rows.columns["no_prediction"]))
            if math.isnan(alpha) and math.isnan(assumed) and not unpredicted]
    if not todo:
        return
    peers: dict[tuple, list[float]] = {}
    for i, alpha in enumerate(alphas):
        if not math.isnan(alpha):
            peers.setdefault(_peer_key(rows[i]), []).append(alpha)
    means: dict[tuple, float] = {}
    for row in map(rows.__getitem__, todo):
        group = _peer_key(row)
        found = peers.get(group)
        if found:
            if group not in means:
                means[group] = float(np.mean(found))
            alpha = means[group]
            row["alpha"] = alpha
            row["acceptance_from"] = "mean α of the file's other rows"
            row["acceptance_assumed_source"] = FILE_MEAN
            said = (f"assumed acceptance: α = {alpha:.2f}, the mean of the {len(found)} other rows of this file "
                    f"{'and source ' if row.get('source') else ''}with this target and draft")
        else:
            published = published_acceptance(row)
            if published is None:
                row["remarks"] = "; ".join(filter(None, [row["remarks"], "no acceptance in this row, no other row of "
                                                          "its source to take it from and no published figure for "
                                                          f"{row['method']}: not predicted"]))
                continue
            # kept apart from "alpha" (the row's own or its source's): fits (calibrate) never see it
            row["alpha_assumed"] = published.alpha
            row["acceptance_from"] = PUBLISHED_FROM + published.label
            row["acceptance_assumed_source"] = PUBLISHED_FIGURE
            said = published_remark(published)
        row["assumed"] = ", ".join(filter(None, [row.get("assumed"), "acceptance"]))
        row["acceptance_assumed"] = True  # counted in the headline with its source (runs.readings)
        row["remarks"] = "; ".join(filter(None, [row["remarks"], said]))


def _fill_rate_concurrency(rows: _Rows) -> None:
    """A row given as a request rate (and an output length) runs at the concurrency Little's law
    gives its speculative arm (model.rate); review predicts its latency ratio with both arms'."""
    for row in [rows[i] for i, driven in enumerate(rows.columns["rate_driven"]) if driven]:
        if np.isnan(row["alpha"]) and np.isnan(row.get("alpha_assumed", np.nan)):
            row["concurrency"] = None
            continue
        try:
            found = rate_prediction(row.to_dict())
        except (SpecModelError, TypeError, ValueError) as exc:
            row["remarks"] = "; ".join(filter(None, [row["remarks"], f"request rate not converted: {exc}"]))
            continue
        row["concurrency"] = max(1, round(found.spec.concurrency))
        row["remarks"] = "; ".join(filter(None, [row["remarks"], rate_remark(found)]))


def _peer_key(row: dict) -> tuple:
    return (row["file"], row.get("source"), row["target_preset"], row["draft_preset"], row["method"])




# --- samples shipped with the app -----------------------------------------------------------------

SAMPLES = {  # label -> files in sample_runs/ (see sample_runs/README.md)
    "Seed runs": ("seed_runs.csv",),
    "Two workloads (illustrative)": ("multi_workload.csv",),
    "vllm bench serve pair": ("vllm_bench_eagle_k3.json", "vllm_bench_baseline.json"),
    "guidellm sweep": ("guidellm_sweep.csv",),
}


def sample_files(label: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of one sample set, ready for read_runs."""
    if label not in SAMPLES:
        raise SpecModelError(f"unknown sample '{label}'; choose one of: {', '.join(SAMPLES)}")
    return [(name, (SAMPLE_DIR / name).read_bytes()) for name in SAMPLES[label]]
