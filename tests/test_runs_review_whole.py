"""A whole table reviewed at once (predictions grouped by setup, schedules, advice and verdicts worded a
column at a time: what makes `runs --json` on 200,000 rows take seconds) gives every row what reviewing
that row alone gives, where each schedule is one grid walked batch by batch in Python floats: on a file
that mixes good rows with refused ones, rows predicted on an assumed acceptance, on a spread of k and of
drafts, from a request rate, and rows the model loses, keeps or changes k on."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from specmodel.cli.output import json_value
from specmodel.cli.runs import ROW_KEYS
from specmodel.runs import RunDefaults, read_runs
from specmodel.runs.review import review
from tests.conftest import FIXTURES
from tests.test_runs_alike import HEADER, ROWS

SWEEP = [  # one setup at many α, k and concurrencies: schedules that switch k and turn speculation off
    f"sweep,{gpu},Llama 3.1 8B,Llama 3.2 1B,draft_model,{k},{conc},,{e},,{base},{spec},,,"
    for gpu, k, conc, e, base, spec in [
        ("H100", 2, 1, 2.6, 100, 190), ("H100", 6, 1, 4.1, 100, 260), ("H100", 8, 64, 1.3, 3000, 2100),
        ("H100", 1, 256, 1.8, 9000, 9050), ("L40S", 4, 16, 3.2, 800, 1300), ("L40S", 7, 128, 2.2, 5000, 3000),
        ("A100 80GB", 3, 32, 1.05, 2000, 1500), ("A100 80GB", 5, 4, 5.5, 300, 800),
    ]]


def _mixed():
    return read_runs([("mixed.csv", (HEADER + "\n" + "\n".join(ROWS + SWEEP) + "\n").encode())])


def _table() -> pd.DataFrame:
    mixed = _mixed().rows
    published = read_runs([FIXTURES / "published_dev.csv"], RunDefaults()).rows
    assumed = published["assumed"].fillna("").str.contains("acceptance")
    spread = published["k_spread"].notna() | published["draft_spread"].notna()
    chosen = pd.concat([published[assumed].head(6), published[published["k_spread"].notna()].head(4),
                        published[published["draft_spread"].notna()].head(4),
                        published[published["rate_driven"]].head(3), published[~assumed & ~spread].head(6)])
    return pd.concat([mixed, chosen], ignore_index=True)


# A row's `setup` names what tells it apart from the other rows of its workload in the same table: a
# property of the table, not of the row (a row reviewed alone has no other setup); tests/test_setup_names.py.
OF_THE_TABLE = {"setup"}


def _cells(frame: pd.DataFrame, i: int) -> str:
    return json.dumps({key: json_value(frame[key].iloc[i]) if key in frame.columns else None for key in ROW_KEYS
                       if key not in OF_THE_TABLE}, sort_keys=True, default=str)


@pytest.fixture(scope="module")
def reviewed():
    rows = _table()
    return rows, review(rows).evaluated


def test_a_table_reviewed_at_once_gives_each_row_what_it_gets_alone(reviewed):
    rows, whole = reviewed
    for i in range(len(rows)):
        alone = review(rows.iloc[[i]].reset_index(drop=True)).evaluated
        assert _cells(whole, i) == _cells(alone, 0), f"row {i}: {rows['file'].iloc[i]} row {rows['row'].iloc[i]}"
    # the file holds every kind of row the review words differently (a test that covers them all)
    advice = " | ".join(whole["advice"].dropna())
    for said in ("keep k =", "lower k to", "raise k to", "turn it off above batch", "turn speculation off at batch",
                 "try n-gram"):
        assert said in advice, said
    assert whole["predicted_speedup"].notna().sum() > 30
    assert sum(p.severity == "error" for p in _mixed().problems) >= 10  # refused rows: named, not in the table
    assert whole["assumed"].fillna("").str.contains("acceptance").any()
    assert whole["k_spread"].notna().any() and whole["draft_spread"].notna().any()
    assert whole["uncertain"].eq(True).any() and whole["rate_driven"].eq(True).any()
    assert set(whole["verdict"].dropna()) == {"clears", "borderline", "fails"}
    assert whole["model_agrees"].eq(False).any() and whole["model_agrees"].eq(True).any()


def test_text_columns_stay_text_for_the_page(reviewed):
    """The Past runs page filters and shows these as text (str dtype; missing is NaN, as before)."""
    evaluated = reviewed[1]
    for column in ["advice", "verdict", "verdict_basis", "disagreement", "remarks", "workload", "gpu_preset"]:
        assert str(evaluated[column].dtype) == "str", column
        assert evaluated[column].isna().any() or evaluated[column].str.len().gt(0).any()
