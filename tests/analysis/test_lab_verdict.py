"""The predicted-vs-measured verdict (C7, C11) on hand-made results: which message, with which cause."""

from llmviz.analysis.lab import gap_text, verdict
from llmviz.trace.config import EngineConfig

GPT2 = {"vocab_size": 50257, "hidden_size": 768, "num_layers": 12, "num_heads": 12, "num_kv_heads": 12,
        "head_dim": 64, "intermediate_size": 3072, "max_position_embeddings": 1024, "mlp": "plain", "norm": "layer",
        "position": "learned", "qkv_bias": True, "out_bias": True, "mlp_bias": True, "tie_embeddings": True}


def side(decode_ms: float, weight_bytes: int, **changes) -> dict:
    return {"engine_config": EngineConfig(**changes).to_dict(), "kv": {"max_seq": 1024}, "model_config": GPT2,
            "weight_bytes": weight_bytes, "kv_bytes_used": 0, "kv_bytes_held": 0,
            "decode_ms_per_token": {"median": decode_ms}}


def result(a: dict, b: dict, noise: bool | None = False) -> dict:
    return {"a": a, "b": b, "bandwidth": {"gb_per_s": 25.0}, "prompt_tokens": 4, "steps": 16,
            "within_noise": {"prefill_ms": noise, "decode_ms_per_token": noise}}


def test_noise_on_a_small_model_names_the_overhead():
    key, values = verdict(result(side(3.0, 17_000_000), side(3.1, 17_000_000, kv_dtype="fp16"), noise=True))
    assert (key, values["hint"]) == ("gap.noise", "gap.noise.small")
    key, values = verdict(result(side(33.0, 500_000_000), side(33.5, 500_000_000, kv_dtype="fp16"), noise=True))
    assert (key, values["hint"]) == ("gap.noise", "")


def test_as_predicted_and_slower_with_its_cause():
    # kv-dtype=fp16 at 20 cached tokens: the bytes read per token barely move (the weights dominate)
    key, values = verdict(result(side(33.0, 500_000_000), side(34.0, 500_000_000, kv_dtype="fp16")))
    assert key == "gap.as_predicted" and abs(values["predicted"] - 1) < 0.01
    key, values = verdict(result(side(33.0, 500_000_000), side(45.0, 500_000_000, kv_dtype="int8")))
    assert (key, values["hint"]) == ("gap.slower", "gap.slower.kv-dtype")
    assert abs(values["measured"] - 45 / 33) < 1e-9
    text = gap_text(lambda k, **v: k, result(side(33.0, 1), side(45.0, 1, kv_dtype="int8")))
    assert text == "gap.slower gap.slower.kv-dtype"
