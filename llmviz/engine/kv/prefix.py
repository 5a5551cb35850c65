"""Prefix sharing for the paged layout (C22; claim K9): full blocks found again by what they hold.

A full block is named by a hash of its tokens and of every token before it (the hash of the block before,
chained), so two requests whose prompts start alike name their first blocks alike. A new request's table
can then point at blocks another request already filled (their ref counts go up) and its prefill starts
after them. Only full blocks are shared, never a request's last, partial one: that one is computed (and a
shared block a truncation cuts into is copied before it is written: copy on write).
"""

from __future__ import annotations


def chain_hashes(ids, block_size: int, blocks: int) -> list[int]:
    """The hashes of the first `blocks` full blocks of `ids` (each over its tokens and the hash before)."""
    out, h = [], 0
    for j in range(blocks):
        h = hash((h, tuple(ids[j * block_size:(j + 1) * block_size])))
        out.append(h)
    return out


class PrefixIndex:
    """Block ids by chained hash, for blocks some sequence holds; forgotten when a block is freed or cut."""

    def __init__(self, block_size: int):
        self.block_size = block_size
        self.block_of: dict[int, int] = {}
        self.hash_of: dict[int, int] = {}

    def lookup(self, ids, max_blocks: int) -> list[int]:
        """The blocks holding the longest run of `ids`' first full blocks (at most max_blocks)."""
        found = []
        for h in chain_hashes(ids, self.block_size, max_blocks):
            block = self.block_of.get(h)
            if block is None:
                break
            found.append(block)
        return found

    def register(self, ids, blocks: list[int]) -> None:
        """`blocks` hold the first len(blocks) full blocks of `ids`: make them findable."""
        for h, block in zip(chain_hashes(ids, self.block_size, len(blocks)), blocks, strict=True):
            if h not in self.block_of and block not in self.hash_of:
                self.block_of[h] = block
                self.hash_of[block] = h

    def forget(self, block: int) -> None:
        h = self.hash_of.pop(block, None)
        if h is not None and self.block_of.get(h) == block:
            del self.block_of[h]
