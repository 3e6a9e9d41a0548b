"""Off is not free (issue 44, item 3): with speculation configured but switched off (a schedule's k = 0 band)
a step still costs more than a server without speculation. The advice's "turn it off above batch N" compares
against that off band, says what separate pools or a restart win, a measured off run replaces the engine's
value, and `plan` asks for one where none is measured."""

import csv
import json
import shlex

import pytest

from specmodel import Scenario, summarize
from specmodel.model.engines import find_engine
from specmodel.model.off_state import (KINDS, NONE, WHYS, engine_off_cost, given_off_cost, measured_off_cost,
                                       off_row)
from specmodel.paths import EVIDENCE_DIR
from specmodel.words.off_cost import off_cost_brief, off_cost_source
from tests.cli_runner import run_cli
from tests.conftest import ROOT

SEED = dict(gpu="L40S", target="Llama 3.1 8B", method="draft_model", draft="Llama 3.2 1B", alpha=0.7, k=4)
CLI_SEED = ("--gpu", "L40S", "--target", "Llama 3.1 8B", "--method", "draft_model", "--draft", "Llama 3.2 1B",
            "--alpha", "0.7", "--k", "4")
PLAN_RUNS = sorted((ROOT / "tests" / "fixtures" / "plan_runs").glob("*.json"))


def evidence() -> list[dict]:
    with open(EVIDENCE_DIR / "off_cost.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_vllms_off_cost_is_the_published_measurement():
    """vLLM 0.27.1 (V1 runner, H100 NVL, Gemma-4-31B FP8 + draft, a schedule that never drafts, 400-token
    context; depthchart ctx_tax_mechanism @ a346d236, posted in vLLM #49548/#49986): TPOT 14.374 -> 15.317 ms at
    concurrency 2 (+6.56%) and 77.164 -> 93.820 ms at 189 (+21.58%). The engine's points are those, to 0.01
    points of a percent, and at batch 32 the curve gives the ~15% the issue cites (within 1.5 points)."""
    rows = [r for r in evidence() if r["engine"] == "vllm" and r["version"] == "0.27.1" and r["context_len"] == "400"]
    published = {int(r["concurrency"]): float(r["configured_off"]) / float(r["no_spec"]) - 1 for r in rows}
    assert published == pytest.approx({2: 0.0656, 189: 0.2158}, abs=1e-4)
    cost = engine_off_cost(find_engine("vllm"), "draft_model")
    assert cost.kind == "published" and "bench/evidence/off_cost.csv" in cost.source
    assert dict(cost.points) == pytest.approx(published, abs=1e-4)
    assert float(cost.at(32)) == pytest.approx(0.15, abs=0.015)
    assert float(cost.at(1)) == pytest.approx(0.0656, abs=1e-4) and float(cost.at(4096)) == pytest.approx(0.2158, abs=1e-4)


def test_every_evidence_row_says_its_cost_as_its_numbers_give_it():
    """Each row's `cost` is what its two numbers give (time: off ÷ plain − 1; throughput or KV tokens: plain ÷ off
    − 1 or the share lost), to 0.0005, and names where it was published."""
    for r in evidence():
        assert r["source"].startswith("https://github.com/"), r
        try:
            plain, off = float(r["no_spec"]), float(r["configured_off"])
        except ValueError:  # a range ("48-59") or one number (a share of the step): stated as published
            continue
        unit = r["unit"]
        expected = (1 - off / plain if unit == "tokens" else plain / off - 1 if unit == "tok/s" else off / plain - 1)
        assert float(r["cost"]) == pytest.approx(expected, abs=5e-4), r


def test_engines_without_an_off_band_in_the_server_pay_nothing():
    """vLLM before 0.24.0 has no per-batch table and SGLang before 0.5.14 no 0 step: the off band is a server
    without speculation; SGLang runs STANDALONE drafts with one k (no adaptive steps)."""
    assert engine_off_cost(find_engine("vllm 0.23.0"), "eagle").kind == "none"
    assert engine_off_cost(find_engine("sglang 0.5.13"), "eagle3").kind == "none"
    assert engine_off_cost(find_engine("sglang"), "draft_model").kind == "none"
    assert engine_off_cost(find_engine("sglang"), "eagle3").kind == "chosen"
    s = Scenario.from_names(**SEED)
    assert (off_row(s, [1, 64, 512], NONE) == 1.0).all()


def test_with_vllms_off_cost_the_schedule_turns_off_later_and_the_advice_names_separate_pools():
    """Against a free plain server the seed's schedule turns speculation off above batch 55; its off band costs
    16-22% of a plain step there on vLLM (published), so k = 3 beats it up to batch 92. Above the batch where
    speculation stops paying against a plain server (52), a pool without speculation beats the schedule by at
    least what the off band costs at 512 (21.58%, within 1%): the advice says so in one short sentence."""
    free = summarize(Scenario.from_names(**SEED), off=NONE)
    vllm = summarize(Scenario.from_names(**SEED))
    assert free.off_above == 55 and vllm.off_above == 92
    assert free.schedule[-2][2] == vllm.schedule[-2][2] == 3
    assert vllm.pools_above == 52 and vllm.pools_gain >= 1.2158 * 0.99
    said = f"above batch 52, separate pools beat this schedule by up to {vllm.pools_gain:.2f}x"
    assert said in vllm.verdict.advice and len(said.split()) <= 15
    assert "lower k to 3 (1.58x); turn it off above batch 92;" in vllm.verdict.advice  # one k: the one advised
    assert "separate pools" not in free.verdict.advice  # a free off band leaves nothing for pools to win
    assert any("costs 19% of a plain step at batch 93" in n for n in vllm.notes)


def test_where_speculation_loses_here_the_advice_says_what_a_restart_without_it_gains():
    """At batch 64 the schedule still runs k = 3 (it beats its own off band) but k = 3 loses to a server without
    speculation: the advice is to turn it off and says by how much a restart wins; predict --json agrees."""
    s = Scenario.from_names(**SEED, concurrency=64)
    d = summarize(s)
    assert d.verdict.label == "loses" and d.best_k == 0 and d.restart_gain > 1.02
    assert d.verdict.advice.startswith(f"turn speculation off at batch 64; restart without speculation: "
                                       f"{d.restart_gain:.2f}x this schedule")
    out = json.loads(run_cli("predict", *CLI_SEED, "--concurrency", "64", "--json").stdout)
    assert out["off_cost"]["kind"] == "published" and out["off_cost"]["at_batch"] == 64
    assert out["off_cost"]["value"] == pytest.approx(float(d.off_cost.at(64)), abs=1e-4)
    assert out["separate_pools"] == {"above_batch": 52, "gain_up_to": pytest.approx(d.pools_gain, abs=1e-4),
                                     "restart_gain": pytest.approx(d.restart_gain, abs=1e-4), "at_least": 1.02}


def test_a_measured_off_cost_replaces_the_engines(tmp_path):
    """A row's off_tok_s (2,000 plain vs 1,900 tok/s with speculation configured and off at batch 64: 5.26%)
    replaces vLLM's published 15-22% for every row of its setup: the schedule turns off above batch 64, not 92,
    and `runs` says which value it used; predict --off-cost with the same share gives the same advice."""
    f = tmp_path / "runs.csv"
    f.write_text("workload,gpu,target_model,draft_model,k,concurrency,alpha,baseline_tok_s,spec_tok_s,off_tok_s\n"
                 "chat,L40S,Llama 3.1 8B,Llama 3.2 1B,4,1,0.7,100,150,\n"
                 "chat,L40S,Llama 3.1 8B,Llama 3.2 1B,4,64,0.7,2000,1900,1900\n")
    rows = json.loads(run_cli("runs", str(f), "--json").stdout)["rows"]
    assert [r["off_cost"] for r in rows] == [pytest.approx(2000 / 1900 - 1, abs=1e-4)] * 2
    assert all(r["off_cost_source"].startswith("measured: 1 run(s)") for r in rows)
    assert "turn it off above batch 64" in rows[0]["advice"]
    assert rows[1]["off_tok_s"] == 1900
    alone = summarize(Scenario.from_names(**SEED), off=given_off_cost(2000 / 1900 - 1, "--off-cost"))
    assert alone.verdict.advice == rows[0]["advice"]
    out = json.loads(run_cli("predict", *CLI_SEED, "--off-cost", str(2000 / 1900 - 1), "--json").stdout)
    assert out["advice"] == rows[0]["advice"] and out["off_cost"]["kind"] == "measured"


def test_a_vllm_bench_run_saved_with_speculation_off_is_read_as_the_off_measurement():
    """The plan's fixture files (a simulated server whose off band costs 9%): `vllm bench serve --metadata
    speculation=off` at batch 134 becomes that batch's off_tok_s, measured at 9% within the runs' ±1% noise."""
    out = json.loads(run_cli("runs", *map(str, PLAN_RUNS), "--json").stdout)
    assert not [p for p in out["problems"] if p["severity"] == "error"]
    assert [r["concurrency"] for r in out["rows"] if r["off_tok_s"]] == [134]
    assert len({r["off_cost"] for r in out["rows"]}) == 1 and out["rows"][0]["off_cost"] == pytest.approx(0.09, abs=0.01)
    assert all(r["off_cost_source"].startswith("measured") for r in out["rows"])


def test_plan_asks_for_one_run_with_speculation_configured_and_off_where_it_is_not_measured():
    """vLLM's off cost is published, not measured on the reviewer's server: the plan adds one run against the
    speculative server with every batch at k = 0, at one of its own batches above the off threshold (its plain
    run there is the comparison); vLLM 0.23.0 has no k = 0 band in the server, so no such run."""
    out = json.loads(run_cli("plan", *CLI_SEED, "--json").stdout)
    off = [r for r in out["runs"] if r["speculation_off"]]
    assert len(off) == 1 and off[0]["concurrency"] > out["off_above_batch"]
    assert any(r["concurrency"] == off[0]["concurrency"] and not r["speculative"] for r in out["runs"])
    server = shlex.split(out["servers"]["speculative_off"])
    config = json.loads(server[server.index("--speculative-config") + 1])
    assert config["num_speculative_tokens_per_batch_size"] == [[1, 512, 0]] and config["num_speculative_tokens"] > 0
    assert "speculation=off" in shlex.split(off[0]["command"])
    old = json.loads(run_cli("plan", *CLI_SEED, "--engine", "vllm 0.23.0", "--json").stdout)
    assert not any(r["speculation_off"] for r in old["runs"]) and "speculative_off" not in old["servers"]


def test_each_reason_for_an_off_cost_has_its_own_words():
    """model.off_state gives a kind (KINDS) and a reason with its values (WHYS); words.off_cost says each one in
    the words `predict --json` and `runs --json` gave before the model stopped writing them."""
    costs = {c.why: c for c in (
        NONE, engine_off_cost(find_engine("vllm"), "draft_model"), engine_off_cost(find_engine("sglang"), "draft_model"),
        engine_off_cost(find_engine("sglang 0.5.13"), "eagle3"),
        measured_off_cost([2, 64], [100.0, 900.0], [95.0, 800.0], "off_tok_s of this setup's rows"),
        given_off_cost(0.15, "--off-cost"))}
    assert set(costs) == set(WHYS) and {c.kind for c in costs.values()} <= set(KINDS)
    assert off_cost_brief(costs["no_band"]) == "none: no off band in the server"
    assert off_cost_brief(costs["engine"]) == "published: vllm's value, data/engines.json off_cost"
    assert off_cost_brief(costs["one_k"]) == "none: one k for draft_model"
    assert off_cost_brief(costs["before_since"]).startswith("none: no k = 0 band before sglang ")
    assert off_cost_source(costs["before_since"]).endswith(": the off band is a server without speculation")
    assert off_cost_source(costs["runs"]) == ("measured: 2 run(s) with speculation configured and off (off_tok_s of "
                                               "this setup's rows): 5.3% at batch 2, 12.5% at batch 64")
    assert off_cost_source(costs["given"]) == off_cost_brief(costs["given"]) == "measured: 15.0% of the plain step (--off-cost)"
