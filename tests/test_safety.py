"""A shared deployment: the URL policy's gaps not covered in test_scrape.py, secrets kept out of the
page, the link, the logs and the exports, and exports that cannot run code."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from specmodel import SpecModelError, cli
from specmodel.export.report import break_even_csv, html_report, neutralise_cell
from specmodel.metrics import promapi, scrape
from specmodel.model.roofline import Efficiency
from specmodel.runs import read_runs
from specmodel.runs.review import review
from specmodel.show.figures.runs import break_even_chart, predicted_vs_measured
from tests import replay
from tests.browser import free_port
from tests.conftest import ROOT
from tests.fuzz_targets import FLEET_ROWS, _vector
from tests.replay import ReplayServer

APP = str(ROOT / "app.py")
SECRET = "tok-7f3a9c1e-SECRET"
FAST = scrape.ScrapePolicy(connect_timeout_s=1.0, read_timeout_s=0.5, total_timeout_s=1.0)


# --- URL policy: the metadata address under other names ---------------------------------------------

@pytest.mark.parametrize("host", ["2852039166", "0xa9fea9fe", "169.254.43518", "169.254.1.2"])
def test_names_that_resolve_to_a_metadata_or_link_local_address_are_refused(host):
    """The resolver reads these spellings of 169.254.x.x without any network traffic."""
    refused = "resolves to 169.254|cloud metadata|link-local"
    with pytest.raises(SpecModelError, match=refused):
        scrape.check_url(f"http://{host}/latest/meta-data/")
    with scrape.make_client(FAST) as client, pytest.raises(SpecModelError, match=refused):
        scrape.fetch_text(client, f"http://{host}/metrics", policy=FAST)
    with httpx.Client() as client, pytest.raises(SpecModelError, match=refused):  # the Fleet page's client too
        promapi.query(client, promapi.PromServer(f"http://{host}:9090", policy=FAST), "up")


def test_prometheus_redirects_are_never_followed():
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode="redirect:http://169.254.169.254/",
                      path="/api/v1/query") as srv:
        server = promapi.PromServer(srv.url.removesuffix("/api/v1/query"), policy=FAST)
        with httpx.Client() as client, pytest.raises(SpecModelError, match="redirects to http://169.254.169.254/"):
            promapi.query(client, server, "up")


# --- secrets: never in the page, the link, logs or exports --------------------------------------------

def shown_text(at: AppTest, except_keys: set[str]) -> str:
    """Every element the page rendered (its protobuf as text), except the password fields themselves."""
    parts = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None and getattr(node, "key", None) not in except_keys:
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    parts += [d.value.to_string() for d in at.dataframe]
    return "\n".join(parts)


def link_text(at: AppTest) -> str:
    return json.dumps({k: at.query_params[k] for k in at.query_params}, default=str)


def linked_keys(at: AppTest) -> dict[str, bool]:
    """Text inputs on the page: key -> whether the widget is mirrored into the page's link (URL)."""
    return {t.key: bool(t.proto.query_param_key) for t in at.text_input}


@pytest.mark.parametrize("token, expect", [(SECRET, "Right now"), ("wrong-" + SECRET, "HTTP 401")])
def test_live_page_never_shows_the_token_or_puts_it_in_the_link(token, expect):
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, token=SECRET) as srv:
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.switch_page("pages/live.py").run()
        at.text_input(key="live_token").set_value(token)
        at.text_input(key="live_url").set_value(srv.url).run()
        at.run()
        assert not at.exception
        page = shown_text(at, {"live_token"})
        assert expect in page  # the scrape ran with the token (or was refused for it)
        assert SECRET not in page and SECRET not in link_text(at)
        assert linked_keys(at) == {"live_url": True, "live_token": False, "live_user": False,
                                   "live_password": False}  # the URL goes in the link, credentials not


def token_prometheus(token: str) -> ReplayServer:
    """A real server that answers the fleet query like Prometheus (one vLLM instance), only with the
    bearer token (the replay passes lines that are not metrics through unchanged)."""
    return ReplayServer(json.dumps(_vector(FLEET_ROWS)) + "\n", path="/api/v1/query", token=token)


def base_url(server: ReplayServer) -> str:
    return server.url.removesuffix("/api/v1/query")


@pytest.mark.parametrize("token, expect", [(SECRET, "gpu-0:8000"), ("wrong-" + SECRET, "HTTP 401")])
def test_fleet_page_never_shows_the_token_or_puts_it_in_the_link(token, expect):
    with token_prometheus(SECRET) as prom:
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.switch_page("pages/fleet.py").run()
        at.text_input(key="prom_token").set_value(token)
        at.text_input(key="prom_url").set_value(base_url(prom)).run()
        assert not at.exception
        page = shown_text(at, {"prom_token"})
        assert expect in page
        assert SECRET not in page and SECRET not in link_text(at)
        linked = linked_keys(at)
        assert linked["prom_url"] and not (linked["prom_token"] or linked["prom_password"] or linked["prom_user"])


def test_no_log_record_carries_the_token(caplog):
    caplog.set_level(logging.DEBUG)  # httpx and httpcore log requests at INFO and DEBUG
    with ReplayServer("vllm_v1_specdecode_sample.txt", token="other") as refusing, \
            ReplayServer("vllm_v1_specdecode_sample.txt", mode="500") as failing:
        for url in (refusing.url, failing.url, f"http://127.0.0.1:{free_port()}/metrics"):
            with scrape.make_client(FAST) as client, pytest.raises(SpecModelError):
                scrape.fetch_text(client, url, token=SECRET, policy=FAST)
    with token_prometheus("other") as prom, httpx.Client() as client, pytest.raises(SpecModelError):
        promapi.query(client, promapi.PromServer(base_url(prom), promapi.PromAuth(bearer_token=SECRET)), "up")
    assert caplog.records, "nothing was logged: the check would pass vacuously"
    assert SECRET not in caplog.text


def run_cli(argv, monkeypatch, env: dict) -> tuple[int, str, str]:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_scrape_and_fleet_json_never_carry_the_token(monkeypatch):
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, token=SECRET) as srv:
        code, out, err = run_cli(["scrape", srv.url, "--window", "0.1", "--json"], monkeypatch,
                                 {"SPECMODEL_TOKEN": SECRET})
        assert code == 0 and json.loads(out)["tokens_per_step"] is not None and SECRET not in out + err
        code, out, err = run_cli(["scrape", srv.url.replace("http://", f"http://user:{SECRET}@"), "--window", "0.1",
                                  "--json"], monkeypatch, {"SPECMODEL_TOKEN": SECRET})
        assert code == 2 and "http://***@127.0.0.1" in err and SECRET not in out + err  # user info masked
    with token_prometheus(SECRET) as prom:
        code, out, err = run_cli(["fleet", base_url(prom), "--json"], monkeypatch, {"SPECMODEL_PROMETHEUS_TOKEN": SECRET})
        assert code == 0 and json.loads(out)[0]["instance"] == "gpu-0:8000"
        assert SECRET not in out + err
        code, out, err = run_cli(["fleet", base_url(prom), "--json"], monkeypatch,
                                 {"SPECMODEL_PROMETHEUS_TOKEN": "wrong-" + SECRET})
        assert code == 2 and "HTTP 401" in err and SECRET not in out + err


# --- exports: HTML escapes every user string, CSV cells never run as formulas ----------------------------

HOSTILE_NAME = "<img src=x onerror=alert(2)>.csv"
HOSTILE = ("workload,concurrency,k,alpha,speedup,gpu,notes\n"
           "<script>alert(1)</script>,1,4,0.7,1.5,<b>H100</b>,<iframe src=javascript:alert(3)>\n"
           "</script><script>alert(4)</script>,8,4,0.4,0.9,L40S,x\n"
           "bad row,1,4,<svg onload=alert(5)>,1.2,L40S,x\n").encode()
MARKUP = ["<script>alert(1)", "<img src=x", "<iframe", "<svg onload", "<b>H100", "</script><script>alert(4)"]


def test_the_html_report_keeps_every_user_string_as_text():
    table = read_runs([(HOSTILE_NAME, HOSTILE)])
    assert len(table.rows) == 2 and table.errors  # the bad row is reported (quoting its cell)
    result = review(table.rows, Efficiency())
    text = html_report(result.evaluated, result.table, result.summary,
                       [predicted_vs_measured(result.evaluated), break_even_chart(result.evaluated)], table.problems)
    for markup in MARKUP:
        assert markup not in text, markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "&lt;img src=x onerror=alert(2)&gt;.csv" in text
    assert "&lt;svg onload=alert(5)&gt;" in text  # the problem message quotes the cell, escaped


def test_csv_cells_that_start_like_a_formula_are_neutralised_and_numbers_stay_numbers():
    assert [neutralise_cell(v) for v in ["=1+1", "+1+cmd", "-1+cmd", "@SUM(A1)", "\tx", "\rx", "-5", "-0.5e3",
                                         -2.5, "plain"]] == \
        ["'=1+1", "'+1+cmd", "'-1+cmd", "'@SUM(A1)", "'\tx", "'\rx", "-5", "-0.5e3", -2.5, "plain"]
    rows = read_runs([("runs.csv", b"workload,concurrency,k,alpha,speedup\n"
                                   b"\"=HYPERLINK(\"\"http://x\"\")\",1,4,0.7,1.5\n@cmd,1,4,0.2,0.7\n"
                                   b"-2+3,8,4,0.3,0.8\n")]).rows
    table = review(rows, Efficiency()).table
    parsed = list(csv.DictReader(io.StringIO(break_even_csv(table))))
    cells = [v for r in parsed for v in r.values()]
    assert not [c for c in cells if c and c[0] in "=+@\t\r"]
    assert {r["workload"] for r in parsed} == {"'=HYPERLINK(\"http://x\")", "'@cmd", "'-2+3"}
    margins = [float(r["margin_pct"]) for r in parsed if r["margin_pct"]]
    assert any(m < 0 for m in margins)  # a run below break-even: its negative margin is a number, not text
