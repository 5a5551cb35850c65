"""The memory calculator (C17) against bytes worked out by hand from the published configs in
shared/model-configs.md: Llama-3-8B (GQA) and Mistral-7B-v0.1 (a 4096-token sliding window on every layer),
Llama-2-7B (MHA) and GPT-2; every parameter count is summed here matrix by matrix, not taken from the code."""

import pytest

from llmviz.analysis.memory_calc import (
    GIB,
    MemoryQuestion,
    answer,
    bundled_names,
    bundled_text,
    fits,
    gpus,
    savings,
)
from llmviz.engine.models import config_from_text
from llmviz.errors import ConfigError, LlmvizError, ModelConfigError, UnsupportedArchitectureError


def config(name: str) -> dict:
    return config_from_text(bundled_text(name), name).to_dict()


def llama3_params() -> int:
    d, kv, f, vocab, layers = 4096, 8 * 128, 14336, 128256, 32
    block = d * d + 2 * d * kv + d * d + 3 * d * f + 2 * d  # q, k and v, o, gate/up/down, two RMSNorms
    return layers * block + d + 2 * vocab * d  # final norm, embedding and the untied head


def test_the_bundled_configs_are_the_published_ones():
    assert bundled_names() == ["gpt2", "llama-2-7b", "llama-3-8b", "mistral-7b-v0.1", "qwen2.5-7b"]
    assert llama3_params() == 8_030_261_248  # "8B"
    q = config("qwen2.5-7b")
    assert (q["num_layers"], q["num_heads"], q["num_kv_heads"], q["qkv_bias"], q["sliding_windows"]) == (
        28, 28, 4, True, [])  # use_sliding_window is false in its config
    assert config("mistral-7b-v0.1")["sliding_windows"] == [4096] * 32


def test_llama3_8b_gqa_one_8192_token_sequence_in_fp16():
    a = answer(config("llama-3-8b"), MemoryQuestion(batch=1, max_seq=8192, dtype="fp16"))
    assert a.kv_per_token == 32 * 2 * 8 * 128 * 2 == 131_072
    assert a.kv_per_sequence == 1_073_741_824  # 1 GiB, shared/model-configs.md's worked example
    assert a.weights == 2 * llama3_params() == 16_060_522_496
    assert a.total == 16_060_522_496 + 1_073_741_824
    by_name = {f.gpu: f for f in fits(a, gpus())}
    assert by_name["Tesla T4"].fits and by_name["Tesla T4"].max_batch == 1  # 17.13e9 of 17.18e9 bytes
    assert by_name["A100 80GB"].max_batch == (80 * GIB - 16_060_522_496) // 1_073_741_824 == 65
    assert not by_name["GeForce RTX 3060"].fits and by_name["GeForce RTX 3060"].max_batch == 0
    int8 = answer(config("llama-3-8b"), MemoryQuestion(max_seq=8192, kv_dtype="int8"))
    assert int8.kv_per_token == 2 * 8 * (128 * 1 + 4) * 32 == 67_584  # one fp32 scale per token and head


def test_mistral_sliding_window_layers_hold_only_their_window():
    c = config("mistral-7b-v0.1")
    a = answer(c, MemoryQuestion(max_seq=32768, dtype="fp16"))
    assert a.kv_per_sequence == 4096 * 8 * 128 * 2 * 2 * 32 == 536_870_912  # not 4 GiB
    assert a.windowed_layers == 32
    short = answer(c, MemoryQuestion(max_seq=32768, tokens=1000, layout="dynamic", dtype="fp16"))
    assert short.kv_per_sequence == 1000 * 131_072 and short.windowed_layers == 0
    paged = answer(c, MemoryQuestion(max_seq=32768, tokens=1000, layout="paged", block_size=16, dtype="fp16"))
    assert paged.kv_per_sequence == 63 * 16 * 131_072  # ceil(1000 / 16) blocks
    long_paged = answer(c, MemoryQuestion(max_seq=32768, tokens=20000, layout="paged", dtype="fp16", batch=3))
    assert long_paged.kv_total == 3 * 4096 * 131_072  # positions 15904..19999: 256 whole blocks (15904 = 994 x 16)
    unaligned = answer(c, MemoryQuestion(max_seq=32768, tokens=5000, layout="paged", dtype="fp16"))
    assert unaligned.kv_per_sequence == 257 * 16 * 131_072  # positions 904..4999 touch blocks 56..312
    ring = answer(c, MemoryQuestion(max_seq=32768, tokens=1000, dtype="fp16"))  # contiguous: a 4096-slot ring
    assert ring.kv_per_sequence == 4096 * 131_072 and ring.windowed_layers == 32


def test_what_each_move_saves_on_llama2_7b_mha():
    c = config("llama-2-7b")
    q = MemoryQuestion(batch=4, max_seq=4096, tokens=1000, dtype="fp16")
    per_token = 32 * 2 * 32 * 128 * 2  # 0.5 MiB: Llama-2-7B keeps all 32 heads
    base = answer(c, q)
    assert base.kv_total == 4 * 4096 * per_token == 8 * GIB
    saved = {s.key: s.saved for s in savings(c, q)}
    assert saved["paged"] == 4 * (4096 - 1008) * per_token
    assert saved["half_max_seq"] == 4 * 2048 * per_token
    kv_proj = 2 * 4096 * (4096 - 8 * 128) * 32  # the k and v projections shrink too
    assert saved["gqa"] == 8 * GIB * 3 // 4 + kv_proj * 2  # 8 KV heads for 32
    assert saved["kv_int8"] == 4 * 4096 * 32 * 2 * 32 * (2 * 128 - (128 + 4))
    assert "kv_fp16" not in saved and "mha" not in saved  # already fp16; already MHA
    gqa_model = {s.key: s.saved for s in savings(config("llama-3-8b"), MemoryQuestion(max_seq=8192, dtype="fp32"))}
    assert gqa_model["mha"] == -(32 - 8) * 8192 * 32 * 2 * 128 * 4 - kv_proj * 4  # 4x the KV, and larger k/v
    assert gqa_model["kv_fp16"] == 8192 * 32 * 2 * 8 * 128 * 2


def test_gpt2_weights_and_kv_in_fp32():
    a = answer(config("gpt2"), MemoryQuestion(max_seq=1024, dtype="fp32"))
    d, layers = 768, 12
    block = 4 * d * d + 3 * d + d + 2 * 4 * d * d + 4 * d + d + 2 * 2 * d  # qkv, out, MLP (+biases), 2 norms
    assert layers * block + 2 * d + (50257 + 1024) * d == 124_439_808  # GPT-2's published parameter count
    assert a.weights == 4 * 124_439_808
    assert a.kv_per_token == 12 * 2 * 12 * 64 * 4 == 73_728


@pytest.mark.parametrize("text, error, words", [
    ('{"model_type": "llama", "hidden_size": 4096}', ModelConfigError, "lacks or mistypes"),
    ("{not json", ModelConfigError, "not JSON"),
    ("[1, 2]", ModelConfigError, "JSON object"),
    ('{"model_type": "bert", "hidden_size": 768}', UnsupportedArchitectureError, "not supported"),
    ('{"model_type": "llama", "hidden_size": "big", "num_attention_heads": 32, "num_hidden_layers": 2,'
     ' "intermediate_size": 10, "vocab_size": 10}', ModelConfigError, "hidden_size"),
    ("x" * 300_000, ModelConfigError, "characters"),
    # sizes that would take the server's memory or time before any arithmetic (a window per layer, a loop per head)
    ('{"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1000000000,'
     ' "sliding_window": 4096, "intermediate_size": 10, "vocab_size": 10}', ModelConfigError, "num_hidden_layers"),
    ('{"model_type": "llama", "hidden_size": 1000000000, "num_attention_heads": 2000000000, "num_hidden_layers": 2,'
     ' "intermediate_size": 10, "vocab_size": 10}', ModelConfigError, "is not a size a model has"),
    ('{"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,'
     ' "sliding_window": -4096, "intermediate_size": 10, "vocab_size": 10}', ModelConfigError, "sliding_window"),
])
def test_a_pasted_config_that_is_not_one_gets_a_clear_message(text, error, words):
    with pytest.raises(error, match=words):
        config_from_text(text)


def test_absurd_sizes_and_impossible_settings_are_refused():
    absurd = dict(config("llama-3-8b"), num_layers=10**9)
    with pytest.raises(ModelConfigError, match="num_layers"):
        answer(absurd, MemoryQuestion())
    with pytest.raises(ConfigError, match="divide"):
        answer(config("llama-3-8b"), MemoryQuestion(kv_heads=5))
    for bad in ({"batch": 0}, {"max_seq": -1}, {"tokens": 5000, "max_seq": 4096}, {"kv_dtype": "fp4"},
                {"layout": "ring"}, {"batch": 1.5}, {"kv_heads": 0}):
        with pytest.raises(ConfigError):
            MemoryQuestion(**bad)
    assert issubclass(ConfigError, LlmvizError)


def test_the_home_models_config_is_read_without_its_weights(monkeypatch, tmp_path):
    """A hub id on the memory page fetches config.json alone (never the weights), from the cache or the hub."""
    import huggingface_hub

    from llmviz import service

    (tmp_path / "config.json").write_text(bundled_text("llama-3-8b"))
    asked = []

    def fake_snapshot(repo_id, allow_patterns=None, **kwargs):
        asked.append((repo_id, allow_patterns, kwargs.get("local_files_only", False)))
        return str(tmp_path)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    config = service.models.model_config_dict("meta-llama/Meta-Llama-3-8B")
    assert asked == [("meta-llama/Meta-Llama-3-8B", ["config.json"], True)]  # the local cache, config only
    assert (config["num_layers"], config["num_kv_heads"]) == (32, 8)
