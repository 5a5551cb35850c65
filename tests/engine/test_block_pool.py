"""The paged layout's block pool under random operations (C9): no block owned twice, counts never
negative, a freed block reusable, nothing leaked after truncate and free."""

import random

import pytest
import torch
from kv_invariants import check_block_pool

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.kv.block_pool import BlockPool
from llmviz.engine.step_batch import build_step
from llmviz.errors import ConfigError, KVCacheFullError
from llmviz.trace.model_config import ModelConfig

CFG = ModelConfig(family="llama", vocab_size=32, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=2,
                  head_dim=8, intermediate_size=32, max_position_embeddings=256)


def test_pool_counts_and_reuse():
    pool = BlockPool(3)
    a, b = pool.allocate(), pool.allocate()
    pool.share(a)
    pool.release(a)
    assert pool.refs[a] == 1 and pool.free_count == 1
    pool.release(a)
    pool.release(b)
    assert pool.free_count == 3
    with pytest.raises(ConfigError):
        pool.release(a)  # never below zero
    with pytest.raises(ConfigError):
        pool.share(b)  # a free block has no owner to share with
    assert {pool.allocate() for _ in range(3)} == {0, 1, 2}  # freed blocks come back
    with pytest.raises(KVCacheFullError):
        pool.allocate()


def test_the_invariants_catch_a_pool_that_disagrees_with_its_tables():
    """check_block_pool (tests/support) can fail: a count off by one, a block neither held nor free."""
    pool = BlockPool(4)
    a, b = pool.allocate(), pool.allocate()
    check_block_pool(pool, [[a], [b]])
    with pytest.raises(AssertionError, match=f"block {a}: count 1, held 2"):
        check_block_pool(pool, [[a], [a, b]])  # a table shares a block the pool counts once
    pool.refs[b] = 0  # a count dropped without the block going back
    with pytest.raises(AssertionError, match=f"block {b}"):
        check_block_pool(pool, [[a]])


@pytest.mark.parametrize("seed", range(5))
def test_random_paged_cache_operations_keep_the_invariants(seed):
    rng = random.Random(seed)
    cache = make_kv_cache("paged", CFG, 48, capacity=6, block_size=4, pool_blocks=40)
    live: list[int] = []
    next_id = 0
    k = torch.zeros(1, 2, 8, 8)
    for _ in range(300):
        op = rng.random()
        if op < 0.2 and len(live) < 6:
            cache.add(next_id)
            live.append(next_id)
            next_id += 1
        elif op < 0.6 and live:
            seq = rng.choice(live)
            n = rng.randint(1, 8)
            step = build_step([[1] * n], [cache.length(seq)], backend="sdpa", windows={0},
                              device=torch.device("cpu"), seq_ids=[seq])
            try:
                step.kv = cache.reserve(step)
            except KVCacheFullError:
                pass  # max_seq or the pool reached: nothing may have changed
            else:
                cache.write(0, step, k[:, :, :n], k[:, :, :n])
        elif op < 0.85 and live:
            seq = rng.choice(live)
            cache.truncate(seq, rng.randint(0, cache.length(seq)))
        elif live:
            seq = live.pop(rng.randrange(len(live)))
            cache.free(seq)
        check_block_pool(cache.pool, cache.tables.values())
        for seq in live:
            assert len(cache.tables[seq]) == -(-cache.length(seq) // 4)  # exactly the blocks its length needs
    for seq in live:
        cache.free(seq)
    assert cache.pool.free_count == cache.num_blocks  # no leak
    check_block_pool(cache.pool, [])


def test_prefix_blocks_are_shared_and_copied_on_write(model_dirs):
    """Two sequences with the same first 8 tokens share 2 full blocks of 4; truncating one into a shared block
    copies that block first, so the other still reads its own keys (C22)."""
    import torch

    from llmviz.engine.kv import make_kv_cache
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.phases import feed

    lm = load_model(str(model_dirs["llama_gqa_rope3"]), device="cpu")
    cache = make_kv_cache("paged", lm.cfg, 32, capacity=2, block_size=4)
    cache.enable_prefix_sharing()
    ids_a, ids_b = list(range(10, 20)), [*range(10, 18), 40, 41, 42]
    with torch.inference_mode():
        cache.add(0)
        feed(lm.model, cache, [ids_a], [0])
        cache.register_prefix(0, ids_a)
        cache.add(1)
        assert cache.share_prefix(1, ids_b) == 8 and cache.tables[1] == cache.tables[0][:2]
        feed(lm.model, cache, [ids_b[8:]], [1])
    check_block_pool(cache.pool, cache.tables.values())
    assert cache.shared_blocks == 2
    before = cache.storage[0][:, :, :, cache.tables[0][1]].clone()
    cache.truncate(1, 6)  # into the second shared block
    assert cache.tables[1][0] == cache.tables[0][0] and cache.tables[1][1] != cache.tables[0][1]
    assert torch.equal(cache.storage[0][:, :, :, cache.tables[1][1]], before)  # the copy
    check_block_pool(cache.pool, cache.tables.values())
    assert cache.shared_blocks == 1
    with torch.inference_mode():
        feed(lm.model, cache, [[77, 78]], [1])  # writes into the copy only
    assert torch.equal(cache.storage[0][:, :, :, cache.tables[0][1]], before)
    assert cache.share_prefix(0, ids_a) == 10  # a sequence with cached tokens is left as it is
