"""Prefix sharing for the paged layout (C22; claim K9): full blocks found again by what they hold.

A full block is named by its tokens and the name of the block before it (chained, so a name stands for
every token from position 0 to the block's end), so two requests whose prompts start alike name their
first blocks alike. Names are compared exactly (a dict of nested tuples: a hash collision cannot share
the wrong block), and sharing always starts at block 0, so a shared block holds the same tokens at the
same positions. A new request's table
can then point at blocks another request already filled (their ref counts go up) and its prefill starts
after them. Only full blocks are shared, never a request's last, partial one: that one is computed (and a
shared block a truncation cuts into is copied before it is written: copy on write).
"""

from __future__ import annotations


def chain_keys(ids, block_size: int, blocks: int) -> list[tuple]:
    """The names of the first `blocks` full blocks of `ids`: (the name before, this block's tokens)."""
    out, key = [], None
    for j in range(blocks):
        key = (key, tuple(ids[j * block_size:(j + 1) * block_size]))
        out.append(key)
    return out


class PrefixIndex:
    """Block ids by chained name, for blocks some sequence holds; forgotten when a block is freed or cut."""

    def __init__(self, block_size: int):
        self.block_size = block_size
        self.block_of: dict[tuple, int] = {}
        self.key_of: dict[int, tuple] = {}

    def lookup(self, ids, max_blocks: int) -> list[int]:
        """The blocks holding the longest run of `ids`' first full blocks (at most max_blocks)."""
        found = []
        for key in chain_keys(ids, self.block_size, max_blocks):
            block = self.block_of.get(key)
            if block is None:
                break
            found.append(block)
        return found

    def register(self, ids, blocks: list[int]) -> None:
        """`blocks` hold the first len(blocks) full blocks of `ids`: make them findable."""
        for key, block in zip(chain_keys(ids, self.block_size, len(blocks)), blocks, strict=True):
            if key not in self.block_of and block not in self.key_of:
                self.block_of[key] = block
                self.key_of[block] = key

    def forget(self, block: int) -> None:
        key = self.key_of.pop(block, None)
        if key is not None and self.block_of.get(key) == block:
            del self.block_of[key]
