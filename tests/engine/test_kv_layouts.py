"""KV layouts and storage dtypes (C8, C9, C11): exact against the default, bytes against what PyTorch
reports for the tensors each layout holds, truncate that frees, and the lossy dtypes' drift."""

import math

import pytest
import torch
from kv_invariants import check_block_pool

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import load_model
from llmviz.engine.phases import feed
from llmviz.engine.session import Session
from llmviz.engine.step_batch import build_step
from llmviz.errors import KVCacheFullError, KVOverflowError, TraceFormatError
from llmviz.trace.config import KV_DTYPES, KV_LAYOUTS, EngineConfig, SamplingConfig

GREEDY = SamplingConfig(temperature=0)
PROMPTS = ["The list of", "Return the value of the function"]


@pytest.fixture(scope="module")
def tiny():
    return load_model("llmviz-tiny")


def per_token_bytes(cfg, data_bytes: int, scale_bytes: int = 0) -> int:
    """By hand: layers x (K, V) x kv_heads x (head_dim elements + a scale)."""
    return cfg.num_layers * 2 * cfg.num_kv_heads * (cfg.head_dim * data_bytes + scale_bytes)


@pytest.mark.parametrize("layout", KV_LAYOUTS)
def test_bytes_are_read_from_the_tensors(tiny, layout):
    c = tiny.cfg
    cfg = EngineConfig(sampling=GREEDY, kv_layout=layout, kv_block_size=4, max_seq_len=32, stop_at_eos=False)
    session = Session(tiny, PROMPTS, cfg)
    trace = session.generate(5)
    kv, cache = trace.steps[-1].kv, session.cache
    lengths = [len(trace.row_prompt_ids(i)) + 4 for i in range(2)]
    assert kv["seq_lens"] == lengths
    one = per_token_bytes(c, 4)  # fp32: 4 layers x 2 x 8 heads x 32 x 4 B = 8,192 B
    assert one == 8192 and kv["bytes_per_token"] == one
    assert kv["bytes_used"] == sum(lengths) * one
    if layout == "contiguous":
        (storage,) = cache.storage
        assert kv["bytes_allocated"] == storage.untyped_storage().nbytes() == 2 * 32 * one
        assert kv["wasted_slots"] == 2 * 32 - sum(lengths)
    elif layout == "dynamic":
        tensors = [p for layers in cache._store_of.values() for planes in layers for p in planes]
        assert kv["bytes_allocated"] == sum(t.untyped_storage().nbytes() for t in tensors) == sum(lengths) * one
        assert kv["wasted_slots"] == 0
    else:
        (storage,) = cache.storage
        assert kv["bytes_allocated"] == storage.untyped_storage().nbytes() == kv["num_blocks"] * 4 * one
        blocks = [math.ceil(n / 4) for n in lengths]
        assert [len(t) for t in kv["block_tables"]] == blocks
        assert kv["bytes_held"] == sum(blocks) * 4 * one
        assert kv["wasted_slots"] == sum(blocks) * 4 - sum(lengths)
        assert all(b * 4 - n < 4 for b, n in zip(blocks, lengths, strict=True))  # less than one block each
        flat = sorted(b for t in kv["block_tables"] for b in t)
        assert len(flat) == len(set(flat))  # no block owned twice


@pytest.mark.parametrize("layout", KV_LAYOUTS)
def test_truncate_frees_and_replays_exactly(tiny, layout):
    """Rolling a sequence back and feeding the same tokens again gives the same logits (C9, C16)."""
    ids = tiny.tokenizer.encode("Return the value of the function")
    cache = make_kv_cache(layout, tiny.cfg, 40, block_size=4)
    cache.add(0)
    with torch.inference_mode():
        feed(tiny.model, cache, [ids], [0])
        first = [feed(tiny.model, cache, [[t]], [0]) for t in (5, 9, 11, 13, 17)]
        held = cache.bytes_allocated() if layout != "paged" else cache.slots_allocated()
        cache.truncate(0, len(ids) + 1)
        assert cache.length(0) == len(ids) + 1
        after = cache.bytes_allocated() if layout != "paged" else cache.slots_allocated()
        if layout == "contiguous":
            assert after == held  # preallocated: nothing to give back
        else:
            assert after < held  # the dynamic tensors shrink; paged blocks go back to the pool
        again = [feed(tiny.model, cache, [[t]], [0]) for t in (9, 11, 13, 17)]
    for a, b in zip(first[1:], again, strict=True):
        assert torch.equal(a, b)
    cache.free(0)
    if layout == "paged":
        assert cache.pool.free_count == cache.num_blocks


@pytest.mark.parametrize("kv_dtype,data,scale", [("fp32", 4, 0), ("fp16", 2, 0), ("bf16", 2, 0), ("fp8", 1, 4),
                                                 ("int8", 1, 4)])
@pytest.mark.parametrize("layout", KV_LAYOUTS)
def test_storage_dtype_bytes(tiny, layout, kv_dtype, data, scale):
    """fp16 = 1/2 of fp32; int8 and fp8 = 1/4 plus one fp32 scale per token and head (read from the tensors)."""
    session = Session(tiny, PROMPTS[1], EngineConfig(kv_layout=layout, kv_dtype=kv_dtype, max_seq_len=16))
    kv = session.step().kv
    n = kv["seq_len"]
    assert kv["bytes_used"] == n * per_token_bytes(tiny.cfg, data, scale)
    fp32 = n * per_token_bytes(tiny.cfg, 4)
    if kv_dtype in ("fp16", "bf16"):
        assert kv["bytes_used"] * 2 == fp32
    if kv_dtype in ("fp8", "int8"):
        assert kv["bytes_used"] == fp32 // 4 + n * tiny.cfg.num_layers * 2 * tiny.cfg.num_kv_heads * 4


def test_every_kv_dtype_name_is_a_codec_storing_what_it_says():
    from llmviz.engine.kv import KV_CODECS

    stored = {name: [p.dtype for p in KV_CODECS.get(name).planes(32)] for name in KV_DTYPES if name != "auto"}
    assert stored == {"fp32": [torch.float32], "fp16": [torch.float16], "bf16": [torch.bfloat16],
                      "fp8": [torch.float8_e4m3fn, torch.float32], "int8": [torch.int8, torch.float32]}


def test_a_row_that_feeds_nothing_writes_nothing(tiny):
    """A finished row of a padded batch: its pad slot must not land in another sequence's block."""
    cache = make_kv_cache("paged", tiny.cfg, 32, capacity=2, block_size=4)
    cache.add(0)
    cache.add(1)
    with torch.inference_mode():
        feed(tiny.model, cache, [[5, 6, 7, 8]], [0])  # block 0, full
        feed(tiny.model, cache, [[9, 10]], [1])  # block 1
        before = cache.storage[0].clone()
        feed(tiny.model, cache, [[]], [0])
    assert torch.equal(cache.storage[0], before) and cache.length(0) == 4


@pytest.mark.parametrize("kv_dtype,max_gap", [("bf16", 0.05), ("fp8", 0.3), ("int8", 0.15)])
def test_lossy_kv_dtypes_stay_close(tiny, kv_dtype, max_gap):
    """Teacher-forced on the fp32 run's tokens: logits drift a little, the greedy token rarely changes."""
    ids = tiny.tokenizer.encode("This module provides functions for working with files")
    ref_cache = make_kv_cache("contiguous", tiny.cfg, 64)
    cache = make_kv_cache("paged", tiny.cfg, 64, kv_dtype=kv_dtype, block_size=8)
    ref_cache.add(0)
    cache.add(0)
    gaps, agree = [], 0
    with torch.inference_mode():
        ref, ours = feed(tiny.model, ref_cache, [ids], [0]), feed(tiny.model, cache, [ids], [0])
        for _ in range(24):
            gaps.append((ref - ours).abs().max().item())
            agree += int(ref.argmax() == ours.argmax())
            token = [[int(ref.argmax())]]
            ref, ours = feed(tiny.model, ref_cache, token, [0]), feed(tiny.model, cache, token, [0])
    assert 0 < max(gaps) <= max_gap, gaps  # lossy (not 0), but close
    assert agree >= 22


def test_fp16_overflow_is_reported_not_stored(tiny):
    cache = make_kv_cache("contiguous", tiny.cfg, 8, kv_dtype="fp16")
    cache.add(0)
    step = build_step([[1, 2]], [0], backend="sdpa", windows={0}, device=torch.device("cpu"), seq_ids=[0])
    step.kv = cache.reserve(step)
    k = torch.zeros(1, tiny.cfg.num_kv_heads, 2, tiny.cfg.head_dim)
    cache.write(0, step, k, k)
    cache.check_overflow()  # fine
    k[0, 0, 1, 3] = 7e4  # beyond fp16's 65504
    cache.write(1, step, k, k)
    with pytest.raises(KVOverflowError, match="bf16"):
        cache.check_overflow()


def test_a_full_block_pool_is_a_typed_error_and_leaves_nothing_behind(tiny):
    cache = make_kv_cache("paged", tiny.cfg, 64, capacity=2, block_size=4, pool_blocks=3)
    cache.add(0)
    cache.add(1)
    step = build_step([[1] * 8, [2] * 8], [0, 0], backend="sdpa", windows={0}, device=torch.device("cpu"),
                      seq_ids=[0, 1])
    with pytest.raises(KVCacheFullError, match="pool is full"):
        cache.reserve(step)  # 2 + 2 blocks needed, 3 in the pool
    assert cache.pool.free_count == 3 and cache.length(0) == cache.length(1) == 0
    check_block_pool(cache.pool, cache.tables.values())


def test_the_ring_records_its_own_name_and_an_old_trace_of_one_still_loads(tiny, tmp_path):
    """Contiguous with a window shorter than max_seq is built as the ring, and its snapshots say "ring"; a trace
    of schema 2 or 3 recorded before, whose ring said "contiguous" (with "ring": true), still loads."""
    import json

    from llmviz.trace.records import load_trace

    cfg = EngineConfig(sampling=GREEDY, sliding_window=4, max_seq_len=32, stop_at_eos=False)
    session = Session(tiny, PROMPTS[1], cfg)
    trace = session.generate(3)
    assert type(session.cache).layout == "ring" and session.cache.slots == 4
    assert {s.kv["layout"] for s in trace.steps} == {"ring"} and trace.steps[-1].kv["slots_per_row"] == 4
    assert trace.steps[-1].kv["bytes_allocated"] == 4 * per_token_bytes(tiny.cfg, 4)  # 4 slots, not 32
    assert [s.kv for s in load_trace(trace.save(tmp_path / "new")).steps] == [s.kv for s in trace.steps]
    doc = json.loads((tmp_path / "new" / "trace.json").read_text())
    for schema in (2, 3):
        doc["schema_version"] = schema
        for entry in doc["steps"]:
            entry["kv"] = {**entry["kv"], "layout": "contiguous", "ring": True}
        old = tmp_path / f"schema{schema}"
        old.mkdir()
        (old / "trace.json").write_text(json.dumps(doc))
        (old / "arrays.npz").write_bytes((tmp_path / "new" / "arrays.npz").read_bytes())
        back = load_trace(old)
        assert [s.kv["layout"] for s in back.steps] == ["contiguous"] * 3 and back.output_ids == trace.output_ids
    doc["steps"][1]["kv"]["layout"] = "circular"
    (old / "trace.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=r"steps\[1\]\.kv\.layout must be one of .*'paged', 'ring'"):
        load_trace(old)
