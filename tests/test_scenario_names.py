"""Names are read once, at the edges: Scenario.from_names reads them; the model reads the presets."""

from __future__ import annotations

import sys

import pytest

from specmodel import Scenario, SpecModelError, summarize
from specmodel.model.engines import Engine
from specmodel.model.presets import GPU, Method, Model
from specmodel.model.scenario import with_changes

READERS = ("find_gpu", "find_model", "find_method", "find_engine", "stated_tp", "parse_hardware", "parse_model",
           "parse_method", "parse_engine", "named_engine", "normalise_engine")


def test_from_names_reads_each_name_into_its_preset():
    s = Scenario.from_names(gpu="8x H100 (TP=8)", target="meta-llama/Llama-3.1-70B-Instruct", method="EAGLE-3",
                            draft=None, engine="SGLang v0.5.9")
    assert (type(s.gpu), type(s.target), type(s.method), type(s.engine)) == (GPU, Model, Method, Engine)
    assert (str(s.gpu), str(s.target), str(s.method), str(s.engine), s.tp) == \
        ("H100 SXM", "Llama 3.1 70B", "eagle3", "sglang 0.5.9", 8)
    assert s.names() == {"gpu": "H100 SXM", "target": "Llama 3.1 70B", "method": "eagle3", "draft": None}
    assert Scenario.from_names() == Scenario()
    assert hash(Scenario.from_names(gpu="h100")) == hash(Scenario.from_names(gpu="H100 SXM"))


def test_a_gpu_texts_tp_and_unknown_names_say_what_they_said_before():
    with pytest.raises(SpecModelError, match=r"GPU '8x H100 \(TP=8\)' says TP 8 but tp is 4: give one of them"):
        Scenario.from_names(gpu="8x H100 (TP=8)", tp=4)
    with pytest.raises(SpecModelError, match="unknown GPU 'nosuch'; choose one of: "):
        Scenario.from_names(gpu="nosuch")
    with pytest.raises(SpecModelError, match="unknown method 'warp'"):
        Scenario.from_names(method="warp")


def test_the_scenario_takes_presets_only_and_with_changes_reads_a_name():
    with pytest.raises(TypeError, match="Scenario.from_names"):
        Scenario(gpu="L40S")
    s = with_changes(Scenario(tp=2), gpu="H100", k=3)
    assert (s.gpu.name, s.tp, s.k) == ("H100 SXM", 2, 3)
    assert with_changes(Scenario(), gpu="4x H100").tp == 4


def test_the_model_reads_no_name(monkeypatch):
    """Everything What-if computes for a scenario (summary, band, deploy advice, plan) calls no name reader."""
    from specmodel.export.deploy import deploy_by_engine
    from specmodel.export.prediction import prediction_dict
    from specmodel.plan.measure import measurement_plan

    s = Scenario.from_names(gpu="MI300X", target="Llama 3.1 70B", method="eagle3", draft=None, engine="sglang",
                            alpha=0.61, k=3, concurrency=24)

    def refuse(*_args, **_kwargs):
        raise AssertionError("a name was read inside the model")

    for module in [m for name, m in list(sys.modules.items()) if name.startswith("specmodel.") and m]:
        for reader in READERS:
            if hasattr(module, reader):
                monkeypatch.setattr(module, reader, refuse)
    summary = summarize(s)
    out = prediction_dict(summary)
    deploy_by_engine(summary)
    measurement_plan(summary)
    assert (out["gpu"], out["target"], out["method"], out["engine"]) == ("MI300X", "Llama 3.1 70B", "eagle3", "sglang")
