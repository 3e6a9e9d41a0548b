"""Issue 40, items 1 and 5: a decision line per workload, at most about fifteen words, written once
(specmodel/words/decision_line.py) and said the same by the pages and the commands (`predict`, `runs`,
`mix` text first, and the JSON key beside the others); beside a threshold the band leaves open, the two
concurrencies that would pin it, from the measurement plan."""

import itertools
import json
import re

import numpy as np
import pytest

from specmodel import Scenario, summarize
from specmodel.fit.steps import OFF_SEARCH_MAX
from specmodel.plan.measure import plan_concurrencies, threshold_runs
from specmodel.show.decisions import scenario_decision
from specmodel.words.decision_line import (decision_line, fit_decision_line, mix_pool_line, pin_line, split_lines,
                                           verdict_at)
from tests.cli_runner import run_cli

PAIR = dict(gpu="L40S", target="Llama 3.1 8B", method="draft_model", draft="Llama 3.2 1B")
MOST_WORDS = 15  # "at most ~15 words": the longest a line may run after its subject (workload, method, instance)


def words(line: str) -> int:
    """Words as a reader counts them: tokens with a letter or a digit ("=" and "—" are not words)."""
    return sum(1 for w in line.split() if re.search(r"\w", w))


def test_the_issues_examples_read_as_asked():
    d = summarize(Scenario.from_names(**PAIR, alpha=0.7, k=4, concurrency=1))
    assert decision_line(d, "extraction") == "extraction: k = 3 up to batch 92 (33–512+), off above"
    assert fit_decision_line(4, (7, 3, 12), "draft model") == "draft model, k = 4: off above batch 7 (3–12, your runs)"
    assert mix_pool_line(32, 0, 0.87, (0.65, 1.30), 4) == "mixed at 32: off (0.87× with k = 4; band 0.65–1.30×)"
    chat = summarize(Scenario.from_names(**PAIR, alpha=0.2, k=4, concurrency=32))
    assert chat.off_above == 0 and decision_line(chat, "chat").startswith("chat: off (")


@pytest.mark.parametrize(("gpu", "method", "alpha", "k", "batch"), list(itertools.product(
    ["L40S", "H100"], ["draft_model", "eagle3", "ngram"], [0.2, 0.5, 0.7, 0.9], [2, 4, 6], [1, 32, 256])))
def test_every_line_is_short_and_answers_on_off_which_k_and_above_which_batch(gpu, method, alpha, k, batch):
    s = Scenario.from_names(gpu=gpu, method=method, alpha=alpha, k=k, concurrency=batch,
                            **({"draft": "Llama 3.2 1B"} if method == "draft_model" else {}))
    d = summarize(s)
    line = decision_line(d, s.method.label)
    assert line.startswith(f"{s.method.label}: ") and words(line) - words(s.method.label) <= MOST_WORDS, line
    on = [band for band in d.schedule if band[2]]
    if not on:
        assert ": off" in line
    else:
        assert re.search(rf"(k = |then ){on[-1][2]} up to", line)  # the k that runs up to the threshold
        if d.off_above is not None:
            assert re.search(rf"up to (batch )?{d.off_above}\b", line)  # the batch above which it goes off
        else:  # on at every batch the schedule looks at: "k = 4 up to batch 512+, off above" read as off above 512
            assert re.search(r"up to (batch )?512\+( \(.*\))?$", line), line
            assert "off above" not in line
    if d.off_above_range and d.off_above_range[0] != d.off_above_range[1] and on:
        low, high = d.off_above_range
        assert f"({low}–{'512+' if high is None else high}" in line  # the range the band leaves


def test_an_open_threshold_gets_the_two_runs_of_the_plan_beside_it():
    d = summarize(Scenario.from_names(**PAIR, alpha=0.7, k=4, concurrency=1))
    runs = threshold_runs(d)
    planned = [c for c, _ in plan_concurrencies(d)]
    assert runs == (33, 134) and set(runs) <= set(planned)  # the plan's own runs beside batch 1
    assert pin_line(runs) == "Pin it: plain and speculative runs at batch 33 and 134."
    assert words(pin_line(runs)) <= 12
    decided = scenario_decision(d)
    assert decided.line == "Draft model: k = 3 up to batch 92 (33–512+), off above" and decided.runs == (33, 134)


def test_a_step_fit_line_says_it_is_the_users_runs():
    assert fit_decision_line(3, (None, None, None)) == "k = 3: on at every batch the fit looks at (your runs)"
    # on by the fit, but the low end of its band loses above 200: the line leads with where the band says on too,
    # it does not say "on at every batch" with the doubt after it
    assert fit_decision_line(3, (None, 200, None)) == \
        "k = 3: on up to batch 200, uncertain above: the fit stays on, its band reaches 1.0 (your runs)"
    assert fit_decision_line(3, (None, 0, None)) == \
        "k = 3: uncertain at every batch: on by the fit, its band reaches 1.0 from batch 1 (your runs)"
    assert fit_decision_line(3, (0, 0, 0), "chat") == "chat, k = 3: off at every batch, band included (your runs)"
    assert fit_decision_line(3, (0, 0, 9), "chat") == "chat, k = 3: off from batch 1 (the band reaches batch 9; your runs)"
    assert fit_decision_line(4, (60, 20, None), "x").endswith(f"off above batch 60 (20–{OFF_SEARCH_MAX}+, your runs)")


def test_a_split_names_each_pool_and_its_gain():
    lines = split_lines(32, 1.16, (1.01, 1.49), [(("extraction",), 3, 1), (("chat", "code"), 0, 2)])
    assert lines == ["split at 32: 1.16× one pool without speculation (band 1.01–1.49×)",
                     "extraction: k = 3, own pool on 1 GPU", "chat + code: off, one pool on 2 GPUs"]


def test_a_short_verdict_keeps_the_band_only_where_it_straddles_one():
    assert verdict_at("pays off", 1.55, (1.15, 2.32), 1) == "pays off: 1.55x at batch 1"
    assert verdict_at("pays off", 1.22, (0.91, 1.90), 32) == \
        "uncertain (pays off by the estimate): 1.22x at batch 32 (80% band 0.91–1.90x)"


def test_predict_says_the_decision_first_and_in_its_json():
    args = ["predict", "--gpu", "L40S", "--target", "Llama 3.1 8B", "--method", "draft_model", "--draft",
            "Llama 3.2 1B", "--alpha", "0.7", "--k", "4", "--concurrency", "1"]
    text = run_cli(*args).stdout.splitlines()
    assert text[1] == "  decision:         Draft model: k = 3 up to batch 92 (33–512+), off above"
    assert text[2].strip() == "Pin it: plain and speculative runs at batch 33 and 134."
    out = json.loads(run_cli(*args, "--json").stdout)
    assert out["decision_line"] == "Draft model: k = 3 up to batch 92 (33–512+), off above"
    assert out["threshold_runs"] == [33, 134] and out["verdict_text"] == "pays off: 1.55x"  # the keys kept


def test_runs_and_mix_say_the_decision_per_workload_first():
    out = run_cli("runs", "sample_runs/multi_workload.csv").stdout.splitlines()
    assert out[:2] == ["decision per workload:", "  code completion, k = 4: off above batch 235 (115–4096+, your runs)"]
    summary = json.loads(run_cli("runs", "sample_runs/multi_workload.csv", "--json").stdout)["summary"]
    lines = [d["decision_line"] for d in summary["decision_lines"]]
    assert lines == ["code completion, k = 4: off above batch 235 (115–4096+, your runs)",
                     "open-ended chat, k = 4: off at every batch, band included (your runs)"]
    mix = run_cli("mix", "sample_runs/traffic_mix.csv", "--gpus", "1", "--concurrency", "32")
    assert mix.stdout.splitlines()[1] == "decision: mixed at 32: off (0.91× with k = 4; band 0.70–1.37×)"
    assert json.loads(run_cli("mix", "sample_runs/traffic_mix.csv", "--gpus", "1", "--concurrency", "32",
                              "--json").stdout)["decision_lines"] == ["mixed at 32: off (0.91× with k = 4; band 0.70–1.37×)"]


def test_the_live_and_fleet_line_is_the_json_key_of_scrape_and_fleet():
    from specmodel.metrics import fleet, live, promapi, samples

    base = Scenario.from_names(**PAIR, alpha=0.7, k=4)
    server = promapi.PromServer(samples.FLEET_SAMPLE_URL, promapi.PromAuth(None, None, None))
    with samples.recorded_prometheus_client() as client:
        report = fleet.fleet(client, server, base, window=samples.FLEET_SAMPLE_WINDOW, at_s=samples.fleet_sample_time())
    said = {i.instance: i.to_dict()["decision_line"] for i in report.instances}
    assert said["v1-losing:8000"] == "v1-losing:8000: off at batch 160; k = 1 up to batch 14 (0–74)"
    assert said["v1-off:8000"].endswith("(α assumed)")  # speculation is off there: the acceptance is the assumed one
    assert all(words(line) - 1 <= MOST_WORDS for line in said.values()), said
    verdict = next(i.verdict for i in report.instances if i.instance == "sglang:8000")
    assert np.isclose(verdict.decision.prediction.speedup, verdict.speedup)
    assert live.decision_line_of(verdict, None, "") == "k = 3 up to batch 118 (45–512+), off above"
