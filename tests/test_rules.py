"""`rules` and `dashboard`: promtool accepts the rules; in the real Prometheus the fleet tests start, the
break-even alert fires for the replayed losing server and not for the winning one; every dashboard query
runs on that Prometheus. Expected thresholds come from `specmodel.model.scenario.predict`, never typed in here."""

import json
import shutil
import subprocess
import time

import httpx
import pytest

from specmodel import Scenario, cli, predict
from specmodel.export import dashboard, rules
from tests.prometheus_harness import FLEET, running_fleet

WINDOW = "10s"  # the fleet is scraped every second: ten samples per rate
SCENARIO = Scenario(k=3)  # the sidebar's defaults (L40S, Llama 3.1 8B, Llama 3.2 1B draft) at the fleet's k
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def replay_e(key: str) -> float:
    inc = FLEET[key].increments
    return 1 + inc["vllm:spec_decode_num_accepted_tokens_total"] / inc["vllm:spec_decode_num_drafts_total"]


def model_break_even(batch: int) -> float:
    return float(predict(SCENARIO, concurrency=batch).break_even_tokens_per_step)


def promtool_check(path) -> subprocess.CompletedProcess:
    if not shutil.which(PROMTOOL):
        pytest.fail(f"{PROMTOOL} is missing: `make test` installs Debian's prometheus package, which ships promtool")
    return subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("argv", [
    ["--k", "3"],
    ["--gpu", "H100", "--target", "Llama 3.1 70B", "--tp", "4", "--k", "5", "--window", "1m", "--for", "15m",
     "--severity", "page"],
    ["--method", "ngram", "--k", "2", "--window", "30s"],
])
def test_promtool_accepts_the_rules(tmp_path, argv):
    out = tmp_path / "rules.yml"
    assert cli.main(["rules", *argv, "--out", str(out)]) == 0
    check = promtool_check(out)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 12 rules found" in check.stdout  # 11 recording rules and the alert
    assert rules.ALERT in out.read_text()


def test_the_step_function_holds_the_models_break_even_at_each_batch():
    steps = rules.break_even_steps(SCENARIO)
    for batch in rules.BATCH_GRID:
        step = next(s for s in steps if (s.lo is None or batch > s.lo) and (s.hi is None or batch <= s.hi))
        assert step.break_even == pytest.approx(min(model_break_even(batch), SCENARIO.k + 2), abs=1e-3)
    assert [s.lo for s in steps[1:]] == [s.hi for s in steps[:-1]]  # contiguous, no gaps


def test_a_calibration_file_changes_the_break_even(tmp_path):
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"rows": [], "calibration": {"parameters": {"eta_flops": 0.2, "t_spec_overhead_ms": 3}}}))
    out = tmp_path / "cal.yml"
    assert cli.main(["rules", "--k", "3", "--calibration", str(cal), "--out", str(out)]) == 0
    plain = rules.rules_yaml(SCENARIO)
    assert out.read_text() != plain
    assert promtool_check(out).returncode == 0


def test_bad_requests_exit_2_with_one_line_and_leave_out_untouched(tmp_path, capsys):
    out = tmp_path / "rules.yml"
    out.write_text("previous rules\n")
    for argv, message in [
        (["--window", "5x"], "'5x' is not a time window"),
        (["--gpu", "L4", "--target", "Llama 3.1 70B"], "Llama 3.1 70B needs"),
        (["--calibration", str(tmp_path / "missing.json")], "no such calibration file"),
    ]:
        assert cli.main(["rules", *argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
        assert out.read_text() == "previous rules\n"
    fresh = tmp_path / "dash.json"
    assert cli.main(["dashboard", "--window", "0s", "--out", str(fresh)]) == 2
    assert not fresh.exists() and list(tmp_path.iterdir()) == [out]  # no temporary file left behind


# --- the real Prometheus ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def prom_with_rules(tmp_path_factory):
    work = tmp_path_factory.mktemp("prometheus-rules")
    rule_file = work / "specmodel-rules.yml"
    rule_file.write_text(rules.rules_yaml(SCENARIO, window=WINDOW, for_="0s"))
    with running_fleet(work, samples=4, rule_files=[rule_file]) as fleet:
        yield fleet


def query(url: str, promql: str) -> list[dict]:
    body = httpx.get(f"{url}/api/v1/query", params={"query": promql}, timeout=10).json()
    assert body["status"] == "success", (promql, body)
    return body["data"]["result"]


def firing(url: str) -> dict[str, dict]:
    alerts = httpx.get(f"{url}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    return {a["labels"]["instance"]: a for a in alerts
            if a["labels"].get("alertname") == rules.ALERT and a["state"] == "firing"}


def test_the_alert_fires_for_the_losing_server_and_not_for_the_winning_one(prom_with_rules):
    f = prom_with_rules
    losing, good = f.targets["v1-losing"], f.targets["v1-good"]
    running_losing = FLEET["v1-losing"].gauges["vllm:num_requests_running"]
    running_good = FLEET["v1-good"].gauges["vllm:num_requests_running"]
    be_losing, be_good = model_break_even(running_losing), model_break_even(running_good)
    # What the test relies on, from the model: the losing replay is below break-even, the good one above.
    assert replay_e("v1-losing") < be_losing and replay_e("v1-good") > be_good

    deadline = time.monotonic() + 40
    alerts = {}
    while time.monotonic() < deadline and losing not in alerts:
        alerts = firing(f.url)
        time.sleep(0.5)
    assert losing in alerts, f"no alert for {losing} after 40 s; firing: {list(alerts)}"
    time.sleep(2)  # a few more evaluations: the winning server must stay silent
    alerts = firing(f.url)
    assert good not in alerts and f.targets["v1-restarted"] not in alerts and f.targets["sglang"] not in alerts
    summary = alerts[losing]["annotations"]["summary"]
    assert losing in summary
    assert f"E = {replay_e('v1-losing'):.2f}" in summary
    assert f"break-even {be_losing:.2f}" in summary
    assert f"at {running_losing:.2f} running requests" in summary
    assert "num_speculative_tokens_per_batch_size" in alerts[losing]["annotations"]["description"]
    assert alerts[losing]["labels"]["severity"] == "warning"


def test_recorded_series_match_the_replayed_counters(prom_with_rules):
    f = prom_with_rules
    n = rules.names(WINDOW)
    by_instance = {r["metric"]["instance"]: float(r["value"][1]) for r in query(f.url, n["tokens_per_step"])}
    assert by_instance[f.targets["v1-good"]] == pytest.approx(replay_e("v1-good"), rel=1e-6)
    assert by_instance[f.targets["v1-losing"]] == pytest.approx(replay_e("v1-losing"), rel=1e-6)
    assert by_instance[f.targets["sglang"]] == pytest.approx((2750 - 10) / 1000, rel=1e-6)
    be = {r["metric"]["instance"]: float(r["value"][1]) for r in query(f.url, n["break_even"])}
    assert be[f.targets["v1-losing"]] == pytest.approx(model_break_even(160), abs=1e-3)
    per_pos = {(r["metric"]["instance"], r["metric"]["position"]): float(r["value"][1])
               for r in query(f.url, n["per_position"])}
    assert per_pos[(f.targets["v1-good"], "0")] == pytest.approx(850 / 1000, rel=1e-6)
    assert per_pos[(f.targets["v1-good"], "2")] == pytest.approx(400 / 1000, rel=1e-6)


# --- the dashboard -------------------------------------------------------------------------------------

def substitute(expr: str) -> str:
    """What Grafana does with the template variables when 'All' is chosen."""
    for var in dashboard.VARIABLES:
        expr = expr.replace(f"${{{var}}}", ".*").replace(f"${var}", ".*")
    return expr


def test_the_dashboard_follows_grafanas_json_model():
    doc = json.loads(dashboard.dashboard_json(SCENARIO, window=WINDOW))
    assert isinstance(doc["schemaVersion"], int) and doc["schemaVersion"] >= 36
    assert doc["title"] and doc["uid"] and isinstance(doc["panels"], list)
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids)) == 8
    for p in doc["panels"]:
        g = p["gridPos"]
        assert all(isinstance(g[key], int) for key in "xywh") and g["x"] + g["w"] <= 24
        assert p["targets"] and all(t["refId"] and t["expr"] for t in p["targets"])
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    names = [v["name"] for v in doc["templating"]["list"]]
    assert names == ["datasource", "job", "instance", "model"]
    titles = " | ".join(p["title"] for p in doc["panels"])
    for word in ("break-even", "α", "position", "Running requests", "tokens/s", rules.ALERT):
        assert word in titles


def test_every_dashboard_query_runs_on_prometheus_and_e_has_data(prom_with_rules, tmp_path):
    out = tmp_path / "dash.json"
    assert cli.main(["dashboard", "--k", "3", "--window", WINDOW, "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    exprs = dashboard.queries(doc)
    assert len(exprs) >= 11
    for expr in exprs:
        promql = substitute(expr)
        if promql.startswith("label_values("):  # a Grafana function: its first argument is the PromQL
            promql = promql[len("label_values("):].rsplit(",", 1)[0]
        query(prom_with_rules.url, promql)  # raises unless Prometheus accepts it
    e_panel = substitute(doc["panels"][0]["targets"][0]["expr"])
    assert {r["metric"]["instance"] for r in query(prom_with_rules.url, e_panel)} >= {
        prom_with_rules.targets["v1-good"], prom_with_rules.targets["v1-losing"]}


def test_the_fleet_page_offers_the_rules_and_the_dashboard_for_download():
    from tests.test_fleet import fleet_page

    at = fleet_page(fleet_window="1m")
    assert not at.exception and not at.error
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Prometheus rules (YAML)", "Grafana dashboard (JSON)"]
    bad = fleet_page(fleet_window="1 minute")
    assert not bad.exception and "'1 minute' is not a time window" in bad.error[0].value
    assert not bad.get("download_button")
