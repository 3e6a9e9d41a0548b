"""A JSON reader's runs checked a column at a time (records.blocks_of: alike records in a row become one
RecordBlock, validate_block.validate_block) give what checking them one RunRecord at a time gives: the
same table (values and dtypes), the same problems (messages, rows, columns, order) and the same fallback
counts, on `vllm bench serve` lists and vLLM logs that mix good runs with every kind of value
validate() has something to say about; bad runs are still named by their row, good ones still load."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from specmodel.runs import load, read_runs, records

GOOD = {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "draft_model": "Llama 3.2 1B",
        "label": "draft k3", "dataset_name": "sharegpt", "max_concurrency": 8, "output_throughput": 1500.0,
        "completed": 100, "total_input_tokens": 51200, "total_output_tokens": 12800,
        "spec_decode_num_drafts": 1000, "spec_decode_draft_tokens": 3000, "spec_decode_accepted_tokens": 1400,
        "spec_decode_per_position_acceptance_rates": [0.7, 0.45, 0.25]}


def _run(**change) -> dict:
    run = {**GOOD, **change}
    return {k: v for k, v in run.items() if v is not ...}


# Every run has GOOD's keys in GOOD's order unless it drops one, so most runs fall into a few long blocks
# and the bad ones sit inside them.
VARIANTS = [
    {},
    {"max_concurrency": 16, "output_throughput": 2400.5},
    {"max_concurrency": 32.0, "output_throughput": 3000},  # a float concurrency, an int throughput
    {"max_concurrency": "64", "output_throughput": "4100.5"},  # numbers written as text
    {"max_concurrency": 1.5},  # fractional: rounded, with a remark
    {"max_concurrency": "abc"},  # not a number
    {"max_concurrency": 0},  # below 1
    {"max_concurrency": True},  # true is no number
    {"max_concurrency": 10 ** 30},  # beyond the bound
    {"max_concurrency": float("nan")},  # NaN (json.loads reads it)
    {"max_concurrency": "8 "},  # text with a space
    {"max_concurrency": ""},  # empty text: present, not a number
    {"max_concurrency": [8]},  # a list
    {"spec_decode_per_position_acceptance_rates": [0.7, "x", 0.25]},  # a survival list that is not numbers
    {"spec_decode_per_position_acceptance_rates": [0.4, 0.7, 0.25]},  # rising: refused by the conversion
    {"spec_decode_per_position_acceptance_rates": [0.9, 0.8, 0.7, 0.6, 0.5]},  # longer than k
    {"spec_decode_per_position_acceptance_rates": [1, 0.45, 0.25]},  # an int among the floats
    {"spec_decode_per_position_acceptance_rates": [True, 0.45, 0.25]},  # true among them
    {"spec_decode_per_position_acceptance_rates": [-0.0, 0.0, 0.0]},
    {"spec_decode_per_position_acceptance_rates": [1e400, 0.5]},  # beyond a float (json reads inf)
    {"gpu": "Z9000 Turbo"},  # no preset: a fallback
    {"gpu": "H1\x0700"},  # a control character
    {"gpu": 100},  # a name that is a number
    {"label": "relaxed draft k3"},  # lossy
    {"label": "REST"},  # a method the model does not cost
    {"draft_model": ...},  # no draft named
    {"temperature": 0},  # zero is a value (not an empty cell)
    {"temperature": "greedy"},
    {"temperature": -1},
    {"output_throughput": -5},  # refused by the reader itself
    {"output_throughput": float("inf")},
    {"max_concurrency": ..., "request_throughput": 10.0, "mean_e2el_ms": 800.0},  # estimated concurrency
    {"spec_decode_per_position_acceptance_rates": ..., "spec_decode_acceptance_length": 2.4},
    {"spec_decode_per_position_acceptance_rates": ..., "spec_decode_acceptance_length": 9.5},  # E above k + 1
    {"spec_decode_per_position_acceptance_rates": ..., "spec_decode_acceptance_rate": 150},  # above 100 %
]


def _bench_list(repeat: int, **change) -> bytes:
    runs = []
    for i in range(repeat):  # long runs of alike records, the bad ones among them
        for v in VARIANTS:
            runs += [_run(**{**v, **change})] * (3 if i % 2 else 1)
    return json.dumps(runs).encode()


def _baselines(count: int) -> bytes:
    base = {k: v for k, v in GOOD.items() if not k.startswith("spec_decode")}
    return json.dumps([{**base, "label": "baseline", "output_throughput": 1000.0 + i} for i in range(count)]).encode()


def _log(lines: int) -> bytes:
    out = []
    for i in range(lines):
        out.append(f"INFO 11-29 17:55:{i % 60:02d} [loggers.py:123] Engine 000: Running: {8 if i % 5 else 0} reqs")
        rate = "0.8, 0.6, 0.4" if i % 7 else "0.8, 0.9, 0.4"
        out.append(f"INFO 11-29 17:55:{i % 60:02d} [metrics.py:96] SpecDecoding metrics: Mean acceptance length: "
                   f"{2.8 if i % 11 else 9.9:.2f}, Accepted throughput: 12.5 tokens/s, Drafted throughput: 20.0 "
                   f"tokens/s, Accepted: 125 tokens, Drafted: 200 tokens, Per-position acceptance rate: {rate}, "
                   "Avg Draft acceptance rate: 62.5%")
    return "\n".join(out).encode()


def _read(monkeypatch, files, by_columns: bool, every: int = 7):
    monkeypatch.setattr(records, "BLOCK_MIN_RECORDS", 1 if by_columns else 10 ** 9)
    monkeypatch.setattr(load, "PROGRESS_EVERY", every)  # parts of a block, the groups' rows kept between them
    return read_runs(files)


@pytest.mark.parametrize("files, every", [
    ([("bench.json", _bench_list(3))], 7),
    ([("bench.json", _bench_list(2)), ("again.json", _bench_list(1, dataset_name="random"))], 7),
    # speculative runs paired with a baseline file: each row's remark names its baseline's row
    ([("spec.json", _bench_list(1)), ("base.json", _baselines(40))], 7),
    ([("engine.log", _log(60))], 7),
    # a log's lines each name their line: parts of mostly unlike rows go row by row inside the block path
    ([("engine.log", _log(400))], 5000),
    ([("bench.json", _bench_list(12))], 5000),  # parts of many groups
])
def test_the_block_path_gives_the_record_by_record_table_problems_and_fallbacks(monkeypatch, files, every):
    by_rows = _read(monkeypatch, files, by_columns=False, every=every)
    by_columns = _read(monkeypatch, files, by_columns=True, every=every)
    pd.testing.assert_frame_equal(by_columns.rows, by_rows.rows, check_dtype=True)
    assert by_columns.problems == by_rows.problems
    assert by_columns.fallbacks == by_rows.fallbacks
    assert len(by_rows.rows) > 15 and any(p.severity == "error" for p in by_rows.problems)  # the input is mixed
    loaded = set(zip(by_rows.rows["file"], by_rows.rows["row"]))
    assert {(p.file, p.row) for p in by_rows.problems if p.severity == "error"}.isdisjoint(loaded)


def test_bad_runs_are_named_by_row_and_good_runs_load_in_the_block_path(monkeypatch):
    table = _read(monkeypatch, [("bench.json", _bench_list(1))], by_columns=True)
    at = {i: v for i, v in enumerate(VARIANTS, start=1)}  # repeat 1: row i is VARIANTS[i - 1]
    below = next(i for i, v in at.items() if v == {"max_concurrency": 0})
    errors = [p for p in table.problems if p.row == below and p.severity == "error"]
    assert [(p.column, p.message.split(";")[0]) for p in errors] == [("max_concurrency", "'0.0' is below 1")]
    listed = next(i for i, v in at.items() if v == {"spec_decode_per_position_acceptance_rates": [0.7, "x", 0.25]})
    errors = [p for p in table.problems if p.row == listed and p.severity == "error"]
    assert [p.column for p in errors] == ["spec_decode_per_position_acceptance_rates"]
    assert "is not a list of numbers" in errors[0].message
    loaded = dict(zip(table.rows["row"], table.rows["concurrency"]))
    assert loaded[1] == 8 and loaded[2] == 16 and loaded[3] == 32 and loaded[4] == 64
    fractional = next(i for i, v in at.items() if v == {"max_concurrency": 1.5})
    assert loaded[fractional] == 2
    assert "concurrency 1.5 rounded to 2" in table.rows.set_index("row").loc[fractional, "remarks"]


def test_a_json_list_of_alike_runs_becomes_one_block():
    recs = [records.RunRecord("f.json", i, "vllm bench serve", {"concurrency": 8, "spec_tok_s": 1.0 * i},
                              {}, "spec", remarks=["r"]) for i in range(1, 41)]
    odd = records.RunRecord("f.json", 41, "vllm bench serve", {"concurrency": 8}, {}, "spec")
    out = records.blocks_of([*recs, odd])
    assert [type(r).__name__ for r in out] == ["RecordBlock", "RunRecord"]
    assert len(out[0]) == 40 and out[0].record(4) == recs[4]
