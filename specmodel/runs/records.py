"""What the run readers hand on and hand back: a reader's RunRecord, the RunDefaults a row that does not
say falls back to, the Problem that names file, row and column, and the RunTable of loaded runs.

Row numbers: for CSV files the spreadsheet row (the header is row 1, the first run row 2); for
JSON files the position of the benchmark in the file (1 = first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import pandas as pd

from specmodel import bounds
from specmodel.text import MAX_MESSAGE_CHARS, marked_name, safe_text

# Canonical columns of the run table, in display order (docs/formats.md explains each).
COLUMNS = [
    "file", "row", "format", "workload", "concurrency", "request_rate", "k", "method", "temperature",
    "alpha", "tokens_per_step", "acceptance_from", "acceptance_read_as", "acceptance_meaning_said",
    "acceptance_assumed", "acceptance_assumed_source", "survival", "baseline_tok_s", "spec_tok_s",
    "measured_speedup", "gpu", "gpu_preset", "target_model", "target_preset", "draft_model",
    "draft_preset", "context_len", "t_target_ms", "t_draft_ms", "tp", "engine", "draft_depth", "branching", "ep",
    "weight_dtype", "draft_kv_budget", "source", "notes", "remarks",
    "assumed", "parallel_draft", "input_len", "output_len", "speedup_metric", "rate_driven",
    "alpha_assumed", "latency_plain_s", "latency_spec_s", "k_spread", "draft_spread", "proposal_rate",
    "no_prediction", "e_from_alpha", "off_tok_s", "draft_acceptance_rate", "max_draft_length",
    "plain_runs",
]
# What a row may have assumed ("assumed" column: these words, comma-separated): a k from the method's
# documented default or the spread it is commonly run at (k_spread), an acceptance from the published
# table (model.spec_defaults), a context length the row does not state, a draft model it does not name
# (a benchmark's documented one, or the target family's drafts: draft_spread), an engine it does not name.
ASSUMED_KINDS = ("k", "acceptance", "context", "draft", "engine")

# Why a row is not predicted: the code (Problem.reason, the summary's "refused") and what it means.
REFUSAL_REASONS = {
    "gpu_unknown": "a GPU that is no preset", "gpu_ambiguous": "a GPU text naming two GPUs",
    "gpu_missing": "no GPU in a file with a GPU column", "target_unknown": "a target model that is no preset",
    "gpu_spec": "GPU numbers (gpu_bandwidth_gbs, gpu_tflops, gpu_memory_gb) missing or out of range",
    "draft_unknown": "a draft model that is no preset", "draft_missing": "a draft-model run naming no draft",
    "method_unknown": "no known speculation method", "no_k": "no k and no documented default",
    "method_unmodelled": "a proposer the model does not cost (REST, Lookahead)",
    "no_acceptance": "no acceptance and no published figure for the method",
    "no_concurrency": "neither a concurrency nor a request rate with an output length or measured latencies",
    "metric": "a speedup of a quantity the model does not predict", "lossy": "a lossy (relaxed) acceptance",
    "invalid": "a value out of range or unreadable",
}

# The settings a row may fall back to, and how a message names each when the caller does not say.
FALLBACK_KINDS = {"gpu": "the default GPU", "target": "the default target", "draft": "the default draft",
                  "method": "the default method"}
# What a row refused for a name (or left without a prediction) tells the user to do, per kind, where the
# caller does not say (RunDefaults.give_as): the command line's flags. "... to predict it as one" follows.
GIVE_ON_COMMAND_LINE = {"gpu": "give --gpu NAME or --gpu-spec with its numbers",
                        "target": "give --target NAME or --target-config FILE",
                        "draft": "give --draft NAME or --draft-config FILE", "method": "give --method NAME"}


class Remark(str):
    """A remark on a row (its text, as the row's remarks join it) that says what every row of its kind shares apart
    from its own figures (Problem.kind, Problem.figures): its warning is one line for many rows."""

    def __new__(cls, text: str, kind: str, figures: str):
        remark = super().__new__(cls, text)
        remark.kind, remark.figures = kind, figures
        return remark


# A table row with only its plain throughput whose plain step joined the step fit of its setup's rows (runs.pairing):
# the key pairing sets in its values, and how its messages (runs.validate) name such a row.
PLAIN_JOINED = "_plain_joined"
PLAIN_RUN = "a plain run only (no speculative throughput or speedup)"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, located as precisely as the file allows."""

    file: str
    row: int | None  # spreadsheet row (CSV, header = 1) or benchmark number (JSON); None: whole file
    column: str | None
    message: str  # what was wrong and what is expected
    severity: str = "error"  # "error": the row was not loaded; "warning": loaded with a fallback
    reason: str | None = None  # why a row was refused, a short code counted in the summary (REFUSAL_REASONS)
    # the problem without this row's own figures, and the figures: rows whose messages differ only in them are
    # one line for a person (group_problems); None where the message names no figure of the row
    kind: str | None = None
    figures: str | None = None

    def __post_init__(self):
        if isinstance(self.column, str) and not (len(self.column) <= 80 and self.column.isprintable()):
            # a header as it may be shown: one line, cut, an invisible character named (<U+200B>)
            object.__setattr__(self, "column", marked_name(self.column))

    def where(self) -> str:
        """"f.csv, row 3, column 'gpu'": the file's and the column's names as they may be shown (one line,
        cut: a header with a line break forged a line of `runs`)."""
        parts = [safe_text(self.file)]
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.column:
            parts.append(f"column '{safe_text(self.column)}'")
        return ", ".join(parts)

    def __str__(self) -> str:
        return f"{self.where()}: {safe_text(self.message, MAX_MESSAGE_CHARS)}"

    def at_row(self, row: int | None) -> "Problem":
        """The same problem on another row (rows alike share what is said of them)."""
        return Problem(self.file, row, self.column, self.message, self.severity, self.reason, self.kind, self.figures)


@dataclass(frozen=True)
class RunDefaults:
    """What a row that does not say gets, and how messages name where it came from.

    said_as: {kind: words} for the kinds in FALLBACK_KINDS ("gpu", "target", "draft", "method"), e.g.
    {"gpu": "--gpu"} from the command line; a kind not given is named as in FALLBACK_KINDS
    ("the default GPU"). A remark then reads "predicted with L40S (--gpu)".
    give_as: {kind: what to do} for a row whose name of that kind matches no preset, in the caller's own
    inputs ("give --target NAME or --target-config FILE"; a page names its widgets); a kind not given
    reads as on the command line (GIVE_ON_COMMAND_LINE). Its message then ends "... to predict it as one"."""

    gpu: str = "L40S"
    target: str = "Llama 3.1 8B"
    method: str = "draft_model"
    draft: str | None = "Llama 3.2 1B"
    tp: int = 1
    context_len: int = 1024
    k: int | None = None  # for files that do not record k (guidellm)
    said_as: Mapping[str, str] = field(default_factory=dict, hash=False)
    # the kinds (FALLBACK_KINDS) the user chose explicitly: a row naming a GPU, model or method that
    # is no preset (or two) is predicted with the choice; for any other kind such a row is refused.
    # "k" in it: the user gave k, which beats a method's k spread (a k only read with is not explicit)
    explicit: frozenset = frozenset()
    give_as: Mapping[str, str] = field(default_factory=dict, hash=False)
    # What a CSV acceptance column whose name does not say which acceptance it holds (`accept_rate`,
    # `acceptance`, `acc`: runs.meanings.ACCEPTANCE_AMBIGUOUS) is: "alpha", "rate" or "length"; None: not
    # said, read as runs.meanings.ACCEPTANCE_MEANS_DEFAULT, and said so on the rows and in the headline.
    acceptance_means: str | None = None
    acceptance_said_as: str = "--acceptance-means alpha|rate|length"  # how messages name where it is said

    def named(self, kind: str) -> str:
        """How a message names the fallback of one kind: "--gpu", "the default GPU", ..."""
        return self.said_as.get(kind) or FALLBACK_KINDS[kind]

    def give(self, kind: str) -> str:
        """What a message tells the user to do to name one kind: "give --gpu NAME or --gpu-spec ...", ..."""
        return self.give_as.get(kind) or GIVE_ON_COMMAND_LINE[kind]


@dataclass(slots=True)
class RunRecord:
    """One run (or one arm of one) as a reader found it, before validation."""

    file: str
    row: int | None
    fmt: str
    values: dict  # canonical name -> raw value (str, number or list)
    headers: dict  # canonical name -> the user's header (for messages)
    arm: str = "pair"  # "pair": both arms in one row; "spec" / "baseline": one arm, to be paired
    pair_key: tuple | None = None
    remarks: list[str] = field(default_factory=list)


@dataclass
class RunTable:
    rows: pd.DataFrame  # one row per loaded run, columns COLUMNS
    problems: list[Problem] = field(default_factory=list)
    # rows predicted on a fallback preset: {"rows": n, "gpu": {name as written: rows}, "target": {...},
    # "draft": {...}}; see fallback_line() for the sentence
    fallbacks: dict = field(default_factory=lambda: {"rows": 0, "gpu": {}, "target": {}, "draft": {}})
    defaults: RunDefaults | None = None  # what the rows were read with

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]

    def problems_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"severity": p.severity, "file": p.file, "row": p.row, "column": p.column,
                              "problem": p.message} for p in self.problems],
                            columns=["severity", "file", "row", "column", "problem"])


def too_many_rows(name: str, count: int) -> Problem:
    """The warning for a file with more runs than bounds.MAX_ROWS_PER_FILE (the first ones load)."""
    return Problem(name, None, None, f"has {count:,} runs; only the first {bounds.MAX_ROWS_PER_FILE:,} were loaded "
                                     "(the limit per file): split the file to read the rest", "warning")


def stopped_reading(name: str, line: int) -> Problem:
    """The warning for a file whose reading stopped at `line` when the load's work deadline passed."""
    return Problem(name, line, None, f"not read from this row on: reading stopped after the {bounds.MAX_LOAD_S:g} s "
                   "limit on processing one load; split the file", "warning")


def fallback_line(fallbacks: dict, total_rows: int, defaults: RunDefaults | None = None) -> str | None:
    """One sentence for the top of a report: rows predicted on a fallback and the names not
    recognised, or None when every row used its own presets. defaults (RunTable.defaults) names
    where the fallback came from ("--gpu", "the default GPU", ...)."""
    if not fallbacks or not fallbacks.get("rows"):
        return None
    defaults = defaults or RunDefaults()
    parts, origins = [], []
    for kind, label in (("gpu", "GPU"), ("target", "target"), ("draft", "draft")):
        for name, n in sorted(fallbacks.get(kind, {}).items(), key=lambda item: -item[1]):
            parts.append(f"{label} '{name}' ({n} row{'s' if n != 1 else ''})")
        if fallbacks.get(kind) and defaults.named(kind) not in origins:
            origins.append(defaults.named(kind))
    n = fallbacks["rows"]
    return (f"{n} of {total_rows} row{'s' if total_rows != 1 else ''} predicted on a fallback preset "
            f"({', '.join(origins)}) because a name was not recognised: " + ", ".join(parts))


@dataclass(frozen=True)
class ProblemGroup:
    """Identical problems (same severity, file, column and message) on several rows; a problem with the
    whole file met in several files is one group (`also`: the other files, in order)."""

    severity: str
    file: str
    column: str | None
    message: str
    rows: tuple  # row numbers in file order (None: the whole file)
    also: tuple = ()  # other files with the same whole-file problem

    @property
    def count(self) -> int:
        """Rows affected (1 for a problem with the whole file)."""
        return max(1, sum(r is not None for r in self.rows))

    def where(self, max_rows: int = 12) -> str:
        """"f.csv, rows 3, 7, 9 (3 rows), column 'gpu'": the file, the rows (the first max_rows), the column."""
        numbered = [r for r in self.rows if r is not None]
        files = (self.file, *self.also)
        shown = ", ".join(safe_text(f) for f in files[:max_rows]) + (", ..." if len(files) > max_rows else "")
        where = [shown + (f" ({len(files)} files)" if len(files) > 1 else "")]
        if len(numbered) == 1:
            where.append(f"row {numbered[0]}")
        elif numbered:
            shown = ", ".join(map(str, numbered[:max_rows])) + (", ..." if len(numbered) > max_rows else "")
            where.append(f"rows {shown} ({len(numbered)} rows)")
        if self.column:
            where.append(f"column '{safe_text(self.column)}'")
        return ", ".join(where)


SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}  # chosen: the worst first


FIGURES_SHOWN = 3  # chosen: rows whose figures a grouped line quotes before "…" (--json and the table list every row)


def group_problems(problems: list[Problem], by_size: bool = False) -> list[ProblemGroup]:
    """Identical problems grouped, in order of first appearance; with by_size, errors (rows not
    loaded) first, then warnings, then notes, the largest groups first within each. Problems of one kind
    (Problem.kind) that differ only in their rows' figures are one group, its message the kind with the
    first rows' figures ("… (row 12: 2.00× at E = 1.73; row 16: …; …)")."""
    groups: dict[tuple, list] = {}
    firsts: dict[tuple, list[Problem]] = {}
    alike: dict[tuple, bool] = {}  # whether every row of the group says the very same message
    for p in problems:
        key = (p.severity, p.file, p.column, p.kind or p.message)
        groups.setdefault(key, []).append(p.row)
        seen = firsts.setdefault(key, [])
        alike[key] = alike.get(key, True) and p.message == seen[0].message if seen else True
        if len(seen) <= FIGURES_SHOWN:
            seen.append(p)
    groups = {key[:3] + (_group_message(firsts[key], alike[key]),): rows for key, rows in groups.items()}
    whole: dict[tuple, list] = {}  # a problem with the whole file, said once for every file that has it
    for (sev, file, column, message), rows in groups.items():
        if all(r is None for r in rows):
            whole.setdefault((sev, column, message), []).append(file)
    out = []
    for (sev, file, column, message), rows in groups.items():
        files = whole.get((sev, column, message), [file]) if all(r is None for r in rows) else [file]
        if file == files[0]:
            out.append(ProblemGroup(sev, file, column, message, tuple(rows), tuple(files[1:])))
    if by_size:
        out.sort(key=lambda g: (SEVERITY_ORDER.get(g.severity, 3), -g.count))
    return out


def _group_message(first: list[Problem], alike: bool) -> str:
    """A group's message: the problem's own where every row says the same, else its kind and the first rows'
    figures."""
    if alike or not first[0].kind:
        return first[0].message
    quoted = "; ".join(f"row {p.row}: {p.figures}" if p.row is not None else p.figures
                       for p in first[:FIGURES_SHOWN])
    return f"{first[0].kind} ({quoted}{'; …' if len(first) > FIGURES_SHOWN else ''})"


def collapse_problems(problems: list[Problem], with_severity: bool = True) -> list[str]:
    """Problems as lines for a person, identical ones (same severity, file, column and message)
    collapsed into one line with their row numbers: "warning: f.csv, rows 3, 7, 9 (3 rows): ...".
    A problem met once reads as str(problem) (after "severity: " when with_severity)."""
    return [(f"{g.severity}: " if with_severity else "") + f"{g.where()}: {g.message}" for g in group_problems(problems)]
