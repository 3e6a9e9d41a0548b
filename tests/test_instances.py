"""One place decides what each instance is judged on (specmodel/model/instances.py): `fleet`, the Fleet page's
rules and dashboard, and `rules --instance` judge every instance on the same target, draft, k and TP, and a draft
not smaller than its target is refused by name wherever it comes from."""

import dataclasses

import pytest

from specmodel import Scenario, SpecModelError, cli
from specmodel.export import rules
from specmodel.metrics import fleet, live, promapi, samples
from specmodel.model.instances import decide, parse_instance
from specmodel.words.served import refusal


@pytest.fixture(scope="module")
def report():
    """The recorded answers of a real Prometheus scraping a test fleet (sample_runs/fleet_prometheus_answer.json)."""
    with samples.recorded_prometheus_client() as client:
        return fleet.fleet(client, promapi.PromServer(samples.FLEET_SAMPLE_URL), Scenario(),
                           window=samples.FLEET_SAMPLE_WINDOW, at_s=samples.fleet_sample_time())


def shape(s: Scenario) -> tuple:
    return s.target.name, s.draft.name if s.draft else None, int(s.k), s.tp, s.gpu.name


def test_the_rules_of_a_fleet_judge_every_instance_on_the_model_and_k_the_fleet_judged_it_on(report):
    given = fleet.instance_models(report)
    judged = {i.instance: i for i in report.instances if i.verdict.measured}
    assert {m.instance for m in given} == set(judged) and len(given) >= 4
    chosen = rules.profiles(Scenario(), given)
    by_label = {(p.label, p.server): p for p in chosen if p.label}
    for m in given:  # a TGI server's own profile where it has one (it runs n-gram), else the instance's
        server = "tgi" if judged[m.instance].stats.server == "tgi" else None
        assert shape(by_label[m.profile, server].scenario) == shape(judged[m.instance].verdict.scenario), m.instance
    # the 70B instance is on its own model, TP 4, in both: not the sidebar's 8B, as the rules judged it before
    big = next(m for m in given if m.target == "Llama 3.1 70B")
    assert by_label[big.profile, None].scenario.tp == 4
    doc = rules.rules_document(Scenario(), window="10s", instances=given)
    configured = next(r for r in doc["groups"][0]["rules"] if r.get("record") == "instance:spec_decode_k:configured")
    assert all(f'"{m.instance}"' in configured["expr"] for m in given)


def test_a_draft_larger_than_its_target_is_refused_by_name_in_fleet_and_rules(report):
    good = next(i for i in report.instances if i.instance.startswith("v1-good"))
    # A Qwen3 0.6B server: no Qwen draft preset smaller than it, so the sidebar's Llama 3.2 1B would be its draft.
    small = dataclasses.replace(good.stats, model_name="Qwen/Qwen3-0.6B")
    verdict, predicted_on = fleet.judge_instance(small, Scenario(), live.COMMAND_LINE)
    assert verdict.speedup is None and verdict.label == "unknown" and not verdict.advice
    assert "the draft Llama 3.2 1B (1.24B parameters) is not smaller than the target Qwen3 0.6B" in verdict.text
    assert predicted_on == "not predicted: Qwen3 0.6B + Llama 3.2 1B"
    judged = decide(Scenario(), "Qwen/Qwen3-0.6B")
    assert judged.scenario is None and "Qwen3 0.6B" in refusal(judged)
    with pytest.raises(SpecModelError, match="the draft Llama 3.2 1B .* is not smaller than the target Qwen3 0.6B"):
        rules.rules_document(Scenario(), instances=(parse_instance("qwen-0:8000=4,Qwen3 0.6B"),))
    # a draft-free method needs no draft: the same server is predicted
    ngram = Scenario.from_names(method="ngram")
    assert decide(ngram, "Qwen/Qwen3-0.6B").scenario.target.name == "Qwen3 0.6B"


def test_an_instance_given_its_own_k_target_and_draft_is_read_the_same_by_fleet_and_rules(report, capsys):
    m = parse_instance("v1-good:8000=2,Llama 3.1 70B,Llama 3.2 1B")
    assert (m.k, m.target, m.draft, m.profile) == (2, "Llama 3.1 70B", "Llama 3.2 1B", "k2 Llama 3.1 70B + Llama 3.2 1B")
    with samples.recorded_prometheus_client() as client:
        again = fleet.fleet(client, promapi.PromServer(samples.FLEET_SAMPLE_URL), Scenario(),
                            window=samples.FLEET_SAMPLE_WINDOW, at_s=samples.fleet_sample_time(), instances=(m,))
    one = next(i for i in again.instances if i.instance == m.instance)
    profile = next(p for p in rules.profiles(Scenario(), (m,)) if p.label == m.profile and p.server is None)
    assert shape(one.verdict.scenario) == shape(profile.scenario) == ("Llama 3.1 70B", "Llama 3.2 1B", 2, 4, "L40S")
    assert cli.main(["rules", "--instance", "bad=4,Qwen3 0.6B"]) == 2
    assert "is not smaller than the target Qwen3 0.6B" in capsys.readouterr().err
