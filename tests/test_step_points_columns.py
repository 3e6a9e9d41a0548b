"""The step fit's points made columns at a time (runs.step_points.points_of, setup_points) from cells as a reader
or a merge may leave them, and fitting a page's drawn setups first and the rest when
asked for gives setup_fits' fits, in its order, and each fit's runs are its setup's (rows_by_fit)."""

import numpy as np
import pandas as pd

from specmodel.runs.load import read_runs
from specmodel.fit.steps import StepPoint
from specmodel.runs.step_points import fit_setups, points_of, rows_by_fit, setup_fits, setup_points
from tests.conftest import FIXTURES


def _odd_table() -> pd.DataFrame:
    """Cells as a reader or a merge may leave them: numbers as text, NaN, None, pd.NA, numpy scalars in object
    columns, a request-rate row, an implausible measurement, a zero row number, a file with no name."""
    n = 9
    return pd.DataFrame({
        "file": ["a.csv", "a.csv", None, "", "b.csv", "b.csv", np.nan, "c.csv", "c.csv"],
        "row": pd.array([2, 3, None, 0, 5, 6, 7, 8, 9], dtype="Int64"),
        "workload": ["w", "w", "w", None, "v", "v", "v", "v", "v"],
        "concurrency": pd.Series([1, 4, 8, 2, np.float64(0), "16", 16, 32, None], dtype=object),
        "rate_driven": pd.Series([False, None, 1, False, np.False_, False, np.True_, False, False], dtype=object),
        "measured_plausible": pd.Series([True, None, True, np.False_, False, True, True, True, None], dtype=object),
        "baseline_tok_s": [100.0, np.nan, 50.0, 20.0, 10.0, 0.0, 30.0, -5.0, 40.0],
        "spec_tok_s": pd.Series([150.0, 80, None, "x", 12.5, np.float64(9.0), pd.NA, 70.0, 1.0], dtype=object),
        "measured_speedup": [1.5, np.nan, 1.2, np.inf, np.nan, np.nan, 1.1, 2.0, np.nan],
        "tokens_per_step": pd.Series([2.5, None, np.float64(1.7), np.nan, 2.0, 3.0, 1.0, 1.5, 2.0], dtype=object),
        "plain_runs": [None, ((64.0, 500.0, "base.csv row 3"),), None, None, None, None, None, None, None],
        "k": [4] * n, "setup": [""] * n,
    })


def test_points_of_reads_each_runs_point_from_its_cells():
    """Each row's point as the fit reads it (1000·b / tok/s per arm, the measured speedup and E), and None for a
    row that gives none: a request rate, an implausible measurement, a batch that is zero, text or missing."""
    points = points_of(_odd_table())
    assert points[0] == StepPoint(1.0, 10.0, 1000 / 150, 1.5, 2.5, "a.csv row 2")
    assert points[1] == StepPoint(4.0, None, 50.0, None, None, "a.csv row 3")  # no baseline, no speedup, no E
    assert points[7] == StepPoint(32.0, None, 1000 * 32 / 70, 2.0, 1.5, "c.csv row 8")  # a negative baseline: none
    # a request rate (1, True), an implausible run, batch 0, batch as text, no batch: no point
    assert [points[i] for i in (2, 3, 4, 5, 6, 8)] == [None] * 6


def test_fitting_the_drawn_setups_first_then_the_rest_is_setup_fits():
    rows = read_runs([FIXTURES / "published_dev.csv"]).rows
    for top in (None, 8.0):
        groups = setup_points(rows, top)
        assert len(groups) > 3
        every = setup_fits(rows, None, top)
        assert repr(fit_setups(rows, groups[:3]) + fit_setups(rows, groups[3:])) == repr(every)
        owned = rows_by_fit(rows, every[:3])  # the drawn setups' runs: every run of each setup, in order
        assert [tuple(i for i, _ in own) for own in owned] == [g.rows for g in groups[:3]]
        assert all(set(f.rows) <= {i for i, _ in own} for f, own in zip(every[:3], owned))
