"""What the Past runs page says about a review, as text and small frames: the problems summary,
the verdict counts, which rows a table or chart shows when there are many, and the key a loaded
review is kept under in the session. Pure functions; the page only places them."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from specmodel.runs.pairing import why_empty
from specmodel.runs.records import FALLBACK_KINDS, ProblemGroup, RunDefaults, RunTable, fallback_line, group_problems
from specmodel.runs.review import MEASURED
from specmodel.runs.unpredicted import left_out_sentence
from specmodel.words import BORDERLINE_LABEL, CLEARS, FAILS, UNCERTAIN, verdict_words

# chosen: bounds on what the Past runs page draws, so a large file stays responsive
TABLE_ROWS_SHOWN = 5_000  # rows a table on the page holds (the CSV export has all of them)
CHART_RUNS_SHOWN = 2_000  # chosen: runs a chart draws; above it an even sample, said on the chart's caption
PROGRESS_FROM_ROWS = 5_000  # chosen: show a progress bar while loading at least this many runs
CALIBRATION_RUNS = 2_000  # chosen: runs a calibration fits on: above it an even sample (each fit step predicts them all)


def load_key(files, defaults, pairs, efficiency) -> str:
    """A digest of everything a review depends on: the files' names and bytes, the defaults, the
    manual pairs and the calibration (same key: the same review, kept in the session)."""
    h = hashlib.sha256()
    for name, data in files:
        h.update(str(name).encode() + b"\0" + hashlib.sha256(data).digest())
    h.update(repr((defaults, sorted(dict(pairs).items()), efficiency)).encode())
    return h.hexdigest()


def why_no_run(table: RunTable) -> str:
    """The page's line when no run loaded: that only baseline runs were given, where so."""
    said = why_empty(table.problems, "the file(s)").replace("; see the lines above", ": see the problems above")
    return said[0].upper() + said[1:] + "."


def problems_label(table: RunTable) -> str:
    """One line for the collapsed problems block: what was not loaded, warnings, fallbacks."""
    errors = group_problems(table.errors)
    warnings = [g for g in group_problems(table.warnings) if g.severity == "warning"]
    kinds = len(warnings)
    counts = [  # a row refused for two reasons (no GPU and no draft named) is one row not loaded
        (len({(p.file, p.row) for p in table.errors if p.row is not None}), "row", "not loaded"),
        (sum(1 for g in errors if not any(r is not None for r in g.rows)), "file", "not read"),
        (sum(g.count for g in warnings), "warning", f"({kinds} kind{'s' if kinds != 1 else ''})"),
        (table.fallbacks.get("rows", 0) if table.fallbacks else 0, "row", "predicted on a fallback preset"),
        # acceptance the file does not give: never "every row was read"
        (int(table.rows["acceptance_assumed"].eq(True).sum()) if "acceptance_assumed" in table.rows else 0, "row",
         "on an assumed acceptance")]
    parts = [f"{n:,} {noun}{'s' if n != 1 else ''} {what}" for n, noun, what in counts if n]
    if not parts:
        return "Input: every row was read"
    return "Problems in the input: " + ", ".join(parts)


def problem_lines(table: RunTable) -> list[tuple[str, str]]:
    """(severity, line) per kind of problem, rows not loaded first, the largest groups first:
    "41 rows: GPU '1x H100' is not a preset ... — runs.csv, rows 3, 7, …". The fallback sentence
    comes first among the warnings."""
    out: list[tuple[str, str]] = []
    groups = group_problems(table.problems, by_size=True)
    for g in groups:
        if g.severity == "error":
            out.append(("error", group_line(g)))
    line = fallback_line(table.fallbacks, len(table.rows), table.defaults)
    if line:
        out.append(("warning", line))
    out += [(g.severity, group_line(g)) for g in groups if g.severity != "error"]
    return out


def group_line(g: ProblemGroup) -> str:
    """One problem as `file, row 3, column 'x': message`; a group as
    `41 rows, column 'gpu': message — file, rows 3, 7, …`."""
    rows = [r for r in g.rows if r is not None]
    if len(rows) <= 1:
        return f"{g.where()}: {g.message}"
    count = f"{len(rows):,} rows" + (f", column '{g.column}'" if g.column else "")
    listed = ", ".join(map(str, rows[:8])) + (", …" if len(rows) > 8 else "")
    return f"{count}: {g.message} — {g.file}, rows {listed}"


STYLED_ROWS = 1000  # chosen: styling a longer table costs seconds: it is shown in words, uncoloured


def break_even_display(table: pd.DataFrame):
    """The break-even table as shown: verdicts in words and coloured, an empty cell where a value is
    missing (never "None"); a long table in words only."""
    from specmodel.show.figures.runs import VERDICT_COLOURS

    if len(table) > STYLED_ROWS:
        return in_words(table)
    verdicts = ["verdict", "predicted_verdict", "measured_verdict"]  # shown in words, kept as codes
    return (table.style.map(lambda v: f"color: {VERDICT_COLOURS[v]}; font-weight: 600" if v in VERDICT_COLOURS
                            else "", subset=[c for c in verdicts[:2] if c in table])
            .format(na_rep="", precision=2).format(verdict_words, subset=[c for c in verdicts if c in table],
                                                   na_rep=""))


def margin_in_percent(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its margin as BREAK_EVEN_COLUMNS shows it, in percent to one decimal ("-17.1%", "-28.0%"):
    the review keeps the fraction (the CSV export and JSON), and Streamlit's "percent" format dropped trailing
    zeros ("-17.12%" above "-28%")."""
    return table.assign(margin_pct=table["margin_pct"] * 100) if "margin_pct" in table else table


def in_words(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of a review table with its verdict codes ("clears") in the words shown ("pays off")."""
    out = table.copy()
    for column in ("verdict", "predicted_verdict", "measured_verdict"):
        if column in out:
            out[column] = out[column].map(verdict_words)
    return out


def verdict_counts(evaluated: pd.DataFrame) -> dict:
    """Runs per verdict, and how many verdicts are measured and how many predicted."""
    verdicts = evaluated["verdict"] if "verdict" in evaluated else pd.Series(dtype=object)
    measured = (evaluated["verdict_basis"] == MEASURED) if "verdict_basis" in evaluated else verdicts.isna()
    return {CLEARS: int((verdicts == CLEARS).sum()), BORDERLINE_LABEL: int((verdicts == BORDERLINE_LABEL).sum()),
            FAILS: int((verdicts == FAILS).sum()), UNCERTAIN: int((verdicts == UNCERTAIN).sum()),
            "measured": int((measured & verdicts.notna()).sum()), "predicted": int((~measured & verdicts.notna()).sum())}


def verdict_metric(counts: dict) -> tuple[str, str, str | None]:
    """The Past runs metric of verdict_counts: (label, value, note under it): "Pay off · borderline · lose",
    their counts, and "N uncertain" where some predicted verdict's band straddles 1.0 (headlines.as_read)."""
    value = " · ".join(compact(counts[c]) for c in (CLEARS, BORDERLINE_LABEL, FAILS))
    return "Pay off · borderline · lose", value, f"{compact(counts[UNCERTAIN])} uncertain" if counts.get(UNCERTAIN) else None


def verdict_metric_help(counts: dict) -> str:
    words = f"{counts['measured']:,} verdicts from a measured speedup, {counts['predicted']:,} predicted."
    if counts.get(UNCERTAIN):
        words += (f" {counts[UNCERTAIN]:,} predicted are uncertain: the model's 80% band straddles 1.0 there, so "
                  "a run at that setting would settle it.")
    return words


def shown_rows(frame: pd.DataFrame, limit: int, what: str, spread: bool = False) -> tuple[pd.DataFrame, str | None]:
    """At most `limit` rows of a frame for a table or chart, and a note when some are left out:
    the first ones (a table), or an even spread over all of them (spread=True, a chart)."""
    if len(frame) <= limit:
        return frame, None
    if spread:
        picked = frame.iloc[np.linspace(0, len(frame) - 1, limit).round().astype(int)]
        return picked, (f"{what} shows {limit:,} of the {len(frame):,} runs, evenly spread over the table; the "
                        "CSV export has every run.")
    return frame.head(limit), (f"{what} shows the first {limit:,} of {len(frame):,} rows; the CSV export has all "
                               "of them.")


VERDICT_LINES_CAPTION = ("Measured: the run's measured speedup against 1 ± 5%. Predicted: runs with only an "
                         "acceptance, judged by their tokens per step against the model's break-even there. Where the "
                         "model's own verdict differs from the measured one, the line says so.")
NO_BREAK_EVEN_CHART = ("No break-even chart: no run has both a measured tokens per step and a break-even (runs with "
                       "only throughputs are judged by their measured speedup).")


def filled_columns(frame: pd.DataFrame, columns: dict) -> list[str]:
    """The columns to show: those with at least one value (an all-empty column would print "None" in
    every cell and push the ones that matter off-screen)."""
    return [c for c in columns if c in frame.columns and frame[c].map(_filled).any()]


def _filled(v) -> bool:
    """A cell with a value: not None, NaN, pandas' NA or an empty text."""
    return not (v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v) or
                (isinstance(v, str) and v == ""))


def _number_text(value, fmt: str | None) -> str:
    """A cell as its column shows it: a number in the column's format (printf, or Streamlit's "percent"),
    anything else as its text, "" where the value is missing."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return ""
    if fmt and isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return f"{value * 100:.2f}%" if fmt == "percent" else fmt % value
    return str(value)


def as_cells(frame: pd.DataFrame, columns: dict) -> tuple[pd.DataFrame, dict]:
    """A table as the text of its cells, for a grid that would print a missing value as "None": numbers in
    their column's format, a missing value as an empty cell; and the columns with their formats dropped
    (applied already)."""
    out = frame.reindex(columns=[c for c in columns if c in frame.columns]).copy()
    for c in out.columns:
        fmt = columns[c][1]
        out[c] = [_number_text(v, fmt) for v in out[c].tolist()]
    return out, {c: (head, None, *rest) for c, (head, _fmt, *rest) in columns.items()}


def blank_where_missing(frame: pd.DataFrame, columns: dict) -> tuple[pd.DataFrame, list[str]]:
    """The number columns that miss a value somewhere, as the text of their cells (the column's format, the
    missing cell empty: Streamlit's grid prints a missing number as "None"), and their names (to align them
    right); the columns with every value keep their numbers and sort as numbers. A text column's missing
    cells become empty texts."""
    out, texts = frame, []
    for c, (_head, fmt, *_rest) in columns.items():
        if c not in frame.columns:
            continue
        values = frame[c]
        present = values.notna()
        if present.all() or not present.any():
            continue
        if not (fmt or all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values[present])):
            # a text column: the grid draws its missing cells as "None" too (the model's verdict of a run it
            # did not predict, beside runs it did): an empty text
            out = out.assign(**{c: values.where(present, "")})
            continue
        out = out.assign(**{c: [_number_text(v, fmt) for v in values.tolist()]})
        texts.append(c)
    return out, texts


def calibration_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The runs a calibration fits on: all of them up to CALIBRATION_RUNS, else an even sample
    (least squares predicts every run at every step), and a note saying so."""
    if len(rows) <= CALIBRATION_RUNS:
        return rows, None
    picked = rows.iloc[np.linspace(0, len(rows) - 1, CALIBRATION_RUNS).round().astype(int)]
    return picked, (f"calibrated on {CALIBRATION_RUNS:,} of the {len(rows):,} runs, evenly spread over the file "
                    "(each step of the fit predicts every run it is given)")


# chosen: the seed report's k (bench/evidence/seed_runs.csv), as cli/scrape.py's DEFAULT_K
GUIDELLM_K = 4  # the k a file that needs one to read its acceptance (guidellm) is read at, the k box empty
K_BOX_PLACEHOLDER = f"{GUIDELLM_K} where a file needs one to be read"
K_BOX_HELP = ("Set it to predict every run without a k at this k. Left empty, a file that needs k to read its "
              f"acceptance (guidellm) is read at k = {GUIDELLM_K}, and a run whose method has no documented default is "
              "predicted across the k values it commonly runs at, as the command line does without --k.")

# The sidebar's GPU, target and draft are defaults, for runs that name none (as `runs` without --gpu,
# --target, --draft). This box makes them the user's statement, as those flags given: a run naming one that
# matches no preset is then predicted on the sidebar's choice instead of being judged on its measurement alone.
SIDEBAR_FOR_UNKNOWN = "Predict names that match no preset as the sidebar's"
SIDEBAR_FOR_UNKNOWN_HELP = ("A run whose GPU, target or draft model matches no preset (a model you serve under "
                            "your own name) keeps its measured speedup and verdict, with no prediction. Tick "
                            "this to predict such runs on the sidebar's GPU and models instead, said in their "
                            "remarks. The sidebar's choices always apply to runs that name none.")
# How the page's messages tell the user to name a GPU or model it could not match (RunDefaults.give_as).
PAGE_GIVE_AS = {kind: f"choose its {what} in the sidebar ({how}) and tick '{SIDEBAR_FOR_UNKNOWN}'"
                for kind, what, how in (("gpu", "GPU", "a preset, or Custom GPU by its numbers"),
                                        ("target", "target model", "a preset, or from a config.json"),
                                        ("draft", "draft model", "a preset, or from a config.json"))} | \
               {"method": "choose its method in the sidebar"}


def page_defaults(scenario, k_box: int | None, sidebar_for_unknown: bool, choices: dict | None = None,
                  **given) -> RunDefaults:
    """What the page's runs get from the sidebar (`scenario`) and the k box. The GPU, target and draft apply
    to runs that name none; a run naming one that matches no preset is predicted on them only with
    sidebar_for_unknown (SIDEBAR_FOR_UNKNOWN ticked), else judged on its measurement with a line that
    says so (runs.unpredicted), as the command line does without --gpu/--target/--draft. The sidebar's
    method stands for a method no name matches (said in the run's remarks); the k box is the user's once set."""
    chosen = {"gpu", "target", "draft"} if sidebar_for_unknown else set()
    return RunDefaults(**(choices or scenario.names()), tp=scenario.tp, context_len=scenario.context_len,
                       k=GUIDELLM_K if k_box is None else int(k_box),
                       said_as=dict.fromkeys(FALLBACK_KINDS, "the sidebar choice"), give_as=PAGE_GIVE_AS,
                       explicit=frozenset(chosen | {"method"} | ({"k"} if k_box is not None else set())), **given)


MODEL_ERROR_HELP = "Speedup error (MAPE): mean absolute % error of predicted vs measured speedup, runs with both."


def model_error(summary: dict) -> tuple[str, str]:
    """The "Model error" metric: (value, help). Only runs the model predicted count; the help says how many
    runs judged on their measurement alone were left out."""
    value = "–" if summary.get("mape_speedup_pct") is None else f"{summary['mape_speedup_pct']:.1f}%"
    return value, f"{MODEL_ERROR_HELP} {left_out_sentence(summary.get('rows_unpredicted') or 0)}".strip()


def agreeing_share(summary: dict) -> str:
    """The "Verdicts agree" metric: the share of runs with both speedups whose verdicts are the same
    ("91%"; "–" with none), short enough for a metric column at 1280 px."""
    compared = summary.get("rows_compared") or 0
    return "–" if not compared else f"{100 * summary['verdicts_agreeing'] / compared:.0f}%"


def agreeing_help(summary: dict) -> str:
    """The counts behind agreeing_share, for the metric's help."""
    compared = summary.get("rows_compared") or 0
    counts = (f"{summary['verdicts_agreeing']:,} of {compared:,} runs with a measured and a predicted speedup. "
              if compared else "No run has both a measured and a predicted speedup. ")
    return counts + "Agree: the model's verdict and the measured one are the same (±5% counts as borderline)."


def compact(n: int) -> str:
    """A count short enough for a metric: 8, 1,234, 99.8k, 200k."""
    if n < 10_000:
        return f"{n:,}"
    return f"{n / 1000:.1f}k".replace(".0k", "k") if n < 100_000 else f"{n / 1000:.0f}k"


def read_and_review(files, defaults, pairs=None, efficiency=None, on_progress=None):
    """Read the run files and review the runs: (RunTable, Review). For a large load (at least
    PROGRESS_FROM_ROWS runs) `on_progress(fraction, text)` hears how far it is, reading being the
    first 60% of the work; every call is where a closed tab stops the work."""
    from specmodel.runs.load import read_runs
    from specmodel.runs.review import review

    def stage(name: str, start: float, share: float):
        if on_progress is None:
            return None

        def report(done: int, total: int) -> None:
            if total >= PROGRESS_FROM_ROWS:
                on_progress(min(1.0, start + share * done / total), f"{name}: {done:,} of {total:,} runs")
        return report

    from specmodel.runs.unpredicted import unpredicted_problems

    table = read_runs(files, defaults, pairs, progress=stage("Reading", 0.0, 0.6))
    result = review(table.rows, efficiency, progress=stage("Predicting", 0.6, 0.4))
    table.problems.extend(unpredicted_problems(result.evaluated))  # runs left without a prediction, and why
    return table, result


# The page's tables, in the order shown: column -> (heading, number format or None, help or None[, width
# "small"/"medium"/"large"]), the shape pages/parts/display.column_config reads (as readouts.FLEET_COLUMNS).
BREAK_EVEN_COLUMNS = {  # the break-even table (the review, one row per run)
    "verdict": ("verdict", None, "From the measured speedup where there is one; else predicted", "small"),
    "workload": ("workload", None, None, "small"),
    "setup": ("setup", None, "What tells this run apart from the workload's other setups in the files (model, method, "
                             "k, GPU, engine); empty where the workload ran under one setup", "medium"),
    "concurrency": ("concurrency", None, None),
    "measured_speedup": ("measured ×", "%.2f", None),
    "predicted_verdict": ("model", None, None),
    "predicted_speedup": ("predicted ×", "%.2f", None),
    "disagreement": ("model vs measured", None, None),
    "speedup_band": ("80% band ×", None, "The model's 80% band around its predicted speedup: on published runs of "
                                          "setups it was not tuned to, 8 in 10 measurements fell inside it"),
    "k": ("k", None, None),
    "tokens_per_step": ("tokens/step", "%.2f", None),
    "break_even_tokens_per_step": ("break-even", "%.2f", None),
    "margin_pct": ("margin", "%+.1f%%", "Of the verdict's number: measured speedup − 1, or measured ÷ break-even "
                                        "tokens per step − 1 where predicted"),
    "advice": ("the model's advice", None, "What the model advises at this run's setup (its k, concurrency and "
                                           "acceptance); where a measured verdict differs from the model's, the "
                                           "measured verdict holds"),
    "verdict_basis": ("verdict_basis", None, None),
    "margin_tokens_per_step": ("margin (tokens)", "%+.2f", None),
    "method": ("method", None, None),
    "gpu_preset": ("gpu_preset", None, None),
    "file": ("file", None, None),
    "row": ("row", None, None),
}
RUNS_COLUMNS = {  # the runs as read, one row per run
    "file": ("file", None, None), "row": ("row", None, None), "workload": ("workload", None, None),
    "concurrency": ("concurrency", None, None), "k": ("k", None, None), "method": ("method", None, None),
    "alpha": ("α", "%.3f", None), "tokens_per_step": ("tokens/step", "%.2f", None),
    "acceptance_from": ("acceptance_from", None, None), "baseline_tok_s": ("baseline tok/s", "%.0f", None),
    "spec_tok_s": ("spec tok/s", "%.0f", None), "measured_speedup": ("measured ×", "%.2f", None),
    "gpu": ("gpu", None, None), "gpu_preset": ("gpu_preset", None, None), "target_preset": ("target_preset", None, None),
    "draft_preset": ("draft_preset", None, None), "context_len": ("context_len", None, None),
    "no_prediction": ("no prediction", None, "Why the model predicts nothing for this run (a name that matches no "
                                             "preset): it is judged on its measurement alone"),
    "remarks": ("remarks", None, None),
}
