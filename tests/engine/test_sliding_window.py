"""The sliding-window switch (C20): the window mask on any model, and a ring buffer of window + rollback
slots that keeps memory flat, against transformers' Mistral (which keeps only the last W keys)."""

import pytest
import torch
from parity import TOL, run_parity

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import load_model
from llmviz.engine.phases import feed
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, EngineConfig, SamplingConfig

GREEDY = SamplingConfig(temperature=0)


@pytest.mark.parametrize("backend", tuple(ATTN_BACKENDS))
def test_ring_buffer_matches_mistrals_own_window(model_dirs, backend):
    """The Mistral checkpoint's window is 8, shorter than the prompt: our ring of 8 slots gives its logits."""
    lm = load_model(str(model_dirs["mistral"]))
    cache = make_kv_cache("contiguous", lm.cfg, 64, window=8)
    assert type(cache).__name__ == "RingKVCache" and cache.slots == 8
    diffs = run_parity(model_dirs["mistral"], backend, lm=lm, window=8)
    assert max(diffs) <= TOL, diffs


@pytest.fixture(scope="module")
def tiny():
    return load_model("llmviz-tiny")


def test_every_layout_applies_the_window_and_only_the_ring_stays_flat(tiny):
    prompts = ["The list of values in the module is", "Return"]
    runs = {}
    for layout in KV_LAYOUTS:
        cfg = EngineConfig(sampling=GREEDY, stop_at_eos=False, sliding_window=4, kv_layout=layout, max_seq_len=64,
                           kv_block_size=4)
        runs[layout] = Session(tiny, prompts, cfg).generate(16)
    alone = [Session(tiny, p, EngineConfig(sampling=GREEDY, stop_at_eos=False, sliding_window=4)).generate(16)
             for p in prompts]
    no_window = Session(tiny, prompts[0], EngineConfig(sampling=GREEDY, stop_at_eos=False)).generate(16)
    assert alone[0].output_ids != no_window.output_ids  # the window changes what the model says
    for trace in runs.values():
        assert [trace.row_output_ids(i) for i in range(2)] == [a.output_ids for a in alone]
    per_token = 8192  # the embedded model, fp32
    ring = [s.kv for s in runs["contiguous"].steps]
    assert {kv["bytes_allocated"] for kv in ring} == {2 * 4 * per_token}  # flat: 2 rows x 4 slots
    assert ring[-1]["bytes_used"] == 2 * 4 * per_token and ring[-1]["seq_lens"][0] > 20
    dynamic = runs["dynamic"].steps[-1].kv
    assert dynamic["bytes_used"] == sum(dynamic["seq_lens"]) * per_token > 4 * ring[-1]["bytes_used"]  # keeps all


def test_ring_rollback_within_its_slots_replays_exactly(tiny):
    ids = tiny.tokenizer.encode("Return the value of the function")
    cache = make_kv_cache("contiguous", tiny.cfg, 64, window=4, rollback=2)
    cache.add(0)
    with torch.inference_mode():
        feed(tiny.model, cache, [ids], [0], window=4)
        first = [feed(tiny.model, cache, [[t]], [0], window=4) for t in (5, 9, 11, 13)]
        cache.truncate(0, cache.length(0) - 3)  # rollback 2, plus the one token a decode step may always take back
        again = [feed(tiny.model, cache, [[t]], [0], window=4) for t in (9, 11, 13)]
        assert all(torch.equal(a, b) for a, b in zip(first[1:], again, strict=True))
        with pytest.raises(ConfigError, match="no longer holds"):
            cache.truncate(0, cache.length(0) - 4)
        cache.truncate(0, 0)  # back to nothing is always possible


@pytest.mark.parametrize("value", [0, -3, 2**63, 2**64, True, 4.0])
def test_a_window_must_be_positive(value):
    """>= 2**63 no int64 position comparison holds: an OverflowError in the mask, now a ConfigError."""
    with pytest.raises(ConfigError, match="sliding_window"):
        EngineConfig(sliding_window=value)


def test_a_window_beyond_the_context_is_the_same_as_none(tiny):
    """Allowed up to 2**63 - 1: every cached key is inside it, so the tokens are those of no window."""
    from llmviz.trace.switches import parse_spec

    plain = Session(tiny, "The list of", EngineConfig(sampling=GREEDY)).generate(6).output_ids
    for layout in KV_LAYOUTS:
        wide = EngineConfig(sampling=GREEDY, sliding_window=2**63 - 1, kv_rollback=10**12, kv_layout=layout)
        assert Session(tiny, "The list of", wide).generate(6).output_ids == plain, layout
    with pytest.raises(ConfigError, match="sliding_window"):  # the switch spec of Compare and the Decode page
        EngineConfig(**parse_spec(f"sliding-window={2**64}"))


@pytest.mark.parametrize("seed", range(4))
def test_ring_under_random_feeds_and_truncates_matches_a_cache_that_keeps_everything(tiny, seed):
    """Truncates one after another, and after regrowth: the ring either gives the dynamic cache's logits
    (same window mask) or refuses the rollback; it never reads a key it overwrote."""
    import random

    rng = random.Random(seed)
    window, rollback = rng.randint(2, 6), rng.randint(0, 3)
    ring = make_kv_cache("contiguous", tiny.cfg, 120, window=window, rollback=rollback)
    full = make_kv_cache("dynamic", tiny.cfg, 120)
    ring.add(0)
    full.add(0)
    refused = 0
    with torch.inference_mode():
        for _ in range(30):
            length = ring.length(0)
            if rng.random() < 0.35 and length:
                n = max(length - rng.randint(1, rollback + 2), 0)
                try:
                    ring.truncate(0, n)
                except ConfigError:
                    refused += 1
                    continue
                full.truncate(0, n)
                continue
            tokens = [rng.randrange(5, 4000) for _ in range(rng.choice([1, 1, 1, rng.randint(2, 9)]))]
            if length + len(tokens) > 120:
                break
            a = feed(tiny.model, ring, [tokens], [0], window=window, last_only=False)
            b = feed(tiny.model, full, [tokens], [0], window=window, last_only=False)
            assert (a - b).abs().max() <= 1e-4, (seed, length, len(tokens))
    assert ring.bytes_allocated() == ring.slots * 8192


def test_two_rollbacks_in_a_row_are_refused_when_the_ring_overwrote_the_keys(tiny):
    ring = make_kv_cache("contiguous", tiny.cfg, 64, window=2)
    ring.add(0)
    with torch.inference_mode():
        feed(tiny.model, ring, [list(range(5, 21))], [0], window=2)  # 16 tokens, 2 slots
    ring.truncate(0, 15)  # slot of 14 still holds 14: the next query (15) needs only it
    with pytest.raises(ConfigError, match="no longer holds"):
        ring.truncate(0, 14)  # 13's slot holds 15 now


def test_fp16_overflow_is_caught_in_the_ring_too(tiny):
    from llmviz.engine.step_batch import build_step
    from llmviz.errors import KVOverflowError

    ring = make_kv_cache("contiguous", tiny.cfg, 64, window=4, kv_dtype="fp16")
    ring.add(0)
    step = build_step([[1, 2]], [0], backend="sdpa", windows=(4,) * 4, device=torch.device("cpu"), seq_ids=[0])
    step.kv = ring.reserve(step)
    k = torch.zeros(1, tiny.cfg.num_kv_heads, 2, tiny.cfg.head_dim)
    k[0, 1, 0, 5] = 1e5
    ring.write(0, step, k, k)
    with pytest.raises(KVOverflowError):
        ring.check_overflow()


@pytest.mark.parametrize("window", [1, 2, 5, 9, 40])
def test_the_lessons_window_rule_is_the_engines_mask(window):
    """trace/sparsity.window_allows (what the lesson draws, in numpy) against the mask the engine builds for a step
    (engine/step_batch.step_mask): a prompt from 0 and a shorter row from position 3 in one padded batch; a window of
    one (each query sees itself), one inside the rows, one as long as the longest row, one beyond it (no window)."""
    import numpy as np

    from llmviz.engine.step_batch import build_step, step_mask
    from llmviz.trace.sparsity import window_allows

    rows, starts = [[5] * 9, [6] * 4], [0, 3]
    step = build_step(rows, starts, backend="eager", windows=(window,), device=torch.device("cpu"))
    mask = step_mask(step, window).mask[:, 0].numpy()  # [b, n, n_k]
    keys = np.arange(mask.shape[-1])
    for i, (row, start) in enumerate(zip(rows, starts, strict=True)):
        queries = np.arange(start, start + len(row))
        by_hand = np.array([[0 <= q - k < window for k in keys] for q in queries])  # [len(row), n_k]: loops
        assert (mask[i, : len(row)] == by_hand).all(), (window, i)  # the engine's mask
        assert (window_allows(queries[:, None], keys[None, :], window) == by_hand).all()  # the lesson's numpy
