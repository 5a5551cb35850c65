"""Invariants of the KV caches' bookkeeping, checked by the tests (not by the engine, which trusts its own code).

check_block_pool: the paged layout's pool against the block tables that hold its blocks (C9, C22).
"""

from __future__ import annotations


def check_block_pool(pool, tables) -> None:
    """Every block's count equals the number of tables holding it, counts are never negative, and a block is on
    the free list (once) exactly when its count is 0."""
    held = [0] * pool.num_blocks
    for table in tables:
        for block in table:
            held[block] += 1
    free = pool.free_blocks
    assert len(free) == len(set(free)), "a block is on the free list twice"
    for block in range(pool.num_blocks):
        assert pool.refs[block] >= 0, f"block {block} has a negative count"
        assert pool.refs[block] == held[block], f"block {block}: count {pool.refs[block]}, held {held[block]}"
        assert (block in free) == (pool.refs[block] == 0), f"block {block}: free list and count disagree"
