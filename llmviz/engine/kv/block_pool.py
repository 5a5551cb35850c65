"""BlockPool: fixed-size KV blocks handed out from a free list, with reference counts (C9, C22).

The paged layout asks the pool for a block whenever a sequence's last block is full, and gives blocks
back on truncate and free. A block may be shared (prefix sharing raises its count); it returns to the
free list only when its count reaches zero. The pool holds ids only; the tensors live in the layout.
"""

from __future__ import annotations

import random
from collections import deque

from llmviz.errors import ConfigError, KVCacheFullError


class BlockPool:
    def __init__(self, num_blocks: int, fixes: str = "raise kv_pool_blocks (--kv-pool-blocks), use a shorter "
                 "max_seq_len, or run fewer sequences"):
        if num_blocks <= 0:
            raise ConfigError(f"a block pool needs at least one block, got {num_blocks}")
        self.num_blocks, self.fixes = num_blocks, fixes  # fixes: what to do when it runs dry
        self._free = deque(range(num_blocks))
        self.refs = [0] * num_blocks

    @property
    def free_count(self) -> int:
        return len(self._free)

    @property
    def free_blocks(self) -> tuple[int, ...]:
        """The free list, in the order it hands blocks out."""
        return tuple(self._free)

    @property
    def used_count(self) -> int:
        return self.num_blocks - len(self._free)

    def scatter(self, seed: int) -> None:
        """Hand the free blocks out in a seeded random order instead of 0, 1, 2, ...: the same blocks, scattered
        through the pool, as a long-running server's pool ends up (the locality sweep, C12)."""
        order = list(self._free)
        random.Random(seed).shuffle(order)
        self._free = deque(order)

    def allocate(self) -> int:
        if not self._free:
            raise KVCacheFullError(f"the KV block pool is full ({self.num_blocks} blocks in use): {self.fixes}")
        block = self._free.popleft()
        self.refs[block] = 1
        return block

    def share(self, block: int) -> None:
        """One more owner of a block in use."""
        if self.refs[block] <= 0:
            raise ConfigError(f"block {block} is free: it cannot be shared")
        self.refs[block] += 1

    def release(self, block: int) -> None:
        if self.refs[block] <= 0:
            raise ConfigError(f"block {block} is released more often than it was taken")
        self.refs[block] -= 1
        if self.refs[block] == 0:
            self._free.append(block)
