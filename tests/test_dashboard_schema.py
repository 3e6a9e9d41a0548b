"""The Grafana dashboard against Grafana's own schema: @grafana/schema's `Dashboard` type (npm, pinned in
tests/grafana/package.json; `make test` installs it with `npm ci`), checked by the TypeScript compiler with
every unknown key an error. Plus what a user of the dashboard sees: the E ÷ break-even bar turns red below
100%, pending alerts show, and two dashboards from different inputs do not share a uid."""

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from specmodel import Scenario, cli
from specmodel.export import dashboard, rules

GRAFANA = Path(__file__).parent / "grafana"
TSC = GRAFANA / "node_modules" / "typescript" / "bin" / "tsc"


@pytest.fixture(scope="module")
def tsc() -> Path:
    """The pinned TypeScript compiler with @grafana/schema beside it (npm ci here when make did not)."""
    if not (TSC.exists() and (GRAFANA / "node_modules" / "@grafana" / "schema").exists()):
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is missing: install Node.js (Debian: apt-get install nodejs npm); make test does")
        run = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=GRAFANA,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
    if shutil.which("node") is None:
        pytest.fail("node is missing: install Node.js (Debian: apt-get install nodejs)")
    return TSC


def check_against_schema(tsc: Path, docs: dict[str, dict]) -> subprocess.CompletedProcess:
    """Run tsc over one generated file per dashboard: `<json> satisfies Plain<Dashboard>`."""
    out = GRAFANA / "generated" / uuid.uuid4().hex
    out.mkdir(parents=True)
    try:
        files = []
        for name, doc in docs.items():
            path = out / f"{name}.ts"
            path.write_text('import type { Dashboard } from "@grafana/schema";\nimport type { Plain } from "../../plain";\n\n'
                            f"export const dashboard = {json.dumps(doc, indent=1)} satisfies Plain<Dashboard>;\n")
            files.append(str(path))
        return subprocess.run(["node", str(tsc), "--noEmit", "--strict", "--moduleResolution", "bundler", "--module",
                               "esnext", "--target", "es2022", "--skipLibCheck", *files],
                              capture_output=True, text=True, timeout=300, cwd=GRAFANA)
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.slow  # the TypeScript compiler over Grafana's schema: in make test, not in make test-fast
def test_the_dashboards_pass_grafanas_own_schema_and_a_broken_one_does_not(tsc, tmp_path):
    made = tmp_path / "dash.json"
    assert cli.main(["dashboard", "--k", "3", "--window", "1m", "--instance", "tgi-0:80=2", "--out", str(made)]) == 0
    docs = {"cli": json.loads(made.read_text()),
            "default": dashboard.dashboard(Scenario()),
            "h100_70b": dashboard.dashboard(Scenario.from_names(gpu="H100", target="Llama 3.1 70B", tp=4, k=5), window="30s",
                                            title="70B fleet")}
    run = check_against_schema(tsc, docs)
    assert run.returncode == 0, run.stdout + run.stderr
    broken = json.loads(json.dumps(docs["default"]))
    broken["panels"][0]["gridPoss"] = broken["panels"][0].pop("gridPos")  # a typo Grafana would ignore
    broken["panels"][1]["fieldConfig"]["defaults"]["thresholds"]["mode"] = "absolut"
    run = check_against_schema(tsc, {"broken": broken})
    assert run.returncode != 0
    assert "gridPoss" in run.stdout and "absolut" in run.stdout


def test_the_ratio_bar_turns_red_below_100_percent_and_pending_alerts_show():
    doc = dashboard.dashboard(Scenario.from_names(k=3))
    ratio = next(p for p in doc["panels"] if p["title"] == "E ÷ break-even")
    defaults = ratio["fieldConfig"]["defaults"]
    assert defaults["unit"] == "percentunit"  # 1 = 100%
    assert defaults["thresholds"]["steps"] == [{"color": "red", "value": None}, {"color": "green", "value": 1}]
    assert defaults["color"] == {"mode": "thresholds"}
    alert = next(p for p in doc["panels"] if rules.ALERT in p["title"])
    assert 'alertstate=~"firing|pending"' in alert["targets"][0]["expr"]
    alpha = next(p for p in doc["panels"] if "α" in p["title"])
    assert "each instance's k" in alpha["title"]
    n = rules.names("5m")
    assert {t["expr"].split("{")[0] for t in alpha["targets"]} == {n["alpha"], n["k"], n["max_draft_length"]}
    unknown = next(p for p in doc["panels"] if "k unknown" in p["title"])  # reported, not judged at an assumed k
    assert unknown["targets"][0]["expr"].startswith(n["k_unknown"])


def test_the_uid_follows_the_inputs():
    base = dashboard.dashboard(Scenario.from_names(k=3))["uid"]
    assert base == dashboard.dashboard(Scenario.from_names(k=3))["uid"] and len(base) <= 40  # Grafana's limit
    others = {dashboard.dashboard(Scenario.from_names(k=4))["uid"], dashboard.dashboard(Scenario.from_names(k=3),
                                                                                        window="1m")["uid"],
              dashboard.dashboard(Scenario.from_names(k=3), title="Prod")["uid"],
              dashboard.dashboard(Scenario.from_names(k=3), instances=(rules.parse_instance("tgi-0:80=2"),))["uid"],
              dashboard.dashboard(Scenario.from_names(gpu="H100", k=3))["uid"]}
    assert base not in others and len(others) == 5
