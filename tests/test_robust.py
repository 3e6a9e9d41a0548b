"""Issue 12, one regression test (or a few) per numbered defect: each reproduces what a careless user
or an attacker did against a shared instance, and checks what they see now.

Memory-bound checks run the CLI in a subprocess under an address-space cap (resource.setrlimit):
before the fixes those inputs took 4+ GB and died; now they are refused within the cap."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from dataclasses import replace

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from specmodel import SpecModelError
from specmodel.metrics import fleet, prom, promapi, scrape
from specmodel.model.scenario import Scenario
from specmodel.plan import workloads
from specmodel.runs import read_runs
from tests import replay
from tests.cli_runner import run_cli
from tests.conftest import ROOT
from tests.fuzz_targets import FLEET_ROWS, _vector
from tests.replay import ReplayServer

APP = str(ROOT / "app.py")
FAST = scrape.ScrapePolicy(connect_timeout_s=1.0, read_timeout_s=0.5, total_timeout_s=1.0)
MEMORY_CAP = 1536 * 2**20  # bytes of address space for one CLI run: a normal run needs well under this


def capped_cli(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    """`python -m specmodel ...` with its address space capped at MEMORY_CAP (one BLAS thread, so
    the cap measures the input's work, not thread stacks)."""
    code = ("import resource, sys, runpy; resource.setrlimit(resource.RLIMIT_AS, (%d, %d)); "
            "sys.argv = ['specmodel'] + sys.argv[1:]; runpy.run_module('specmodel', run_name='__main__')"
            % (MEMORY_CAP, MEMORY_CAP))
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def messages(table) -> str:
    return " | ".join(str(p) for p in table.problems)


# --- 1. one small input exhausting the server's memory ------------------------------------------------

def test_1_a_60_byte_csv_with_k_100000_is_refused_by_row_within_a_memory_cap(tmp_path):
    path = tmp_path / "k.csv"
    path.write_text("workload,concurrency,k,tokens_per_step,speedup\nchat,1,100000,3,1.5\nok,1,4,3,1.5\n")
    assert len(path.read_bytes()) < 100
    r = capped_cli("runs", str(path), "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    assert "k.csv, row 2, column 'k': '100000' is above 64" in r.stderr
    assert [row["workload"] for row in json.loads(r.stdout)["rows"]] == ["ok"]  # the good row still loads


def test_1_a_metrics_page_with_position_999999_is_refused_not_allocated():
    text = ('vllm:spec_decode_num_drafts_total{model_name="m"} 10\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",position="999999"} 4\n')
    with pytest.raises(SpecModelError, match=r'position="999999", so k would be 1,000,000; .* k up to 64'):
        prom.parse_snapshot(text)


@pytest.mark.parametrize("positions", [
    1_000,  # the rule: the quick loop's
    pytest.param(10**6, marks=pytest.mark.slow),  # the hostile size (~1.5 s of CPU by its size alone)
])
def test_1_a_vllm_json_with_a_million_positions_is_refused_by_row(positions):
    doc = {"output_throughput": 100.0, "max_concurrency": 4, "spec_decode_num_drafts": 10,
           "spec_decode_per_position_acceptance_rates": [0.5] * positions}
    table = read_runs([("perpos.json", json.dumps(doc).encode())])
    assert table.rows.empty
    assert f"{positions:,} positions is longer than the 64" in messages(table)


MAX_K = 64  # specmodel.bounds.MAX_K, the bound docs/deploy.md states


def test_1_k_and_survival_lists_are_bounded_in_every_form():
    from specmodel.model import acceptance
    with pytest.raises(SpecModelError, match="above the 64"):
        acceptance.from_alpha(0.7, MAX_K + 1)
    with pytest.raises(SpecModelError, match="longer than the 64"):
        acceptance.from_survival([0.5] * (MAX_K + 1))
    assert acceptance.from_alpha(0.7, MAX_K).k == MAX_K  # the bound itself is accepted
    # Counts that imply a huge k (draft tokens / drafts) are refused too, not predicted at k = 10^6.
    table = read_runs([("c.csv", b"workload,concurrency,drafts,draft_tokens,speedup\nx,1,1,1000000,1.2\n")])
    assert table.rows.empty and "k = 1,000,000, outside 1..64" in messages(table)


# --- 2. a trailing comma loading wrong numbers silently -------------------------------------------------

def test_2_a_trailing_comma_loads_the_right_columns_with_a_warning():
    table = read_runs([("t.csv", b"workload,concurrency,k,tokens_per_step,speedup\nchat,2,3,3,2.5,\n")])
    row = table.rows.iloc[0]
    assert (row["workload"], row["concurrency"], row["k"], row["tokens_per_step"], row["measured_speedup"]) == \
        ("chat", 2, 3, 3.0, 2.5)
    assert "t.csv, row 2: 1 row(s) end with empty cells past the header's 5 columns" in messages(table)


def test_2_a_row_with_more_cells_than_the_header_is_reported_not_shifted():
    table = read_runs([("x.csv", b"workload,concurrency,k,tokens_per_step,speedup\nchat,2,3,3,2.5,7\nok,1,4,3,1.5\n")])
    assert list(table.rows["workload"]) == ["ok"]
    assert "x.csv, row 2: has 6 cells where the header has 5 (extra: '7'); row not loaded" in messages(table)


# --- 3. models that do not fit: an answer, not an exception ---------------------------------------------

@pytest.mark.parametrize("query, words", [
    ({"gpu": "L4", "ctx": "32768"}, "needs 22.4 GB for one sequence at context 32,768"),
    ({"gpu": "A10G", "ctx": "32768"}, "needs 22.4 GB for one sequence at context 32,768"),
    ({"draft": "Llama 3.1 70B"}, "because of the Llama 3.1 70B draft"),
])
def test_3_the_what_if_page_answers_does_not_fit_with_the_closest_setting(query, words):
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    shown = " ".join(e.value for e in at.error)
    assert words in shown and ("has 24 GB" in shown or "has 48 GB" in shown)
    assert "closest setting that fits" in shown


def test_3_the_closest_context_is_one_click_away():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["gpu"], at.query_params["ctx"] = "L4", "32768"
    at.run()
    at.button(key="use_fitting_context").click().run()
    assert not at.exception and at.session_state["ctx"] == 16384  # the longest choice ≤ 27,008 tokens
    assert "Does not fit" not in " ".join(e.value for e in at.error)


def cli(*args):
    return run_cli(*args)  # in-process; tests/test_cli_smoke.py runs each command once as a subprocess


@pytest.mark.parametrize("args", [["--context-len", "262144"], ["--gpu", "L4", "--context-len", "32768"]])
def test_3_predict_says_does_not_fit_with_exit_2(args):
    r = cli("predict", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("error: does not fit: Llama 3.1 8B needs") and "closest setting that fits" in r.stderr


def test_3_predict_json_gives_the_does_not_fit_verdict_with_every_key():
    r = cli("predict", "--gpu", "L4", "--context-len", "32768", "--json")
    out = json.loads(r.stdout)
    normal = json.loads(cli("predict", "--json").stdout)
    assert r.returncode == 0 and out["verdict"] == "does not fit" and set(normal) <= set(out)
    assert out["speedup"] is None and out["does_not_fit"]["needed_GB"] == pytest.approx(22.35, abs=0.05)
    assert out["does_not_fit"]["available_GB"] == pytest.approx(21.6) and out["does_not_fit"]["closest_context_len"] == 27008


def test_3_n_gram_advice_names_the_real_cause_not_a_draft():
    from specmodel import summarize
    v = summarize(Scenario.from_names(gpu="L4", context_len=27005, method="ngram", draft=None, k=8)).verdict
    assert "the k = 8 extra tokens per sequence" in v.text and "draft" not in v.text
    assert "n-gram" not in v.advice and "k = 3" in v.advice  # the closest setting that fits


# --- 4. URL policy bypasses -----------------------------------------------------------------------------

def test_4_an_allow_list_wildcard_never_spans_dots_and_never_skips_the_metadata_check():
    octets = scrape.ScrapePolicy(allowed_hosts=("10.0.0.*",))
    with pytest.raises(SpecModelError, match="not in SPECMODEL_ALLOWED_HOSTS"):
        scrape.check_url("http://10.0.0.1.evil.example/metrics", octets, resolve=False)
    assert scrape.check_url("http://10.0.0.7:8000/metrics", octets).host == "10.0.0.7"
    everything = scrape.ScrapePolicy(allowed_hosts=("*",))
    with pytest.raises(SpecModelError, match="cloud metadata"):
        scrape.check_url("http://169.254.169.254/latest/", everything)


@pytest.mark.parametrize("host", ["[::169.254.169.254]", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]",
                                  "[64:ff9b:1::a9fe:a9fe]", "[::ffff:a9fe:a9fe]"])
def test_4_ipv4_inside_ipv6_is_unpacked_and_refused(host):
    with pytest.raises(SpecModelError, match="169.254.169.254"):
        scrape.check_url(f"http://{host}/latest/meta-data/")


def test_4_the_address_connected_to_is_the_address_checked(monkeypatch):
    """A rebinding name: the first lookup (the policy's) answers 127.0.0.1, every later one the
    metadata address. The connection must not look the name up again unchecked."""
    real = socket.getaddrinfo
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv:
        port = int(srv.url.split(":")[2].split("/")[0])
        calls = []

        def rebinding(host, *args, **kwargs):
            if host != "rebind.test":
                return real(host, *args, **kwargs)
            calls.append(host)
            ip = "127.0.0.1" if len(calls) == 1 else "169.254.169.254"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]

        monkeypatch.setattr(socket, "getaddrinfo", rebinding)
        with scrape.make_client(FAST) as client, pytest.raises(SpecModelError, match="resolves to 169.254.169.254"):
            scrape.fetch_text(client, f"http://rebind.test:{port}/metrics", policy=FAST)
        assert srv.scrapes == 0 and len(calls) == 2


def test_4_a_checked_connection_keeps_the_host_name_for_the_request(monkeypatch):
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv:
        port = int(srv.url.split(":")[2].split("/")[0])
        real = socket.getaddrinfo
        monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: real(
            "127.0.0.1" if host == "metrics.test" else host, *a, **k))
        with scrape.make_client(FAST) as client:
            assert "vllm:" in scrape.fetch_text(client, f"http://metrics.test:{port}/metrics", policy=FAST)
        assert srv.headers[-1]["Host"] == f"metrics.test:{port}"  # Host kept; only where the bytes go is pinned


# --- 5. credentials in links ------------------------------------------------------------------------------

def test_5_credentials_in_a_shared_link_move_out_of_the_url():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["live_url"] = "http://admin:pw-SECRET@127.0.0.1:9/metrics"
    at.run()
    at.switch_page("pages/live.py").run()
    assert not at.exception
    assert at.text_input(key="live_url").value == "http://127.0.0.1:9/metrics"
    assert at.session_state["live_user"] == "admin" and at.session_state["live_password"] == "pw-SECRET"
    shown = " ".join(str(e.value) for e in (*at.error, *at.info, *at.warning, *at.caption))
    assert "pw-SECRET" not in shown and "moved to the credential fields" in shown


def test_5_a_url_without_a_scheme_never_echoes_its_user_or_password():
    with pytest.raises(SpecModelError) as info:
        scrape.check_url("admin:pw-SECRET@host:8000")
    assert "admin" not in str(info.value) and "pw-SECRET" not in str(info.value)
    assert "no http:// or https://" in str(info.value)
    assert scrape.display_url("admin:pw@host:8000/metrics") == "***@host:8000/metrics"


# --- 6. messages never echo what the URL returned ------------------------------------------------------------

def test_6_an_internal_text_file_is_refused_without_quoting_it():
    with ReplayServer("db_password=SECRET-INTERNAL-42\nother=1\n") as srv:
        with scrape.make_client(FAST) as client, pytest.raises(SpecModelError) as info:
            scrape.scrape_snapshot(client, srv.url, policy=FAST)
    assert "SECRET" not in str(info.value) and "line 1 is not a metric sample" in str(info.value)


def test_6_metric_names_of_another_exporter_are_not_quoted():
    with pytest.raises(SpecModelError) as info:
        prom.parse_snapshot("db_password_SECRET 42\n")
    assert "SECRET" not in str(info.value) and "(1 metric names)" in str(info.value)


def test_6_a_json_error_from_a_non_prometheus_service_is_not_quoted():
    body = json.dumps({"status": "error", "errorType": "internal", "error": "token=SECRET-INTERNAL-42"}) + "\n"
    with ReplayServer(body, path="/api/v1/query") as srv, httpx.Client() as client:
        with pytest.raises(SpecModelError) as info:
            promapi.query(client, promapi.PromServer(srv.url.removesuffix("/api/v1/query"), policy=FAST), "up")
    assert "SECRET" not in str(info.value) and "not shown" in str(info.value)


# --- 7. tracebacks from deep JSON, huge integers and devices --------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def test_7_deep_json_is_refused_with_a_message_everywhere(tmp_path):
    table = read_runs([("deep.json", DEEP.encode())])
    assert "nested more than 64 levels" in messages(table)
    (tmp_path / "w.json").write_text(DEEP)
    with pytest.raises(SpecModelError, match="nested more than 64 levels"):
        workloads.read_workloads(str(tmp_path / "w.json"))
    with ReplayServer(DEEP + "\n", path="/api/v1/query") as srv, httpx.Client() as client:
        with pytest.raises(SpecModelError, match="did not answer like a Prometheus server"):
            promapi.query(client, promapi.PromServer(srv.url.removesuffix("/api/v1/query"), policy=FAST), "up")


def test_7_an_integer_of_5000_digits_is_a_bad_cell_not_a_crash():
    table = read_runs([("big.json", b'{"output_throughput": ' + b"9" * 5000 + b', "max_concurrency": 4}')])
    assert table.rows.empty and "output_throughput': an infinite or out-of-range number" in messages(table)


@pytest.mark.parametrize("path, words", [("/dev/zero", "is a device, pipe or socket"), ("/tmp", "is a folder")])
def test_7_the_cli_refuses_devices_and_folders_before_reading(path, words):
    # in-process: were the check gone, the read would stop at the 20 MB file limit with another message
    r = cli("runs", path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and words in r.stderr
    r = cli("mix", path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and words in r.stderr


# --- 8. one bad instance blanking the fleet --------------------------------------------------------------------

def _two_instances() -> list:
    """The fleet answer for a good instance and a bad one (accepted tokens > k × drafts)."""
    bad = []
    for labels, value in FLEET_ROWS:
        labels = {**labels, "instance": "gpu-1:8000"}
        if labels[fleet.SERIES_LABEL] == "vllm:spec_decode_num_accepted_tokens_total":
            value = str(float(value) * 1000)
        bad.append((labels, value))
    return FLEET_ROWS + bad


def test_8_one_bad_instance_is_listed_and_the_good_one_still_shows(tmp_path):
    body = json.dumps(_vector(_two_instances())) + "\n"
    with ReplayServer(body, path="/api/v1/query") as srv, httpx.Client() as client:
        base = srv.url.removesuffix("/api/v1/query")
        report = fleet.fleet(client, promapi.PromServer(base), Scenario(), window="5m", at_s=1700000000.0)
        assert [i.instance for i in report.instances] == ["gpu-0:8000"]
        assert [p["instance"] for p in report.problems] == ["gpu-1:8000"]
        assert "counters do not belong together" in report.problems[0]["reason"]
        r = cli("fleet", base, "--json")
    assert r.returncode == 0
    rows = {row["instance"]: row for row in json.loads(r.stdout)}
    assert rows["gpu-0:8000"]["verdict"] in ("pays off", "borderline", "loses")
    assert rows["gpu-1:8000"]["verdict"] == "not read" and "do not belong together" in rows["gpu-1:8000"]["problems"][0]
    assert "warning: gpu-1:8000 (job vllm) not read" in r.stderr


# --- 9. unbounded time -----------------------------------------------------------------------------------------

def test_9_only_the_first_rows_of_a_huge_file_load_with_a_message(monkeypatch):
    from specmodel import bounds
    monkeypatch.setattr(bounds, "MAX_ROWS_PER_FILE", 100)
    data = b"workload,concurrency,k,alpha\n" + b"x,1,4,0.7\n" * 150
    table = read_runs([("many.csv", data)])
    assert len(table.rows) == 100
    assert "many.csv: has 150 runs; only the first 100 were loaded" in messages(table)


def test_9_a_trickling_prometheus_ends_at_the_total_deadline(monkeypatch):
    # the exchange's margin over the query timeout shortened from its 2 s, so that the test waits 0.5 s, not 2.1
    monkeypatch.setattr(promapi, "EXCHANGE_MARGIN_S", 0.4)
    body = json.dumps(_vector(FLEET_ROWS)) + "\n"  # a byte every 0.2 s: minutes for the whole answer
    with ReplayServer(body, path="/api/v1/query", mode="trickle") as srv:
        r = cli("fleet", srv.url.removesuffix("/api/v1/query"), "--timeout", "0.1")
    assert r.returncode == 2
    assert "did not finish answering within 0.5 s (the query timeout 0.1 s + 0.4 s)" in r.stderr


def test_9_a_trickling_metrics_page_ends_at_the_total_deadline():
    # the silence allowed between bytes is far above the trickle's 0.2 s, so on a loaded machine a late byte
    # cannot end it first: what ends it is the 0.5 s total deadline
    patient = replace(FAST, read_timeout_s=5.0, total_timeout_s=0.5)
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="trickle") as srv:
        with scrape.make_client(patient) as client, pytest.raises(SpecModelError, match="too slow: after 0.5 s"):
            scrape.fetch_text(client, srv.url, policy=patient)


# --- 10. smaller ones ---------------------------------------------------------------------------------------------

def test_10_an_invalid_calibration_link_is_dropped_with_a_note():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["cal"] = "0.8,0.6,inf,0,0.1"
    at.run()
    assert not at.exception and "calibration" not in at.session_state
    assert any("t_fixed_ms" in w.value and "ignored" in w.value for w in at.sidebar.warning)
    assert "nan" not in " ".join(e.value for e in (*at.success, *at.error, *at.warning)).lower()


@pytest.mark.parametrize("codec", ["utf-16", "utf-32"])
def test_10_utf16_and_utf32_with_a_byte_order_mark_are_read(codec):
    table = read_runs([("u.csv", "workload,concurrency,k,alpha\nchat,1,4,0.7\n".encode(codec))])
    assert list(table.rows["workload"]) == ["chat"] and not table.errors


def test_10_duplicate_headers_are_an_error_naming_both():
    table = read_runs([("d.csv", b"workload,k,concurrency,gamma,alpha\nchat,4,2,5,0.7\n")])
    assert table.rows.empty
    assert "columns 'k' (column 2) and 'gamma' (column 4) both give the column k" in messages(table)


def test_10_json_booleans_and_negative_throughputs_are_named_as_such():
    table = read_runs([("b.json", b'{"output_throughput": true, "max_concurrency": 4}'),
                       ("n.json", b'{"output_throughput": -5, "max_concurrency": 4}')])
    text = messages(table)
    assert "b.json, column 'output_throughput': true is not a positive number" in text
    assert "n.json, column 'output_throughput': '-5' is not a positive number" in text
    assert "no speculative run to compare it with" not in text
    found, problems, _ = workloads.parse_workloads([{"label": "a", "alpha": True}])
    assert not found and "alpha" in problems[0]


def test_10_a_nul_after_the_first_8_kb_is_stripped_from_the_name_with_a_warning():
    data = b"workload,concurrency,k,alpha\n" + b"x,1,4,0.7\n" * 1000 + b"ch\x00at\x1b[31m,1,4,0.7\n"
    table = read_runs([("nul.csv", data)])
    assert table.rows["workload"].iloc[-1] == "chat[31m"
    assert "nul.csv, row 1002, column 'workload': control characters" in messages(table)


def test_10_exports_download_without_a_rerun_so_the_deferred_report_survives():
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["sample"] = "Seed runs"
    at.run()
    at.switch_page("pages/past-runs.py").run()
    buttons = at.get("download_button")
    assert len(buttons) == 3 and all(b.proto.ignore_rerun for b in buttons)  # CSV, report, step fits


# --- 11. the element tree keeps its shape between reruns ---------------------------------------------------------

def top_level(at: AppTest) -> list[str]:
    return [type(node).__name__ for node in at.main.children.values()]


def test_11_the_live_panel_is_one_block_whatever_it_shows():
    """Streamlit puts a fragment's output in one block; what sits in its place before a URL is
    entered must be a block too, and no optional message may come before it."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/live.py").run()
    empty = top_level(at)  # no URL yet: the hint
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC) as srv:
        at.text_input(key="live_url").set_value(srv.url).run()
        first = top_level(at)  # one scrape: "first scrape done"
        at.run()
        second = top_level(at)  # two scrapes: the statistics, columns and charts
        srv.mode = "500"
        at.run()
        third = top_level(at)  # an error
    assert not at.exception
    assert empty == first == second == third


def test_11_the_what_if_page_keeps_its_blocks_in_place_with_or_without_notes():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    without = top_level(at)
    at.number_input(key="conc").set_value(512).run()  # more sequences than fit: queueing notes appear
    assert at.info, "expected a queueing note"
    assert top_level(at) == without
