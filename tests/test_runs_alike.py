"""A load checks the rows alike but for their numbers once (runs/alike.py: a sweep's rows share GPU, models,
method and k) and gives what checking every row alone with validate_row gives: the same table (values and
dtypes), the same problems (messages, rows, columns, order) and the same fallback counts, on CSV files and
`vllm bench serve` lists and vLLM logs that mix good rows with every kind of row validation has something to
say about; bad rows are still named by their row, good ones still load."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from specmodel.runs import alike, load, read_runs

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


def _read(monkeypatch, files, memo: bool, every: int = 7):
    monkeypatch.setattr(alike.Alike, "MAX_KEPT", 4096 if memo else 0)  # 0: every row checked alone
    monkeypatch.setattr(load, "PROGRESS_EVERY", every)
    return read_runs(files)


@pytest.mark.parametrize("files", [
    [("mixed.csv", _file())],
    [("mixed.csv", _file()), ("again.csv", _file(2))],
    [("quoted.csv", _file().replace("chat,", '"chat",'))],
    [("comma.csv", _file().replace(",", ";").replace("2.41", "2,41").replace("2400.5", "2400,5"))],
    [("bench.json", _bench_list(3))],
    [("bench.json", _bench_list(2)), ("again.json", _bench_list(1, dataset_name="random"))],
    # speculative runs paired with a baseline file: each row's remark names its baseline's row
    [("spec.json", _bench_list(1)), ("base.json", _baselines(40))],
    [("engine.log", _log(60))],
])
def test_rows_checked_once_per_alike_group_give_what_checking_each_row_gives(monkeypatch, files):
    alone = _read(monkeypatch, files, memo=False)
    grouped = _read(monkeypatch, files, memo=True)
    pd.testing.assert_frame_equal(grouped.rows, alone.rows, check_dtype=True)
    assert grouped.problems == alone.problems
    assert grouped.fallbacks == alone.fallbacks
    assert len(alone.rows) > 15 and any(p.severity == "error" for p in alone.problems)  # the input is mixed
    loaded = set(zip(alone.rows["file"], alone.rows["row"]))
    assert {(p.file, p.row) for p in alone.problems if p.severity == "error"}.isdisjoint(loaded)


def test_bad_runs_are_named_by_row_and_good_runs_load_among_alike_runs(monkeypatch):
    table = _read(monkeypatch, [("bench.json", _bench_list(1))], memo=True)
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
