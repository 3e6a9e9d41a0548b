"""Issue 41: a shared instance no file, log line or label can slow down, crash or dress up. One test (or
more) per numbered defect, each failing on the code before the fix, asserting what a user notices: no
traceback (exit 2 and one line naming the file or flag), no link or formatting from user text, CLI lines
bounded, a reason for every row left out. The test names carry the defect's number."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specmodel import SpecModelError, bounds, numbers, runs
from specmodel.runs import logs
from tests.cli_runner import run_cli

ROOT = Path(__file__).resolve().parent.parent
BIG = "9" * 5000  # past int()'s 4,300 digits and any float
V1 = ("INFO 09-16 05:26:58 SpecDecoding metrics: Mean acceptance length: 2.05, Accepted: 90 tokens, Drafted: 90 "
      "tokens, Per-position acceptance rate: 0.566, 0.309, 0.177")
GOOD_CSV = b"workload,alpha,k,concurrency\nchat,0.7,4,1\n"


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The CLI in-process (tests/cli_runner.py: the same parser, commands, exit codes and stderr), or as a real
    subprocess where the test sets the environment the process starts with (the stream's encoding);
    tests/test_cli_smoke.py runs every command once as a subprocess."""
    if not env:
        return run_cli(*args)
    return subprocess.run([sys.executable, "-m", "specmodel", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def _one_line_error(done: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2, one line on stderr naming what it is about, no traceback."""
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    assert len(done.stderr) < 2100
    for word in words:
        assert word in done.stderr, done.stderr


# --- 2: the vLLM log reader is linear in a line's length, and looks at the load deadline -------------

@pytest.mark.timeout(60)  # a guard, not a timing: the old reader took minutes for this line (7.9 s for 1.2 MB)
@pytest.mark.parametrize("positions", [
    6_000,  # the rule: the quick loop's
    pytest.param(600_000, marks=pytest.mark.slow),  # 6 MB, the size a second pass would show (~1.3 s of CPU)
])
def test_2_a_6_mb_per_position_list_reads_in_one_pass(positions):
    line = "SpecDecoding metrics: Mean acceptance length: 2.05, Per-position acceptance rate: " + \
        ", ".join(["0.123456"] * positions)
    (point,), problems = logs.parse_lines("Running: 4 reqs\n" + line)
    assert point["k"] == positions and not problems  # the row is then refused by its k, by name
    table = runs.read_runs([("long.log", ("Running: 4 reqs\n" + line).encode())])
    assert table.rows.empty and any(f"{positions:,} positions" in p.message for p in table.problems)


@pytest.mark.timeout(60)
def test_2_a_long_field_continued_by_many_pieces_is_joined_once():
    fields = logs._fields("A: 1, B: " + ", ".join(["x"] * 400_000))
    assert fields["a"] == "1" and fields["b"].count(",") == 399_999


def test_2_the_load_deadline_stops_a_log_of_many_lines_and_says_where(monkeypatch):
    clock = iter(range(10**7))
    monkeypatch.setattr(bounds, "clock", lambda: float(next(clock)))
    monkeypatch.setattr(bounds, "MAX_LOAD_S", 2.0)
    monkeypatch.setattr(bounds, "CHECK_EVERY", 0x400)  # the clock looked at 16 times as often: 3,072 lines, not 49,152
    text = "\n".join([V1] * (bounds.CHECK_EVERY * 3))
    table = runs.read_runs([("many.log", text.encode())])
    (stop,) = [p for p in table.problems if p.message.startswith("not read from this line on")]
    assert "limit on processing one load" in stop.message
    assert stop.row % bounds.CHECK_EVERY == 0 and stop.row < bounds.CHECK_EVERY * 3
    assert 0 < len(table.rows) < bounds.CHECK_EVERY * 3


def test_2_the_load_deadline_is_looked_at_inside_a_line_of_many_pieces(monkeypatch):
    clock = iter(range(10**7))
    monkeypatch.setattr(bounds, "clock", lambda: float(next(clock)))
    with bounds.work_deadline(2.0):
        fields = logs._fields("A: 1, B: " + ", ".join(["x"] * (bounds.CHECK_EVERY * 4)))
    assert fields["b"].count(",") < bounds.CHECK_EVERY * 2  # stopped, not read to the end


# --- 4: no traceback for huge numbers, a bad log among good files, a stream that cannot encode α -------

@pytest.mark.parametrize("log, words", [
    (f"Running: {BIG} reqs\n{V1}\n", "'Running: N reqs'"),
    (f"Speculative metrics: Draft acceptance rate: 0.655, System efficiency: 0.649, Number of speculative tokens: "
     f"{'9' * 400}, Number of accepted tokens: 5\n", "'Number of speculative tokens'"),
    (f"SpecDecoding metrics: Mean acceptance length: {BIG}.5, Accepted: 90 tokens\n", "'Mean acceptance length'"),
])
def test_4_a_huge_number_in_a_log_field_is_named_and_the_other_files_still_load(log, words):
    table = runs.read_runs([("good.csv", GOOD_CSV), ("bad.log", log.encode())])
    assert "good.csv" in set(table.rows["file"])
    said = [p for p in table.problems if p.file == "bad.log" and words in p.message]
    assert said and "digits" in said[0].message and said[0].row == 1


@pytest.mark.parametrize("command", [["scrape", "http://127.0.0.1:9/metrics"], ["fleet", "http://127.0.0.1:9/"]])
def test_4_a_5000_digit_window_is_one_line_and_exit_2(command):
    window = BIG + ("m" if command[0] == "fleet" else "")
    _one_line_error(_cli(*command, "--window", window), "9999")


def test_4_the_cli_prints_on_a_stream_that_cannot_encode_alpha():
    done = _cli("predict", "--alpha", "0.7", "--k", "4", env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "alpha=0.70" in done.stdout and done.stdout.isascii()


def test_4_ascii_fallbacks_spell_the_tools_symbols():
    from specmodel.text import encodable
    assert encodable("α ≠ 0.7… × é ≤ 2", "ascii") == "alpha != 0.7... x e <= 2"
    assert encodable("α × é", "latin-1") == "alpha × é"  # only what the encoding lacks
    assert encodable("α", "utf-8") == "α"


# --- 5: CLI lines are cut and a label cannot forge one ----------------------------------------------

def test_5_a_100000_character_instance_is_refused_by_name_in_one_line():
    _one_line_error(_cli("rules", "--instance", "a" * 100_000 + "=4"), "--instance", "100,000 characters")


def test_5_every_line_the_cli_prints_is_cut_except_inside_a_document():
    import io

    from specmodel.cli.output import SafeStream, document
    from specmodel.text import MAX_MESSAGE_CHARS
    inner = io.StringIO()
    out = SafeStream(inner)
    out.write("x" * 5_000_000 + "\nshort\n")
    out.write("y" * (MAX_MESSAGE_CHARS - 2))
    out.write("zzzz")
    out.write("\n")
    with document(out):
        out.write("{" + "j" * 10_000 + "}\n")
    lines = inner.getvalue().splitlines()
    assert [len(line) for line in lines[:3]] == [MAX_MESSAGE_CHARS, 5, MAX_MESSAGE_CHARS]
    assert lines[0].endswith("…") and lines[2].endswith("…") and len(lines[3]) == 10_002


def test_5_a_model_label_with_a_newline_cannot_forge_a_line_of_scrape(capsys):
    from specmodel import cli
    from tests import replay
    from tests.replay import ReplayServer
    forged = "m\\nFAKE: speculation pays off 9.99x"  # the exposition's escape: the label holds a line break
    text = replay.fixture_text("vllm_v1_specdecode_sample.txt").replace("meta-llama/Llama-3.1-8B-Instruct", forged)
    with ReplayServer(text, increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        code = cli.main(["scrape", srv.url, "--window", "0.1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not any(line.startswith("FAKE") for line in (out + err).splitlines())
    assert "m FAKE: speculation pays off 9.99x" in out


# --- 7: one number parser ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [("12", 12.0), (" -0.75 ", -0.75), (".5", 0.5), ("1.", 1.0),
                                         ("1.5E+03", 1500.0), ("1e-05", 1e-05), ("+Inf", math.inf),
                                         ("-inf", -math.inf), (3, 3.0), (2.5, 2.5)])
def test_7_the_number_parser_reads_what_spreadsheets_and_engines_write(text, value):
    assert numbers.read_number(text) == value
    assert math.isnan(numbers.read_number("NaN"))


@pytest.mark.parametrize("text, words", [("1_0", "underscore"), ("\u0664", "digits other than 0-9"),
                                         ("\uff14", "digits other than 0-9"), (BIG, "5,000 digits"),
                                         ("0x10", "is not a number"), ("", "empty"), (True, "true/false")])
def test_7_the_number_parser_refuses_the_rest_by_name(text, words):
    with pytest.raises(SpecModelError, match=words):
        numbers.read_number(text)
    assert numbers.number_or_none(text) is None


@pytest.mark.parametrize("cell, words", [("1_0", "underscore"), ("\u0664", "digits other than 0-9"),
                                         ("0." + "1" * 60, "61 digits")])
def test_7_a_csv_cell_no_spreadsheet_writes_refuses_its_row_by_name_alone_or_in_a_sweep(cell, words):
    text = f"workload,alpha,k,concurrency\nchat,0.7,4,1\nchat,0.7,4,2\nchat,0.7,4,{cell}\n"  # the sweep's fast path
    table = runs.read_runs([("sweep.csv", text.encode())])
    assert list(table.rows["concurrency"]) == [1, 2]
    (said,) = [p for p in table.problems if p.row == 4]
    assert said.column == "concurrency" and words in said.message


@pytest.mark.parametrize("position, words", [("1_0", "underscore"), ("\u0661", "digits other than 0-9"),
                                             (BIG, "5,000 digits")])
def test_7_a_prometheus_position_label_no_engine_writes_is_refused_by_name(position, words):
    from specmodel.metrics import prom
    text = ('vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 8\n'
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{position}"}} 4\n')
    with pytest.raises(SpecModelError, match=words):
        prom.parse_snapshot(text)


_DRAFTS = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10\n'


@pytest.mark.parametrize("value, words", [("1_0", "underscore between digits"), ("\u0664", "digits other than 0-9"),
                                          ("\uff14\uff12", "digits other than 0-9"), (BIG, "5,000 digits"),
                                          ("9" * 400, "400 digits"), ("12 \u0661\u0667\u0660\u0660", "digits other than 0-9")])
def test_7_a_prometheus_sample_value_no_exporter_writes_is_refused_by_name(value, words):
    """prometheus_client's parser hands a value to int()/float(): `٤` read as 4, `１２` as 12, a 400-digit count as
    a number past any float; an underscore or 5,000 digits was 'not Prometheus metrics text'. Each is refused
    naming the line and the series (the last case: a timestamp in Arabic-Indic digits)."""
    from specmodel.metrics import prom
    text = _DRAFTS + f'vllm:num_requests_running{{engine="0",model_name="m"}} {value}\n'
    with pytest.raises(SpecModelError) as info:
        prom.parse_snapshot(text)
    said = str(info.value)
    assert words in said and "line 2 " in said and "(vllm:num_requests_running)" in said, said
    assert len(said) < 400 and value[:50] not in said.replace("'", "")


def test_7_a_prometheus_value_no_exporter_writes_names_the_url_and_not_a_series_of_another_exporter():
    from specmodel.metrics import scrape
    from tests.replay import ReplayServer
    fast = scrape.ScrapePolicy(connect_timeout_s=1.0, read_timeout_s=0.5, total_timeout_s=1.0)
    with ReplayServer(_DRAFTS + 'vllm:num_requests_waiting{model_name="m"} \u0663\n') as srv:
        with scrape.make_client(fast) as client, pytest.raises(SpecModelError) as info:
            scrape.scrape_snapshot(client, srv.url, policy=fast)
    said = str(info.value)
    assert said.startswith(scrape.display_url(srv.url)) and "vllm:num_requests_waiting" in said, said
    assert "digits other than 0-9" in said
    with pytest.raises(SpecModelError) as info:  # an internal page's names are never quoted
        from specmodel.metrics import prom
        prom.parse_snapshot("db_password_SECRET \u0664\u0662\n")
    assert "SECRET" not in str(info.value) and "line 1 " in str(info.value) and "digits other than" in str(info.value)


def test_7_every_value_the_exposition_format_allows_still_reads():
    """Values as exporters write them (Go's FormatFloat, Python's repr): integers, exponents, a sign, NaN, ±Inf,
    with or without a timestamp; labels with text of any script and long runs of digits are not values."""
    from specmodel.metrics import prom
    pos = ('vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="\u6a21\u578b-\u0664",'
           'request="{id}",position="{p}"}} {v}\n')
    text = ("# HELP vllm:num_requests_running Anzahl der laufenden Anfragen \u2014 \u0664\n"
            'vllm:spec_decode_num_drafts_total{engine="0",model_name="\u6a21\u578b-\u0664"} 2e+06 1700000000000\n'
            + pos.format(id="1" * 60, p=0, v="1.5e+06") + pos.format(id="2", p=1, v="+1.2E5")
            + pos.format(id="3", p=2, v="0") + pos.format(id="4", p=3, v="-0")
            + 'vllm:num_requests_running{engine="0",model_name="\u6a21\u578b-\u0664"} 7\n'
            + 'vllm:generation_tokens_total{engine="0",model_name="\u6a21\u578b-\u0664"} 1.25e-3\n'
            + 'process_max_fds NaN\nprocess_open_fds +Inf\nprocess_cpu_seconds_total{mode="\u0664"} -Inf\n'
            + "process_resident_memory_bytes\t.5\n")
    snap = prom.parse_snapshot(text, at=0.0)
    assert snap.counters["drafts"] == 2e6 and snap.per_position == (1.5e6, 1.2e5, 0.0, 0.0)
    assert snap.gauges["running"] == 7 and snap.counters["generation_tokens"] == 1.25e-3 and snap.k == 4


@pytest.mark.parametrize("flag, value, words", [("--window", "1_0", "underscore"),
                                                ("--window", "\u0665", "digits other than 0-9")])
def test_7_a_flag_no_one_types_is_refused_by_name(flag, value, words):
    _one_line_error(_cli("scrape", "http://127.0.0.1:9/metrics", flag, value), flag, words)


@pytest.mark.parametrize("alpha", ["0_5", "\u0660.\u0665", "\uff10.\uff15"])
def test_7_a_link_alpha_or_gpu_number_no_one_writes_is_refused_not_read(alpha):
    """float() read `0_5` as 5 (out of range, refused by luck) and `٠.٥` as 0.5 (a link filled the Traffic mix
    table from it); a Custom GPU number `1_0` was 10 and `٤` 4."""
    from specmodel.show import links
    value, said = links.alpha_from_link(alpha)
    assert value is None and "is not an acceptance α" in said
    assert links.gpu_number_problems({"gpu_tflops": "1_0", "gpu_memory_gb": "\u0664"}) == [
        "the link's gpu_tflops '1_0' is not a number: its Custom GPU box starts empty",
        "the link's gpu_memory_gb '\u0664' is not a number: its Custom GPU box starts empty"]


def test_7_a_position_column_in_other_digits_or_of_5000_digits_is_no_position():
    """int() read the header `p٣` as position 3 and raised on `p` followed by 5,000 digits."""
    header = "workload,alpha,k,concurrency,baseline_tok_s,spec_tok_s,p\u0663,p" + "1" * 5000
    table = runs.read_runs([("pos.csv", (header + "\nchat,0.7,4,1,100,150,0.5,0.5\n").encode())])
    assert len(table.rows) == 1 and not table.rows["survival"].astype(str).str.len().gt(0).any()
    assert any("p\u0663" in p.message or p.column == "p\u0663" for p in table.problems), table.problems


@pytest.mark.parametrize("key, words", [("\u0663", "digits other than 0-9"), ("1_0", "underscore")])
def test_7_an_aiperf_histogram_key_no_one_writes_is_refused_by_name(key, words):
    """int() read the key "٣" as 3 and "1_0" as 10 (k = 10 from a histogram of k = 5)."""
    import json
    doc = json.loads((ROOT / "tests" / "fixtures" / "aiperf_profile_export_aiperf.json").read_text())
    doc = {k: v for k, v in doc.items() if not k.startswith("total_")}  # k and E from the histogram alone
    hist = dict(doc["pooled_spec_decode_acceptance_histogram"])
    hist[key] = hist.pop("3")
    doc["pooled_spec_decode_acceptance_histogram"] = hist
    table = runs.read_runs([("profile_export_aiperf.json", json.dumps(doc).encode())])
    assert table.rows.empty
    assert any("histogram has the key" in p.message and words in p.message for p in table.problems), table.problems


def test_7_a_fleet_window_with_an_underscore_or_other_digits_is_no_window():
    from specmodel.metrics import promapi
    for text in ("1_0m", "\u0665m"):
        with pytest.raises(SpecModelError, match="not a time window"):
            promapi.parse_duration(text)


def test_4_a_5000_digit_fleet_window_from_a_share_link_is_a_message_not_the_generic_error():
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["prom_url"] = "http://127.0.0.1:9"
    at.query_params["fleet_window"] = BIG + "m"  # a share link: the page showed the generic error (a traceback)
    at.run()
    at.switch_page("pages/fleet.py").run()
    assert not at.exception
    shown = [e.value for e in at.error]
    assert any("longer than the 3660 days" in e for e in shown) and max(map(len, shown)) < 600, shown


# --- 8: a 200,000-character instance label is cut where it is read --------------------------------

def test_8_the_fleet_page_cuts_a_200000_character_instance_label():
    from streamlit.testing.v1 import AppTest

    from tests.fuzz_fleet import _Routes, one_instance_answers, server_url
    long_label = "i" * 200_000
    with _Routes.lock:
        _Routes.answers = one_instance_answers(long_label, prefix="/test-8-apptest")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params["prom_url"] = server_url() + "/test-8-apptest"
        at.run()
        at.switch_page("pages/fleet.py").run()
    assert not at.exception
    for frame in at.dataframe:
        cells = frame.value.astype(str)
        assert cells.map(len).max().max() <= 200, "a table cell longer than a label is shown"
    page = " ".join(str(e.value) for kind in ("error", "warning", "info", "caption", "markdown")
                    for e in getattr(at, kind))
    assert "i" * 201 not in page


@pytest.mark.browser
def test_8_in_a_browser_the_fleet_page_with_a_200000_character_label_renders_with_the_label_cut(
        streamlit_server, browser_page):
    """What the viewer sees in Chromium (the tab hung before): the page finishes, its tables and charts are
    drawn, and the label is shown cut with an ellipsis, nowhere whole. How long it takes is
    bench/bench_fleet_label.py's to measure."""
    from urllib.parse import quote

    from tests.browser import wait_for_app, wait_for_charts, wait_for_tables
    from tests.fuzz_fleet import _Routes, one_instance_answers, server_url
    with _Routes.lock:
        _Routes.answers = one_instance_answers("i" * 200_000, prefix="/test-8-browser")
        browser_page.goto(f"{streamlit_server}/fleet?prom_url={quote(server_url() + '/test-8-browser')}")
        wait_for_app(browser_page)
        wait_for_tables(browser_page)
        wait_for_charts(browser_page)
    # the grid's accessible table (its td) is filled after the canvas is drawn: wait for the instance's cell
    from tests.browser import PATIENCE_MS
    browser_page.wait_for_function("""() => [...document.querySelectorAll("[data-testid='stMain'] td")]
        .some(td => td.innerText.startsWith('iiiiiiiiii'))""", timeout=PATIENCE_MS)
    cells = browser_page.evaluate("() => [...document.querySelectorAll(\"[data-testid='stMain'] td\")].map(td => td.innerText)")
    assert any(c.startswith("iiiiiiiiii") and c.endswith("…") for c in cells), cells[:20]
    text = browser_page.locator("body").inner_text() + " ".join(cells)
    assert "i" * 201 not in text and not browser_page.locator("[data-testid='stException']").count()


def test_5_an_instance_label_with_a_newline_cannot_forge_a_line_of_fleet(capsys):
    from specmodel import cli
    from tests.fuzz_fleet import _Routes, one_instance_answers, server_url
    with _Routes.lock:
        _Routes.answers = one_instance_answers("gpu-0\nFAKE: speculation pays off 9.99x")
        code = cli.main(["fleet", server_url()])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not any(line.startswith("FAKE") for line in (out + err).splitlines())
    assert "gpu-0 FAKE" in out


# --- 6: every row dropped or left unpredicted says why; words that say what happened ------------------

def test_6_a_row_with_a_value_only_in_a_reference_column_is_named_not_dropped_silently():
    text = b"workload,alpha,k,concurrency,url\nchat,0.7,4,1,\n,,,,http://x\n"
    table = runs.read_runs([("ref.csv", text)])
    assert len(table.rows) == 1
    (said,) = [p for p in table.problems if p.row == 3]
    assert said.severity == "error" and "only in columns that are not read" in said.message


@pytest.mark.parametrize("columns, cells, words", [
    ("tp,gpu", "1000000000,H100", "tensor parallelism is 1,000,000,000"),
    ("method,branching", "eagle,1000000000", "branching is 1,000,000,000"),
    ("method,draft_depth", "eagle,1000000000", "draft depth is 1,000,000,000"),
    ("context_len", "1000000000000000", "1,000,000,000,000,000, above the 16,777,216"),
    ("gpu,target_model,context_len", "L4,Llama 3.1 70B,100000", "does not fit"),
])
def test_6_a_run_left_without_a_prediction_says_why_in_its_advice_the_problems_and_the_cli(columns, cells, words):
    from specmodel.runs.review import review
    from specmodel.runs.unpredicted import unpredicted_problems
    text = f"workload,alpha,k,concurrency,{columns}\nchat,0.7,4,1,{cells}\n".encode()
    table = runs.read_runs([("odd.csv", text)])
    evaluated = review(table.rows).evaluated
    assert evaluated["advice"].iloc[0].startswith("no prediction: ") and words in evaluated["advice"].iloc[0]
    (said,) = unpredicted_problems(evaluated)
    assert said.row == 2 and said.severity == "warning" and words in said.message


def test_6_the_cli_and_the_page_list_a_run_left_without_a_prediction(tmp_path):
    from streamlit.testing.v1 import AppTest
    text = b"workload,alpha,k,concurrency,tp,gpu\nchat,0.7,4,1,1000000000,H100\n"
    (tmp_path / "tp.csv").write_bytes(text)
    done = _cli("runs", str(tmp_path / "tp.csv"))
    assert done.returncode == 0 and "tp.csv, row 2: left without a prediction: tensor parallelism" in done.stderr
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/past-runs.py").run()
    at.file_uploader(key="run_files").set_value(("tp.csv", text, "text/csv")).run()
    assert not at.exception
    shown = " ".join(str(e.value) for kind in ("warning", "caption", "info", "error") for e in getattr(at, kind))
    assert "left without a prediction: tensor parallelism is 1,000,000,000" in shown


def test_6_a_url_without_a_scheme_is_said_to_have_none():
    from specmodel.metrics import scrape
    for url in ("host/metrics", "localhost:8000/metrics"):
        with pytest.raises(SpecModelError, match="has no http:// or https:// in front"):
            scrape.check_url(url)


def test_6_a_redirect_hop_that_fails_is_named_not_the_first_url():
    import httpx

    from specmodel.metrics import scrape
    from tests.browser import free_port
    from tests.replay import ReplayServer
    dead = f"http://127.0.0.1:{free_port()}/metrics"
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="redirect:" + dead) as srv, httpx.Client() as client:
        with pytest.raises(SpecModelError) as got:
            scrape.fetch_text(client, srv.url)
    assert f"cannot connect to {dead} (redirected from {srv.url})" in str(got.value), str(got.value)


def test_6_a_zero_width_character_in_a_header_is_named_not_hidden():
    table = runs.read_runs([("zw.csv", "workload,alpha,k,concu\u200brrency\nchat,0.7,4,1\n".encode())])
    (said,) = [p for p in table.problems if p.column and "concu" in p.column]
    assert said.column == "concu<U+200B>rrency" and "did you mean `concurrency`" in said.message


# --- the shapes that found these, a short sample of each in make test (make fuzz runs many) ----------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_shaped_logs_and_csvs_are_read_or_refused_in_words_and_every_unread_run_says_why():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.conftest import examples
    from tests.fuzz_shapes import shaped_csvs, shaped_logs
    from tests.fuzz_targets import check, target_runs

    @settings(max_examples=examples(24), database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(shaped_logs(), shaped_csvs()))
    def run(item):
        check(target_runs, (*item, None))

    run()


# Hostile names through the text-safety function in every mode and the terminal: tests/test_fuzz.py's "text safety"
# target (tests/fuzz_shapes.py target_text_safety on hostile_names(), 150 inputs; `make fuzz` runs 2,000).


def test_4_a_reader_that_raises_on_one_file_loses_only_that_file(monkeypatch):
    """A safety net under the root fixes: whatever a reader still raises on (a bug) is that file's problem,
    its traceback in the server's log, and the upload's other files load."""
    from specmodel.runs import load

    def broken(name, text, defaults):
        raise ZeroDivisionError("a reader's bug")
    monkeypatch.setattr(logs, "read", broken)
    table = runs.read_runs([("good.csv", GOOD_CSV), ("bad.log", f"{V1}\n".encode())])
    assert set(table.rows["file"]) == {"good.csv"}
    (said,) = [p for p in table.problems if p.file == "bad.log"]
    assert said.message.startswith(load.UNEXPECTED) and "ZeroDivisionError" in said.message


@pytest.mark.browser
def test_3_a_share_link_with_a_bare_url_puts_no_link_and_no_formatting_in_the_page(streamlit_server, browser_page):
    """In a real browser: Streamlit's Markdown links a bare URL or e-mail address in the text after escapes
    are read, so escaping ':' and '/' did not stop it; a zero-width joiner does. The link's value is quoted
    in the sidebar's warning as text: no <a>, no bold, no heading."""
    from urllib.parse import quote

    from tests.browser import wait_for_app
    value = "see https://login.evil-example.com/reset or mail admin@evil-example.com **bold** # heading"
    browser_page.goto(f"{streamlit_server}/?gpu={quote(value)}")
    wait_for_app(browser_page)
    warning = browser_page.locator("[data-testid='stSidebar'] [data-testid='stAlert']", has_text="evil-example")
    warning.first.wait_for()
    shown = warning.first.inner_text()
    assert "login.evil-example.com/reset" in shown.replace("\u200d", "") and "**bold**" in shown
    assert browser_page.locator("a[href*='evil-example']").count() == 0
    assert warning.first.locator("a, strong, h1, h2, h3").count() == 0
