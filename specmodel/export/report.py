"""Exports of the Runs review: the break-even table as CSV, and a self-contained HTML report.

The report is the Jinja2 template templates/report.html.j2, rendered with autoescape on: every string
that came from a user's file is escaped in the HTML; CSV cells that a spreadsheet
would run as a formula (starting with = + - @, tab or carriage return) get a leading apostrophe.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import datetime, timezone

import pandas as pd
import plotly.graph_objects as go

from specmodel.words.calibration import calibration_line
from specmodel.model.engines import DEFAULT_ENGINE, find_engine
from specmodel.model.roofline import Efficiency
from specmodel.paths import tool_version
from specmodel.runs.headlines import as_read, sweep_order
from specmodel.runs.review import TABLE_COLUMNS, with_band_text
from specmodel.runs.unpredicted import left_out_sentence
from specmodel.words import verdict_words

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# chosen: a report is a file people mail and open in a browser: each of its tables and its problem list stops
# here, and says so (the break-even CSV holds every row). 2,000 rows keep it to a few MB.
REPORT_ROWS = 2_000
REPORT_PROBLEMS = 500  # chosen: problems listed in a report; the rest are counted


_PLAIN_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def neutralise_cell(value):
    """A text cell that starts like a formula becomes inert text; numbers (also a plain number
    written as text, such as "-5") are left alone.

    >>> [neutralise_cell(v) for v in ["=1+1", "-1+cmd|' /C calc'!A0", "@SUM(A1)", "-5", "-0.25", -3.0, "chat"]]
    ["'=1+1", "'-1+cmd|' /C calc'!A0", "'@SUM(A1)", '-5', '-0.25', -3.0, 'chat']
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def break_even_csv(table: pd.DataFrame) -> str:
    """The break-even table as CSV text, safe to open in a spreadsheet."""
    safe = table.reindex(columns=[c for c in TABLE_COLUMNS if c in table.columns] or table.columns)
    safe = safe.apply(lambda col: col.map(neutralise_cell) if not pd.api.types.is_numeric_dtype(col) else col)
    return safe.to_csv(index=False, float_format="%.4g")


def _cell(value) -> str:  # the template escapes it
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


# chosen: the tables fit the page: a fixed layout gives each column a share of the width by what it holds
# (sentences most, names more than numbers), and text wraps inside its column, mid-word only when a
# word is longer than the column is wide.
_WIDTH_SHARE = {"remarks": 4.0, "advice": 3.0, "workload": 2.2, "setup": 2.0, "file": 2.0, "target_model": 2.0,
                "draft_model": 2.0,
                "gpu": 1.6, "gpu_preset": 1.5, "method": 1.8, "acceptance_from": 1.4, "verdict": 2.1, "margin": 1.2,
                "k": 0.7, "row": 0.9, "model's 80% band ×": 1.2}
_NUMBER_SHARE, _TEXT_SHARE = 1.3, 1.4
_NOWRAP = {"verdict", "margin", "k", "row"}  # a few characters each: never broken

# Where a long header word may break (a soft hyphen shows only when the column is that narrow).
_SOFT_HYPHENS = {"concurrency": "concur\u00adrency", "acceptance": "accep\u00adtance", "measured": "meas\u00adured",
                 "baseline": "base\u00adline", "speedup": "speed\u00adup", "workload": "work\u00adload",
                 "predicted": "pre\u00addicted", "break-even": "break-\u200beven", "tokens/step": "tokens/\u200bstep"}


def _header(column) -> str:
    """A column name as a header that wraps to fit: words apart ("measured_speedup" reads
    "measured speedup") and long words with a soft hyphen."""
    words = str(column).replace("_", " ").split(" ")
    return " ".join(_SOFT_HYPHENS.get(w, w) for w in words)


def _share(frame: pd.DataFrame, column: str) -> float:
    if column in _WIDTH_SHARE:
        return _WIDTH_SHARE[column]
    return _NUMBER_SHARE if pd.api.types.is_numeric_dtype(frame[column]) else _TEXT_SHARE


def _table(frame: pd.DataFrame, columns: list[str] | None = None, css_class: str = "") -> dict:
    """A table for the template's `table` macro: column widths (%), headers and rows of (classes, text) cells."""
    cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    shares = [_share(frame, c) for c in cols]
    rows = []
    for r in frame[cols].to_dict("records"):
        cells = []
        for c in cols:
            classes = []
            if c == "verdict" and isinstance(r[c], str):
                classes.append(f"v-{r[c]}")
            if c in _NOWRAP:
                classes.append("short")
            if isinstance(r[c], (int, float)) and not isinstance(r[c], bool):
                classes.append("num")
            value = verdict_words(r[c]) if c in ("verdict", "measured_verdict", "predicted_verdict") else r[c]
            cells.append((" ".join(classes), _cell(value)))
        rows.append(cells)
    return {"css_class": css_class, "widths": [f"{100 * w / sum(shares):.2f}" for w in shares],
            "headers": [_header(c) for c in cols], "rows": rows}


# Each heading says what its column holds: the verdict's basis (measured speedup or predicted), and
# the two margins apart (a measured speedup over 1×, a measured E over the break-even E).
_REPORT_COLUMNS = {"workload": "workload", "setup": "setup", "concurrency": "concurrency", "k": "k", "verdict": "verdict",
                   "verdict_basis": "verdict from", "measured_speedup": "measured speedup ×",
                   "speedup_margin": "measured speedup − 1", "predicted_speedup": "predicted speedup ×",
                   "speedup_band": "model's 80% band ×", "tokens_per_step": "tokens/step E",
                   "break_even_tokens_per_step": "break-even E", "e_margin": "E ÷ break-even E − 1", "advice": "advice",
                   "file": "file", "row": "row"}


def _break_even_display(table: pd.DataFrame) -> pd.DataFrame:
    shown = with_band_text(as_read(sweep_order(table).reindex(columns=TABLE_COLUMNS)))  # as on the page
    shown["speedup_band"] = shown["speedup_band"].str.replace("–", "–\u200b")  # may wrap after the dash
    pct = lambda m: "" if pd.isna(m) else f"{m:+.0%}"  # noqa: E731
    shown["speedup_margin"] = (pd.to_numeric(shown["measured_speedup"], errors="coerce") - 1).map(pct)
    e = pd.to_numeric(shown["tokens_per_step"], errors="coerce")
    be = pd.to_numeric(shown["break_even_tokens_per_step"], errors="coerce")
    shown["e_margin"] = (e / be.where(be > 0) - 1).map(pct)
    columns = [c for c in _REPORT_COLUMNS  # a setup column only where some workload ran under several setups
               if c != "setup" or shown["setup"].fillna("").astype(str).str.len().gt(0).any()]
    return shown.reindex(columns=columns).rename(columns=_REPORT_COLUMNS)


def _distinct(evaluated: pd.DataFrame, column: str) -> str:
    """The values of a column across the runs, "—" when none names one."""
    if column not in evaluated:
        return "—"
    values = [str(v) for v in dict.fromkeys(evaluated[column].tolist())
              if v is not None and not (isinstance(v, float) and math.isnan(v)) and str(v).strip()]
    return ", ".join(values[:6]) + (f" (+{len(values) - 6} more)" if len(values) > 6 else "") if values else "—"


def setup_lines(evaluated: pd.DataFrame, efficiency: Efficiency | None) -> list[tuple[str, str]]:
    """(what, value) for the report's header: target, draft, GPU, TP, engine (as each run was
    predicted), the calibration state and the tool's version."""
    engine = _distinct(evaluated, "engine")
    return [("target", _distinct(evaluated, "target_preset")), ("draft", _distinct(evaluated, "draft_preset")),
            ("method", _distinct(evaluated, "method")), ("GPU", _distinct(evaluated, "gpu_preset")),
            ("TP", _distinct(evaluated, "tp")),
            ("engine", engine if engine != "—" else f"not named by the runs: predicted with "
             f"{find_engine(DEFAULT_ENGINE).label}'s overheads"),
            ("calibration", f"calibrated: {calibration_line(efficiency)}" if efficiency is not None
             else "uncalibrated (the model's default parameters)"),
            ("specmodel", tool_version())]


_RUNS_AS_READ = ["file", "row", "format", "workload", "concurrency", "k", "method", "alpha", "tokens_per_step",
                 "acceptance_from", "baseline_tok_s", "spec_tok_s", "measured_speedup", "gpu", "gpu_preset",
                 "target_model", "draft_model", "remarks"]


@functools.cache
def _template():
    import jinja2  # here: only a report loads the template engine

    env = jinja2.Environment(loader=jinja2.PackageLoader("specmodel.export", "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    return env.get_template("report.html.j2")


def html_report(evaluated: pd.DataFrame, table: pd.DataFrame, summary: dict, figures: list[go.Figure],
                problems: list | None = None, calibration: dict | None = None,
                efficiency: Efficiency | None = None, decisions: tuple[list, int] = ([], 0)) -> str:
    """One HTML file with everything inline (plotly.js included): opens offline, mails as is. It leads with what
    to deploy (`decisions`: show.runs_decisions' lines and how many workloads they leave out, as the page and
    `runs` lead with them); its head names what the runs were predicted on and the calibration (`efficiency`:
    the applied one, None when uncalibrated; the fit's `calibration` dict adds its errors)."""
    figure_html = []
    for i, fig in enumerate(figures):
        # A file read on its own, without the app's theme: plotly's light template, whatever the
        # figure was drawn with in the app.
        fig = go.Figure(fig).update_layout(template="plotly_white")
        figure_html.append(fig.to_html(full_html=False, include_plotlyjs="inline" if i == 0 else False,
                                       config={"displaylogo": False}))  # plotly's own HTML: the template keeps it as is
    return _template().render(
        title="Speculative decoding: past runs", stamp=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=tool_version(), decisions_more=decisions[1],
        decisions=[(d.line, " ".join(filter(None, (d.per_batch, d.off_note, d.pin)))) for d in decisions[0]],
        setup=setup_lines(evaluated, efficiency), compared=summary.get("rows_compared", 0),
        mape_pct=summary.get("mape_speedup_pct"), agreeing=summary.get("verdicts_agreeing"),
        left_out=left_out_sentence(summary.get("rows_unpredicted") or 0),
        calibration=calibration and {"parameters": [(k, f"{v:.3g}") for k, v in calibration["parameters"].items()],
                                     "message": calibration["message"]},
        cap=REPORT_ROWS, runs=len(table), break_even=_table(_break_even_display(table.head(REPORT_ROWS)), css_class="be"),
        figures=figure_html, runs_read=len(evaluated), runs_as_read=_table(evaluated.head(REPORT_ROWS), _RUNS_AS_READ),
        problems=list(problems or []), problem_cap=REPORT_PROBLEMS)
