"""specmodel.show.runs_view: what the Past runs page says about a review (counts, notes, samples, the load key)."""

import pandas as pd

from specmodel import Efficiency
from specmodel.runs import RunDefaults, read_runs
from specmodel.show import runs_view as runs_view
from tests.conftest import FIXTURES, ROOT


def test_large_counts_are_short_enough_for_a_metric():
    assert [runs_view.compact(n) for n in (8, 1234, 9999, 10_000, 99_800, 145_241, 200_000)] == \
        ["8", "1,234", "9,999", "10k", "99.8k", "145k", "200k"]


def test_charts_get_an_even_spread_tables_the_first_rows_each_with_a_note():
    frame = pd.DataFrame({"i": range(10_001)})
    picked, note = runs_view.shown_rows(frame, 100, "The chart", spread=True)
    assert len(picked) == 100 and picked["i"].iloc[0] == 0 and picked["i"].iloc[-1] == 10_000
    assert note == ("The chart shows 100 of the 10,001 runs, evenly spread over the table; the CSV export has every "
                    "run.")
    first, note = runs_view.shown_rows(frame, 100, "The table")
    assert list(first["i"]) == list(range(100)) and note.startswith("The table shows the first 100 of 10,001 rows")
    same, none = runs_view.shown_rows(frame.head(5), 100, "The table")
    assert none is None and len(same) == 5


def test_a_large_file_is_calibrated_on_an_even_sample_and_says_so():
    rows = pd.DataFrame({"i": range(50_000)})
    fit, note = runs_view.calibration_rows(rows)
    assert len(fit) == runs_view.CALIBRATION_RUNS and fit["i"].iloc[-1] == 49_999
    assert note.startswith("calibrated on 2,000 of the 50,000 runs, evenly spread")
    assert runs_view.calibration_rows(rows.head(10))[1] is None


def test_the_load_key_changes_with_files_settings_pairs_and_calibration():
    files = [("a.csv", b"x")]
    key = runs_view.load_key(files, RunDefaults(), {}, None)
    assert key == runs_view.load_key([("a.csv", b"x")], RunDefaults(), {}, None)
    assert len({key, runs_view.load_key([("a.csv", b"y")], RunDefaults(), {}, None),
                runs_view.load_key(files, RunDefaults(k=3), {}, None),
                runs_view.load_key(files, RunDefaults(), {"a.csv": "b.csv"}, None),
                runs_view.load_key(files, RunDefaults(), {}, Efficiency(eta_bw=0.5))}) == 5


def test_the_problems_label_counts_rows_not_loaded_warnings_and_fallbacks():
    table = read_runs([FIXTURES / "published_dev.csv"])
    label = runs_view.problems_label(table)
    errors = len({p.row for p in table.problems if p.severity == "error"})  # rows, not problems
    warnings = sum(1 for p in table.problems if p.severity == "warning")
    assert errors == 9  # the development set's refused rows (Chinchilla's three each for two reasons; six rows
    # naming no GPU or no draft, and one with no k, load on their measured speedup alone, runs.unpredicted; the
    # vLLM blog's nine QPS rows load at the concurrency each arm's measured latency gives; rows with no k
    # or no draft named load across their spreads)
    assert label.startswith(f"Problems in the input: {errors} rows not loaded, {warnings} warnings (")
    assert table.fallbacks["rows"] == 0 and "fallback" not in label  # nothing predicted on a preset it does not name
    fallen = read_runs([("f.csv", b"workload,concurrency,k,alpha,speedup,gpu\nw,1,4,0.7,1.5,Z9000\n")],
                       RunDefaults(explicit=frozenset({"gpu"})))
    assert runs_view.problems_label(fallen).endswith("1 row predicted on a fallback preset")
    lines = runs_view.problem_lines(table)
    severities = [s for s, _ in lines]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)  # errors first
    assert read_runs([FIXTURES / "seed_runs.csv"]).problems == []
    # its mixed row has no acceptance and is predicted on its file's mean α: never "every row was read" (issue 40)
    assert runs_view.problems_label(read_runs([FIXTURES / "seed_runs.csv"])) == \
        "Problems in the input: 1 row on an assumed acceptance"
    clean = read_runs([("c.csv", b"workload,concurrency,k,alpha,speedup\nw,1,4,0.7,1.5\n")])
    assert runs_view.problems_label(clean) == "Input: every row was read"


def _many_runs(n: int) -> list[tuple[str, bytes]]:
    lines = ["workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s"]
    lines += [f"w{i % 5},{1 + i % 32},4,0.7,100,{110 + i % 40}" for i in range(n)]
    return [("many.csv", "\n".join(lines).encode())]


def test_a_large_load_reports_its_progress_reading_first_then_predicting():
    heard = []
    table, result = runs_view.read_and_review(_many_runs(6_000), RunDefaults(), on_progress=lambda f, t: heard.append((f, t)))
    assert len(table.rows) == len(result.evaluated) == 6_000
    fractions = [f for f, _ in heard]
    assert fractions == sorted(fractions) and 0.0 <= fractions[0] < 0.6 and fractions[-1] == 1.0
    reading = [f for f, t in heard if t.startswith("Reading")]
    assert reading and max(reading) <= 0.6 and all(f >= 0.6 for f, t in heard if t.startswith("Predicting"))
    assert heard[-1][1] == "Predicting: 6,000 of 6,000 runs"


def test_a_small_load_shows_no_progress():
    heard = []
    table, _ = runs_view.read_and_review(_many_runs(50), RunDefaults(), on_progress=lambda f, t: heard.append(t))
    assert len(table.rows) == 50 and heard == []


def test_a_long_break_even_table_shows_its_verdicts_in_the_words_every_page_uses():
    table = pd.DataFrame({"verdict": ["clears", "fails", None], "predicted_verdict": ["borderline", "clears", "fails"]})
    shown = runs_view.in_words(table)
    assert shown["verdict"].tolist()[:2] == ["pays off", "loses"] and pd.isna(shown["verdict"].iloc[2])
    assert shown["predicted_verdict"].tolist() == ["borderline", "pays off", "loses"]
    assert table["verdict"].tolist()[0] == "clears"  # the table itself keeps the codes the JSON carries


def test_the_review_table_shows_each_runs_80_percent_band_beside_its_numbers():
    from specmodel.runs.review import review, with_band_text

    table = review(read_runs([FIXTURES / "seed_runs.csv"]).rows).table
    assert {"speedup_low", "speedup_high"} <= set(table.columns)  # numbers for the CSV export
    shown = with_band_text(table).set_index("workload")["speedup_band"]
    extraction = table.set_index("workload").loc["extraction"]
    assert shown["extraction"] == f"{extraction['speedup_low']:.2f}–{extraction['speedup_high']:.2f}"
    assert extraction["speedup_low"] < extraction["predicted_speedup"] < extraction["speedup_high"]
    no_band = with_band_text(table.assign(speedup_low=None))
    assert set(no_band["speedup_band"]) == {""}  # an empty cell, never "nan–nan"
    assert "speedup_band" in runs_view.filled_columns(with_band_text(table), runs_view.BREAK_EVEN_COLUMNS)


def test_a_number_column_missing_a_value_shows_an_empty_cell_and_the_full_ones_keep_their_numbers():
    from specmodel.runs.review import review

    table = review(read_runs([FIXTURES / "seed_runs.csv"]).rows).table  # the mixed run states no tokens per step
    shown, texts = runs_view.blank_where_missing(table, runs_view.BREAK_EVEN_COLUMNS)
    assert "tokens_per_step" in texts and "measured_speedup" not in texts
    by_workload = shown.set_index("workload")
    assert by_workload.loc["mixed extraction+chat", "tokens_per_step"] == ""  # never "None"
    assert by_workload.loc["extraction", "tokens_per_step"] == "2.77"  # in the column's format
    assert shown["measured_speedup"].dtype.kind == "f"  # a full column still sorts as numbers
    assert table["tokens_per_step"].isna().sum() == 1  # the review's own table is not changed


def test_past_runs_sends_the_break_even_table_without_a_missing_cell_the_grid_would_print_as_none():
    """Streamlit's grid draws a missing number as "None" (on its canvas, where a browser test cannot read it):
    the page sends the seed's mixed run, which states no tokens per step, with an empty text cell instead."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(FIXTURES.parent.parent / "app.py"), default_timeout=90)
    at.run()
    at.switch_page("pages/past-runs.py").run()
    at.file_uploader(key="run_files").set_value([("seed_runs.csv", (FIXTURES / "seed_runs.csv").read_bytes(),
                                                  "text/csv")]).run()
    assert not at.exception
    for table in at.dataframe[:2]:  # the break-even table and its detail under the expander
        shown = table.value[list(table.proto.column_order)]
        assert "workload" in shown.columns
        mixed = shown[shown["workload"] == "mixed extraction+chat"].iloc[0]
        assert "" in mixed.tolist()  # its tokens per step (main table) or its margin in tokens (detail)
        assert not shown.isna().any().any(), shown.isna().sum()


def test_the_margin_reads_in_percent_to_one_decimal_on_every_row():
    """Lab pass 6's draft-model server: margins -22.3%, -39.0%, -28.0% (Streamlit's "percent" format showed
    "-22.33%", "-39.01%", "-28%"); the review's own column keeps the fraction for the CSV export."""
    from specmodel.runs.review import review

    lab = FIXTURES / "real_engine" / "lab" / "pass6_temp0.3"
    table = review(read_runs([lab / f"{arm}_c{c}.json" for arm in ("plain", "draft") for c in (1, 4, 16)]).rows).table
    shown = runs_view.margin_in_percent(table)
    fmt = runs_view.BREAK_EVEN_COLUMNS["margin_pct"][1]
    assert [fmt % v for v in shown.sort_values("concurrency")["margin_pct"]] == ["-22.3%", "-39.0%", "-28.0%"]
    assert table["margin_pct"].min() > -1  # the fraction, unchanged


def test_a_run_the_model_did_not_predict_has_an_empty_model_cell_beside_runs_it_did():
    """The sample's runs with lab pass 6's draft-model run (target 'tiny-llama', no preset) uploaded together: the
    model column of the lab's run was sent as None, which the grid draws as a grey "None"; it is an empty text."""
    from specmodel.runs.review import review

    lab = FIXTURES / "real_engine" / "lab" / "pass6_temp0.3"
    files = [ROOT / "sample_runs" / "multi_workload.csv", lab / "plain_c1.json", lab / "draft_c1.json"]
    table = review(read_runs(files).rows).table
    shown, _ = runs_view.blank_where_missing(table, runs_view.BREAK_EVEN_COLUMNS)
    verdicts = shown["predicted_verdict"].tolist()
    assert "" in verdicts and None not in verdicts and "clears" in verdicts
    assert table["predicted_verdict"].isna().sum() == 1  # the review's own table is not changed
