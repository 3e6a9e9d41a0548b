"""Issue 25: one shared instance that no single input can take down, freeze or fool. One test (or more)
per numbered defect of the issue, each failing on the code before the fix; the test names carry
the defect's number."""

from __future__ import annotations

import math
import re
import tracemalloc

import httpx
import pytest

from specmodel import SpecModelError
from specmodel.metrics import fetch, promapi, scrape
from specmodel.runs import logs, spec_json
from tests.replay import ReplayServer, bomb


def _peak_mb(fn):
    """(result or exception, peak MB of Python allocations while fn ran)."""
    tracemalloc.start()
    try:
        try:
            out = fn()
        except Exception as exc:  # noqa: BLE001 (the caller looks at what came back)
            out = exc
        return out, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


# --- 1: decoded bytes are counted inside each chunk, stacked encodings refused --------------------

@pytest.mark.parametrize("make", [httpx.Client, scrape.make_client])
def test_1_stacked_gzip_is_refused_before_anything_is_decoded(make):
    bomb("gzip, gzip", 128)  # built before measuring
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="bomb:gzip, gzip:128") as srv, make() as client:
        err, peak = _peak_mb(lambda: fetch.capped_get(client, srv.url, where=srv.url))
    assert isinstance(err, fetch.FetchFailed) and err.kind == "encoding"
    assert "Content-Encoding 'gzip, gzip'" in str(err) and srv.url in str(err)
    assert peak < 16


@pytest.mark.parametrize("make", [httpx.Client, scrape.make_client])
def test_1_one_gzip_layer_never_inflates_past_the_cap(make):
    bomb("gzip", 256)  # 256 MB of zeros in 250 kB: a single chunk inflates to far more than the cap
    limits = fetch.GetLimits(max_bytes=4 * 2**20)
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="bomb:gzip:256") as srv, make() as client:
        err, peak = _peak_mb(lambda: fetch.capped_get(client, srv.url, where=srv.url, limits=limits))
    assert isinstance(err, fetch.FetchFailed) and err.kind == "too_large"
    assert peak < 4 + 16  # the cap and a few buffers, not the inflated 256 MB


@pytest.mark.parametrize("make", [httpx.Client, scrape.make_client])
def test_1_a_gzipped_metrics_page_still_reads_whole(make):
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="gzip") as srv, make() as client:
        got = fetch.capped_get(client, srv.url, where=srv.url)
        assert got.body.decode() == srv.body(0)


def test_1_fleets_prometheus_client_refuses_stacked_gzip_too():
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="bomb:gzip, gzip:64", path="/api/v1/query") as srv:
        server = promapi.PromServer(srv.base_url, timeout_s=3.0)
        with httpx.Client() as client, pytest.raises(SpecModelError) as info:
            promapi.query(client, server, "up")
    assert "Content-Encoding 'gzip, gzip'" in str(info.value) and "Prometheus at" in str(info.value)


# --- 2: the vLLM log reader works in time proportional to the line ---------------------------------

@pytest.mark.timeout(60)  # a guard, not a timing: the old pattern needed about an hour for this line
@pytest.mark.parametrize("tail", ["a" * 1_000_000, "Accepted" + " x" * 500_000, "a, " * 300_000])
def test_2_a_megabyte_spec_decode_line_without_fields_is_reported_not_a_freeze(tail):
    points, problems = logs.parse_lines("SpecDecoding metrics: " + tail)
    assert points == [] and problems and problems[0][0] == 1


def test_2_fields_of_a_real_v1_line_still_read():
    line = ("INFO 09-16 05:26:57 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.05, Accepted "
            "throughput: 9.00 tokens/s, Drafted throughput: 13.00 tokens/s, Accepted: 90 tokens, Drafted: 90 tokens, "
            "Per-position acceptance rate: 0.566, 0.309, 0.177, Avg Draft acceptance rate: 35.1%")
    (point,), _ = logs.parse_lines(line)
    assert point["tokens_per_step"] == 2.05 and point["survival"] == [0.566, 0.309, 0.177] and point["k"] == 3


# --- 3: k and every count-derived size are checked before anything is allocated ------------------

def _read_spec_json(text: str, name: str = "export.json"):
    return spec_json.read(name, text, None)


@pytest.mark.parametrize("text", [
    '{"pooled_spec_decode_acceptance_histogram": {"0": 1, "1000000000": 1}, "total_spec_decode_steps": 2}',
    '{"metrics": {"speculative_decoding": {"num_spec_steps": 10, "num_accepted_draft_tokens": 5, '
    '"acceptance_histogram": {"0": 5, "1000000000": 5}}}}',
    '{"metrics": {"speculative_decoding": {"num_spec_steps": 10, "num_accepted_draft_tokens": 5, '
    '"num_spec_tokens": 1000000000, "acceptance_histogram": [5, 5]}}}',
    '{"total_spec_decode_steps": 1, "total_accepted_draft_tokens": 1, "total_draft_tokens": 1e9, '
    '"pooled_spec_decode_acceptance_histogram": {"0": 1}}',
])
def test_3_a_134_byte_file_with_k_of_a_billion_is_refused_before_allocating(text):
    err, peak = _peak_mb(lambda: _read_spec_json(text))
    assert isinstance(err, SpecModelError), err
    assert "64" in str(err) and "1,000,000,000" in str(err)
    assert peak < 5


@pytest.mark.parametrize("text", [
    '{"total_spec_decode_steps": 1e-300, "total_accepted_draft_tokens": 1, "total_draft_tokens": 1e300, '
    '"pooled_spec_decode_acceptance_histogram": {"0": 1}}',
    '{"pooled_spec_decode_acceptance_histogram": {"0": 1, "1": 1}, "total_spec_decode_steps": 2, "x": '
    + "[" * 5000 + "]" * 5000 + "}",
])
def test_3_overflowing_ratios_and_deep_json_are_messages_not_tracebacks(text):
    with pytest.raises(SpecModelError):
        _read_spec_json(text)


# --- 10: outputs are written only to a regular file or a new path ----------------------------------

def _specials(tmp_path):
    """(path, what it is, how to tell it is still that) for a FIFO, a symlink and a folder."""
    import os
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    folder = tmp_path / "folder"
    folder.mkdir()
    return [(fifo, "a device, pipe or socket", lambda: fifo.is_fifo()),
            (link, "a symbolic link", lambda: link.is_symlink() and victim.read_text() == "keep me\n"),
            (folder, "a folder", lambda: folder.is_dir())]


@pytest.mark.parametrize("command", [
    ["rules", "--gpu", "H100", "--target", "Llama 3.1 8B", "--draft", "Llama 3.2 1B", "--k", "4", "--out"],
    ["dashboard", "--out"],
    ["runs", "sample_runs/seed_runs.csv", "--csv"],
    ["runs", "sample_runs/seed_runs.csv", "--calibrate", "--save-calibration"],
])
def test_10_outputs_refuse_devices_symlinks_and_folders_and_leave_them_as_they_were(tmp_path, command):
    from tests.cli_runner import run_cli
    for path, kind, unchanged in _specials(tmp_path):
        out = run_cli(*command, str(path))
        assert out.returncode == 2, (path, out.stdout[-300:], out.stderr[-300:])
        assert kind in out.stderr and str(path) in out.stderr and "Traceback" not in out.stderr
        assert unchanged(), path
    fresh = tmp_path / "new-output"
    assert run_cli(*command, str(fresh)).returncode == 0 and fresh.is_file()


# --- 14: messages say what happened ----------------------------------------------------------------

def test_14_a_calibration_that_is_not_json_names_its_file_not_a_placeholder(tmp_path):
    from tests.cli_runner import run_cli
    bad = tmp_path / "cal.json"
    bad.write_text("not json")
    out = run_cli("predict", "--gpu", "H100", "--calibration", str(bad))
    assert out.returncode == 2 and "{where}" not in out.stderr and f"--save-calibration {bad}" in out.stderr


def test_14_a_device_given_as_a_calibration_is_called_a_device_not_missing(tmp_path):
    import os
    from tests.cli_runner import run_cli
    fifo = tmp_path / "cal.json"
    os.mkfifo(fifo)
    out = run_cli("predict", "--gpu", "H100", "--calibration", str(fifo))
    assert out.returncode == 2 and "a device, pipe or socket" in out.stderr and "no such" not in out.stderr
    missing = run_cli("predict", "--gpu", "H100", "--calibration", str(tmp_path / "gone.json"))
    assert missing.returncode == 2 and "no such calibration file" in missing.stderr


def test_6_a_calibration_with_huge_integers_is_a_message(tmp_path):
    from tests.cli_runner import run_cli
    cal = tmp_path / "cal.json"
    cal.write_text('{"format": "specmodel-calibration", "version": 2, "parameters": {"mfu": 1' + "0" * 400 + "}}")
    out = run_cli("predict", "--gpu", "H100", "--calibration", str(cal))
    assert out.returncode == 2 and "Traceback" not in out.stderr and str(cal) in out.stderr


# --- 12: the URL policy ------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["[::ffff:0:a9fe:a9fe]", "[::ffff:0:169.254.169.254]", "[2001:db8::5efe:a9fe:a9fe]",
                                  "[2001:db8::200:5efe:a9fe:a9fe]", "[64:ff9b:1:a9fe:a9:fe00::]"])
def test_12_every_ipv4_embedding_ipv6_form_of_the_metadata_address_is_refused(host):
    with pytest.raises(SpecModelError, match="metadata"):
        scrape.check_url(f"http://{host}/metrics", resolve=False)


def test_12_an_allow_list_entry_with_a_bracketed_ipv6_and_port_matches():
    policy = scrape.ScrapePolicy.from_env({"SPECMODEL_ALLOWED_HOSTS": "[::1]:18080, 10.0.0.7"})
    assert scrape.check_url("http://[::1]:18080/metrics", policy, resolve=False)
    assert scrape.check_url("http://[0:0::1]:18080/metrics", policy, resolve=False)
    with pytest.raises(SpecModelError, match="not in SPECMODEL_ALLOWED_HOSTS"):
        scrape.check_url("http://[::1]:18081/metrics", policy, resolve=False)


def test_12_a_url_with_user_and_password_and_a_bearer_token_says_so():
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv, scrape.make_client() as client:
        url = srv.url.replace("http://", "http://admin:secret@")
        with pytest.raises(SpecModelError, match="bearer token") as info:
            scrape.fetch_text(client, url, token="tok")
        assert srv.scrapes == 0 and "secret" not in str(info.value)
    with pytest.raises(SpecModelError, match="bearer token"):
        promapi.PromServer("http://admin:secret@127.0.0.1:9090", auth=promapi.PromAuth(bearer_token="tok"))


# --- 6: no tracebacks from overflow, huge integers or odd characters -------------------------------

def test_6_counters_near_the_float_limit_are_a_reason_for_that_instance_not_an_overflow():
    from specmodel.metrics import fleet
    label = fleet.SERIES_LABEL
    rows = [({label: "vllm:spec_decode_num_drafts_total"}, 1e-300),
            ({label: "vllm:spec_decode_num_draft_tokens_total"}, 1e300),
            ({label: "vllm:spec_decode_num_accepted_tokens_total"}, 1e300),
            ({label: "vllm:generation_tokens_total"}, 1e300)]
    with pytest.raises(SpecModelError, match="more than the 64 drafts per step"):
        fleet.windows_for_instance(rows, 300.0, 1000.0)


def _fleet_with_a_second_instance(value_of):
    """A fleet answer from a real 127.0.0.1 server: the reference vLLM instance gpu-0 and gpu-1, a copy of it
    whose values `value_of(series, value)` rewrites; the fleet report."""
    import json
    from specmodel import Scenario
    from specmodel.metrics import fleet
    from tests.fuzz_targets import FLEET_ROWS, _vector
    second = [({**labels, "instance": "gpu-1:8000"}, value_of(labels[fleet.SERIES_LABEL], value))
              for labels, value in FLEET_ROWS]
    with ReplayServer(json.dumps(_vector(FLEET_ROWS + second)) + "\n", path="/api/v1/query") as srv, \
            httpx.Client() as client:
        base = srv.url.removesuffix("/api/v1/query")
        return fleet.fleet(client, promapi.PromServer(base), Scenario(), window="5m", at_s=1700000000.0)


def test_6_an_infinite_counter_lists_its_fleet_instance_with_the_reason_not_as_speculation_off():
    # the +Inf counters were left out, so gpu-1 showed as "speculative decoding is off on this server"
    report = _fleet_with_a_second_instance(lambda series, v: "+Inf" if "spec_decode" in series else v)
    assert [i.instance for i in report.instances] == ["gpu-0:8000"]
    (problem,) = report.problems
    assert problem["instance"] == "gpu-1:8000"
    assert "vllm:spec_decode_num_accepted_tokens_total" in problem["reason"]
    assert "NaN or infinite, not a count" in problem["reason"]


def test_6_an_infinite_counter_on_a_metrics_page_is_named_not_read_as_a_draft_ratio():
    from specmodel.metrics import prom
    text = "".join(f'vllm:{name}{{engine="0",model_name="m"}} {value}\n' for name, value in [
        ("spec_decode_num_drafts_total", "100"), ("spec_decode_num_draft_tokens_total", "+Inf"),
        ("spec_decode_num_accepted_tokens_total", "250"), ("generation_tokens_total", "1000")])
    with pytest.raises(SpecModelError, match=r"the counter vllm:spec_decode_num_draft_tokens_total is \+Inf on this "
                                             "page, not a count"):
        prom.parse_snapshot(text, at=0.0)


@pytest.mark.parametrize("gpu, words", [
    ("H100 (TP=" + "9" * 5000 + ")", "above the 64"), ("99999999999x H100", "99,999,999,999, above the 64"),
    ("H100 (TP=0)", "must be ≥ 1, got 0"),
])
def test_11_a_gpu_text_cannot_bring_a_tp_past_its_bound_or_to_zero(gpu, words):
    from tests.cli_runner import run_cli
    out = run_cli("predict", "--gpu", gpu)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr) < 400  # the 5,000 digits are not echoed back


@pytest.mark.parametrize("field, value, words", [
    ("branching", 10**9, "branching is 1,000,000,000, above the 64"),
    ("tp", 10**9, "tensor parallelism is 1,000,000,000, above the 64"),
    ("concurrency", 1e308, "above the 65,536"), ("concurrency", float("inf"), "finite"),
    ("context_len", 10**12, "above the 16,777,216"),
])
def test_11_every_setting_of_a_scenario_is_bounded_with_the_bound_in_the_message(field, value, words):
    from specmodel.model.scenario import Scenario
    with pytest.raises(SpecModelError, match=words.replace("(", r"\(")):
        Scenario.from_names(**{field: value}).validated()


@pytest.mark.filterwarnings("error::RuntimeWarning")  # 1e30 went to the model as int64 garbage (make fuzz)
def test_11_a_run_row_past_the_concurrency_bound_is_refused_by_its_row_and_the_others_load():
    from specmodel.model.roofline import Efficiency
    from specmodel.runs import read_runs
    from specmodel.runs.review import review
    data = (b"workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\nchat,1e30,3,0.7,100,150\n"
            b"chat,100000,3,0.7,100,150\nchat,8,3,0.7,100,150\n")
    table = read_runs([("big.csv", data)])
    assert [(p.file, p.row, p.column) for p in table.errors] == [("big.csv", 2, "concurrency"),
                                                                  ("big.csv", 3, "concurrency")]
    assert all("above 65536; expected concurrent requests, 1 to 65,536" in p.message
               for p in table.errors)
    assert table.rows["concurrency"].tolist() == [8]
    assert review(table.rows, Efficiency()).evaluated["predicted_speedup"].notna().all()


def test_6_a_window_past_any_retention_and_a_non_ascii_token_are_messages(monkeypatch):
    from tests.cli_runner import run_cli
    with pytest.raises(SpecModelError, match="3660 days"):
        promapi.parse_duration("99999999999999999999999d")
    with pytest.raises(SpecModelError, match="position 1"):
        promapi.PromAuth(bearer_token="é")
    monkeypatch.setenv("HOSTILE_TOKEN", "tok\u00e9n")
    out = run_cli("scrape", "http://127.0.0.1:9/metrics", "--token-env", "HOSTILE_TOKEN")
    assert out.returncode == 2 and "printable ASCII" in out.stderr


@pytest.mark.parametrize("series", ["vllm:num_requests_running", "vllm:spec_decode_num_drafts_total"])
def test_6_a_400_digit_value_on_a_metrics_page_is_a_message_not_an_overflow(series):
    # prometheus_client reads an integer value as a Python int: math.isfinite raised OverflowError (make fuzz);
    # no exporter writes 400 digits (issue 41: the one number parser refuses them by name)
    from specmodel.metrics import prom
    from tests.replay import fixture_text
    text = fixture_text("vllm_v1_specdecode_sample.txt")
    line = next(line for line in text.splitlines() if line.startswith(series + "{"))
    text = text.replace(line, line.rsplit(" ", 1)[0] + " " + "9" * 400)
    with pytest.raises(SpecModelError, match=re.escape(f"({series}) has a value that has 400 digits")):
        prom.parse_snapshot(text, at=0.0)


def test_6_fleet_window_past_any_retention_is_one_line_and_exit_2(capsys):
    from specmodel import cli
    code = cli.main(["fleet", "http://127.0.0.1:9", "--window", "99999999999999999999999d"])
    err = capsys.readouterr().err
    assert code == 2 and "3660 days" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_14_a_rejected_fleet_query_keeps_prometheus_reason_in_the_message():
    """The fleet query is over 4,000 characters: quoted whole, it pushed Prometheus' reason past the
    2,000 characters a message shows, so the Fleet page said "rejected the query …" without why."""
    import json
    from specmodel import Scenario
    from specmodel.text import MAX_MESSAGE_CHARS
    from specmodel.metrics import fleet
    body = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error at char 3: unexpected"})
    with ReplayServer(body + "\n", path="/api/v1/query") as srv, httpx.Client() as client, \
            pytest.raises(SpecModelError) as info:
        fleet.fleet(client, promapi.PromServer(srv.url.removesuffix("/api/v1/query")), Scenario())
    message = str(info.value)
    assert len(fleet.fleet_promql("5m")) > MAX_MESSAGE_CHARS
    assert "parse error at char 3: unexpected; check the label filter" in message
    assert len(message) < MAX_MESSAGE_CHARS // 2


# --- 7: text from a server is shown as text, never as Markdown -----------------------------------------

def test_7_a_prometheus_error_text_with_a_link_and_an_image_is_shown_inert_on_the_fleet_page():
    """The Fleet page quoted a Prometheus error as Markdown: the link was clickable and the browser fetched
    the image. Served by a real 127.0.0.1 server answering the fleet query with that error."""
    import json
    from streamlit.testing.v1 import AppTest
    from tests.conftest import ROOT
    hostile = "parse error at char 3: [click](http://127.0.0.1:9/x) ![i](http://127.0.0.1:9/pixel.png) # Heading"
    body = json.dumps({"status": "error", "errorType": "execution", "error": hostile}) + "\n"
    with ReplayServer(body, path="/api/v1/query") as srv:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params["prom_url"] = srv.url.removesuffix("/api/v1/query")
        at.run()
        at.switch_page("pages/fleet.py").run()
    assert not at.exception
    shown = " ".join(e.value for e in at.error)
    assert "could not run the query" in shown and "click" in shown  # the message is there, as text
    assert not re.search(r"(?<!\\)\]\(|(?<!\\)!\[", shown), shown  # no unescaped link or image syntax


# --- 4: caches shared by every session are bounded in bytes -----------------------------------------

def test_4_twenty_uploads_with_a_5_mb_name_leave_nothing_in_the_shared_caches():
    import gc
    from specmodel.runs import names
    from specmodel.model import presets
    probes = [names.cleaned_name, names.parse_hardware, names.parse_model, names.parse_method]
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20):
            text = f"{i} H100 " + "x" * 5_000_000
            for probe in probes:
                probe(text)
            presets.stated_tp(text)
            del text
        gc.collect()
        kept = (tracemalloc.get_traced_memory()[0] - before) / 1e6
    finally:
        tracemalloc.stop()
    assert kept < 5, f"{kept:.0f} MB kept after the uploads"
    assert names.cleaned_name("Llama 3.1 8B") == names.cleaned_name("Llama 3.1 8B")  # short names still cached
    assert names.cleaned_name.cache_info().hits >= 1


# --- 5: messages aggregated --------------------------------------------------------------------------

def test_5_a_csv_with_a_million_unknown_columns_gives_one_warning_naming_a_few(tmp_path):
    from specmodel import runs
    n = 1_000_000
    header = "workload,concurrency,alpha,k,baseline_tok_s,spec_tok_s," + ",".join(f"x{i}" for i in range(n))
    row = "w,8,0.7,4,100,150" + "," * n
    table = runs.read_runs([("wide.csv", (header + "\n" + row + "\n").encode())])
    about = [p for p in table.problems if "unknown columns" in p.message]
    assert len(table.rows) == 1 and len(table.problems) < 10
    assert len(about) == 1 and about[0].message.startswith("9,994 unknown columns, e.g. x0, x1, x2, …")
    assert any("the header has 1,000,006 columns: only the first 10,000 are read" in p.message for p in table.problems)


# --- 8: nothing loaded silently wrong ----------------------------------------------------------------

_HEADER = "workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\n"


def _read(name: str, data):
    from specmodel import runs
    table = runs.read_runs([(name, data.encode() if isinstance(data, str) else data)])
    return table, [p for p in table.problems]


def test_8_thousands_separators_are_read_as_thousands_and_said_so():
    table, problems = _read("sweep.csv", _HEADER + 'chat,"1,024",3,0.7,"1,500","2,100.5"\ncode,8,3,0.7,900,"1,300"\n')
    rows = table.rows.set_index("workload")
    assert rows.loc["chat", "concurrency"] == 1024 and rows.loc["chat", "baseline_tok_s"] == 1500
    assert rows.loc["chat", "spec_tok_s"] == 2100.5 and rows.loc["code", "spec_tok_s"] == 1300
    notes = {p.column: p.message for p in problems if p.severity == "info"}
    assert "thousands separators" in notes["concurrency"] and "'1,024' as 1024" in notes["concurrency"]
    assert "thousands separators" in notes["baseline_tok_s"]


def test_8_a_decimal_comma_file_keeps_its_decimals():
    text = ("workload;concurrency;k;alpha;baseline_tok_s;spec_tok_s\n"
            "chat;8;3;0,7;1234,5;2100,5\ncode;8;3;0,75;1,500;1300\n")
    table, problems = _read("de.csv", text)
    rows = table.rows.set_index("workload")
    assert rows.loc["chat", "alpha"] == 0.7 and rows.loc["chat", "baseline_tok_s"] == 1234.5
    assert rows.loc["code", "alpha"] == 0.75
    assert rows.loc["code", "baseline_tok_s"] == 1.5  # the file writes decimal commas: "1,500" is 1.5 here
    assert any(p.column == "baseline_tok_s" and "read with decimal commas: '1234,5' as 1234.5" in p.message
               for p in problems)


def test_8_a_column_mixing_thousands_and_decimal_commas_refuses_its_comma_rows():
    text = _HEADER + 'a,8,3,0.7,"1,234,567",2000\nb,8,3,0.7,"0,75",2000\nc,8,3,0.7,900,2000\n'
    table, problems = _read("mixed.csv", text)
    assert list(table.rows["workload"]) == ["c"]
    refused = {p.row: p for p in problems if p.severity == "error"}
    assert set(refused) == {2, 3} and all(p.column == "baseline_tok_s" for p in refused.values())
    assert "mixes thousands separators ('1,234,567') and decimal commas ('0,75')" in refused[3].message


def test_8_an_unclosed_quote_is_named_at_its_row_and_the_rows_after_it_still_load():
    text = _HEADER + 'chat,8,3,0.7,1000,1500\ncode,"8,3,0.7,1000,1500\nsum,8,3,0.7,1000,1600\nqa,8,3,0.7,1000,1700\n'
    table, problems = _read("quote.csv", text)
    assert list(table.rows["workload"]) == ["chat", "sum", "qa"]
    assert list(table.rows["spec_tok_s"]) == [1500, 1600, 1700]
    (error,) = [p for p in problems if p.severity == "error"]
    assert error.row == 3 and "a quote opens on this row and is not closed" in error.message
    assert str(error).startswith("quote.csv, row 3: ")


def test_8_an_unclosed_quote_on_the_last_row_is_not_loaded_as_one_cell():
    table, problems = _read("last.csv", _HEADER + 'chat,8,3,0.7,1000,1500\nqa,8,3,0.7,1000,"1700\n')
    assert list(table.rows["workload"]) == ["chat"]
    assert [(p.row, p.severity) for p in problems] == [(3, "error")] and "quote" in problems[0].message


def test_8_a_quote_that_closes_rows_later_does_not_take_them_in():
    text = _HEADER + 'a,8,3,0.7,1000,"1500\nb,8,3,0.7,1000,1600\nc,8,3,0.7,1000,"1700"\nd,8,3,0.7,1000,1800\n'
    table, problems = _read("late.csv", text)
    assert list(table.rows["workload"]) == ["b", "c", "d"]
    assert [p.row for p in problems if p.severity == "error"] == [2]


def test_8_a_cell_with_a_line_break_inside_its_quotes_still_reads():
    text = _HEADER.replace("spec_tok_s", "spec_tok_s,notes") + 'chat,8,3,0.7,1000,1500,"two\nlines"\nqa,8,3,0.7,1000,1700,x\n'
    table, problems = _read("notes.csv", text)
    assert list(table.rows["workload"]) == ["chat", "qa"] and not [p for p in problems if p.severity == "error"]


def test_8_a_row_one_cell_short_is_refused_by_its_row_not_loaded_into_the_wrong_columns():
    table, problems = _read("short.csv", _HEADER + "chat,8,3,0.7,1000,1500\ncode,8,0.7,1000,1500\nqa,8,3,0.7,1000,1700\n")
    assert list(table.rows["workload"]) == ["chat", "qa"]
    (error,) = problems
    assert str(error).startswith("short.csv, row 3: has 5 cells where the header has 6")
    assert "row not loaded" in error.message


def test_8_one_cell_over_the_cell_limit_refuses_only_its_row():
    from specmodel import bounds
    long = "x" * (bounds.MAX_CELL_CHARS + 10)
    table, problems = _read("long.csv", _HEADER + f"chat,8,3,0.7,1000,1500\n{long},8,3,0.7,1000,1500\n"
                                                  f'qa,8,3,0.7,1000,1700\nq,"{long}",8,3,0.7,1000,1\nlast,8,3,0.7,1000,1800\n')
    assert list(table.rows["workload"]) == ["chat", "qa", "last"]
    errors = [p for p in problems if p.severity == "error"]
    assert [p.row for p in errors] == [3, 5]
    assert all("a cell longer than 131,072 characters (the cell limit): row not loaded" in p.message for p in errors)


def test_8_many_unclosed_quotes_are_bounded_and_say_where_reading_stopped():
    from specmodel.runs import csv_rows
    text = _HEADER + 'w,8,3,0.7,1000,"1\n' * 5000 + "end,8,3,0.7,1000,1800\n"
    table, problems = _read("quotes.csv", text)
    assert len(problems) <= csv_rows.MAX_BROKEN_ROWS + 2
    assert any("the file is not read past this row" in p.message for p in problems)


def test_8_one_bad_byte_is_named_by_its_offset_and_the_file_stays_utf8():
    data = (_HEADER + "chat — ü,8,3,0.7,1000,1500\n").encode() + b"x\xff,8,3,0.7,1000,1800\n"
    table, problems = _read("bad.csv", data)
    assert list(table.rows["workload"]) == ["chat — ü", "x\ufffd"]  # no "â€”" mojibake
    (warning,) = problems
    offset = data.index(b"\xff")
    assert warning.row == 3 and f"byte {offset}, row 3" in warning.message


def test_8_a_windows_1252_file_is_read_and_says_so():
    data = (_HEADER + "chat é,8,3,0.7,1000,1500\n").encode("cp1252")
    table, problems = _read("win.csv", data)
    assert list(table.rows["workload"]) == ["chat é"]
    assert len(problems) == 1 and "read as Windows-1252" in problems[0].message and problems[0].row == 2


def test_8_duplicated_series_in_a_scrape_are_read_once_with_a_warning(capsys):
    import json

    from specmodel import cli
    from tests import replay
    text = replay.fixture_text("vllm_v1_specdecode_sample.txt")
    line = next(x for x in text.splitlines() if x.startswith("vllm:spec_decode_num_accepted_tokens_total{"))
    doubled = text.replace(line, line + "\n" + line)
    with ReplayServer(doubled, increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        code = cli.main(["scrape", srv.url, "--window", "0.1", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["tokens_per_step"] == 2.5  # summed, the accepted tokens counted twice: E = 4
    assert any("1 duplicated series" in w and "vllm:spec_decode_num_accepted_tokens_total{" in w
               for w in data["warnings"])


# --- 13: parsing and processing after the HTTP exchange are bounded in time ---------------------------

def test_13_a_fleet_answer_past_the_processing_limit_lists_what_was_judged_and_says_how_many_were_not(monkeypatch):
    from specmodel import Scenario, bounds
    from specmodel.metrics import fleet, samples
    server = promapi.PromServer(samples.FLEET_SAMPLE_URL)
    with samples.recorded_prometheus_client() as client:
        whole = fleet.fleet(client, server, Scenario(), window=samples.FLEET_SAMPLE_WINDOW,
                            at_s=samples.fleet_sample_time())
        assert len(whole.instances) >= 3 and not any("not judged" in p["reason"] for p in whole.problems)
        clock = iter(range(10**6))  # one second passes per look at the clock: the limit of 2 s lets 2 instances in
        monkeypatch.setattr(bounds, "clock", lambda: float(next(clock)))
        monkeypatch.setattr(bounds, "MAX_WORK_S", 2.0)
        cut = fleet.fleet(client, server, Scenario(), window=samples.FLEET_SAMPLE_WINDOW,
                          at_s=samples.fleet_sample_time())
    assert 0 < len(cut.instances) < len(whole.instances)
    (note,) = [p for p in cut.problems if "not judged" in p["reason"]]
    assert note["instance"].endswith("more instance(s)") and "the 2 s limit" in note["reason"]


def test_13_runs_past_the_processing_limit_load_the_rows_checked_and_name_the_rest(monkeypatch):
    from specmodel import bounds, runs
    text = _HEADER + "w,8,3,0.7,1000,1500\n" * (runs.PROGRESS_EVERY * 3)
    clock = iter(range(10**6))
    monkeypatch.setattr(bounds, "clock", lambda: float(next(clock)))
    monkeypatch.setattr(bounds, "MAX_LOAD_S", 2.0)
    table = runs.read_runs([("big.csv", text.encode())])
    assert 0 < len(table.rows) < runs.PROGRESS_EVERY * 3
    (warning,) = [p for p in table.problems if "limit on processing" in p.message]
    assert warning.row == len(table.rows) + 2 and "runs from this row on were not loaded" in warning.message


def test_13_a_metrics_text_past_the_processing_limit_is_a_message(monkeypatch):
    from specmodel import bounds
    from specmodel.metrics import prom
    from tests.replay import fixture_text
    clock = iter(range(10**6))
    monkeypatch.setattr(bounds, "clock", lambda: float(next(clock)))
    monkeypatch.setattr(bounds, "MAX_WORK_S", 3.0)
    with pytest.raises(SpecModelError, match="limit on processing one answer"):
        prom.parse_snapshot(fixture_text("vllm_v1_specdecode_sample.txt"))


def test_13_a_file_of_empty_rows_past_the_processing_limit_stops_reading_and_says_where(monkeypatch):
    from specmodel import bounds, runs
    text = _HEADER + "w,8,3,0.7,1000,1500\n" + ",,,,,\n" * 100_000
    clock = iter(range(10**6))
    monkeypatch.setattr(bounds, "clock", lambda: float(next(clock)))
    monkeypatch.setattr(bounds, "MAX_LOAD_S", 3.0)
    table = runs.read_runs([("blank.csv", text.encode())])
    (warning,) = [p for p in table.problems if "limit on processing" in p.message]
    assert warning.message.startswith("not read from this row on") and warning.row < 100_000


def test_13_blank_lines_are_skipped_at_once_not_read_one_by_one(monkeypatch):
    """A run of blank lines is passed over in one step (no record, no look at the clock per line): 19 MB of
    line breaks cost no memory per line; the rows after them keep their line numbers."""
    from specmodel import bounds, runs
    text = _HEADER + "w,8,3,0.7,1000,1500\n" + "\n" * 100_000 + "\r\n\r" * 5 + "v,8,3,0.7,1000,1500\n"
    clock = iter(range(10**6))
    monkeypatch.setattr(bounds, "clock", lambda: float(next(clock)))
    monkeypatch.setattr(bounds, "MAX_LOAD_S", 3.0)
    table = runs.read_runs([("blank.csv", text.encode())])
    assert not table.problems
    assert list(table.rows["row"]) == [2, 100_013]


def test_8_a_windows_1252_workload_file_says_how_it_was_read(tmp_path):
    from specmodel.plan import workloads
    path = tmp_path / "mix.csv"
    path.write_bytes("label,share,alpha\ncafé,1,0.7\n".encode("cp1252"))
    found, errors, notes = workloads.read_workloads(str(path))
    assert [w.label for w in found] == ["café"] and not errors
    assert any("mix.csv, row 2" in n and "read as Windows-1252" in n for n in notes)


# --- 8: workload files (Traffic mix, `specmodel mix FILE`) read CSV by the run files' rule -----------

def _read_mix(tmp_path, name, text):
    from specmodel.plan import workloads
    path = tmp_path / name
    path.write_text(text, newline="")
    found, errors, notes = workloads.read_workloads(str(path))
    return {w.label: w for w in found}, errors


def test_8_an_unclosed_quote_in_a_workload_file_refuses_its_row_and_the_rows_after_it_load(tmp_path):
    text = 'label,share,alpha\nchat,0.5,0.4\n"code,0.25,0.6\nsum,0.25,0.7\nqa,0.25,0.5\n'
    found, errors = _read_mix(tmp_path, "quote.csv", text)
    assert sorted(found) == ["chat", "qa", "sum"] and found["sum"].alpha == 0.7
    (error,) = errors
    assert error.startswith("quote.csv, row 3: a quote opens on this row and is not closed")
    assert "close the quote or remove it" in error


def test_8_a_quote_never_closed_in_a_workload_file_loses_only_its_row(tmp_path):
    from specmodel import bounds
    text = 'label,share,alpha\nchat,0.5,0.4\n"code,0.25,0.6' + "\nx" * (bounds.MAX_CELL_CHARS // 2) + "\n"
    found, errors = _read_mix(tmp_path, "open.csv", text)
    assert "chat" in found and found["chat"].alpha == 0.4
    assert any(e.startswith("open.csv, row 3: a quote opens on this row") for e in errors)


def test_8_one_over_long_cell_in_a_workload_file_refuses_that_row_only(tmp_path):
    from specmodel import bounds
    text = f"label,share,alpha,notes\nchat,0.5,0.4,\ncode,0.25,0.6,{'x' * (bounds.MAX_CELL_CHARS + 1)}\nsum,0.25,0.7,\n"
    found, errors = _read_mix(tmp_path, "long.csv", text)
    assert sorted(found) == ["chat", "sum"]
    (error,) = errors
    assert error.startswith("long.csv, row 3: has a cell longer than 131,072 characters") and "shorten the cell" in error


def test_8_a_short_workload_row_is_refused_naming_the_missing_column_not_loaded_shifted(tmp_path):
    found, errors = _read_mix(tmp_path, "short.csv", "label,share,alpha\nchat,0.5,0.4\ncode,0.6\nsum,0.5,0.7\n")
    assert sorted(found) == ["chat", "sum"]  # 'code' would have loaded with no alpha column's cell
    (error,) = errors
    assert error.startswith("short.csv, row 3: 2 cells where the header has 3 (no cell for 'alpha')")
    assert "give every column a cell" in error


def test_8_workload_problems_name_the_file_row_after_a_multi_line_cell(tmp_path):
    text = 'label,share,alpha,notes\nchat,0.5,0.4,"two\nlines"\nsum,0.5,x,\n'
    found, errors = _read_mix(tmp_path, "rows.csv", text)
    assert found["chat"].notes == "two\nlines"
    (error,) = errors
    assert error.startswith("rows.csv, row 4 ('sum'): workload 'sum' refused: column 'alpha' must be a number")


# --- done when: docs/deploy.md states each bound, as the code has it --------------------------------

def _bounds():
    """(where, constant, the figure docs/deploy.md must give on the constant's line) for every bound of
    specmodel/bounds.py and specmodel/text.py and the modules' own bounds the deploy page lists."""
    from specmodel import bounds, text
    from specmodel.export import report
    from specmodel.metrics import live
    from specmodel.plan import capacity, mix
    from specmodel.runs import csv_rows, sniff
    from specmodel.show import runs_view
    out = [(module.__name__.rsplit(".", 1)[-1], name, f"{value:,g}" if isinstance(value, float) else f"{value:,}")
           for module in (bounds, text) for name, value in vars(module).items()
           if name.startswith("MAX_") and isinstance(value, (int, float))]
    out += [("promapi", "MAX_WINDOW_S", f"{promapi.MAX_WINDOW_S // 86400} days"),
            ("promapi", "MAX_RANGE_POINTS", f"{promapi.MAX_RANGE_POINTS:,}"),
            ("promapi", "DEFAULT_TIMEOUT_S", f"{promapi.DEFAULT_TIMEOUT_S:g} s"),
            ("promapi", "EXCHANGE_MARGIN_S", f"{promapi.EXCHANGE_MARGIN_S:g} s"),
            ("sniff", "MAX_BAD_BYTES", f"{sniff.MAX_BAD_BYTES:,}"),
            ("csv_rows", "MAX_BROKEN_ROWS", f"{csv_rows.MAX_BROKEN_ROWS:,}"),
            ("live", "HISTORY_CAP", f"{live.HISTORY_CAP:,}"),
            ("mix", "MAX_WORKLOADS", f"{mix.MAX_WORKLOADS}"), ("mix", "MAX_GPU_UNITS", f"{mix.MAX_GPU_UNITS}"),
            ("mix", "MAX_PLANS", f"{mix.MAX_PLANS:,}"),
            ("capacity", "MAX_USERS", f"10^{round(math.log10(capacity.MAX_USERS))}"),
            ("capacity", "MAX_BATCH", f"{capacity.MAX_BATCH:,}"),
            ("report", "REPORT_ROWS", f"{report.REPORT_ROWS:,}"),
            ("runs_view", "TABLE_ROWS_SHOWN", f"{runs_view.TABLE_ROWS_SHOWN:,}")]
    return out


@pytest.mark.parametrize("where, name, figure", _bounds(), ids=lambda x: x if isinstance(x, str) else None)
def test_deploy_md_states_each_bound_with_the_codes_figure(where, name, figure):
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[1] / "docs" / "deploy.md").read_text(encoding="utf-8")
    lines = [line for line in doc.splitlines() if re.search(rf"`(?:[\w.]+\.)?{name}`", line)]
    assert lines, f"docs/deploy.md does not name {where}.{name}"
    assert any(figure in line for line in lines), f"docs/deploy.md gives {name} without its figure {figure}"


def test_7_an_uploaded_file_name_with_a_link_and_an_image_is_shown_inert_on_past_runs():
    from streamlit.testing.v1 import AppTest
    from tests.conftest import ROOT
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.switch_page("pages/past-runs.py").run()
    name = "[x](http://127.0.0.1:9/x)![i](http://127.0.0.1:9/p.png).csv"
    data = b"workload,concurrency,k,alpha,speedup\nw,1,4,0.8,1.6\nbad,x,4,0.8,1.6\n"
    at.file_uploader(key="run_files").set_value((name, data, "text/csv")).run()
    assert not at.exception
    shown = [e.value for kind in ("markdown", "caption", "warning", "error", "info", "success")
             for e in (*getattr(at, kind), *getattr(at.sidebar, kind)) if "127.0.0.1" in e.value]
    assert any("row 3, column 'concurrency'" in text for text in shown)  # the file is named, as text
    assert not any(re.search(r"(?<!\\)\]\(|(?<!\\)!\[", text) for text in shown), shown


@pytest.mark.parametrize("bound", [
    1_300,  # the rule on a page of 20 engines: the quick loop's
    pytest.param(None, marks=pytest.mark.slow),  # the bound itself: its page takes ~2.5 s of CPU to parse (its size)
])
def test_13_a_metrics_page_past_the_sample_bound_is_refused_before_parsing_and_one_at_it_is_read(bound, monkeypatch):
    from specmodel import bounds
    from specmodel.metrics.prom import parse_snapshot
    if bound is not None:
        monkeypatch.setattr(bounds, "MAX_METRICS_SAMPLES", bound)
    MAX_METRICS_SAMPLES = bounds.MAX_METRICS_SAMPLES  # noqa: N806 (the bound, as the module names it)
    engines = MAX_METRICS_SAMPLES // 65
    lines = ["# TYPE vllm:spec_decode_num_drafts_total counter"]
    for e in range(engines):
        lines.append(f'vllm:spec_decode_num_drafts_total{{engine="{e}",model_name="m"}} 1000')
        lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{e}",model_name="m",position="{p}"}} '
                  f'{1000 - p}' for p in range(64)]
    text = "\n".join(lines) + "\n"
    snap = parse_snapshot(text, at=0.0)
    assert snap.k == 64 and snap.engines == engines
    more = text + "".join(f'vllm:spec_decode_num_drafts_total{{engine="x{i}",model_name="m"}} 1\n' for i in range(100))
    with pytest.raises(SpecModelError) as err:
        parse_snapshot(more, at=0.0)
    assert f"more than the {MAX_METRICS_SAMPLES:,}" in str(err.value) and "Fleet page" in str(err.value)
