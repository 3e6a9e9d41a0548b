"""Issue 39 item 1: a GPU by its numbers (--gpu-spec) and a model by its Hugging Face config.json
(--target-config / --draft-config) take the presets' one path, so a preset's numbers give its prediction."""

import json
from pathlib import Path

import pytest

from specmodel.errors import SpecModelError
from specmodel.model import presets
from specmodel.model.custom import gpu_from_spec, model_from_config
from specmodel.model.scenario import Scenario, predict
from tests.cli_runner import run_cli

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
H100_SPEC = "bandwidth_gbs=3350,tflops=989,memory_gb=80"


def _speedup(gpu, target, draft, concurrency):
    s = Scenario.from_names(gpu=gpu, target=target, draft=draft, alpha=0.7, k=4, concurrency=concurrency)
    return float(predict(s).speedup)


@pytest.mark.parametrize("concurrency", [1, 64])
def test_h100_numbers_as_a_spec_give_the_h100_prediction(concurrency):
    spec = gpu_from_spec(H100_SPEC)
    assert _speedup(spec, "Llama 3.1 8B", "Llama 3.2 1B", concurrency) == pytest.approx(
        _speedup("H100 SXM", "Llama 3.1 8B", "Llama 3.2 1B", concurrency), rel=1e-9)


@pytest.mark.parametrize("concurrency", [1, 64])
@pytest.mark.parametrize("config, preset, draft, rel", [
    ("llama-3.1-8b.json", "Llama 3.1 8B", "Llama 3.2 1B", 1e-9),
    ("qwen3-30b-a3b.json", "Qwen3-30B-A3B", "Qwen3 0.6B", 0.02),  # params counted from shapes: 30.53B vs the card's 30.5B
])
def test_a_config_with_a_presets_numbers_gives_its_prediction(config, preset, draft, rel, concurrency):
    model = model_from_config(str(CONFIGS / config))
    assert _speedup("H100 SXM", model, draft, concurrency) == pytest.approx(
        _speedup("H100 SXM", preset, draft, concurrency), rel=rel)


def test_config_shapes_match_the_preset():
    m, p = model_from_config(str(CONFIGS / "llama-3.1-8b.json")), presets.find_model("Llama 3.1 8B")
    for field in ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab", "params_B"):
        assert getattr(m, field) == getattr(p, field), field
    q = model_from_config(str(CONFIGS / "qwen3-30b-a3b.json"))
    assert (q.experts, q.experts_per_token, q.moe_intermediate, q.moe_layers) == (128, 8, 768, 48)


def test_mla_moe_config():
    m = model_from_config(str(CONFIGS / "mla-small.json"))
    assert (m.attention, m.kv_lora_rank, m.qk_rope_head_dim, m.head_dim) == ("mla", 256, 64, 192)
    assert (m.experts, m.shared_experts, m.moe_layers) == (64, 1, 11)
    assert m.active_params_B < m.params_B
    assert _speedup("H100 SXM", m, "Llama 3.2 1B", 1) > 0


def test_cli_spec_and_config_equal_the_presets():
    base = json.loads(run_cli("predict", "--gpu", "h100", "--concurrency", "64", "--json").stdout)
    given = run_cli("predict", "--gpu-spec", H100_SPEC, "--target-config", str(CONFIGS / "llama-3.1-8b.json"),
                    "--draft", "Llama 3.2 1B", "--concurrency", "64", "--json")
    assert given.returncode == 0, given.stderr
    out = json.loads(given.stdout)
    assert (out["gpu"], out["target"]) == ("Custom GPU", "llama-3.1-8b")
    assert out["speedup"] == base["speedup"] and out["crossover_concurrency"] == base["crossover_concurrency"]


def test_spec_file_yaml_and_json(tmp_path):
    (tmp_path / "g.yaml").write_text("bandwidth_gbs: 1792\ntflops: 500\nmemory_gb: 96\nname: RTX PRO 6000\n")
    (tmp_path / "g.json").write_text('{"bandwidth_gbs": 1792, "tflops": 500, "memory_gb": 96}')
    assert gpu_from_spec(str(tmp_path / "g.yaml")).name == "RTX PRO 6000"
    assert gpu_from_spec(str(tmp_path / "g.json")).bandwidth_GBps == 1792
    out = run_cli("predict", "--gpu-spec", str(tmp_path / "g.yaml"), "--concurrency", "8")
    assert out.returncode == 0 and "RTX PRO 6000" in out.stdout


@pytest.mark.parametrize("spec, words", [
    ("bandwidth_gbs=1792,memory_gb=96", "tflops is missing"),
    ("bandwidth_gbs=0,tflops=500,memory_gb=96", "bandwidth_gbs = 0 is outside the accepted range 10-100000"),
    ("bandwidth_gbs=1792,tflops=-5,memory_gb=96", "tflops = -5 is outside"),
    ("bandwidth_gbs=1792,tflops=500,memory_gb=1e9", "memory_gb = 1e+09 is outside the accepted range 1-10000"),
    ("bandwidth_gbs=nan,tflops=500,memory_gb=96", "bandwidth_gbs must be a number in 10-100000"),
    ("bandwidth_gbs=fast,tflops=500,memory_gb=96", "bandwidth_gbs must be a number"),
    ("bandwidth_gbs=1792,tflops=500,memory_gb=96,speed=3", "unknown key 'speed'"),
    ("bandwidth_gbs=1792,tflops=500,memory_gb=96,like=Z9000", "unknown GPU"),
])
def test_bad_spec_is_one_line_naming_the_key(spec, words):
    with pytest.raises(SpecModelError, match=words.replace("+", r"\+")):
        gpu_from_spec(spec)
    out = run_cli("predict", "--gpu-spec", spec)
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("doc, words", [
    ({"foo": 1}, "'hidden_size' is missing"),
    ([1, 2], "expected a Hugging Face config.json"),
    ({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 1,
      "vocab_size": 100, "is_encoder_decoder": True}, "is_encoder_decoder"),
    ({"hidden_size": 4096, "num_hidden_layers": 0, "num_attention_heads": 32, "intermediate_size": 1,
      "vocab_size": 100}, "num_hidden_layers = 0 is outside the accepted range 1-1000"),
    ({"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 64,
      "intermediate_size": 1, "vocab_size": 100}, "num_key_value_heads = 64 is more than"),
    ({"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "intermediate_size": 1,
      "vocab_size": 100, "linear_num_key_heads": 16}, "linear_num_key_heads"),
    ({"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "intermediate_size": 1,
      "vocab_size": 100, "torch_dtype": "float32"}, "torch_dtype 'float32'"),
    ({"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "intermediate_size": 1,
      "vocab_size": 100, "num_local_experts": 8, "num_experts_per_tok": 9}, "num_experts_per_tok = 9 must be 1-8"),
])
def test_bad_config_is_one_line_naming_the_key(tmp_path, doc, words):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecModelError, match=words):
        model_from_config(str(path))
    out = run_cli("predict", "--target-config", str(path), "--draft", "Llama 3.2 1B")
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_huge_config_is_refused_before_parsing(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"pad": "' + "x" * 1_100_000 + '"}')
    with pytest.raises(SpecModelError, match="limit"):
        model_from_config(str(path))


def test_flags_conflict_and_default_draft():
    out = run_cli("predict", "--target", "Llama 3.1 8B", "--target-config", str(CONFIGS / "llama-3.1-8b.json"))
    assert out.returncode == 2 and "give one of them" in out.stderr
    out = run_cli("predict", "--target-config", str(CONFIGS / "llama-3.1-8b.json"))
    assert out.returncode == 2 and "--draft-config" in out.stderr
    out = run_cli("predict", "--target-config", str(CONFIGS / "qwen3-30b-a3b.json"),
                  "--draft-config", str(CONFIGS / "llama-3.1-8b.json"), "--json")
    assert out.returncode == 0, out.stderr


def _unique_number_presets() -> list[str]:
    """Presets no other preset shares its three numbers with (H800 has H100 SXM's: a spec cannot tell them)."""
    seen: dict = {}
    for name in presets.gpu_names():
        g = presets.find_gpu(name)
        seen.setdefault((g.bandwidth_GBps, g.dense_bf16_TFLOPS, g.memory_GB), []).append(name)
    return [names[0] for names in seen.values() if len(names) == 1]


def _predicted(gpu, concurrency: int, tp: int) -> float | None:
    """Llama 3.1 8B + Llama 3.2 1B at α 0.7, k 4 on `gpu`; None where one sequence does not fit."""
    try:
        return float(predict(Scenario.from_names(gpu=gpu, target="Llama 3.1 8B", draft="Llama 3.2 1B", alpha=0.7,
                                                 k=4, concurrency=concurrency, tp=tp)).speedup)
    except SpecModelError:
        return None


@pytest.mark.parametrize("tp", [1, 8])
def test_every_presets_numbers_as_a_spec_give_its_prediction_at_batch_1_and_64(tp):
    checked = 0
    for name in _unique_number_presets():
        g = presets.find_gpu(name)
        spec = gpu_from_spec({"bandwidth_gbs": g.bandwidth_GBps, "tflops": g.dense_bf16_TFLOPS, "memory_gb": g.memory_GB})
        assert spec.name == "Custom GPU" and spec.kernel_name == g.kernel_name, name
        for concurrency in (1, 64):
            preset, given = _predicted(g, concurrency, tp), _predicted(spec, concurrency, tp)
            assert (preset is None) == (given is None), name  # a 16 GB GPU that does not fit does not either way
            if preset is not None:
                assert given == pytest.approx(preset, rel=0.02), (name, concurrency)
                checked += 1
    assert checked > 40


def test_a_spec_that_states_its_own_kernels_or_interconnect_keeps_them():
    spec = gpu_from_spec("bandwidth_gbs=864,tflops=362.05,memory_gb=48,like=H100")
    assert spec.kernel_name == "H100 SXM"
    spec = gpu_from_spec("bandwidth_gbs=3350,tflops=989,memory_gb=80,interconnect_gbs=64")
    assert spec.interconnect_GBps == 64 and spec.kernel_name == "H100 SXM"
    assert "the numbers of H100 SXM" in spec.source


def test_a_bad_spec_names_its_key_as_the_input_names_it():
    named = {"bandwidth_gbs": "gpu_bandwidth_gbs", "tflops": "gpu_tflops", "memory_gb": "gpu_memory_gb"}
    for spec, key, words in [({"bandwidth_gbs": 800, "memory_gb": 48}, "gpu_tflops", "gpu_tflops is missing"),
                             ({"bandwidth_gbs": "x", "tflops": 1, "memory_gb": 48}, "gpu_bandwidth_gbs",
                              "gpu_bandwidth_gbs must be a number in 10-100000"),
                             ({"bandwidth_gbs": 800, "tflops": 300, "memory_gb": 0}, "gpu_memory_gb",
                              "gpu_memory_gb = 0 is outside the accepted range 1-10000")]:
        with pytest.raises(SpecModelError, match=words) as caught:
            gpu_from_spec(spec, "GPU by its numbers", named)
        assert caught.value.key == key


def test_config_text_not_json_or_huge_or_endless_is_one_message(tmp_path):
    from specmodel.model.custom import model_from_config_text

    with pytest.raises(SpecModelError, match=r"not valid JSON \(.* at line 1, column"):
        model_from_config_text('{"hidden_size": ', "the target's config.json")
    with pytest.raises(SpecModelError, match="over the 1 MB limit"):
        model_from_config_text(" " * 1_000_001, "the target's config.json")
    doc = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    for key, value in (("num_hidden_layers", 10 ** 30), ("num_hidden_layers", float("nan")), ("mlp_only_layers", 5)):
        with pytest.raises(SpecModelError, match=key):  # 10**30 layers were walked one by one: a hang
            model_from_config_text(json.dumps({**doc, key: value}), "the target's config.json")
    assert model_from_config_text(json.dumps(doc).encode(), "x").params_B == \
        model_from_config(str(CONFIGS / "qwen3-30b-a3b.json")).params_B
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": ')
    out = run_cli("predict", "--target-config", str(path), "--draft", "Llama 3.2 1B")  # a traceback before
    assert out.returncode == 2 and "not valid JSON" in out.stderr and "Traceback" not in out.stderr
