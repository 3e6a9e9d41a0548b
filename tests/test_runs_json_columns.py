"""`runs --json` writes its rows a chunk at a time (specmodel.cli.output.print_json_table); what a
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
from specmodel.cli.runs import ROW_KEYS, SAID_AS, WHOLE_KEYS
from specmodel.runs import RunDefaults, read_runs
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
    pytest.param([FIXTURES / "published_dev.csv"], [], marks=pytest.mark.slow),  # the whole development set
    (["odd.csv"], []),
])
def test_runs_json_is_the_row_by_row_document(tmp_path, files, extra):
    if files == ["odd.csv"]:
        files = [tmp_path / "odd.csv"]
        files[0].write_text(ODD, encoding="utf-8")
    result = run_cli("runs", *map(str, files), *extra, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)

    # the defaults the command gives when no flag names them: its remarks say "(the default of --gpu)"
    cli_defaults = RunDefaults(said_as={kind: f"the default of {said}" for kind, said in SAID_AS.items()})
    table = read_runs([(p.name, p.read_bytes()) for p in files], cli_defaults)
    if extra == ["--calibrate"]:  # the fitted parameters' predictions, and the starting ones' beside them
        fit_keys = ["fit_speedup", "fit_speedup_low", "fit_speedup_high", "fit_used"]  # each setup's step fit
        assert [list(r) for r in doc["rows"]] == [[*ROW_KEYS, "predicted_speedup_uncalibrated", *fit_keys]] \
            * len(table.rows)
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
        "whole_flags": [True, False] * 4,
        "text": pd.array(["a", None, "é", "a", "\x00", "b", "a", "c"], dtype="string"),
        "lists": pd.Series([[1, 2], None, [3.33333], [], "s", 1, 2.5, None], dtype=object),
    })
    keys = [*frame.columns, "absent"]
    out = io.StringIO()
    print_json_table("rows", frame, keys, frozenset({"whole_floats", "ints", "whole_flags"}), {"summary": {"n": 8}},
                     out=out)
    doc = json.loads(out.getvalue())
    expected = _reference_rows(frame, keys, {"whole_floats", "ints", "whole_flags"})
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
    """A column that repeats a few numbers (tokens per step to 2 decimals) prints each as formatting every
    cell gives it: null for NaN and ±inf, -0.0 kept apart from 0.0."""
    values = np.array([2.41, np.nan, 2.41, np.inf, 1 / 3, 2.41, -np.inf, 1 / 3, 2.00005, 2.41] * 5)
    for column in (values, np.where(values == 2.41, -0.0, values), np.where(values == 2.41, 0.0, values)):
        out = io.StringIO()
        print_json_table("rows", pd.DataFrame({"tps": column}), ["tps"], frozenset({"tps"} if whole else ()), out=out)
        expected = _reference_rows(pd.DataFrame({"tps": column}), ["tps"], {"tps"} if whole else set())
        assert out.getvalue().startswith('{\n  "rows": [\n    ' + ",\n    ".join(map(json.dumps, expected)))


MIXED_ROWS = 300  # each of the 23 kinds of row below about 13 times (chosen: the mix is the point, not the size)


def _mixed_csv(rows: int = MIXED_ROWS, seed: int = 7) -> str:
    """A run file of every kind at once: four GPUs, two model pairs, three methods, three engines (and
    none), k and acceptance missing or unreadable on some rows, rows the reader refuses, numbers at
    every precision."""
    rng = np.random.default_rng(seed)
    gpus = ["H100", "L40S", "A100 80GB", "H200"]
    pairs = [("Llama 3.1 8B", "Llama 3.2 1B"), ("Qwen2.5 14B", "Qwen2.5 0.5B")]
    lines = ["workload,gpu,target_model,draft_model,method,engine,k,concurrency,tokens_per_step,alpha,"
             "baseline_tok_s,spec_tok_s,speedup"]
    for i in range(rows):
        target, draft = pairs[rng.integers(2)]
        method = ["draft_model", "eagle", "ngram"][rng.integers(3)]
        k = int(rng.integers(1, 9))
        alpha = rng.uniform(0.3, 0.95)
        e = (1 - alpha ** (k + 1)) / (1 - alpha)
        base = rng.uniform(10, 9000)
        cells = [f"w{rng.integers(6)}", gpus[rng.integers(4)], target, draft if method == "draft_model" else "",
                 method, ["vllm", "sglang", "", ""][rng.integers(4)], str(k), str(2 ** int(rng.integers(0, 9))),
                 f"{e:.2f}", "", f"{base:.1f}", f"{base * rng.uniform(0.4, 2.6):.3f}", ""]
        kind = i % 23
        if kind == 1:  # acceptance as α, to many digits
            cells[8], cells[9] = "", repr(alpha)
        elif kind == 2:  # no acceptance
            cells[8] = ""
        elif kind == 3:  # no k
            cells[6] = ""
        elif kind == 4:  # unreadable k: the row is refused
            cells[6] = "x"
        elif kind == 5:  # a measured speedup beside the throughputs
            cells[12] = f"{rng.uniform(0.5, 2.5):.5f}"
        elif kind == 6:  # tokens per step above k + 1: refused
            cells[8] = str(k + 3)
        elif kind == 7:  # no throughputs: predicted only
            cells[10] = cells[11] = ""
        elif kind == 8:  # an unknown GPU
            cells[1] = "Z9000"
        elif kind == 9:  # a target that does not fit its GPU: loaded, not predicted
            cells[1:4] = ["L40S", "Llama 3.1 70B", "Llama 3.2 1B"]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def test_runs_json_of_a_mixed_300_row_file_is_byte_for_byte_the_row_by_row_text(tmp_path):
    """The rows' text is exactly what encoding every row as its own dict printed (json.dumps of each
    row, one a line): the same bytes, not only the same parsed values."""
    path = tmp_path / "mixed.csv"
    path.write_text(_mixed_csv(), encoding="utf-8")
    result = run_cli("runs", str(path), "--json")
    assert result.returncode == 0, result.stderr

    table = read_runs([(path.name, path.read_bytes())])
    evaluated = review(table.rows).evaluated
    assert evaluated["gpu_preset"].nunique() >= 4 and evaluated["method"].nunique() == 3
    assert evaluated["predicted_speedup"].isna().any() and evaluated["predicted_speedup"].notna().sum() > 0.7 * MIXED_ROWS
    assert evaluated["assumed"].str.contains("acceptance").any() and len(evaluated) < MIXED_ROWS  # some refused
    assert any(p.row is not None and p.column == "k" for p in table.problems)
    rows = _reference_rows(evaluated, ROW_KEYS, WHOLE_KEYS)
    expected = '{\n  "rows": [\n    ' + ",\n    ".join(json.dumps(r, allow_nan=False) for r in rows) + "\n  ],\n"
    assert result.stdout.startswith(expected), next(
        f"first difference at character {i}: {result.stdout[i - 80:i + 80]!r}"
        for i, (a, b) in enumerate(zip(result.stdout, expected)) if a != b)


def test_floats_print_as_json_dumps_of_round_4_at_every_magnitude_and_tie():
    """Numbers formatted in bulk are the text json.dumps(round(x, 4)) gives each: halves at the fourth
    decimal both ways, -0.0 and what rounds to it, numbers beyond 10^11, the largest and smallest doubles,
    NaN and ±inf (null); whole keys as int(round(x, 4))."""
    rng = np.random.default_rng(3)
    edges = [0.0, -0.0, 0.00005, -0.00005, 0.00004999, -0.00004999, 0.03125, 1.00005, 2.00005, 0.12345, -0.12345,
             1.99995, 0.99995, -0.99995, 9999.99995, 1e11 - 0.00005, 1e11, 1e11 + 0.5, 1e15 + 0.3, 1e20, -1e20,
             np.finfo(float).max, -np.finfo(float).max, 5e-324, -5e-324, np.nan, np.inf, -np.inf, 1 / 3, 2 / 3, 0.1, 0.7]
    random = np.concatenate([rng.uniform(-1, 1, 3000) * 10.0 ** rng.integers(-6, 14, 3000),
                             np.round(rng.uniform(-50, 50, 2000), 4) + rng.choice([-1, 0, 1], 2000) * 5e-5,
                             rng.integers(-10**6, 10**6, 1000) / 10**4 + 0.5e-4])
    values = np.concatenate([edges, random])
    frame = pd.DataFrame({"x": values, "whole": values})
    out = io.StringIO()
    print_json_table("rows", frame, ["x", "whole"], frozenset({"whole"}), out=out)
    lines = out.getvalue().split("\n")[2:-3]
    for line, v in zip(lines, values.tolist()):
        finite = math.isfinite(v)
        x = json.dumps(round(v, 4)) if finite else "null"
        whole = str(int(round(v, 4))) if finite else "null"
        assert line.strip().rstrip(",") == f'{{"x": {x}, "whole": {whole}}}', v
    assert len(lines) == len(values)


@pytest.mark.parametrize("odd", [None, 2.5, True, {"nested": 1}])
def test_a_long_list_of_records_prints_as_json_dumps_of_each(odd):
    """A file's problems (one per row of 200,000 at worst) print one per line, each item as json.dumps
    writes it: text with quotes, control characters and accents escaped, ints, null; a list with other
    values (a float, a bool, a dict) the same text by the one-at-a-time path."""
    problems = [{"severity": ["warning", "error"][i % 2], "file": "a \"b\".csv", "row": None if i % 7 == 0 else i,
                 "column": None if i % 3 else "k", "message": f"GPU 'H100' \u00e9 \x1b[2J {i % 5}", "reason": None}
                for i in range(1500)]
    if odd is not None:
        problems[700]["reason"] = odd
    out = io.StringIO()
    print_json_table("rows", pd.DataFrame({"a": [1]}), ["a"], rest={"summary": {"n": 1}, "problems": problems}, out=out)
    expected = ('{\n  "rows": [\n    {"a": 1}\n  ],\n  "summary": {\n    "n": 1\n  },\n  "problems": [\n    '
                + ",\n    ".join(json.dumps(p) for p in problems) + "\n  ]\n}\n")
    assert out.getvalue() == expected


def test_rows_written_to_a_terminals_byte_buffer_are_the_text_written_to_a_text_stream():
    """Through SafeStream onto a terminal's text layer the bytes are the text written to a plain text stream,
    and a name with escape sequences reaches them as JSON's escapes, nothing a terminal acts on."""
    frame = pd.DataFrame({"workload": ["chat \x1b[2J\u202e", "code é"] * 3000, "x": np.linspace(0, 1, 6000)})
    problems = [{"severity": "warning", "file": "a.csv", "row": i, "column": None, "message": "m \x07", "reason": None}
                for i in range(1200)]
    text = io.StringIO()
    print_json_table("rows", frame, ["workload", "x"], rest={"summary": {"n": 1}, "problems": problems}, out=text)
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=False)
    print_json_table("rows", frame, ["workload", "x"], rest={"summary": {"n": 1}, "problems": problems},
                     out=output.SafeStream(stream))
    assert raw.getvalue().decode("utf-8") == text.getvalue()
    assert json.loads(text.getvalue())["rows"][0]["workload"] == "chat \x1b[2J\u202e"
    assert not raw.getvalue().translate(None, bytes(range(0x20, 0x7f)) + b"\n")  # printable ASCII only


def test_line_breaks_percent_signs_and_lists_in_cells_print_as_json_dumps_of_each_row():
    """Each column's chunk is encoded in one call with a line break between its cells: a text holding a
    line break (escaped by JSON), a key holding '%' (the row's template) and list cells (encoded a cell at
    a time) still print as json.dumps of each row."""
    frame = pd.DataFrame({"100% text": ["a\nb", "\u2028 c", None, "a\nb"] * 3000,
                          "lists": pd.Series([[1, "x\ny"], None, (2.5, None), "s"] * 3000, dtype=object),
                          "%s": [1.5, np.nan, 2.0, -0.0] * 3000, "same": ["5% off"] * 12000})
    out = io.StringIO()
    print_json_table("rows", frame, list(frame.columns), out=out)
    rows = _reference_rows(frame, list(frame.columns), set())
    assert out.getvalue() == ('{\n  "rows": [\n    ' + ",\n    ".join(json.dumps(r, allow_nan=False) for r in rows)
                              + "\n  ]\n}\n")
