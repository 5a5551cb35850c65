"""Logit parity with the transformers oracle on the same safetensors folder (C3, C5).

fp32, max |Δlogits| <= 1e-4 at the prefill and at each of 16 decode steps, teacher-forced on the
oracle's greedy tokens (random models have near-ties, so logits are compared, not only tokens).
"""

import pytest
import torch
from parity import DECODE_STEPS, HALF_TOL, PROMPT, TOL, run_parity, teacher_forced

from llmviz.engine.loading.model import load_model
from llmviz.trace.config import ATTN_BACKENDS


@pytest.mark.parametrize("backend", tuple(ATTN_BACKENDS))  # every declared choice, as the registry holds them
@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "llama_tied", "qwen2", "mistral", "gpt2"])
def test_random_models_match_oracle(model_dirs, kind, backend):
    diffs = run_parity(model_dirs[kind], backend)
    assert len(diffs) == 1 + DECODE_STEPS
    assert max(diffs) <= TOL, f"{kind}/{backend}: per-step max |Δlogits| {diffs}"


@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "mistral", "gpt2"])
def test_eager_a_head_at_a_time_matches_oracle(model_dirs, kind, monkeypatch):
    """A long CPU prompt's eager scores go a few heads at a time (EAGER_CHUNK_BYTES); at a budget of one byte every
    step goes one head at a time (GQA's shared KV heads, Mistral's window mask, GPT-2's biases) and must still
    match the oracle, prefill and decode."""
    from llmviz.engine.models import attention

    calls = []
    attend = attention._attend
    monkeypatch.setattr(attention, "EAGER_CHUNK_BYTES", 1)
    monkeypatch.setattr(attention, "_attend", lambda q, *rest: calls.append(q.shape[1]) or attend(q, *rest))
    diffs = run_parity(model_dirs[kind], "eager")
    assert calls and set(calls) == {1}, calls  # every layer of every step, one head per chunk
    assert max(diffs) <= TOL, f"{kind}: per-step max |Δlogits| {diffs}"


def test_embedded_model_matches_oracle():
    from llmviz.engine.loading.model import ASSETS, EMBEDDED_MODEL

    for backend in ATTN_BACKENDS:
        diffs = run_parity(ASSETS / EMBEDDED_MODEL, backend, prompt="Return the list of the values in the module")
        assert max(diffs) <= TOL, f"embedded/{backend}: {diffs}"


def test_mistral_window_is_shorter_than_the_run(model_dirs):
    lm = load_model(str(model_dirs["mistral"]))
    n = len(lm.tokenizer.encode(PROMPT))
    assert lm.cfg.window(0) == 8 < n  # so the sliding-window path is really exercised (C20)


def test_llama3_rope_scaling_changes_frequencies(model_dirs):
    from llmviz.engine.models.layers import rope_inv_freq
    from llmviz.trace.model_config import ModelConfig

    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    assert lm.cfg.rope_scaling["rope_type"] == "llama3"
    plain = ModelConfig(**{**lm.cfg.to_dict(), "rope_scaling": {}, "sliding_windows": (), "eos_token_ids": ()})
    assert not torch.allclose(rope_inv_freq(lm.cfg), rope_inv_freq(plain))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_matches_transformers_in_the_same_dtype(dtype):
    """Within a few roundings of the dtype (HALF_TOL, reasoned in tests/support/parity.py), top-1 at >= 95%."""
    from llmviz.engine.loading.model import ASSETS, EMBEDDED_MODEL

    diffs, agreement = teacher_forced(ASSETS / EMBEDDED_MODEL, "sdpa", dtype=dtype, steps=64,
                                      prompt="Return the value of the function and the list of its arguments")
    assert agreement >= 0.95, (dtype, agreement)
    assert max(diffs) <= HALF_TOL[dtype], (dtype, max(diffs))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_stays_close_to_fp32(dtype):
    """fp16 / bf16 weights and KV cache (C11): same shapes, logits within a half-precision tolerance."""
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig, SamplingConfig

    greedy = SamplingConfig(temperature=0)
    full = Session(load_model("llmviz-tiny", dtype="fp32"), PROMPT, EngineConfig(sampling=greedy))
    half = Session(load_model("llmviz-tiny", dtype=dtype), PROMPT, EngineConfig(dtype=dtype, sampling=greedy))
    a, b = full.step(), half.step()
    assert b.kv["dtype"] == {"fp16": "float16", "bf16": "bfloat16"}[dtype] and b.kv["element_bytes"] == 2
    assert b.kv["bytes_used"] * 2 == a.kv["bytes_used"]  # the cache is half the bytes
    scale = abs(a.logits).max()
    assert abs(a.logits - b.logits).max() < 0.05 * scale
    assert a.topk_ids[0, 0] == b.topk_ids[0, 0]


@pytest.mark.parametrize("layout", ["dynamic", "paged"])
@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "llama_tied", "qwen2", "mistral", "gpt2"])
def test_every_layout_matches_the_oracle(model_dirs, kind, layout):
    """Layouts are exact switches (C8, C9): the same logits as transformers, through block tables too."""
    diffs = run_parity(model_dirs[kind], "sdpa", layout=layout)
    assert max(diffs) <= TOL, f"{kind}/{layout}: per-step max |Δlogits| {diffs}"
