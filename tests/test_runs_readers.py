"""Run-file readers: every sample format into one table; every kind of bad input gets a located message."""

import json

import pytest

from specmodel.runs import MAX_FILE_BYTES, SAMPLE_DIR, SAMPLES, RunDefaults, read_runs, sample_files
from tests.conftest import FIXTURES, examples

HEADER = "workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s"


def read(text: str | bytes, name: str = "runs.csv", **defaults):
    return read_runs([(name, text.encode() if isinstance(text, str) else text)], RunDefaults(**defaults))


def only_error(table):
    assert len(table.errors) == 1, [str(p) for p in table.problems]
    return table.errors[0]


# --- good files -------------------------------------------------------------------------------------

def test_seed_runs_read_with_gpu_matched_by_numbers_and_mixed_row_borrowing_alpha():
    table = read_runs([FIXTURES / "seed_runs.csv"])
    rows = table.rows.set_index("workload")
    assert list(rows.index) == ["extraction", "chat", "mixed extraction+chat"]
    assert rows.loc["extraction", "measured_speedup"] == pytest.approx(88 / 48)
    assert rows.loc["chat", "tokens_per_step"] == pytest.approx(1.6496, abs=1e-4)
    assert set(rows["gpu_preset"]) == {"L40S"}  # "48GB GPU, ~860 GB/s" matched by memory and bandwidth
    assert ("matched to L40S by its memory and bandwidth (L40 as near; their compute differs)"
            in rows.loc["extraction", "remarks"])  # the L40 has the same memory and bandwidth: said, not hidden
    assert set(rows["target_preset"]) == {"Llama 3.1 8B"} and set(rows["draft_preset"]) == {"Llama 3.2 1B"}
    assert rows.loc["mixed extraction+chat", "measured_speedup"] == pytest.approx(0.85)
    assert rows.loc["mixed extraction+chat", "alpha"] == pytest.approx(0.55)
    assert "mean of the 2 other rows" in rows.loc["mixed extraction+chat", "remarks"]
    assert list(table.rows["row"]) == [2, 3, 4]
    assert not table.errors


# The vLLM bench samples say "gpu": "simulated": no preset, so their rows need a GPU chosen by the user
# (the page's sidebar, --gpu), as here; without one they are refused (test below).
CHOSEN_GPU = RunDefaults(explicit=frozenset({"gpu"}))


def test_a_gpu_that_is_no_preset_is_not_predicted_unless_one_is_chosen():
    table = read_runs([FIXTURES / "vllm_bench_serve_sample.json", FIXTURES / "vllm_bench_serve_baseline_sample.json"])
    # measured first: the row keeps its measured speedup and verdict; no GPU preset stands in for 'simulated'
    assert len(table.rows) == 1 and table.rows.iloc[0]["gpu_preset"] is None and not table.errors
    said = table.rows.iloc[0]["no_prediction"]
    assert "GPU 'simulated'" in said and "give --gpu NAME" in said
    assert any(p.severity == "warning" and "GPU 'simulated'" in p.message for p in table.problems)
    assert table.fallbacks["rows"] == 0


def test_vllm_bench_serve_pair_becomes_one_row_with_measured_speedup():
    table = read_runs([FIXTURES / "vllm_bench_serve_sample.json", FIXTURES / "vllm_bench_serve_baseline_sample.json"],
                      CHOSEN_GPU)
    assert len(table.rows) == 1
    r = table.rows.iloc[0]
    assert r["measured_speedup"] == pytest.approx(3667.868 / 2384.908, rel=1e-4)
    assert r["k"] == 3 and r["method"] == "eagle" and r["concurrency"] == 32
    assert r["tokens_per_step"] == pytest.approx(2.7202, abs=1e-4)  # 1 + Σ per-position rates
    assert r["survival"] == pytest.approx((0.8047, 0.5647, 0.3508), abs=1e-4)
    assert "baseline from vllm_bench_serve_baseline_sample.json" in r["remarks"]
    # "gpu": "simulated" is no preset: the sidebar's choice is used and the table says so
    assert r["gpu_preset"] == "L40S" and "not a preset" in r["remarks"]
    assert any("simulated" in str(p) for p in table.warnings)


def test_speculative_run_without_its_baseline_loads_with_a_warning():
    table = read_runs([FIXTURES / "vllm_bench_serve_sample.json"], CHOSEN_GPU)
    assert len(table.rows) == 1 and table.rows.iloc[0]["measured_speedup"] != table.rows.iloc[0]["measured_speedup"]
    assert any("no baseline run found" in str(p) for p in table.warnings)


def test_user_can_fix_a_pairing_the_automatic_match_misses():
    spec = (FIXTURES / "vllm_bench_serve_sample.json").read_bytes()
    base = json.loads((FIXTURES / "vllm_bench_serve_baseline_sample.json").read_text())
    base["max_concurrency"] = 64  # a different concurrency: no automatic pair
    files = [("spec.json", spec), ("base.json", json.dumps(base).encode())]
    assert read_runs(files, CHOSEN_GPU).rows["measured_speedup"].isna().all()
    paired = read_runs(files, CHOSEN_GPU, pairs={"spec.json": "base.json"})
    assert paired.rows.iloc[0]["measured_speedup"] == pytest.approx(1.538, abs=1e-3)


def test_guidellm_csv_gives_one_row_per_concurrency_level_and_needs_k():
    without_k = read_runs([FIXTURES / "guidellm_benchmarks_sample.csv"])
    assert without_k.rows.empty
    assert [(p.row, p.column) for p in without_k.errors] == [(4, "k"), (5, "k"), (6, "k")]
    table = read_runs([FIXTURES / "guidellm_benchmarks_sample.csv"], RunDefaults(k=3))
    assert list(table.rows["concurrency"]) == [1, 4, 16]
    assert table.rows["spec_tok_s"].round(1).tolist() == [191.2, 731.9, 2226.0]
    # 128 output tokens in ~51 streamed chunks, the first from prefill: about 2.5 tokens per step
    assert table.rows["tokens_per_step"].between(2.4, 2.7).all()
    assert (table.rows["target_preset"] == "Llama 3.1 8B").all()


def test_guidellm_json_baseline_pairs_with_the_csv_sweep_and_a_bad_cell_is_located():
    table = read_runs([FIXTURES / "guidellm_benchmarks_sample.csv", FIXTURES / "guidellm_baseline_benchmarks.json"],
                      RunDefaults(k=3))
    speedups = table.rows.set_index("concurrency")["measured_speedup"]
    assert speedups[1] == pytest.approx(191.2 / 121.5, rel=1e-3)
    assert speedups[4] == pytest.approx(731.9 / 468.0, rel=1e-3)
    err = only_error(table)
    assert (err.file, err.row) == ("guidellm_baseline_benchmarks.json", 3)
    assert "output_tokens_per_second" in err.column and "'not a number'" in err.message


@pytest.mark.parametrize("label", list(SAMPLES))
def test_every_sample_reads_without_errors(label):
    table = read_runs(sample_files(label), RunDefaults(k=3, explicit=frozenset({"gpu"})))  # as the page reads them
    assert not table.errors, [str(p) for p in table.errors]
    assert len(table.rows) >= 1


def test_sample_directory_holds_only_listed_samples_and_a_readme():
    from specmodel.metrics.samples import FLEET_SAMPLE, LIVE_SAMPLE_DIR  # Live and Fleet samples

    listed = {name for names in SAMPLES.values() for name in names}
    assert {p.name for p in SAMPLE_DIR.iterdir()} == listed | {"README.md", LIVE_SAMPLE_DIR.name, FLEET_SAMPLE.name,
                                                                "traffic_mix.csv"}  # the Traffic mix sample


def test_aliases_and_every_acceptance_form_become_tokens_per_step():
    text = "\n".join([
        "Workload,Max Concurrency,num_speculative_tokens,output_throughput,baseline_tok_s,"
        "mean_acceptance_length,draft_acceptance_rate,spec_decode_acceptance_rate,num_drafts,num_accepted_tokens,"
        "draft_tokens,per_position_acceptance,alpha",
        "len,1,4,100,50,3.0,,,,,,,",
        "rate,1,4,100,50,,0.5,,,,,,",
        "pct,1,4,100,50,,,50,,,,,",
        "counts,1,,100,50,,,,100,300,400,,",
        "positions,1,,100,50,,,,,,,0.9;0.7;0.4,",
        "alpha,1,4,100,50,,,,,,,,0.5",
    ])
    rows = read(text).rows.set_index("workload")
    assert rows.loc["len", "tokens_per_step"] == pytest.approx(3.0)
    assert rows.loc["rate", "tokens_per_step"] == pytest.approx(3.0)  # E = 1 + k · rate
    assert rows.loc["pct", "tokens_per_step"] == pytest.approx(3.0)
    assert rows.loc["counts", "tokens_per_step"] == pytest.approx(4.0) and rows.loc["counts", "k"] == 4
    assert rows.loc["positions", "tokens_per_step"] == pytest.approx(3.0) and rows.loc["positions", "k"] == 3
    assert rows.loc["alpha", "tokens_per_step"] == pytest.approx(1.9375)
    assert (rows["measured_speedup"] == 2.0).all()
    assert (rows["concurrency"] == 1).all()


def test_per_position_columns_p1_p2_are_a_survival_profile():
    rows = read("workload,concurrency,p1,p2,speedup\nx,2,0.8,0.5,1.3\n").rows
    assert rows.iloc[0]["k"] == 2 and rows.iloc[0]["tokens_per_step"] == pytest.approx(2.3)


def test_unknown_gpu_and_model_fall_back_to_the_sidebar_choice_and_say_so():
    table = read(HEADER + ",gpu,target_model\nw,1,4,0.7,40,60,TPU v9,Mystery-70B\n", gpu="H100 SXM",
                 target="Qwen3 8B", explicit=frozenset({"gpu", "target"}))
    r = table.rows.iloc[0]
    assert r["gpu_preset"] == "H100 SXM" and r["target_preset"] == "Qwen3 8B"
    assert "GPU 'TPU v9' is not a preset" in r["remarks"] and "model 'Mystery-70B' is not a preset" in r["remarks"]
    assert len(table.warnings) == 2 and all(p.row == 2 for p in table.warnings)


def test_a_fallback_is_named_as_the_caller_says_else_as_the_default():
    text = HEADER + ",gpu,target_model\nw,1,4,0.7,40,60,TPU v9,Mystery-70B\n"
    chosen = frozenset({"gpu", "target"})
    plain = read(text, explicit=chosen).rows.iloc[0]["remarks"]
    assert "predicted with L40S (the default GPU)" in plain and "(the default target)" in plain
    named = read(text, said_as={"gpu": "the GPU box"}, explicit=chosen).rows.iloc[0]["remarks"]
    assert "predicted with L40S (the GPU box)" in named and "(the default target)" in named


# --- bad input ---------------------------------------------------------------------------------------

def test_empty_file():
    err = only_error(read("  \n"))
    assert err.file == "runs.csv" and err.row is None and "empty" in err.message


def test_header_without_rows():
    assert "no rows" in only_error(read(HEADER + "\n")).message


def test_semicolon_delimiter_is_sniffed_and_reported():
    table = read(HEADER.replace(",", ";") + "\nw;1;4;0.7;40;60\n")
    assert len(table.rows) == 1 and table.rows.iloc[0]["measured_speedup"] == pytest.approx(1.5)
    assert "semicolons" in table.warnings[0].message


def test_single_column_file_is_refused_with_what_is_expected():
    err = only_error(read("workload concurrency k alpha\nw 1 4 0.7\n"))
    assert "single column" in err.message and "separated by commas" in err.message


def test_unknown_header_is_reported_and_the_known_columns_still_load():
    table = read(HEADER + ",colour\nw,1,4,0.7,40,60,blue\n")
    assert len(table.rows) == 1
    assert [(p.column, p.severity) for p in table.problems] == [("colour", "warning")]


def test_no_known_header_at_all():
    assert "none of the columns" in only_error(read("a,b,c\n1,2,3\n")).message


def test_non_numeric_cell_names_row_and_column_and_the_other_rows_load():
    table = read(HEADER + "\ngood,1,4,0.7,40,60\nbad,1,4,high,40,60\nalso good,8,4,0.6,300,350\n")
    assert list(table.rows["workload"]) == ["good", "also good"]
    err = only_error(table)
    assert (err.row, err.column) == (3, "alpha") and "'high' is not a number" in err.message
    assert str(err).startswith("runs.csv, row 3, column 'alpha':")


def test_alpha_outside_zero_one():
    err = only_error(read(HEADER + "\nw,1,4,1.3,40,60\n"))
    assert (err.row, err.column) == (2, "alpha") and "[0, 1]" in err.message


def test_acceptance_length_above_k_plus_one():
    err = only_error(read("workload,concurrency,k,acceptance_length,speedup\nw,1,3,4.5,1.2\n"))
    assert (err.row, err.column) == (2, "acceptance_length") and "[1, 4]" in err.message


@pytest.mark.parametrize("value", ["0", "-12"])
def test_zero_or_negative_throughput(value):
    err = only_error(read(HEADER + f"\nw,1,4,0.7,{value},60\n"))
    assert (err.row, err.column) == (2, "baseline_tok_s") and "> 0" in err.message


def test_row_with_too_many_cells_is_skipped_and_located():
    table = read(HEADER + "\nw,1,4,0.7,40,60\nx,1,4,0.7,40,60,oops\ny,2,4,0.7,80,110\n")
    assert list(table.rows["workload"]) == ["w", "y"]
    assert list(table.rows["row"]) == [2, 4]
    err = only_error(table)
    assert err.row == 3 and "7 cells" in err.message


def test_row_without_acceptance_or_measurement():
    err = only_error(read("workload,concurrency,k\nw,1,4\n"))
    assert err.row == 2 and "nothing to compare" in err.message


def test_json_of_the_wrong_shape():
    err = only_error(read(json.dumps({"hello": 1}), "bench.json"))
    assert err.file == "bench.json" and "unknown shape" in err.message and "output_throughput" in err.message


def test_invalid_json():
    assert "not valid JSON (line 1" in only_error(read('{"output_throughput": ', "bench.json")).message


def test_binary_garbage():
    err = only_error(read(bytes(range(256)) * 8, "runs.csv"))
    assert "not a text file" in err.message


def test_file_over_the_upload_limit():
    err = only_error(read(b"a" * (MAX_FILE_BYTES + 1)))
    assert "over the 20 MB limit" in err.message


# --- no input makes the reader raise: whatever the bytes, the answer is rows and problems ------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CELLS = st.sampled_from(["", "1", "4", "0.7", "-3", "1e9", "nan", "inf", "abc", "0", "2.5", "H100", "\"x,y\"", ";"])
HEADERS = st.sampled_from(["workload", "concurrency", "k", "alpha", "baseline_tok_s", "spec_tok_s", "speedup",
                           "tokens_per_step", "survival", "p1", "p2", "gpu", "num_drafts", "accepted_tokens",
                           "t_target_ms", "t_draft_ms", "tp", "context_len", "weird"])


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(HEADERS, min_size=1, max_size=8, unique=True), st.lists(st.lists(CELLS, max_size=9), max_size=5))
def test_any_csv_gives_rows_or_located_problems_never_an_exception(headers, rows):
    text = ",".join(headers) + "\n" + "\n".join(",".join(r) for r in rows)
    table = read(text)
    for r in table.rows.to_dict("records"):  # what loads is physically possible
        assert r["concurrency"] >= 1 and r["k"] >= 1
        assert r["tokens_per_step"] != r["tokens_per_step"] or 1 <= r["tokens_per_step"] <= r["k"] + 1
        assert r["measured_speedup"] != r["measured_speedup"] or r["measured_speedup"] > 0
    for p in table.problems:
        assert p.file == "runs.csv" and p.message


@settings(max_examples=examples(100), deadline=None)
@given(st.binary(max_size=600) | st.text(max_size=400).map(str.encode))
def test_any_bytes_give_rows_or_problems_never_an_exception(data):
    table = read(data, "upload.json" if data[:1] in (b"{", b"[") else "upload.csv")
    assert table.rows.empty or not table.rows["concurrency"].isna().any()


def test_vllm_bench_paced_by_rate_takes_its_concurrency_from_littles_law():
    """`vllm bench serve` without --max-concurrency: the concurrency is request throughput × mean
    end-to-end latency (model.rate.littles_law_concurrency), 14.33 req/s × 2.141 s = 30.7 in the sample."""
    d = json.loads((FIXTURES / "vllm_bench_serve_sample.json").read_text())
    d["max_concurrency"], d["request_rate"] = None, 15.0
    table = read_runs([("paced.json", json.dumps(d).encode())], RunDefaults(gpu="H100 SXM", explicit=frozenset({"gpu"})))
    assert table.rows["concurrency"].tolist() == [31]
    said = [p.message for p in table.problems if p.column == "max_concurrency"]
    assert said and "concurrency estimated as 31 from request throughput × mean latency" in said[0]


def test_rows_out_of_range_or_disagreeing_in_their_own_figures_are_one_line_each_kind_and_one_problem_each():
    from specmodel.runs import collapse_problems

    # a sweep whose speedup column disagrees with its throughputs on three rows (each by its own figures) and whose
    # last three rows have a fractional concurrency below 1 (each its own value)
    text = ("gpu,target_model,method,k,concurrency,tokens_per_step,baseline_tok_s,spec_tok_s,speedup\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,1,2.5,100,140,1.2\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,2,2.5,180,240,1.1\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,4,2.5,300,390,1.5\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,0.5,2.5,100,120,1.2\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,0.25,2.5,100,120,1.2\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,0.75,2.5,100,120,1.2\n")
    table = read_runs([("sweep.csv", text.encode())])
    assert len(table.rows) == 3
    assert [(p.row, p.message) for p in table.problems if p.severity == "error"] == [
        (5, "'0.5' is below 1; expected concurrent requests, 1 to 65,536; row not loaded"),
        (6, "'0.25' is below 1; expected concurrent requests, 1 to 65,536; row not loaded"),
        (7, "'0.75' is below 1; expected concurrent requests, 1 to 65,536; row not loaded")]
    assert [p.message for p in table.problems if "disagrees" in p.message][1] == (
        "speedup 1.1 disagrees with 240 / 180 = 1.333; using the throughputs")
    lines = collapse_problems(table.problems)
    assert ("warning: sweep.csv, rows 2, 3, 4 (3 rows): speedup disagrees with speculative / baseline tokens per "
            "second by more than 2%; using the throughputs (row 2: 1.2 against 140 / 100 = 1.400; row 3: 1.1 against "
            "240 / 180 = 1.333; row 4: 1.5 against 390 / 300 = 1.300)") in lines
    assert ("error: sweep.csv, rows 5, 6, 7 (3 rows), column 'concurrency': a value below 1; expected concurrent "
            "requests, 1 to 65,536; rows not loaded (row 5: '0.5'; row 6: '0.25'; row 7: '0.75')") in lines
    assert len(lines) == 2


def test_cells_that_are_no_number_are_one_line_with_each_rows_reason():
    from specmodel.runs import collapse_problems

    text = ("gpu,target_model,method,k,concurrency,tokens_per_step,speedup\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,1,2.5,1.2\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,four,2.5,1.2\n"
            "H100 SXM,Llama 3.1 8B,draft_model,4,1_6,2.5,1.2\n")
    table = read_runs([("sweep.csv", text.encode())])
    assert [p.message for p in table.problems] == [
        "'four' is not a number; expected concurrent requests, 1 to 65,536; row not loaded",
        "'1_6' has an underscore between digits: write the number without one; expected concurrent requests, 1 to "
        "65,536; row not loaded"]
    assert collapse_problems(table.problems) == [
        "error: sweep.csv, rows 3, 4 (2 rows), column 'concurrency': not a number; expected concurrent requests, 1 to "
        "65,536; rows not loaded (row 3: 'four' is not a number; row 4: '1_6' has an underscore between digits: write "
        "the number without one)"]


def test_a_group_whose_rows_differ_only_past_its_first_rows_still_names_its_kind_not_the_first_rows_message():
    from specmodel.runs import collapse_problems

    cells = ["0.5"] * 4 + ["0.25"]  # the first four rows say the same; the fifth does not
    text = "gpu,target_model,method,k,concurrency,tokens_per_step,speedup\n" + "".join(
        f"H100 SXM,Llama 3.1 8B,draft_model,4,{c},2.5,1.2\n" for c in cells)
    lines = collapse_problems(read_runs([("sweep.csv", text.encode())]).problems)
    assert lines == ["error: sweep.csv, rows 2, 3, 4, 5, 6 (5 rows), column 'concurrency': a value below 1; expected "
                     "concurrent requests, 1 to 65,536; rows not loaded (row 2: '0.5'; row 3: '0.5'; row 4: '0.5'; …)"]
