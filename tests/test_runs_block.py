"""A plain CSV file's rows checked a column at a time (RecordBlock, validate.validate_block) give what
checking them one RunRecord at a time gives: the same table (values and dtypes), the same problems
(messages, rows, columns, order) and the same fallback counts, on files that mix good rows with every
kind of row validate() has something to say about."""

from __future__ import annotations

import pandas as pd
import pytest

from specmodel.runs import csv_plain, load, read_runs

HEADER = ("workload,gpu,target_model,draft_model,method,k,concurrency,request_rate,tokens_per_step,alpha,"
          "baseline_tok_s,spec_tok_s,speedup,notes,url")
ROWS = [  # each kind of row, good and bad; the file repeats them so that groups hold many rows
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1000,1500,,,",
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,16,,2.37,,1800,2400.5,,,http://x",
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,32,,2.37,,1800,2400.5,1.3337,,",
    "code,L40S,Qwen2.5 14B,Qwen2.5 0.5B,draft_model,5,4,,3.9,,500,900,,OSL 256,",
    "code,L40S,Qwen2.5 14B,Qwen2.5 0.5B,draft_model,5,4,,,0.71,500,900,,,",
    "code,L40S,Qwen2.5 14B,Qwen2.5 0.5B,draft_model,5,1.5,,3.9,,500,900,,,",  # fractional concurrency
    "code,L40S,Qwen2.5 14B,Qwen2.5 0.5B,draft_model,5,abc,,3.9,,500,900,,,",  # not a number
    "code,L40S,Qwen2.5 14B,Qwen2.5 0.5B,draft_model,5,0,,3.9,,500,900,,,",  # below 1
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,9.5,,1000,1500,,,",  # E above k + 1
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,-5,1500,,,",  # negative throughput
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1000,1500,2.5,,",  # speedup disagrees
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1e999,1500,,,",  # infinite
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,50%,,1000,1500,,,",  # a percent sign
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,n/a,1000,1500,,,",  # an ignored form unreadable
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,,2.5,2.41,,1000,1500,,OSL 128,",  # a request rate
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,,,2.41,,1000,1500,,,",  # no concurrency
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,,8,,2.41,,1000,1500,,,",  # no k
    "chat,H100,Llama 3.1 8B,,eagle,,8,,2.8,,1000,1500,,,",  # k assumed from the method's default
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,,,1000,1700,,,",  # no acceptance: the file's mean
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,64,,,,,,,,",  # nothing to compare
    "chat,Z9000 Turbo,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1000,1500,,,",  # unknown GPU
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,relaxed draft_model,3,8,,2.41,,1000,1500,,,",  # lossy
    "ch\x07at,A100 80GB,Llama 3.1 8B,Llama 3.2 1B,draft_model,2,8,,1.9,,1000,1500,,,",  # a control character
    ",,,,,,,,,,,,,,see the paper",  # no value, only a reference
    "",  # a blank line
    "chat,2x H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1000,1500,,output throughput tok/s/GPU,",  # per GPU
    "chat,2x H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,16,,2.41,,1100,1650,,output throughput tok/s/GPU,",
    "chat,H100,Llama 3.1 8B,,REST,3,8,,2.41,,1000,1500,,,",  # a method the model does not cost
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,2,,2.0, ,1000,1100,,,",  # a cell of spaces
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,1_6,,2.41,,1_000,1500,,,",  # underscores float() reads
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,nan,,2.41,,1000,inf,,,",  # NaN and infinity spelt out
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,\uff18,,2.41,,1000,1500,,,",  # a full-width digit
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1e3,15e2,,,",  # exponents
]


def _file(repeat: int = 4) -> str:
    return HEADER + "\n" + "\n".join(ROWS * repeat) + "\n"


def _read(monkeypatch, files, by_columns: bool, every: int = 7):
    monkeypatch.setattr(csv_plain, "BLOCK_MIN_ROWS", 1 if by_columns else 10**9)
    monkeypatch.setattr(load, "PROGRESS_EVERY", every)  # parts of a block, the groups' rows kept between them
    return read_runs(files)


@pytest.mark.parametrize("files", [
    [("mixed.csv", _file())],
    [("mixed.csv", _file()), ("again.csv", _file(2))],
    # quoted cells: read record by record (csv_records), then checked as a block
    [("quoted.csv", _file().replace("chat,", '"chat",'))],
    # semicolons and decimal commas: the number styles applied to the block's columns
    [("comma.csv", _file().replace(",", ";").replace("2.41", "2,41").replace("2400.5", "2400,5"))],
])
def test_the_block_path_gives_the_row_by_row_table_problems_and_fallbacks(monkeypatch, files):
    by_rows = _read(monkeypatch, files, by_columns=False)
    by_columns = _read(monkeypatch, files, by_columns=True)
    pd.testing.assert_frame_equal(by_columns.rows, by_rows.rows, check_dtype=True)
    assert by_columns.problems == by_rows.problems
    assert by_columns.fallbacks == by_rows.fallbacks
    loaded = set(by_rows.rows["row"])
    assert len(by_rows.rows) > 20 and any(p.severity == "error" for p in by_rows.problems)  # the file is mixed
    assert {p.row for p in by_rows.problems if p.severity == "error"}.isdisjoint(loaded)


def test_the_block_path_stops_where_the_row_path_stops_at_the_processing_limit(monkeypatch):
    from specmodel import limits
    text = _file(30)
    for by_columns in (False, True):
        clock = iter(range(10**6))
        monkeypatch.setattr(limits, "clock", lambda clock=clock: float(next(clock)))
        monkeypatch.setattr(limits, "MAX_LOAD_S", 3.0)
        table = _read(monkeypatch, [("big.csv", text)], by_columns, every=100)
        if not by_columns:
            expected = (table.rows, table.problems)
    pd.testing.assert_frame_equal(table.rows, expected[0])
    assert table.problems == expected[1]
    assert any("limit on processing" in p.message for p in table.problems)


def _without_blank_lines(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if line.strip(", ")) + "\n"


@pytest.mark.parametrize("text", [
    _without_blank_lines(_file()),
    _without_blank_lines(_file()).replace(",", ";").replace("2.41", "2,41").replace("2400.5", "2400,5"),
    _without_blank_lines(_file()).replace(",", "\t").replace("chat", " chat ").replace("1500", "1,500"),
    "\n\n" + _without_blank_lines(_file()).replace("Llama 3.2 1B", "Llama 3.2 1B\u00a0").replace("code", "\tcódigo"),
])
def test_rows_read_in_columns_by_pandas_are_the_rows_the_csv_module_reads(monkeypatch, text):
    """A file without quotes whose every row has the header's cells is read by pandas' C reader: the same table,
    problems (rows, columns, messages, order) and fallbacks as the csv module's reading of it."""
    from specmodel.runs import csv_columns
    fast = read_runs([("sweep.csv", text)])
    monkeypatch.setattr(csv_plain, "frame_rows", lambda *args: None)
    slow = read_runs([("sweep.csv", text)])
    pd.testing.assert_frame_equal(fast.rows, slow.rows, check_dtype=True)
    assert fast.problems == slow.problems and fast.fallbacks == slow.fallbacks
    assert len(fast.rows) > 20 and any(p.severity == "error" for p in fast.problems)
    monkeypatch.undo()
    called = []
    monkeypatch.setattr(csv_plain, "frame_rows", lambda *a, **k: called.append(1) or csv_columns.frame_rows(*a, **k))
    read_runs([("sweep.csv", text)])
    assert called  # the file did go through pandas


@pytest.mark.parametrize("bad", [
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1000,1500,,",  # a cell short
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1000,1500,,,,x",  # a cell too many
    "",  # a blank line
    " , ,\u3000,,,,,,,,,,,,",  # cells of spaces only
    "chat,H100,Llama 3.1 8B,Llama 3.2 1B,draft_model,3,8,,2.41,,1000,1500,,," + "x" * 140_000,  # a cell too long
])
def test_a_file_pandas_would_read_otherwise_keeps_the_csv_modules_rows_and_messages(monkeypatch, bad):
    rows = _without_blank_lines(_file()).split("\n")
    text = "\n".join([*rows[:10], bad, *rows[10:]])
    fast = read_runs([("ragged.csv", text)])
    monkeypatch.setattr(csv_plain, "frame_rows", lambda *args: None)
    slow = read_runs([("ragged.csv", text)])
    pd.testing.assert_frame_equal(fast.rows, slow.rows, check_dtype=True)
    assert fast.problems == slow.problems
    if bad.strip(", \u3000"):
        assert any(p.row == 11 and p.severity == "error" for p in fast.problems)  # the bad row named by its line


def test_rows_past_the_row_limit_and_the_processing_limit_are_cut_where_the_csv_module_cuts_them(monkeypatch):
    from specmodel import limits
    from specmodel.runs import csv_columns
    text = _without_blank_lines(_file(30))
    monkeypatch.setattr(csv_columns, "CHECK_EVERY", 100)
    results = []
    for reader in (csv_columns.frame_rows, lambda *args: None):
        monkeypatch.setattr(csv_plain, "frame_rows", reader)
        monkeypatch.setattr(limits, "MAX_ROWS_PER_FILE", 500)
        clock = iter(range(10**6))
        monkeypatch.setattr(limits, "clock", lambda clock=clock: float(next(clock)))
        monkeypatch.setattr(limits, "MAX_LOAD_S", 4.0)
        table = read_runs([("big.csv", text)])
        results.append((table.rows, table.problems))
    pd.testing.assert_frame_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]
    assert any("limit on processing" in p.message for p in results[0][1])
