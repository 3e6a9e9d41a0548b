"""Memory is counted in one place (specmodel.model.memory): what a "does not fit" message says is
what predict() used. For one model of every preset family, the longest context the message offers
fits in predict() and one token more does not; the bytes it names are the weights at their dtype,
the KV at its dtype and the reserve."""

import pytest

from specmodel import Scenario, SpecModelError, predict, summarize
from specmodel.errors import DoesNotFit
from specmodel.model import memory, presets

FAMILIES = {}
for _name in presets.model_names():
    FAMILIES.setdefault(presets.find_model(_name).family or "?", _name)

# (GPU, TP) from small to large: the first whose memory holds the weights is where a family is tried.
HOMES = [("L4", 1), ("L40S", 1), ("H100", 1), ("H200", 1), ("H200", 2), ("H200", 4), ("H200", 8), ("B200", 8)]


def _home(model_name, weight_dtype=None):
    m = presets.find_model(model_name)
    for gpu, tp in HOMES:
        usable = presets.find_gpu(gpu).memory_GB * 1e9 * tp * memory.GPU_MEMORY_UTILIZATION
        if memory.resident_weight_bytes(m, weight_dtype) + memory.RESERVE_GB * 1e9 < 0.8 * usable:
            return gpu, tp
    raise AssertionError(f"no GPU preset in {HOMES} holds {model_name}: add a larger home to HOMES")


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp8"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_longest_context_a_message_offers_is_the_longest_predict_fits(family, kv_dtype):
    name = FAMILIES[family]
    gpu, tp = _home(name)
    s = Scenario.from_names(gpu=gpu, tp=tp, target=name, method="ngram", k=0, kv_dtype=kv_dtype, context_len=16_000_000)
    m = presets.find_model(name)
    usable = presets.find_gpu(gpu).memory_GB * 1e9 * tp * memory.GPU_MEMORY_UTILIZATION
    room = usable - memory.resident_weight_bytes(m) - memory.RESERVE_GB * 1e9
    if memory.kv_layout(m, kv_dtype).resident_bytes(s.context_len) <= room:  # MiMo-V2-Flash in FP8: 9 global layers
        assert predict(s).plain.max_concurrency >= 1  # hold the whole bound: there is no shorter context to offer
        return
    with pytest.raises(DoesNotFit) as caught:
        predict(s)
    why = caught.value
    expected = (memory.resident_weight_bytes(m) + memory.RESERVE_GB * 1e9
                + memory.kv_layout(m, kv_dtype).resident_bytes(s.context_len)) / 1e9
    assert why.needed_GB == pytest.approx(expected, rel=1e-9)
    longest = why.closest_context_len
    assert longest is not None and f"context ≤ {longest:,} tokens" in str(why)
    assert predict(Scenario.from_names(**{**s.__dict__, "context_len": longest})).plain.max_concurrency >= 1
    with pytest.raises(DoesNotFit):
        predict(Scenario.from_names(**{**s.__dict__, "context_len": longest + 1}))


@pytest.mark.parametrize("method", ["mtp", "eagle", "eagle3", "draft_model"])
@pytest.mark.parametrize("family", ["llama3", "qwen3_moe", "deepseek_v3", "gpt_oss"])
def test_the_longest_context_with_speculation_is_the_longest_the_speculative_arm_fits(family, method):
    name = FAMILIES[family]
    gpu, tp = _home(name)
    m = presets.find_model(name)
    draft = m.default_draft or "Llama 3.2 1B"
    base = Scenario.from_names(gpu=gpu, tp=tp, target=name, method=method, draft=draft, k=3, kv_dtype="fp8")
    plain_longest = memory.target_does_not_fit(base.gpu, tp, m, 16_000_000, kv_dtype="fp8").closest_context_len
    why = memory.speculation_does_not_fit(base.gpu, tp, m, plain_longest, base.method, 3, base.draft, kv_dtype="fp8")
    assert why is not None and why.part == "speculation"
    longest = why.closest_context_len
    assert predict(Scenario.from_names(**{**base.__dict__, "context_len": longest})).spec.max_concurrency >= 1
    assert predict(Scenario.from_names(**{**base.__dict__, "context_len": longest + 1})).spec.max_concurrency == 0


def test_gpt_oss_120b_on_one_h100_is_counted_at_its_mxfp4_weights_in_the_message_and_in_predict():
    fits = predict(Scenario.from_names(gpu="H100", target="gpt-oss-120b", method="eagle3", k=4, context_len=4096, concurrency=64))
    # 116.8B parameters at 0.53 B each: 61.9 GB of an H100's 80; 8.1 GB left hold 51 sequences of 4,096
    # tokens, the 18 full-attention layers' 36 KiB per token and the 18 windowed layers' last 128 tokens
    assert fits.plain.max_concurrency == 51
    with pytest.raises(DoesNotFit) as caught:
        predict(Scenario.from_names(gpu="H100", target="gpt-oss-120b", context_len=2_000_000))
    message = str(caught.value)
    assert "weights 61.9 GB in fp4" in message and "234 GB" not in message
    longest = caught.value.closest_context_len
    assert predict(Scenario.from_names(gpu="H100", target="gpt-oss-120b", context_len=longest)).plain.max_concurrency == 1


def test_llama_8b_with_an_fp8_kv_cache_on_an_l4_offers_the_context_that_fits():
    s = Scenario.from_names(gpu="L4", target="Llama 3.1 8B", kv_dtype="fp8", context_len=60_000, k=0)
    with pytest.raises(DoesNotFit) as caught:
        predict(s)
    assert caught.value.closest_context_len == 54_016  # 3.54 GB of KV at 64 KiB per token (fp8)
    assert predict(Scenario.from_names(**{**s.__dict__, "context_len": 54_000})).plain.max_concurrency == 1


def test_the_mtp_head_of_deepseek_v3_caches_mla_latents_and_holds_its_moe_layer():
    target = presets.find_model("DeepSeek-V3")
    head = memory.draft_memory(target, "mtp", kv_dtype="bf16")
    assert head.kv_bytes_per_token == 1152  # one layer of (512 latent + 64 rotary) × 2 bytes, not 65,536
    assert 11e9 < head.weights_bytes < 13e9  # 257 experts of 3 × 7168 × 2048 at FP8, not a 1.4 GB dense FFN
    p = predict(Scenario.from_names(gpu="8x H200", target="DeepSeek-V3", method="mtp", k=1, context_len=8192, concurrency=1000))
    assert p.plain.max_concurrency == 594 and p.spec.max_concurrency >= 560  # the KV tax of one MLA layer


def test_a_gpu_written_with_a_count_sets_tensor_parallelism_or_is_refused():
    assert Scenario.from_names(gpu="8x H100 (TP=8)").tp == 8
    assert Scenario.from_names(gpu="4x A100").tp == 4
    assert Scenario.from_names(gpu="H100").tp == 1
    with pytest.raises(SpecModelError, match="says TP 8 but tp is 4"):
        Scenario.from_names(gpu="8x H100 (TP=8)", tp=4)
    one, eight = summarize(Scenario.from_names(gpu="H100", target="Llama 3.1 70B",
                                               tp=8)), summarize(Scenario.from_names(gpu="8x H100"))
    assert eight.scenario.tp == 8 and one.scenario.tp == 8


def test_bytes_per_value_are_defined_once():
    from specmodel.model import roofline

    assert roofline.BYTES_PER_VALUE is memory.BYTES_PER_VALUE
    assert not hasattr(presets, "DTYPE_BYTES") and not hasattr(presets.Model, "kv_bytes_per_token")
