"""Wide review tables laid out to fit the page at 1280×720 without scrolling sideways: the columns a verdict
is read from in view, the rest of each row in a second table under an expander (nothing left out). Column
widths in pixels: the main block is 818 px wide at 1280, an expander's inside 786 px."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.parts.display import column_config
from specmodel.runs.review import with_band_text
from specmodel.show import readouts
from specmodel.show import runs_view as runs_view

# A row tall enough for Streamlit to wrap text cells (it wraps above 4rem) and hold three lines.
WRAPPED_ROW_PX = 72
TALL_ROW_PX = 110  # five lines: a run's advice

# Past runs' break-even table: the verdict and the numbers it is read from...
BREAK_EVEN_MAIN = {"verdict": 80, "workload": 105, "concurrency": 90, "measured_speedup": 80,
                   "predicted_verdict": 75, "predicted_speedup": 85, "k": 35, "tokens_per_step": 85,
                   "break_even_tokens_per_step": 80, "margin_pct": 65}
# ...and, per run, the model's 80% band, the advice, how the verdict was reached and where the run comes from (its method and GPU
# are in "Runs as read", same file and row; "model vs measured" is the model's verdict and both speedups,
# shown in the main table).
BREAK_EVEN_DETAIL = {"workload": 90, "concurrency": 85, "speedup_band": 85, "advice": 210, "verdict_basis": 100,
                     "margin_tokens_per_step": 80, "file": 90, "row": 45}  # 785 of the expander's 786 px
# Where a workload ran under several setups, which setup each run is (runs.setups) is in view beside the workload
# (rows that differ only by it read alike otherwise: the lab's n-gram and draft-model servers), the break-even
# moving under the expander in its place...
BREAK_EVEN_MAIN_SETUPS = {"verdict": 75, "workload": 100, "setup": 130, "concurrency": 80, "measured_speedup": 75,
                          "predicted_verdict": 70, "predicted_speedup": 75, "k": 35, "tokens_per_step": 75,
                          "margin_pct": 65}  # 780 of the main block's 818 px
# ...and the detail keeps the tokens margin out (the main table has the margin in percent; the CSV export has both).
BREAK_EVEN_DETAIL_SETUPS = {"workload": 90, "concurrency": 85, "speedup_band": 85, "break_even_tokens_per_step": 80,
                            "advice": 210, "verdict_basis": 100, "file": 90, "row": 45}  # 785 px

# Fleet: who, on which model, the verdict and its prediction and advice...
FLEET_MAIN = {"instance": 115, "model_name": 155, "verdict": 85, "predicted_on": 160, "predicted_speedup": 125,
              "advice": 170}
# ...and the model's band and what each instance measured over the window.
FLEET_DETAIL = {"instance": 115, "job": 100, "speedup_band": 90, "tokens_per_step": 100, "alpha": 55, "k": 40,
                "running_requests": 80, "generation_tok_s": 110, "server": 80}


def _order(columns: dict, picked: dict, present) -> list[str]:
    """The picked columns in the table's own order, those with a value in this table only."""
    return [c for c in columns if c in picked and c in present]


def _height(rows: int, row_px: int, most: int = 10) -> int:
    """Pixels for the header and up to `most` rows of `row_px` (Streamlit's "auto" counts one-line rows)."""
    return 38 + min(max(rows, 1), most) * row_px


def break_even_tables(table_shown) -> None:
    """The break-even table as two that fit: the verdicts in view, advice and source under an expander."""
    columns = runs_view.BREAK_EVEN_COLUMNS
    table_shown = runs_view.margin_in_percent(with_band_text(table_shown))
    filled = runs_view.filled_columns(table_shown, columns)
    table_shown, texts = runs_view.blank_where_missing(table_shown, columns)  # an empty cell, never "None"
    shown = runs_view.break_even_display(table_shown)
    tall = len(table_shown) > 10
    main = BREAK_EVEN_MAIN_SETUPS if "setup" in filled else BREAK_EVEN_MAIN
    st.dataframe(shown, key="break_even_table", hide_index=True, height=440 if tall else "auto",
                 column_order=_order(columns, main, filled),
                 column_config=column_config(columns, main, as_text=tuple(texts)))
    picked = BREAK_EVEN_DETAIL_SETUPS if "setup" in filled else BREAK_EVEN_DETAIL
    detail = _order(columns, picked, filled)
    with st.expander("Advice, how each verdict was reached, file and row"):
        st.dataframe(shown, key="break_even_detail", hide_index=True, height=_height(len(table_shown), TALL_ROW_PX, 5),
                     row_height=TALL_ROW_PX, column_order=detail,
                     column_config=column_config(columns, picked, as_text=tuple(texts)))
        st.caption("Each run's method and GPU: Runs as read below (same file and row). The CSV export has every "
                   "column in one table.")


def fleet_tables(shown) -> None:
    """Fleet's instance table as two that fit: verdict, model and advice in view, the measurements under an
    expander."""
    columns = readouts.FLEET_COLUMNS
    shown, texts = runs_view.blank_where_missing(with_band_text(shown)[list(columns)], columns)  # never "None"
    st.dataframe(shown, key="fleet_table", hide_index=True, width="stretch",
                 row_height=WRAPPED_ROW_PX, height=_height(len(shown), WRAPPED_ROW_PX),
                 column_order=_order(columns, FLEET_MAIN, shown.columns),
                 column_config=column_config(columns, FLEET_MAIN, as_text=tuple(texts)))
    with st.expander("The model's 80% band, and what each instance measured over the window: E, α, k, load, throughput"):
        st.dataframe(shown, key="fleet_measured", hide_index=True, width="stretch",
                     column_order=_order(columns, FLEET_DETAIL, shown.columns),
                     column_config=column_config(columns, FLEET_DETAIL, as_text=tuple(texts)))


# Traffic mix's comparison: each plan and its totals in view; the per-workload numbers (two columns per
# workload, as many as the mix has) under an expander, the plan's name kept in view when they scroll.
MIX_MAIN = {"plan": 190, "pools": 330, "aggregate tok/s": 110, "vs off (×)": 80, "fits in memory": 105}
MIX_FORMATS = {"aggregate tok/s": "%.0f", "vs off (×)": "%.3f"}  # every row alike (1384 beside 1327.4 read oddly)
MIX_WORKLOAD_FORMATS = {": ITL ms": "%.2f", ": tok/s per sequence": "%.1f"}


def _mix_column(name: str, width=None):
    fmt = MIX_FORMATS.get(name) or next((f for end, f in MIX_WORKLOAD_FORMATS.items() if name.endswith(end)), None)
    if fmt:
        return st.column_config.NumberColumn(name, width=width, format=fmt)
    return st.column_config.Column(name, width=width)


def mix_tables(rows: list[dict]) -> None:
    frame = pd.DataFrame(rows)
    per_workload = [c for c in frame.columns if c not in MIX_MAIN]
    st.dataframe(frame, key="mix_comparison", hide_index=True, width="stretch", row_height=WRAPPED_ROW_PX,
                 height=_height(len(frame), WRAPPED_ROW_PX), column_order=list(MIX_MAIN),
                 column_config={c: _mix_column(c, w) for c, w in MIX_MAIN.items()})
    with st.expander("Per workload under each plan: inter-token latency and tok/s per sequence"):
        st.dataframe(frame, key="mix_per_workload", hide_index=True, width="stretch",
                     column_order=["plan", *per_workload],
                     column_config={"plan": st.column_config.Column("plan", width=190, pinned=True),
                                    **{c: _mix_column(c) for c in per_workload}})
