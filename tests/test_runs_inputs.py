"""More inputs for Past runs: vLLM log lines (V0 and V1), vLLM per-request spec-decode JSON (one response or
JSON Lines, pooled) and AIPerf's spec-decode export; guidellm's k message and remark."""

import json
import math

import pytest

from specmodel import cli
from specmodel.runs import RunDefaults, read_runs
from specmodel.runs import logs as runs_logs
from tests.conftest import FIXTURES

LOG = FIXTURES / "vllm_v1_specdecode.log"


def test_a_vllm_log_file_becomes_one_run_per_logged_line_with_its_time_and_load():
    table = read_runs([LOG])
    assert not table.errors, [str(p) for p in table.errors]
    rows = table.rows
    assert rows["tokens_per_step"].round(3).tolist() == [2.5, 2.2, 1.6]  # 1 + Σ per-position rates
    assert rows["concurrency"].tolist() == [8, 32, 96]  # "Running: N reqs" of the engine line before
    assert rows["k"].tolist() == [3, 3, 3]
    assert rows["row"].tolist() == [9, 12, 14]  # the log's line numbers
    assert "logged 09-16 06:26:47" in rows["notes"].iloc[1]
    trend = runs_logs.acceptance_trend(LOG.read_text())
    assert trend["time"].tolist() == ["09-16 05:26:47", "09-16 06:26:47", "09-16 07:26:47"]
    assert trend["tokens_per_step"].tolist() == [2.5, 2.2, 1.6]


def test_runs_cli_reads_a_log_file(capsys):
    assert cli.main(["runs", str(LOG), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["concurrency"] for r in data["rows"]] == [8, 32, 96]
    assert [round(r["tokens_per_step"], 3) for r in data["rows"]] == [2.5, 2.2, 1.6]
    # With acceptance falling as load rises, the model says where it stops paying: each row is judged.
    assert all(r["verdict"] in ("clears", "borderline", "fails") for r in data["rows"])


PASTED_V0 = ("INFO 05-01 10:00:00 metrics.py:412] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
             "52.1 tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.2%\n"
             "some other text the user pasted\n"
             "INFO 05-01 10:00:00 metrics.py:412] Speculative metrics: Draft acceptance rate: 0.655, "
             "System efficiency: 0.649\n")


def test_pasted_v0_lines_need_k_and_say_where_to_give_it():
    without = read_runs([("pasted.txt", PASTED_V0)])
    assert without.rows.empty
    message = str(without.errors[0])
    assert "pasted.txt, row 3" in message and "--k" in message and "k for files that do not record it" in message
    with_k = read_runs([("pasted.txt", PASTED_V0)], RunDefaults(k=4))
    assert with_k.rows["tokens_per_step"].iloc[0] == pytest.approx(0.649 * 5)
    assert with_k.rows["concurrency"].iloc[0] == 4
    assert "System efficiency 0.649 × (k + 1), k = 4 from the settings".lower() in with_k.rows["remarks"].iloc[0].lower()


def test_a_v0_line_with_its_number_of_speculative_tokens_needs_nothing_else():
    line = ("Speculative metrics: Draft acceptance rate: 0.655, System efficiency: 0.649, Number of speculative "
            "tokens: 3, Number of accepted tokens: 1965, Number of draft tokens: 3000, Number of emitted tokens: 2596.")
    table = read_runs([("v0.log", line)])
    assert table.rows["tokens_per_step"].iloc[0] == pytest.approx(0.649 * 4)
    assert table.rows["k"].iloc[0] == 3


def test_per_request_json_lines_are_pooled_over_verify_steps():
    table = read_runs([FIXTURES / "vllm_per_request_spec.jsonl"])
    assert not table.errors
    row = table.rows.iloc[0]
    assert len(table.rows) == 1 and row["k"] == 3
    assert row["tokens_per_step"] == pytest.approx(1 + 31 / 18)
    assert row["survival"] == pytest.approx([16 / 18, 11 / 18, 4 / 18])
    assert row["target_preset"] == "Llama 3.1 8B"
    assert any(p.column == "concurrency" and "batch 1" in p.message for p in table.warnings)


def test_one_per_request_response_reads_alone():
    lines = (FIXTURES / "vllm_per_request_spec.jsonl").read_text().splitlines()
    response = json.loads(lines[2])  # the second response
    table = read_runs([("one.json", json.dumps(response, indent=2))])
    assert table.rows["tokens_per_step"].iloc[0] == pytest.approx(1 + 16 / 8)


def test_runs_cli_reads_a_per_request_json(capsys):
    assert cli.main(["runs", str(FIXTURES / "vllm_per_request_spec.jsonl"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["tokens_per_step"] == pytest.approx(1 + 31 / 18, abs=1e-4) and row["k"] == 3


def test_aiperf_export_gives_e_k_survival_and_concurrency():
    table = read_runs([FIXTURES / "aiperf_profile_export_aiperf.json"])
    assert not table.errors, [str(p) for p in table.problems]
    # A speculative export alone: read, and said to lack the baseline export its measured speedup needs.
    assert [p.message.split(":")[0] for p in table.warnings] == ["no baseline run found for this model, dataset and "
                                                                 "concurrency"]
    row = table.rows.iloc[0]
    assert (row["concurrency"], row["k"]) == (16, 5)
    assert row["tokens_per_step"] == pytest.approx(1 + 56320 / 25600)
    assert row["survival"][0] == pytest.approx(1 - 6400 / 25600)
    assert row["spec_tok_s"] == pytest.approx(1874.2)


def test_aiperf_records_trace_lines_are_pooled():
    rec = {"metadata": {}, "metrics": {}, "spec_decode_acceptance": {
        "engine": "vllm", "mean_acceptance_length": 3.0, "draft_acceptance_rate": 0.4,
        "acceptance_histogram": {"0": 1, "2": 2, "5": 1}, "num_accepted_draft_tokens": 9, "num_draft_tokens": 20,
        "num_spec_steps": 4, "num_spec_tokens": 5}}
    text = "\n".join(json.dumps(rec) for _ in range(3))
    row = read_runs([("profile_export.jsonl", text)]).rows.iloc[0]
    assert row["k"] == 5 and row["tokens_per_step"] == pytest.approx(1 + 27 / 12)
    assert row["survival"] == pytest.approx([3 / 4, 3 / 4, 1 / 4, 1 / 4, 1 / 4])


def test_bad_per_request_input_names_file_and_line():
    table = read_runs([("broken.jsonl", '{"metrics": {"speculative_decoding": {"num_spec_steps": 4}}}\n{not json\n')])
    assert "broken.jsonl" in str(table.errors[0]) and "line 2 is not valid JSON" in str(table.errors[0])
    nothing = read_runs([("zero.json", '{"metrics": {"speculative_decoding": {"num_spec_steps": 0, '
                                       '"num_accepted_draft_tokens": 0}}}')])
    assert "--per-request-spec-decode-metrics" in str(nothing.errors[0])


def guidellm_spec_json() -> str:
    bench = {"type_": "generative_benchmark",
             "config": {"strategy": {"type_": "concurrent", "streams": 4},
                        "backend": {"model": "meta-llama/Llama-3.1-8B-Instruct"}},
             "metrics": {"output_tokens_per_second": {"successful": {"mean": 700.0}},
                         "prompt_token_count": {"successful": {"mean": 512}},
                         "output_token_count": {"successful": {"mean": 128}},
                         "output_tokens_per_iteration": {"successful": {"mean": 2.66}}}}
    return json.dumps({"benchmarks": [bench]})


def test_guidellm_without_k_names_the_flag_and_the_page_control():
    table = read_runs([("benchmarks.json", guidellm_spec_json())])
    message = str(table.errors[0])
    assert "--k" in message and '"k for files that do not record it"' in message
    assert "add a k column" not in message.split("(")[0]


def test_guidellm_json_remark_states_the_formula_it_used():
    table = read_runs([("benchmarks.json", guidellm_spec_json())], RunDefaults(k=3))
    row = table.rows.iloc[0]
    assert row["tokens_per_step"] == pytest.approx(2.66)
    assert "output_tokens_per_iteration" in row["remarks"] and "= 2.660" in row["remarks"]
    assert "(output tokens − 1) / (chunks − 1)" not in row["remarks"]


# --- AIPerf layouts, older per-choice stats, guidellm's small concurrencies ----------------------------

def test_aiperf_records_layout_without_speculation_is_a_baseline_paired_with_the_speculative_export():
    # tests/fixtures/aiperf_records_layout_*.json: the layout of AIPerf's examples/artifacts/run1 (commit 7c31f57).
    alone = read_runs([FIXTURES / "aiperf_records_layout_baseline.json"])
    assert alone.rows.empty and not alone.errors
    assert "a run without speculation" in str(alone.warnings[0]) and "concurrency 16" in str(alone.warnings[0])
    table = read_runs([FIXTURES / "aiperf_records_layout_spec.json", FIXTURES / "aiperf_records_layout_baseline.json"])
    assert not table.errors and not table.warnings, [str(p) for p in table.problems]
    row = table.rows.iloc[0]
    assert (row["concurrency"], row["k"]) == (16, 4)
    assert row["tokens_per_step"] == pytest.approx(1 + 52000 / 24000)
    assert row["measured_speedup"] == pytest.approx(1874.2 / 1402.5)
    assert "baseline from aiperf_records_layout_baseline.json" in row["remarks"]


@pytest.mark.parametrize("where", [("input_config", "loadgen"), ("user_config", "loadgen"), ("input_config",), ()])
def test_aiperf_concurrency_is_found_wherever_the_export_keeps_it(where):
    doc = json.loads((FIXTURES / "aiperf_records_layout_spec.json").read_text())
    del doc["input_config"]["loadgen"]
    cur = doc
    for key in where:
        cur = cur.setdefault(key, {})
    cur["concurrency"] = 24
    row = read_runs([("profile_export_aiperf.json", json.dumps(doc))]).rows.iloc[0]
    assert row["concurrency"] == 24


def test_an_aiperf_0_11_export_at_32_is_judged_at_32_and_pairs_with_its_baseline():
    # tests/fixtures/aiperf_phases_layout_*.json: AIPerf 0.11's layout (input_config = the BenchmarkConfig, the
    # concurrency in its profiling phase, input_config.phases[1], after a warmup phase); read at batch 1 before.
    table = read_runs([FIXTURES / "aiperf_phases_layout_spec.json", FIXTURES / "aiperf_phases_layout_baseline.json"])
    assert not table.errors and not table.warnings, [str(p) for p in table.problems]
    row = table.rows.iloc[0]
    assert (row["concurrency"], row["k"], row["target_preset"]) == (32, 3, "Llama 3.1 8B")
    assert row["tokens_per_step"] == pytest.approx(1 + 80400 / 48000)
    assert row["measured_speedup"] == pytest.approx(2510.4 / 1820.0)
    assert "baseline from aiperf_phases_layout_baseline.json" in row["remarks"]


@pytest.mark.parametrize("phases, expected", [
    ([{"name": "warmup", "kind": "warmup", "concurrency": 4}, {"name": "profiling", "concurrency": 48}], 48),
    ([{"name": "steady", "kind": "profiling", "concurrency": 12}], 12),  # a named phase of kind profiling
    ([{"name": "prime", "exclude_from_results": True, "concurrency": 2}, {"name": "load", "concurrency": 20}], 20),
])
def test_aiperf_reads_the_concurrency_of_the_profiling_phase_not_the_warmup(phases, expected):
    doc = json.loads((FIXTURES / "aiperf_phases_layout_spec.json").read_text())
    doc["input_config"]["phases"] = phases
    table = read_runs([("profile_export_aiperf.json", json.dumps(doc))])
    assert table.rows.iloc[0]["concurrency"] == expected


def test_aiperf_concurrency_in_the_runtime_section_is_read_too():
    doc = json.loads((FIXTURES / "aiperf_phases_layout_spec.json").read_text())
    del doc["input_config"]["phases"]
    doc["input_config"]["runtime"] = {"concurrency": 40, "workers": 8}
    assert read_runs([("profile_export_aiperf.json", json.dumps(doc))]).rows.iloc[0]["concurrency"] == 40
    del doc["input_config"]["runtime"]
    table = read_runs([("profile_export_aiperf.json", json.dumps(doc))])  # none at all: batch 1, and said where
    assert table.rows.iloc[0]["concurrency"] == 1
    assert any("input_config.phases[0].concurrency" in str(p) and "batch 1" in str(p) for p in table.warnings)


def test_aiperf_metrics_as_a_list_of_tagged_records_read_the_same():
    doc = json.loads((FIXTURES / "aiperf_records_layout_spec.json").read_text())
    doc["records"] = list(doc["records"].values())
    row = read_runs([("profile_export_aiperf.json", json.dumps(doc))]).rows.iloc[0]
    assert row["tokens_per_step"] == pytest.approx(1 + 52000 / 24000) and row["k"] == 4


def test_older_per_choice_speculative_decoding_stats_are_pooled():
    table = read_runs([FIXTURES / "vllm_per_choice_spec_stats.jsonl"])
    assert not table.errors, [str(p) for p in table.errors]
    row = table.rows.iloc[0]
    assert row["tokens_per_step"] == pytest.approx(1 + 40 / 28) and row["k"] == 3


def test_guidellm_small_measured_concurrency_is_printed_with_its_digits():
    bench = json.loads(guidellm_spec_json())
    level = bench["benchmarks"][0]
    level["config"]["strategy"] = {"type_": "constant", "rate": 0.05}
    level["metrics"]["request_concurrency"] = {"successful": {"mean": 0.0079}}
    table = read_runs([("benchmarks.json", json.dumps(bench))], RunDefaults(k=3))
    assert any("measured mean 0.0079 → 1" in str(p) for p in table.problems), [str(p) for p in table.problems]


def test_vllm_bench_drafts_shorter_than_k_are_judged_at_their_mean_draft_length():
    # The real lab's n-gram run (tests/fixtures/real_engine/ngram_c16.json, vLLM 0.32, num_speculative_tokens 4):
    # 6480 draft tokens over 1732 drafts = 3.74 on average, which rounds to its k = 4: judged at 4.
    real = read_runs([FIXTURES / "real_engine" / "ngram_c16.json", FIXTURES / "real_engine" / "plain_c16.json"])
    row = real.rows.iloc[0]
    assert row["k"] == 4 and math.isnan(row["max_draft_length"])
    # The same run where n-gram found a match for half the tokens (2000 draft tokens over 1000 drafts): judged at
    # k = 2, what was verified on average, with the longest draft (4) beside it, E = 1 + 1300 / 1000.
    doc = json.loads((FIXTURES / "real_engine" / "ngram_c16.json").read_text())
    doc.update(spec_decode_num_drafts=1000, spec_decode_draft_tokens=2000, spec_decode_accepted_tokens=1300,
               spec_decode_per_position_acceptance_rates=[0.7, 0.4, 0.15, 0.05], spec_decode_acceptance_rate=65.0)
    short = read_runs([("ngram_short.json", json.dumps(doc)), FIXTURES / "real_engine" / "plain_c16.json"])
    row = short.rows.iloc[0]
    assert (row["k"], row["max_draft_length"], row["tokens_per_step"]) == (2, 4, pytest.approx(2.3))
    assert row["draft_acceptance_rate"] == pytest.approx(0.65)
    assert "judged at its mean draft length 2.00" in row["remarks"] and "not at the longest draft 4" in row["remarks"]


# The lab's vLLM 0.32 n-gram server log (tests/fixtures/real_engine/logs/ngram_server.log): an engine line, then the
# spec-decode line vLLM writes (vllm/v1/spec_decode/metrics.py SpecDecodingLogging.log @ vllm-project/vllm 016a858),
# here with the counts of the short-draft run above: 1300 accepted and 2000 drafted tokens over 1000 drafts (which
# the line does not log), per-position rates accepted-at-position ÷ drafts.
NGRAM_SHORT_LOG = (
    "(APIServer pid=13006) INFO 12-07 03:32:34 [loggers.py:335] Engine 000: Avg prompt throughput: 76.8 tokens/s, "
    "Avg generation throughput: 64.1 tokens/s, Running: 16 reqs, Waiting: 0 reqs, CPU KV cache usage: 0.2%, Prefix "
    "cache hit rate: 0.0%\n"
    "(APIServer pid=13006) INFO 12-07 03:32:34 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.30, "
    "Accepted throughput: 130.00 tokens/s, Drafted throughput: 200.00 tokens/s, Accepted: 1300 tokens, Drafted: 2000 "
    "tokens, Per-position acceptance rate: 0.700, 0.400, 0.150, 0.050, Avg Draft acceptance rate: 65.0%\n")


def test_vllm_log_lines_with_short_drafts_are_judged_at_their_mean_draft_length_as_bench_json_is():
    log = read_runs([("ngram_server.log", NGRAM_SHORT_LOG)]).rows.iloc[0]
    doc = json.loads((FIXTURES / "real_engine" / "ngram_c16.json").read_text())
    doc.update(spec_decode_num_drafts=1000, spec_decode_draft_tokens=2000, spec_decode_accepted_tokens=1300,
               spec_decode_per_position_acceptance_rates=[0.7, 0.4, 0.15, 0.05], spec_decode_acceptance_rate=65.0)
    bench = read_runs([("ngram_short.json", json.dumps(doc)), FIXTURES / "real_engine" / "plain_c16.json"]).rows.iloc[0]
    # drafts = 1300 ÷ (0.7 + 0.4 + 0.15 + 0.05) = 1000, mean draft length 2000 ÷ 1000 = 2: judged at k = 2 with the
    # longest draft (4 positions) beside it, E = 1 + 1300 ÷ 1000, as the bench JSON of the same run is
    assert (log["k"], log["max_draft_length"], log["tokens_per_step"]) == (2, 4, pytest.approx(2.3))
    assert (log["k"], log["max_draft_length"]) == (bench["k"], bench["max_draft_length"])
    assert log["tokens_per_step"] == pytest.approx(bench["tokens_per_step"])
    assert log["draft_acceptance_rate"] == pytest.approx(0.65) and log["concurrency"] == 16
    assert "judged at its mean draft length 2.00" in log["remarks"] and "not at the longest draft 4" in log["remarks"]


def test_runs_json_of_a_short_draft_log_line_gives_k_and_the_longest_draft(tmp_path, capsys):
    path = tmp_path / "ngram_server.log"
    path.write_text(NGRAM_SHORT_LOG)
    assert cli.main(["runs", str(path), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert (row["k"], row["max_draft_length"]) == (2, 4) and row["tokens_per_step"] == pytest.approx(2.3)


def test_vllm_log_lines_of_the_real_lab_stay_at_their_k_where_drafts_average_it():
    # Real lines of the lab's n-gram server: 3.59 to 3.74 draft tokens per draft (e.g. Accepted 988, Drafted 988,
    # rates summing to 3.593) round to the 4 positions; a line with nothing accepted tells no drafts. All stay at 4.
    rows = read_runs([FIXTURES / "real_engine" / "logs" / "ngram_server.log"]).rows
    assert not rows.empty and set(rows["k"]) == {4} and rows["max_draft_length"].isna().all()


def test_a_logs_acceptance_over_time_says_the_k_its_rows_are_judged_at_and_what_it_means():
    # The lab's real n-gram server log (k = 4, 3.59 to 3.97 draft tokens per draft: judged at 4) with the short-draft
    # line above after it (4 configured, 2 drafted on average: judged at 2). The trend's k is the rows' k, line by line.
    text = (FIXTURES / "real_engine" / "logs" / "ngram_server.log").read_text() + NGRAM_SHORT_LOG
    rows = read_runs([("ngram_server.log", text)]).rows
    trend = runs_logs.acceptance_trend(text)
    assert trend["line"].tolist() == rows["row"].tolist()
    assert trend["k"].tolist() == rows["k"].tolist() == [4] * 14 + [2]
    assert set(trend["configured_k"]) == {4}
    labels = trend.set_index("line")["k_label"]
    assert labels[22] == "k = 4 (3.74 drafted on average)"  # 505 drafted, 505 ÷ 3.741 = 135 drafts
    assert labels[41] == "k = 4"  # nothing accepted: the line tells no drafts
    assert labels.iloc[-1] == "k = 2 (4 configured, 2.00 drafted on average)"


def test_the_past_runs_charts_say_what_k_means_for_a_run_judged_at_its_mean_draft_length():
    from specmodel.runs.review import review
    from specmodel.show.figures.runs import break_even_chart
    evaluated = review(read_runs([("ngram_server.log", NGRAM_SHORT_LOG)]).rows).evaluated
    hover = break_even_chart(evaluated).data[0].hovertext[0]
    assert "k = 2 (the mean draft length; 4 configured)" in hover
    evaluated = review(read_runs([LOG]).rows).evaluated  # drafts as long as configured: k alone
    assert "k = 3, " in break_even_chart(evaluated).data[0].hovertext[0]
