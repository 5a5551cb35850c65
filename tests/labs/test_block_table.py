"""vLLM's block table drawn from the engine (llmviz/labs/block_table.py, the block_tables slip, C9): the tables
the engine's paged cache reports against the allocator worked by hand (rows in order each step, each taking the next
free block when its last one is full), and a block's text cut at whole characters."""

import itertools
import math

from llmviz.analysis import tokens as tk
from llmviz.engine.loading.model import load_model
from llmviz.labs.block_table import PROMPTS, STEPS, block_text, two_requests


def by_hand(prompt_lengths: list[int], block: int, steps: int) -> list[list[int]]:
    """The prefill takes each row's blocks in row order; each decode step writes one token per row, in row order,
    a row taking the next free block when its position starts a block."""
    tables, free = [], iter(range(10_000))
    for n in prompt_lengths:
        tables.append([next(free) for _ in range(math.ceil(n / block))])
    lengths = list(prompt_lengths)
    for _ in range(steps - 1):  # the first step is the prefill
        for i in range(len(lengths)):
            if lengths[i] % block == 0:
                tables[i].append(next(free))
            lengths[i] += 1
    return tables


def test_the_engines_tables_are_the_allocator_by_hand():
    lm = load_model(None, "cpu")
    got = two_requests(lm)
    lengths = [len(lm.tokenizer.encode(p)) for p in PROMPTS]
    assert got["lengths"] == [n + STEPS - 1 for n in lengths]
    assert got["tables"] == by_hand(lengths, got["block"], STEPS)
    a, b = got["tables"]
    assert sorted(a + b) == list(range(len(a) + len(b)))  # no block twice, none skipped
    assert any(y - x > 1 for x, y in itertools.pairwise(a))  # the other request's blocks lie between
    assert [len(t) for t in got["texts"]] == [len(a), len(b)]


def test_a_blocks_text_is_cut_at_whole_characters():
    pieces = ["济".encode()[:2], "济".encode()[2:], "南".encode(), "的".encode()[:1], "的".encode()[1:]]
    assert len(tk.group_by_character(pieces)) == 3
    assert block_text(pieces, 0, 2) == "济"  # its last byte token in this block
    assert block_text(pieces, 2, 4) == "南…"  # 的 begins here and ends in the next block
    assert block_text(pieces, 4, 5) == "的"
