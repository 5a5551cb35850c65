"""Block-sparse attention (C20): which keys a query may see, as one rule for the engine (torch tensors)
and the pages (numpy arrays, plain ints).

The sequence is cut into blocks of `block` positions. A query in block qb sees a key in block kb (never one after
it: the rule is causal) when kb is one of its `local` nearest blocks (qb - kb < local, its own block included) or
one of the first `global_blocks` blocks, which every query sees (the "global" tokens of Longformer/BigBird-style
patterns). The article's 局部注意力 (local attention) is the sliding window, a separate switch; this is its 块稀疏
(blockwise) pattern. With local blocks covering the whole context, the mask is the plain causal one.
No torch here: the operators work on ints, numpy arrays and torch tensors alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.errors import ConfigError

MAX_BLOCK = 4096


@dataclass(frozen=True)
class BlockSparse:
    block: int  # positions per block
    local: int = 2  # blocks back a query sees, its own included
    global_blocks: int = 1  # leading blocks every query sees

    def __post_init__(self):
        for name, low, high in (("block", 1, MAX_BLOCK), ("local", 1, 1 << 20), ("global_blocks", 0, 1 << 20)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(f"block-sparse {name} must be a whole number in {low}..{high:,}, got {value!r}")

    def allows(self, query_pos, key_pos):
        """True where a query at query_pos may attend to a key at key_pos (broadcasting like the arrays given)."""
        qb, kb = query_pos // self.block, key_pos // self.block
        return (key_pos <= query_pos) & ((qb - kb < self.local) | (kb < self.global_blocks))

    def describe(self) -> str:
        return (f"block-sparse: blocks of {self.block}, the {self.local} nearest and the first "
                f"{self.global_blocks} visible")


def window_allows(query_pos, key_pos, window: int):
    """The sliding window (C20, the article's 局部注意力): a query sees the `window` latest positions up to its own
    (causal); 0 = no window, every earlier position. On numpy arrays or torch tensors alike: the engine's mask
    (engine/step_batch.step_mask) and the lesson's drawing read this one rule."""
    diff = query_pos - key_pos
    return (diff >= 0) & (diff < window) if window else diff >= 0

