"""`runs --json` writes its rows a column at a time (specmodel.cli.output.print_json_table); what a
script reads is the same document the row-by-row encoder printed: every key, the same values, ints
as ints, true/false as booleans, null for NaN, NA and ±inf, floats to 4 decimals."""

import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from specmodel.cli import output
from specmodel.cli.output import print_json_table
from specmodel.cli.runs import ROW_KEYS, WHOLE_KEYS
from specmodel.runs import read_runs
from specmodel.runs.review import review
from tests.cli_runner import run_cli
from tests.conftest import FIXTURES, ROOT


def _row_by_row(value):
    """The encoder `runs --json` had before, one cell at a time (the oracle)."""
    if value is pd.NA or value is None:
        return None
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else round(value, 4)
    if hasattr(value, "item"):
        return _row_by_row(value.item())
    if isinstance(value, tuple):
        return [_row_by_row(v) for v in value]
    return value


def _reference_rows(frame: pd.DataFrame, keys, whole) -> list[dict]:
    rows = []
    for r in frame.to_dict("records"):
        row = {key: _row_by_row(r.get(key)) for key in keys}
        for key in whole:
            if row.get(key) is not None:
                row[key] = int(row[key])
        rows.append(row)
    return rows


def _canonical(obj) -> str:  # tells 1 from 1.0 and true from 1, which == does not
    return json.dumps(obj, sort_keys=True, allow_nan=False)


ODD = ("workload,gpu,target_model,draft_model,k,concurrency,alpha,baseline_tok_s,spec_tok_s,engine,notes\n"
       "chat \u00e9\u00e8 \u4e2d\u6587,H100 SXM,Llama 3.1 8B,Llama 3.2 1B,4,8,0.7,100,150,vllm,\"quoted, \"\"text\"\"\"\n"
       "code,L40S,Llama 3.1 8B,Llama 3.2 1B,3,1,0.123456789,1e6,2e6,,\n"
       "rag,L40S,Llama 3.1 8B,Llama 3.2 1B,2,64,0.55,,,sglang,no throughput\n"
       "bad,L40S,Llama 3.1 8B,Llama 3.2 1B,x,1,0.5,1,1,,\n")


@pytest.mark.parametrize("files, extra", [
    ([ROOT / "sample_runs" / "multi_workload.csv"], ["--calibrate"]),
    ([FIXTURES / "published_dev.csv"], []),
    (["odd.csv"], []),
])
def test_runs_json_is_the_row_by_row_document(tmp_path, files, extra):
    if files == ["odd.csv"]:
        files = [tmp_path / "odd.csv"]
        files[0].write_text(ODD, encoding="utf-8")
    result = run_cli("runs", *map(str, files), *extra, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)

    table = read_runs([(p.name, p.read_bytes()) for p in files])
    if extra == ["--calibrate"]:  # the fitted parameters' predictions, and the starting ones' beside them
        assert [list(r) for r in doc["rows"]] == [[*ROW_KEYS, "predicted_speedup_uncalibrated"]] * len(table.rows)
        assert _canonical([r["predicted_speedup_uncalibrated"] for r in doc["rows"]]) == _canonical(
            [_row_by_row(v) for v in review(table.rows).evaluated["predicted_speedup"]])
        return
    expected = _reference_rows(review(table.rows).evaluated, ROW_KEYS, WHOLE_KEYS)
    assert [list(r) for r in doc["rows"]] == [ROW_KEYS] * len(expected)  # every key, in order
    assert _canonical(doc["rows"]) == _canonical(expected)
    assert set(doc) >= {"rows", "summary", "problems"}
    if files[0].name == "odd.csv":
        assert doc["rows"][0]["workload"] == "chat \u00e9\u00e8 \u4e2d\u6587"
        assert any(p["row"] == 5 and p["column"] == "k" for p in doc["problems"])


def test_cells_of_every_kind_encode_as_one_at_a_time():
    frame = pd.DataFrame({
        "mixed": pd.Series([True, 1, 1.0, None, np.nan, "x", (1, 2.123456), pd.NA], dtype=object),
        "floats": [np.inf, -0.0, 1e20, 2.00005, np.nan, 1 / 3, -np.inf, 7.0],
        "ints": pd.array([1, None, 3, 4, 5, 6, 7, 8], dtype="Int64"),
        "whole_floats": [1.0, 2.99999, np.nan, 4.5, 5.0, 6.0, 7.0, 8.0],
        "flags": [True, False] * 4,
        "text": pd.array(["a", None, "é", "a", "\x00", "b", "a", "c"], dtype="string"),
        "lists": pd.Series([[1, 2], None, [3.33333], [], "s", 1, 2.5, None], dtype=object),
    })
    keys = [*frame.columns, "absent"]
    out = io.StringIO()
    print_json_table("rows", frame, keys, frozenset({"whole_floats", "ints"}), {"summary": {"n": 8}}, out=out)
    doc = json.loads(out.getvalue())
    expected = _reference_rows(frame, keys, {"whole_floats", "ints"})
    assert _canonical(doc["rows"]) == _canonical(expected)
    assert doc["rows"][0]["mixed"] is True and doc["rows"][1]["mixed"] == 1 and doc["rows"][2]["mixed"] == 1.0
    assert doc["summary"] == {"n": 8}


def test_rows_are_written_a_chunk_at_a_time(monkeypatch):
    """The text of all rows is never held at once: each write carries at most CHUNK_ROWS rows."""
    monkeypatch.setattr(output, "CHUNK_ROWS", 3)
    writes = []

    class Recorder(io.StringIO):
        def write(self, text):
            writes.append(text)
            return super().write(text)

    out = Recorder()
    frame = pd.DataFrame({"a": range(10), "b": [0.5] * 10})
    print_json_table("rows", frame, ["a", "b"], out=out, rest={"problems": []})
    assert max(text.count('"a":') for text in writes) == 3
    assert json.loads(out.getvalue()) == {"rows": [{"a": i, "b": 0.5} for i in range(10)], "problems": []}


@pytest.mark.parametrize("whole", [False, True])
def test_a_float_column_of_few_numbers_prints_as_each_number_alone(whole):
    """A column that repeats a few numbers (tokens per step to 2 decimals) formats each distinct one once:
    the text is what formatting every cell gives, null for NaN and ±inf, -0.0 kept apart from 0.0."""
    values = np.array([2.41, np.nan, 2.41, np.inf, 1 / 3, 2.41, -np.inf, 1 / 3, 2.00005, 2.41] * 5)
    for column in (values, np.where(values == 2.41, -0.0, values), np.where(values == 2.41, 0.0, values)):
        encoded = output._Column("tps", pd.Series(column), whole)
        assert encoded.texts(0, len(column)) == output._float_texts(column, '"tps": ', whole)
    assert output._Column("tps", pd.Series(values), whole).kind == "codes"
