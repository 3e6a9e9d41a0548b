"""Issue 39 item 1, run files: a row's GPU by its numbers (`gpu_bandwidth_gbs`, `gpu_tflops`, `gpu_memory_gb`)
is predicted on that GPU, read by the path --gpu-spec takes; a partial or bad row names the file, row, column
and accepted range, keeps its measured figures, and the good rows load."""

import json

import pytest

from specmodel import cli
from specmodel.model.custom import gpu_from_spec
from specmodel.model.scenario import Scenario, predict
from specmodel.runs import RunDefaults, read_runs
from specmodel.runs.review import review

HEAD = "workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s,gpu,target_model,draft_model,"
NUMBERS = "gpu_bandwidth_gbs,gpu_tflops,gpu_memory_gb\n"
ROWS = ("chat,1,4,0.7,100,150,RTX PRO 6000,Llama 3.1 8B,Llama 3.2 1B,1792,500,96\n"  # row 2: good, named
        "chat,64,4,0.7,700,1000,,Llama 3.1 8B,Llama 3.2 1B,864,362,48\n"  # row 3: good, L40S's numbers, unnamed
        "chat,16,4,0.7,1300,1700,RTX PRO 6000,Llama 3.1 8B,Llama 3.2 1B,1792,,96\n"  # row 4: partial
        "chat,32,4,0.7,2400,2900,RTX PRO 6000,Llama 3.1 8B,Llama 3.2 1B,1792,-5,96\n"  # row 5: out of range
        "chat,8,4,0.7,,,RTX PRO 6000,Llama 3.1 8B,Llama 3.2 1B,1792,fast,96\n"  # row 6: not a number, no measurement
        "chat,64,4,0.7,700,1000,L40S,Llama 3.1 8B,Llama 3.2 1B,,,\n")  # row 7: a preset by name
CSV = (HEAD + NUMBERS + ROWS).encode()


@pytest.fixture(scope="module")
def table():
    return read_runs([("gpus.csv", CSV)])


def _row(table, row: int) -> dict:
    return table.rows[table.rows["row"] == row].iloc[0].to_dict()


def test_good_rows_are_predicted_on_their_numbers_and_named_by_their_gpu_column(table):
    assert table.rows["row"].tolist() == [2, 3, 4, 5, 7]  # row 6 has nothing measured to keep
    named, unnamed = _row(table, 2), _row(table, 3)
    assert (str(named["gpu_preset"]), named["gpu_preset"].bandwidth_GBps) == ("RTX PRO 6000", 1792)
    assert str(unnamed["gpu_preset"]) == "custom GPU"
    assert "GPU by its numbers: RTX PRO 6000, 1792 GB/s, 500 TFLOPS, 96 GB" in named["remarks"]
    result = review(table.rows)
    predicted = dict(zip(result.evaluated["row"], result.evaluated["predicted_speedup"]))
    expected = predict(Scenario.from_names(gpu=gpu_from_spec("bandwidth_gbs=1792,tflops=500,memory_gb=96"),
                                           alpha=0.7, k=4, concurrency=1)).speedup
    assert predicted[2] == pytest.approx(float(expected), rel=1e-6)
    assert predicted[3] == pytest.approx(predicted[7], rel=0.02)  # L40S's numbers: L40S's prediction at batch 64


def test_partial_or_bad_numbers_name_file_row_column_and_range_and_keep_the_measurement(table):
    said = {(p.row, p.column): p for p in table.problems if p.column and p.column.startswith("gpu_")}
    assert set(said) == {(4, "gpu_tflops"), (5, "gpu_tflops"), (6, "gpu_tflops")}
    assert str(said[(4, "gpu_tflops")]).startswith("gpus.csv, row 4, column 'gpu_tflops': ")
    assert "gpu_tflops is missing (accepted 1-100000)" in said[(4, "gpu_tflops")].message
    assert "gpu_tflops = -5 is outside the accepted range 1-100000" in said[(5, "gpu_tflops")].message
    assert "gpu_tflops must be a number in 1-100000, got 'fast'" in said[(6, "gpu_tflops")].message
    assert said[(4, "gpu_tflops")].severity == "warning" and said[(6, "gpu_tflops")].severity == "error"
    for row in (4, 5):  # measured figures kept, no stand-in GPU, no prediction
        kept = _row(table, row)
        assert kept["measured_speedup"] > 1 and kept["gpu_preset"] is None
        assert kept["no_prediction"].startswith("no prediction (judged on its measurement): GPU by its numbers")
    result = review(table.rows)
    judged = result.evaluated.set_index("row")
    assert judged.loc[4, "verdict"] == "clears" and judged.loc[4, "predicted_speedup"] != judged.loc[4, "predicted_speedup"]


def test_runs_json_prints_the_gpu_by_its_name(tmp_path, capsys):
    path = tmp_path / "gpus.csv"
    path.write_bytes(CSV)
    assert cli.main(["runs", str(path), "--json"]) == 0  # a GPU object in a row made the JSON encoder fail
    data = json.loads(capsys.readouterr().out)
    assert [r["gpu_preset"] for r in data["rows"]] == ["RTX PRO 6000", "custom GPU", None, None, "L40S"]
    assert data["summary"]["refused_by_reason"].get("gpu_spec") == 3


def test_the_sidebars_custom_gpu_as_the_default_for_rows_that_name_none():
    gpu = gpu_from_spec({"bandwidth_gbs": 1792, "tflops": 500, "memory_gb": 96, "name": "RTX PRO 6000"}, "x")
    csv = b"workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\nchat,1,4,0.7,100,150\n"
    table = read_runs([("plain.csv", csv)], RunDefaults(gpu=gpu, explicit=frozenset({"gpu"})))
    assert table.rows["gpu_preset"].tolist() == [gpu]
    assert review(table.rows).table["gpu_preset"].tolist() == ["RTX PRO 6000"]  # what a grid shows: the name
