"""Quick fuzz profile of every target in tests/fuzz_targets.py (the long one: `make fuzz`).

Each input must either be read or be refused with SpecModelError (the CLI: exit 0 or 2 with a
message, never a traceback). A failure shows the shrunk input that escaped."""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings

from specmodel import SpecModelError, cli
from specmodel.metrics import prom
from specmodel.plan import workloads
from specmodel.runs import RunDefaults, read_runs
from tests.conftest import ROOT
from tests.fuzz_targets import FLEET_ROWS, TARGETS, _vector, check, target_prom_api

# Inputs per target in `make test`: 150 where one input takes tens of milliseconds, fewer where it takes
# hundreds (a run file goes on through the review, the CSV export and the HTML report; an API answer through
# a real HTTP server), so each test stays under about 10 s on 2 busy cores. `make fuzz` carries the long run
# (2,000 inputs per target, with its coverage report). SPECMODEL_QUICK_FUZZ_EXAMPLES scales every count
# (150 = these; `make test-fast`, the loop while editing, sets 40).
QUICK_EXAMPLES = {"runs csv": 50, "runs guidellm": 50, "runs vllm bench": 50, "runs spec json": 25, "runs vllm log": 20,
                  "runs rows": 10, "runs bytes": 50, "prometheus api": 25, "fleet": 10, "workloads": 60, "cli": 60,
                  "cli commands": 35, "stacked encodings": 50}
SCALE = int(os.environ.get("SPECMODEL_QUICK_FUZZ_EXAMPLES", "150")) / 150


def quick(name: str):
    """The quick profile of one target: deterministic, its QUICK_EXAMPLES inputs (150 if not listed), scaled."""
    return settings(max_examples=max(5, round(QUICK_EXAMPLES.get(name, 150) * SCALE)), deadline=None,
                    database=None, derandomize=True, suppress_health_check=list(HealthCheck))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy overflow warnings on huge inputs are fine
@pytest.mark.parametrize("name, strategy, function", TARGETS, ids=[t[0] for t in TARGETS])
def test_only_the_user_facing_error_escapes(name, strategy, function):
    @quick(name)
    @given(strategy)
    def run(value):
        check(function, value)

    run()


# --- the inputs that escaped before the fixes, kept as plain cases ---------------------------------------

GUIDELLM_CSV = (ROOT / "tests" / "fixtures" / "guidellm_benchmarks_sample.csv").read_text()
VLLM_JSON = json.loads((ROOT / "tests" / "fixtures" / "vllm_bench_serve_sample.json").read_text())


def _with(doc: dict, **changes) -> bytes:
    return json.dumps({**doc, **changes}).encode()


@pytest.mark.parametrize("name, data, rows, error_column", [
    ("survival.csv", b"workload,concurrency,survival\nchat,1,0.5\n", 1, None),  # a plain run still reads
    ("nested.json", json.dumps({"benchmarks": [{"config": {"strategy": {"type_": 5}}}]}).encode(), 0,
     "metrics.output_tokens_per_second.successful.mean"),
    ("huge.json", _with(VLLM_JSON, max_concurrency=10 ** 400), 1, None),
    ("lists.json", _with(VLLM_JSON, acceptance_rate=[[1]], survival=[[0.5], {}]), 1, None),
    ("tiny.json", _with(VLLM_JSON, completed=-7.585141558910223e-307), 1, None),  # lengths overflow to inf (make fuzz)
])
def test_run_files_that_escaped_now_load_or_name_their_problem(name, data, rows, error_column):
    table = read_runs([(name, data)], RunDefaults(explicit=frozenset({"gpu"})))  # the vLLM sample's gpu: "simulated"
    assert len(table.rows) == rows
    assert all(p.file == name for p in table.problems)  # every problem names the file
    errors = [p for p in table.problems if p.severity == "error"]
    assert [p.column for p in errors] == ([error_column] if error_column else [])


@pytest.mark.parametrize("edit, long_row", [
    (lambda lines: lines[:4] + [lines[4] + ",extra,more"] + lines[5:], 5),  # the second benchmark: cells past the header
    (lambda lines: lines[:3] + [lines[3] + ",9"] + lines[4:], 4),  # the first one (pandas shifted every column here)
])
def test_guidellm_csv_rows_longer_than_the_header_are_reported_not_dropped_silently(edit, long_row):
    edited = "\n".join(edit(GUIDELLM_CSV.splitlines())) + "\n"
    table = read_runs([("cut.csv", edited.encode())], RunDefaults(k=3))
    longer = [p for p in table.problems if "more cells than the three header rows" in p.message]
    assert [(p.file, p.row, p.severity) for p in longer] == [("cut.csv", long_row, "warning")]
    assert table.rows["concurrency"].tolist() == [1, 4, 16] and table.rows["row"].tolist() == [4, 5, 6]


def test_a_stray_line_under_guidellm_header_rows_is_one_row_not_loaded_and_the_rest_load():
    lines = GUIDELLM_CSV.splitlines()
    edited = "\n".join(lines[:3] + ["x"] + lines[3:]) + "\n"  # a one-cell line: the reader's line 4
    table = read_runs([("cut.csv", edited.encode())], RunDefaults(k=3))
    assert [(p.row, p.column) for p in table.errors] == [(4, "Token Throughput: Successful Output Tokens/Sec, Mean")]
    assert table.rows["row"].tolist() == [5, 6, 7] and table.rows["concurrency"].tolist() == [1, 4, 16]


def test_a_live_window_with_k_0_is_refused_not_divided_by():
    w = prom.SpecWindow(server="vllm-v1", k=0, window_s=10.0, spec_enabled=True, drafts=10, accepted=0)
    with pytest.raises(SpecModelError, match="k .* whole number ≥ 1"):
        prom.stats_from_window(w)


@pytest.mark.parametrize("body, call", [
    ({"status": "success", "data": None}, "targets"),
    ({"status": "success", "data": {"resultType": "vector", "result": [{"metric": [], "value": [0, "1"]}]}}, "query"),
    ({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}}, "query"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [{"values": [["x", "1"]]}]}}, "query_range"),
])
def test_prometheus_answers_of_the_wrong_shape_are_refused_with_a_message(body, call):
    with pytest.raises(SpecModelError, match="unexpected shape|did not answer like a Prometheus"):
        target_prom_api((("body", json.dumps(body)), 200, "application/json", call))


def test_fleet_ignores_series_without_its_label():
    rows = [(labels, value) for labels, value in FLEET_ROWS] + [({"job": "other"}, "1")]
    report = target_prom_api((("body", json.dumps(_vector(rows))), 200, "application/json", "fleet"))
    expected = {(labels.get("job"), labels.get("instance")) for labels, _ in FLEET_ROWS}
    assert {(i.job, i.instance) for i in report.instances} == expected and len(expected) == 1


@pytest.mark.parametrize("record, message", [
    ({"label": "a", "survival": True}, "survival"), ({"label": "a", "alpha": 10 ** 400}, "alpha"),
    ({"label": "a", "alpha": 0.5, "share": 10 ** 400}, "share"),
])
def test_workload_values_that_escaped_are_refused_by_column(record, message):
    found, errors, _ = workloads.parse_workloads([record])
    assert not found and message in " ".join(errors)


def test_runs_export_to_a_missing_folder_is_one_line_and_exit_2(tmp_path, capsys):
    code = cli.main(["runs", str(ROOT / "sample_runs" / "seed_runs.csv"), "--csv", str(tmp_path / "no" / "t.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write" in err and "Traceback" not in err


def test_every_quick_count_is_for_a_target():
    assert set(QUICK_EXAMPLES) <= {name for name, _, _ in TARGETS}


# Issue 25 (15): `make fuzz` reports line coverage for every reader and the URL policy, and fails under 85%.
READERS = ["runs/csv_plain.py", "runs/csv_rows.py", "runs/cells.py", "runs/guidellm.py", "runs/vllm_bench.py",
           "runs/spec_json.py", "runs/logs.py", "runs/sniff.py", "runs/validate.py", "metrics/prom.py",
           "metrics/promapi.py", "metrics/fleet.py", "metrics/fetch.py", "plan/workloads.py",
           "model/calibration_file.py"]


def test_15_make_fuzz_reports_coverage_of_every_reader_and_the_url_policy_against_85_percent():
    from tests.fuzz_targets import COVERAGE_GOAL, COVERS
    covered = {module.partition("::")[0]: module for modules in COVERS.values() for module in modules}
    assert COVERAGE_GOAL == 85.0
    assert set(READERS) <= set(covered), sorted(set(READERS) - set(covered))
    assert "check_url" in covered["metrics/scrape.py"] and "refused_address" in covered["metrics/scrape.py"]
    names = {name for name, _, _ in TARGETS}
    assert all(set(key.split(" + ")) <= names for key in COVERS)  # every report is of targets that exist
    for module in covered:
        assert (ROOT / "specmodel" / module.partition("::")[0]).is_file(), module
