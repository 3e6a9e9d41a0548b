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
from specmodel.model import acceptance
from specmodel.model.scenario import with_changes
from specmodel.model.instances import as_served
from specmodel.export import dashboard, rules
from tests.browser import PATIENCE_S
from tests.prometheus_harness import FLEET, RULES_SCENARIO, RULES_WINDOW

WINDOW, SCENARIO = RULES_WINDOW, RULES_SCENARIO  # the rules the shared fleet's Prometheus evaluates (prom_fleet)
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
    # 24 recording rules (11 of them α bisection steps), the break-even one per k the tool accepts (1 to 64), 11
    # copies under the old names, the alert; with --k and a draft-model scenario, one more break-even: a TGI server
    # at --k as the n-gram it runs
    tgi = 0 if "ngram" in argv else 1
    assert f"SUCCESS: {24 + len(rules.DEFAULT_KS) + tgi + 11 + 1} rules found" in check.stdout
    assert rules.ALERT in out.read_text()


def test_the_step_function_holds_the_models_break_even_at_each_batch():
    steps = rules.break_even_steps(SCENARIO)
    for batch in rules.BATCH_GRID:
        step = next(s for s in steps if (s.lo is None or batch > s.lo) and (s.hi is None or batch <= s.hi))
        assert step.break_even == pytest.approx(min(model_break_even(batch), SCENARIO.k + 2), abs=1e-3)
    assert [s.lo for s in steps[1:]] == [s.hi for s in steps[:-1]]  # contiguous, no gaps


@pytest.mark.prometheus  # runs promtool: in make test, not in make test-fast
def test_a_calibration_file_changes_the_break_even(tmp_path):
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"rows": [], "calibration": {"parameters": {"eta_flops": 0.45, "t_spec_overhead_ms": 3}}}))
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

@pytest.fixture
def prom_with_rules(prom_fleet):
    """The fleet's Prometheus (tests/conftest.py prom_fleet), evaluating rules_yaml(SCENARIO, WINDOW) every second."""
    return prom_fleet


def query(url: str, promql: str) -> list[dict]:
    body = httpx.get(f"{url}/api/v1/query", params={"query": promql}, timeout=10).json()
    assert body["status"] == "success", (promql, body)
    return body["data"]["result"]


def last_evaluation(url: str) -> str:
    """When Prometheus last evaluated the rule groups (RFC 3339, as its rules API gives it)."""
    groups = httpx.get(f"{url}/api/v1/rules", timeout=10).json()["data"]["groups"]
    assert groups, "Prometheus has loaded no rule group"
    return max(g["lastEvaluation"] for g in groups)


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

    deadline = time.monotonic() + PATIENCE_S
    alerts = {}
    while time.monotonic() < deadline and losing not in alerts:
        alerts = firing(f.url)
        time.sleep(0.5)
    assert losing in alerts, f"no alert for {losing} after {PATIENCE_S} s; firing: {list(alerts)}"
    # two more evaluations of the rules (each with newer scrapes): the winning server must stay silent
    seen, deadline = {last_evaluation(f.url)}, time.monotonic() + PATIENCE_S
    while len(seen) < 3:
        assert time.monotonic() < deadline, f"the rules were evaluated {len(seen) - 1} more times in {PATIENCE_S} s"
        time.sleep(0.25)
        seen.add(last_evaluation(f.url))
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
    for var in ("datasource", "job", "instance", "model"):  # the dashboard's template variables
        expr = expr.replace(f"${{{var}}}", ".*").replace(f"${var}", ".*")
    return expr


def queries(doc: dict) -> list[str]:
    """Every PromQL expression in a dashboard (panel targets and query variables), as written."""
    out = [t["expr"] for p in doc.get("panels", []) for t in p.get("targets", [])]
    for var in doc.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            q = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            out.append(q)
    return out


def test_the_dashboard_follows_grafanas_json_model():
    doc = json.loads(dashboard.dashboard_json(SCENARIO, window=WINDOW))
    assert isinstance(doc["schemaVersion"], int) and doc["schemaVersion"] >= 36
    assert doc["title"] and doc["uid"] and isinstance(doc["panels"], list)
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids)) == 9
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
    exprs = queries(doc)
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


# --- promtool's own rule unit test: each instance held against its own k and load ----------------------

UNIT_SCENARIO = Scenario.from_names(k=4)  # the sidebar's defaults (L40S, Llama 3.1 8B, Llama 3.2 1B draft), fleet k = 4
VLLM_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
# (job, instance, running requests, drafts, accepted per position 0..3 per minute): vLLM servers at k = 4
VLLM_UNIT = {"losing": ("vllm", "vllm-a:8000", 8, 1000, (300, 120, 60, 20)),  # E = 1.50 at light load
             "load": ("vllm", "vllm-b:8000", 128, 1000, (800, 550, 300, 150))}  # E = 2.80, but 128 running
TGI_UNIT = ("tgi", "tgi-0:80", 16)  # --speculate 2: 1010 steps (10 of them prefill), 990 skipped tokens a minute


def unit_series() -> list[dict]:
    series = []
    for job, inst, running, drafts, per_pos in VLLM_UNIT.values():
        labels = f'job="{job}", instance="{inst}", model_name="{VLLM_MODEL}"'
        series += [
            {"series": f"vllm:spec_decode_num_drafts_total{{{labels}}}", "values": f"0+{drafts}x40"},
            {"series": f"vllm:spec_decode_num_draft_tokens_total{{{labels}}}", "values": f"0+{4 * drafts}x40"},
            {"series": f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}}", "values": f"0+{sum(per_pos)}x40"},
            {"series": f"vllm:num_requests_running{{{labels}}}", "values": f"{running}x40"},
        ]
        series += [{"series": f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels}, position="{i}"}}',
                    "values": f"0+{v}x40"} for i, v in enumerate(per_pos)]
    job, inst, running = TGI_UNIT
    labels = f'job="{job}", instance="{inst}"'
    series += [
        {"series": f"tgi_request_skipped_tokens_count{{{labels}}}", "values": "0+1010x40"},
        {"series": f"tgi_request_skipped_tokens_sum{{{labels}}}", "values": "0+990x40"},
        {"series": f"tgi_request_count{{{labels}}}", "values": "0+10x40"},
        {"series": f"tgi_batch_current_size{{{labels}}}", "values": f"{running}x40"},
    ]
    return series


def alpha_of(e: float, k: int) -> float:
    return float(acceptance.alpha_from_tokens_per_step(e, k))


def break_even_at(scenario: Scenario, batch: int) -> float:
    step = next(s for s in rules.break_even_steps(scenario)
                if (s.lo is None or batch > s.lo) and (s.hi is None or batch <= s.hi))
    return float(rules._fmt(step.break_even))  # as the rule writes it


def expected_alert(doc: dict, job: str, inst: str, e: float, running: int, k: int, model: str | None,
                   longest: int | None = 4) -> dict:
    annotations = next(r for r in doc["groups"][0]["rules"] if r.get("alert"))["annotations"]
    be = break_even_at(with_changes(UNIT_SCENARIO, k=k), running)
    labels = {"severity": "warning", "job": job, "instance": inst, **({"model_name": model} if model else {})}
    return {"exp_labels": labels, "exp_annotations": {
        "summary": (f"{inst} ({job}): speculative decoding below break-even, E = {e:.2f} tokens per step < "
                    f"break-even {be:.2f} at {running:.2f} running requests, k = {k:.2f}"
                    + (f" (longest draft {longest})" if longest else "")),
        "description": annotations["description"], "model": annotations["model"]}}


def promtool_unit(tmp_path, doc: dict, tests: list[dict]) -> subprocess.CompletedProcess:
    (tmp_path / "rules.yml").write_text(rules.to_yaml(doc))
    (tmp_path / "test.yml").write_text(json.dumps({"rule_files": ["rules.yml"], "evaluation_interval": "1m",
                                                   "tests": tests}))  # JSON is YAML
    if not shutil.which(PROMTOOL):
        pytest.fail(f"{PROMTOOL} is missing: `make test` installs Debian's prometheus package, which ships promtool")
    return subprocess.run([PROMTOOL, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


def test_promtool_unit_test_holds_each_instance_against_its_own_k_and_load(tmp_path):
    # The numbers, from the model: TGI at --speculate 2 and 16 running pays (E 1.99 > 1.73) though
    # it would lose against a k = 4 break-even (2.12); vLLM at E 1.50 loses at batch 8; E 2.80 loses at 128.
    # TGI runs no draft model: its --speculate 2 is n-gram (instances.as_served), judged so by fleet and the rules.
    tgi = as_served(with_changes(UNIT_SCENARIO, k=2), "tgi")[0]
    assert (tgi.method.name, tgi.draft, tgi.proposal_rate) == ("ngram", None, 1.0)
    tgi_be, tgi_be_k4 = break_even_at(tgi, 16), break_even_at(UNIT_SCENARIO, 16)
    assert tgi_be_k4 == pytest.approx(2.12, abs=0.01)
    assert tgi_be < break_even_at(with_changes(UNIT_SCENARIO, k=2), 16) < 1.99 < tgi_be_k4  # no draft to pay for
    assert 1.5 < break_even_at(UNIT_SCENARIO, 8) and break_even_at(UNIT_SCENARIO, 8) < 2.8 < break_even_at(UNIT_SCENARIO, 128)
    instances = (rules.parse_instance("tgi-0:80=2"),)
    doc = rules.rules_document(UNIT_SCENARIO, window="5m", for_="10m", instances=instances)
    n = rules.names("5m")
    vllm = {key: (job, inst) for key, (job, inst, *_rest) in VLLM_UNIT.items()}
    tests = [{
        "interval": "1m", "input_series": unit_series(),
        "promql_expr_test": [
            {"expr": n["k"], "eval_time": "20m", "exp_samples": [
                {"labels": f'{n["k"]}{{job="tgi", instance="tgi-0:80"}}', "value": 2},
                {"labels": f'{n["k"]}{{job="vllm", instance="vllm-a:8000", model_name="{VLLM_MODEL}"}}', "value": 4},
                {"labels": f'{n["k"]}{{job="vllm", instance="vllm-b:8000", model_name="{VLLM_MODEL}"}}', "value": 4}]},
            {"expr": n["break_even"], "eval_time": "20m", "exp_samples": [
                {"labels": f'{n["break_even"]}{{job="tgi", instance="tgi-0:80", profile="given k2 on TGI: ngram"}}',
                 "value": tgi_be},
                {"labels": f'{n["break_even"]}{{job="vllm", instance="vllm-a:8000", model_name="{VLLM_MODEL}", '
                           'profile="k4"}', "value": break_even_at(UNIT_SCENARIO, 8)},
                {"labels": f'{n["break_even"]}{{job="vllm", instance="vllm-b:8000", model_name="{VLLM_MODEL}", '
                           'profile="k4"}', "value": break_even_at(UNIT_SCENARIO, 128)}]},
            {"expr": f'round(1000 * {n["tokens_per_step"]})', "eval_time": "20m", "exp_samples": [  # E · 1000
                {"labels": '{job="tgi", instance="tgi-0:80"}', "value": 1990},
                {"labels": f'{{job="vllm", instance="vllm-a:8000", model_name="{VLLM_MODEL}"}}', "value": 1500},
                {"labels": f'{{job="vllm", instance="vllm-b:8000", model_name="{VLLM_MODEL}"}}', "value": 2800}]},
            {"expr": f'round(100 * {n["alpha"]})', "eval_time": "20m", "exp_samples": [  # α at each one's own k
                {"labels": '{job="tgi", instance="tgi-0:80"}', "value": round(100 * alpha_of(1.99, 2))},
                {"labels": f'{{job="vllm", instance="vllm-a:8000", model_name="{VLLM_MODEL}"}}',
                 "value": round(100 * alpha_of(1.5, 4))},
                {"labels": f'{{job="vllm", instance="vllm-b:8000", model_name="{VLLM_MODEL}"}}',
                 "value": round(100 * alpha_of(2.8, 4))}]},
        ],
        "alert_rule_test": [
            {"alertname": rules.ALERT, "eval_time": "5m", "exp_alerts": []},  # pending: not yet 10 min below
            {"alertname": rules.ALERT, "eval_time": "20m", "exp_alerts": [
                expected_alert(doc, *vllm["losing"], 1.50, 8, 4, VLLM_MODEL),
                expected_alert(doc, *vllm["load"], 2.80, 128, 4, VLLM_MODEL)]},  # TGI k = 2: silent
        ],
    }]
    run = promtool_unit(tmp_path, doc, tests)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout
    # Without --instance, TGI (no k in its metrics) is not judged at an assumed k: its k is recorded as unknown
    # and it fires no alert (it pays: 1.99 is above its n-gram break-even at its real k = 2).
    unknown = rules.rules_document(UNIT_SCENARIO, window="5m", for_="10m")
    tests[0]["promql_expr_test"] = [
        {"expr": n["k_unknown"], "eval_time": "20m", "exp_samples": [
            {"labels": f'{n["k_unknown"]}{{job="tgi", instance="tgi-0:80"}}', "value": 1}]},
        {"expr": n["break_even"] + '{job="tgi"}', "eval_time": "20m", "exp_samples": []}]
    tests[0]["alert_rule_test"] = [{"alertname": rules.ALERT, "eval_time": "20m", "exp_alerts": [
        expected_alert(unknown, *vllm["losing"], 1.50, 8, 4, VLLM_MODEL),
        expected_alert(unknown, *vllm["load"], 2.80, 128, 4, VLLM_MODEL)]}]
    run = promtool_unit(tmp_path, unknown, tests)
    assert run.returncode == 0, run.stdout + run.stderr
    # An explicit --k 4 for every server that hides its k: TGI is judged at k = 4 as the n-gram it runs, as
    # `fleet --k 4` judges it (one profile, "k4 on TGI: ngram"), not at the rules' draft-model break-even (2.12,
    # which fired on it before): 1.99 is above n-gram's 1.28 at k = 4 and batch 16, so no alert.
    single = rules.rules_document(UNIT_SCENARIO, window="5m", for_="10m", default_k=4)
    tgi_k4 = break_even_at(as_served(with_changes(UNIT_SCENARIO, k=4), "tgi")[0], 16)
    assert tgi_k4 == pytest.approx(1.28, abs=0.01)
    tests[0]["promql_expr_test"] = [{"expr": n["break_even"] + '{job="tgi"}', "eval_time": "20m", "exp_samples": [
        {"labels": f'{n["break_even"]}{{job="tgi", instance="tgi-0:80", profile="k4 on TGI: ngram"}}',
         "value": tgi_k4}]}]
    tests[0]["alert_rule_test"] = [{"alertname": rules.ALERT, "eval_time": "20m", "exp_alerts": [
        expected_alert(single, *vllm["losing"], 1.50, 8, 4, VLLM_MODEL),
        expected_alert(single, *vllm["load"], 2.80, 128, 4, VLLM_MODEL)]}]
    run = promtool_unit(tmp_path, single, tests)
    assert run.returncode == 0, run.stdout + run.stderr


def test_old_rule_names_are_recorded_as_copies_of_the_new_ones():
    doc = rules.rules_document(UNIT_SCENARIO, window="5m")
    recorded = {r["record"]: r["expr"] for r in doc["groups"][0]["rules"] if "record" in r}
    new, old = rules.names("5m"), rules.legacy_names("5m")
    assert recorded["instance:spec_decode_tokens_per_step:ratio_rate5m"] == new["tokens_per_step"]
    assert recorded["instance:spec_decode_break_even_tokens_per_step:5m"] == new["break_even"]
    assert set(old.values()) <= set(recorded)
    for name in new.values():  # level:metric:operations, the window inside the operation
        level, metric, operations = name.split(":")
        assert level and metric and operations and not operations[0].isdigit()
    lean = rules.rules_document(UNIT_SCENARIO, window="5m", legacy=False)
    assert not any(r.get("record", "").startswith("instance:spec_decode_tokens") for r in lean["groups"][0]["rules"])


# --- every engine's layout: k from the mean draft length, k ≥ 9, gauge-only SGLang, TensorRT-LLM iteration stats --

def engines_series() -> list[dict]:
    """One minute's increments per instance, as each engine's own series write them."""
    out = []

    def counter(name, labels, per_min):
        out.append({"series": f"{name}{{{labels}}}", "values": f"0+{per_min}x40"})

    def gauge(name, labels, value):
        out.append({"series": f"{name}{{{labels}}}", "values": f"{value}x40"})

    # vLLM EAGLE at k = 12: every draft 12 tokens long
    v12 = f'job="vllm", instance="v12:8000", model_name="{VLLM_MODEL}"'
    counter("vllm:spec_decode_num_drafts_total", v12, 1000)
    counter("vllm:spec_decode_num_draft_tokens_total", v12, 12000)
    counter("vllm:spec_decode_num_accepted_tokens_total", v12, 4980)
    for i in range(12):  # 800, 730, ... 30: 4980 accepted per 1000 drafts in all
        counter("vllm:spec_decode_num_accepted_tokens_per_pos_total", v12 + f', position="{i}"', 800 - 70 * i)
    gauge("vllm:num_requests_running", v12, 4)
    # llama.cpp with --draft-max 8: drafts of 5.2 tokens on average (tests/fixtures/llamacpp_variable_draft_sample.txt)
    lc = 'job="llamacpp", instance="lc:8080"'
    counter("llamacpp:spec_decode_num_drafts_total", lc, 1000)
    counter("llamacpp:spec_decode_num_draft_tokens_total", lc, 5200)
    counter("llamacpp:spec_decode_num_accepted_tokens_total", lc, 2298)
    for i, v in enumerate((780, 560, 390, 260, 150, 90, 48, 20)):
        counter("llamacpp:spec_decode_num_accepted_tokens_per_pos_total", lc + f', position="{i}"', v)
    gauge("llamacpp:requests_processing", lc, 3)
    # vLLM n-gram, num_speculative_tokens 4, drafts of 2 tokens on average
    ng = f'job="vllm", instance="ngram:8000", model_name="{VLLM_MODEL}"'
    counter("vllm:spec_decode_num_drafts_total", ng, 1000)
    counter("vllm:spec_decode_num_draft_tokens_total", ng, 2000)
    counter("vllm:spec_decode_num_accepted_tokens_total", ng, 1300)
    for i, v in enumerate((700, 400, 150, 50)):
        counter("vllm:spec_decode_num_accepted_tokens_per_pos_total", ng + f', position="{i}"', v)
    gauge("vllm:num_requests_running", ng, 16)
    # SGLang with only the gauges (no spec_verify_calls_total): E from spec_accept_length, k = spec_num_steps
    sg = f'job="sglang", instance="sg:30000", model_name="{VLLM_MODEL}", tp_rank="0", pp_rank="0"'
    for name, value in (("spec_accept_length", 1.6), ("spec_accept_rate", 0.2), ("spec_num_steps", 3),
                        ("num_running_reqs", 64)):
        gauge(f"sglang:{name}", sg, value)
    counter("sglang:generation_tokens_total", sg, 30000)
    # TensorRT-LLM with iteration stats only (tests/fixtures/trtllm_iteration_stats_sample.txt): k from draft tokens
    # and the acceptance-length gauge, 900 · (2.5 - 1) / 540 = 2.5 -> 3
    tr = 'job="trtllm", instance="trt:8000", model_name="undefined"'
    counter("trtllm_spec_decode_num_draft_tokens_total", tr, 900)
    counter("trtllm_spec_decode_num_accepted_tokens_total", tr, 540)
    gauge("trtllm_spec_decode_acceptance_length", tr, 2.5)
    gauge("trtllm_num_requests_running", tr, 6)
    counter("trtllm_generation_tokens_total", tr, 2000)
    return out


@pytest.mark.prometheus  # runs promtool's unit tests: in make test, not in make test-fast
def test_every_engine_layout_gets_its_k_its_e_and_its_own_break_even(tmp_path):
    doc = rules.rules_document(UNIT_SCENARIO, window="5m", for_="10m")
    n = rules.names("5m")
    sglang = f'job="sglang", instance="sg:30000", model_name="{VLLM_MODEL}"'
    who = {"v12": f'job="vllm", instance="v12:8000", model_name="{VLLM_MODEL}"',
           "lc": 'job="llamacpp", instance="lc:8080"', "ngram": f'job="vllm", instance="ngram:8000", model_name="{VLLM_MODEL}"',
           "sg": sglang, "trt": 'job="trtllm", instance="trt:8000", model_name="undefined"'}
    k = {"v12": 12, "lc": 5, "ngram": 2, "sg": 3, "trt": 3}  # llama.cpp 5.2 of 8 -> 5; n-gram 2 of 4 -> 2
    running = {"v12": 4, "lc": 3, "ngram": 16, "sg": 64, "trt": 6}
    e = {"v12": 5.98, "lc": 3.298, "ngram": 2.3, "sg": 1.6, "trt": 2.5}

    def samples(name, values, extra=lambda key: ""):
        return [{"labels": f"{name}{{{who[key]}{extra(key)}}}", "value": values[key]} for key in who]

    be = {key: break_even_at(with_changes(UNIT_SCENARIO, k=k[key]), running[key]) for key in who}
    tests = [{"interval": "1m", "input_series": engines_series(), "promql_expr_test": [
        {"expr": n["k"], "eval_time": "20m", "exp_samples": samples(n["k"], k)},
        {"expr": n["max_draft_length"], "eval_time": "20m", "exp_samples": [
            s for s in samples(n["max_draft_length"], {"v12": 12, "lc": 8, "ngram": 4, "sg": 3, "trt": 0})
            if "trt" not in s["labels"]]},
        {"expr": f'round(1000 * {n["tokens_per_step"]})', "eval_time": "20m", "exp_samples": [
            {"labels": f"{{{who[key]}}}", "value": round(1000 * e[key])} for key in who]},
        {"expr": n["break_even"], "eval_time": "20m",
         "exp_samples": samples(n["break_even"], be, lambda key: f', profile="k{k[key]}"')},
        {"expr": n["k_unknown"], "eval_time": "20m", "exp_samples": []},
    ]}]
    run = promtool_unit(tmp_path, doc, tests)
    assert run.returncode == 0, run.stdout + run.stderr
    assert be["sg"] > 1.6  # what the alert below rests on, from the model: SGLang's gauge E loses
    firing = {key for key in who if e[key] < be[key]}
    tests[0]["promql_expr_test"] = []
    longest = {"v12": 12, "lc": 8, "ngram": 4, "sg": 3, "trt": None}
    labels = {key: dict(kv.split("=", 1) for kv in who[key].replace('"', "").split(", ")) for key in who}
    tests[0]["alert_rule_test"] = [{"alertname": rules.ALERT, "eval_time": "20m", "exp_alerts": [
        expected_alert(doc, labels[key]["job"], labels[key]["instance"], e[key], running[key], k[key],
                       labels[key].get("model_name"), longest[key]) for key in sorted(firing)]}]
    run = promtool_unit(tmp_path, doc, tests)
    assert run.returncode == 0, run.stdout + run.stderr
