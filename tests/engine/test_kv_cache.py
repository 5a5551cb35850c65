"""KV cache bytes: C4's formula, and the same figure read from the allocated tensors (C4, C6, C8, C11)."""

import pytest
import torch

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.engine.step_batch import build_step
from llmviz.errors import CaptureTooLargeError, KVCacheFullError, KVCacheTooLargeError
from llmviz.trace.config import EngineConfig, SamplingConfig


@pytest.mark.parametrize("kv_dtype,elem", [("auto", 4), ("fp16", 2), ("bf16", 2)])
def test_bytes_used_follow_the_formula_and_the_tensors(model_dirs, kv_dtype, elem):
    lm = load_model(str(model_dirs["qwen2"]))
    c = lm.cfg
    cfg = EngineConfig(kv_dtype=kv_dtype, max_seq_len=64, sampling=SamplingConfig(temperature=0), stop_at_eos=False)
    session = Session(lm, "The quick brown fox", cfg)
    n = len(session.sequences[0].ids)
    for t in range(4):
        step = session.step()
        tokens = n + t
        formula = tokens * c.num_kv_heads * c.head_dim * 2 * elem * c.num_layers
        assert step.kv["bytes_used"] == formula
        assert step.kv["seq_len"] == tokens
    (storage,) = session.cache.storage  # one plane: [L, 2, rows, kv, max_seq, hd]
    assert step.kv["bytes_allocated"] == storage.untyped_storage().nbytes()
    assert step.kv["bytes_allocated"] == 64 * c.num_kv_heads * c.head_dim * 2 * elem * c.num_layers
    # the rows in use hold what was written; the rest of the preallocated block is still zero (C8)
    assert storage[:, :, :, :, :tokens].abs().sum() > 0
    assert storage[:, :, :, :, tokens:].abs().sum() == 0


def test_cache_rows_are_the_recorded_k_and_v(model_dirs):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    session = Session(lm, "The quick brown fox", EngineConfig(capture="full", max_seq_len=32))
    step = session.step()
    k = step.hook("layers.1.k").array  # [1, kv, n, hd]
    stored = session.cache.storage[0][1, 0, :, :, : k.shape[2]].numpy()
    assert abs(stored - k).max() == 0
    written = step.hook("kv.write").array  # [L, 2, b, kv, n, hd]
    assert written.shape[:2] == (lm.cfg.num_layers, 2) and abs(written[1, 0] - k).max() == 0


def test_refuses_a_cache_that_does_not_fit(model_dirs, monkeypatch):
    import llmviz.engine.platform.memory as memory

    lm = load_model(str(model_dirs["gpt2"]))
    monkeypatch.setattr(memory, "free_bytes", lambda device: 1000)  # a device with 1000 bytes free
    with pytest.raises(KVCacheTooLargeError, match="shorter max_seq_len"):
        Session(lm, "The quick brown fox", EngineConfig(max_seq_len=128))


def test_write_past_the_end_is_refused(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]))
    cache = make_kv_cache("contiguous", lm.cfg, 4)
    cache.add(0)
    step = build_step([[1] * 5], [0], backend="sdpa", windows={0}, device=torch.device("cpu"), seq_ids=[0])
    with pytest.raises(KVCacheFullError, match="holds 4 tokens"):
        cache.reserve(step)
    assert cache.length(0) == 0


def test_session_stops_when_the_cache_is_full(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]))
    n = len(lm.tokenizer.encode("The quick brown fox"))
    session = Session(lm, "The quick brown fox", EngineConfig(max_seq_len=n + 5, stop_at_eos=False))
    trace = session.generate(100)
    assert len(trace.steps) == 6  # the prefill, then one decode per free slot, the last token not cached
    assert session.finished == "max_seq_len" and session.cache.length(0) == n + 5


def test_full_capture_of_a_long_prefill_is_checked_before_it_runs(model_dirs, monkeypatch):
    import llmviz.engine.platform.memory as memory

    lm = load_model(str(model_dirs["gpt2"]))
    prompt = "word " * 40
    n = len(lm.tokenizer.encode(prompt))
    maps = 2 * lm.cfg.num_layers * lm.cfg.num_heads * n * n * 4  # fp32 scores and probs of every layer
    monkeypatch.setattr(memory, "free_bytes", lambda device: int(maps * 1.1))  # room for the cache, not the maps
    with pytest.raises(CaptureTooLargeError, match="attention maps"):
        Session(lm, prompt, EngineConfig(capture="full", max_seq_len=200))
    Session(lm, prompt, EngineConfig(capture="full", capture_filter=("layers.*.q",), max_seq_len=200))
    Session(lm, prompt, EngineConfig(capture="meta", max_seq_len=200))
