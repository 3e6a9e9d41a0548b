"""Bounds of a shared instance: upload size, the Live history per session, cache sizes."""

import ast
import dataclasses
import tomllib

from streamlit.testing.v1 import AppTest

from specmodel.bounds import MAX_UPLOAD_MB
from specmodel.metrics import live, prom
from specmodel.runs import MAX_FILE_BYTES, read_runs
from tests import replay
from tests.conftest import ROOT
from tests.replay import ReplayServer

APP = str(ROOT / "app.py")
GOOD = (ROOT / "sample_runs" / "multi_workload.csv").read_bytes()


def test_the_reader_the_server_and_the_readme_agree_on_the_upload_limit():
    """Streamlit's uploader checks the limit in the browser, where 1 MB is 10^6 bytes (2^20 only on
    Windows): a 19.5 MiB file (20.4 × 10^6 bytes) is refused at maxUploadSize = 20, so the reader's
    limit and the README count 10^6 bytes too."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MB == 20
    assert MAX_FILE_BYTES == 20_000_000
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/past-runs.py").run()
    assert at.file_uploader(key="run_files").proto.max_upload_size_mb == 20  # the browser refuses larger files
    readme = (ROOT / "README.md").read_text()
    assert "up to 20 MB each" in readme and "20 × 2^20" not in readme and "20,000,000 bytes" in readme


def test_a_19_5_mib_file_is_refused_in_the_units_the_browser_uses():
    data = b"workload,concurrency,k,alpha\n" + b"x,1,4,0.7\n" * (int(19.5 * 2**20) // 10)
    problems = read_runs([("big.csv", data)]).problems
    assert "the file is 20.4 MB, over the 20 MB limit" in str(problems[0])


def test_a_file_over_the_limit_that_slips_through_is_refused_by_name_and_the_others_load():
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/past-runs.py").run()
    big = b"workload,concurrency,k,alpha\n" + b"x,1,4,0.7\n" * (MAX_FILE_BYTES // 10 + 1)
    assert len(big) > MAX_FILE_BYTES
    at.file_uploader(key="run_files").set_value([("huge_<b>runs</b>.csv", big, "text/csv"),
                                                  ("runs.csv", GOOD, "text/csv")]).run()
    assert not at.exception
    errors = " | ".join(e.value for e in at.error).replace("\\", "")  # markdown escapes render as the name
    assert "huge_<b>runs</b>.csv" in errors and "over the 20 MB limit" in errors
    assert set(at.dataframe[0].value["file"]) == {"runs.csv"}  # the good file still loads


def test_the_reader_refuses_one_byte_over_the_limit():
    header = b"workload,concurrency,k,alpha\nchat,1,4,0.7\n"
    assert len(read_runs([("edge.csv", header)]).rows) == 1
    over = read_runs([("edge.csv", header + b" " * (MAX_FILE_BYTES + 1 - len(header)))])
    assert over.rows.empty and "edge.csv" in str(over.problems[0]) and "limit" in str(over.problems[0])


def test_the_live_page_keeps_at_most_the_cap_of_scrapes_and_points_per_session():
    cap = live.HISTORY_CAP
    assert cap == 360
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC) as srv:
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.switch_page("pages/live.py").run()
        at.text_input(key="live_url").set_value(srv.url).run()
        at.run()
        assert not at.exception and len(at.session_state["live_session"].snapshots) == 2
        # A session that has been open for hours: the lists are full.
        session = at.session_state["live_session"]
        last = session.snapshots[-1]
        at.session_state["live_session"] = dataclasses.replace(
            session, snapshots=tuple(dataclasses.replace(last, at=last.at - 10 * (cap - i)) for i in range(cap)),
            history=tuple({"at": float(i)} for i in range(cap)))
        at.run()
        assert not at.exception
        snaps, history = at.session_state["live_session"].snapshots, at.session_state["live_session"].history
        assert len(snaps) == cap and len(history) == cap
        assert snaps[-1].at > last.at  # the newest scrape was kept, the oldest dropped
        assert history[0]["at"] == 1.0 and history[-1]["at"] == snaps[-1].at
        assert isinstance(snaps[0], prom.Snapshot)


def _cache_decorators(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                name = ast.unparse(target)
                if name.endswith(("cache_data", "cache_resource")):
                    keywords = {k.arg for k in dec.keywords} if isinstance(dec, ast.Call) else set()
                    yield f"{path.name}:{node.name}", keywords


def test_every_streamlit_cache_has_a_size_limit():
    found = dict(d for p in sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"] for d in _cache_decorators(p))
    assert found, "no cache decorators found: the check would pass vacuously"
    unbounded = [name for name, keywords in found.items() if "max_entries" not in keywords]
    assert not unbounded, f"caches without max_entries: {unbounded}"


def test_the_html_report_of_many_runs_stops_at_its_cap_and_says_where_the_rest_is():
    from specmodel.export.report import REPORT_ROWS, html_report
    from specmodel.runs.review import review

    lines = ["workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s"]
    lines += [f"w{i % 7},{1 + i % 64},4,0.7,100,{120 + i % 50}" for i in range(5_000)]
    table = read_runs([("many.csv", "\n".join(lines).encode())])
    result = review(table.rows)
    small = html_report(result.evaluated.head(100), result.table.head(100), result.summary, [], table.problems)
    text = html_report(result.evaluated, result.table, result.summary, [], table.problems)
    assert len(table.rows) == 5_000 and REPORT_ROWS == 2_000
    assert "The first 2,000 of 5,000 runs; the break-even CSV holds every run." in text
    assert text.count("<tr>") == small.count("<tr>") + 2 * (REPORT_ROWS - 100)  # two tables, 2,000 rows each
    assert len(text) < 3 * len(small) * REPORT_ROWS / 100
