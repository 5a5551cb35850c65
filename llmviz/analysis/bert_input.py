"""BERT's input, shaped as bert-base-chinese shapes it (C2; §1.1's segment ids): each position's vector is its token's
row plus its position's row plus its segment's row, before BERT's LayerNorm. The tables here are random (seeded,
BERT's init scale), of BERT's shapes: no BERT weights are shipped; what is real is the sum and the shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmviz.analysis.article import BERT_VOCAB

BERT_WIDTH, BERT_POSITIONS, BERT_SEGMENTS = 768, 512, 2  # bert-base-chinese's hidden size and table lengths
INIT_STD = 0.02  # BERT's initializer range


@dataclass(frozen=True)
class BertInput:
    token_ids: list[int]  # each token's row in the random token table (distinct tokens, numbered in order)
    token_rows: np.ndarray  # [n, 768]
    position_rows: np.ndarray  # [n, 768]
    segment_rows: np.ndarray  # [n, 768]

    @property
    def summed(self) -> np.ndarray:
        """[n, 768]: what BERT's encoder receives before its LayerNorm."""
        return self.token_rows + self.position_rows + self.segment_rows

    @property
    def shapes(self) -> dict[str, tuple[int, int]]:
        return {"token": (BERT_VOCAB, BERT_WIDTH), "position": (BERT_POSITIONS, BERT_WIDTH),
                "segment": (BERT_SEGMENTS, BERT_WIDTH)}


def bert_input(tokens: list[str], positions: list[int], segments: list[int], seed: int = 0) -> BertInput:
    """The three rows of each position and their sum, from random tables of BERT's shapes (a token's row drawn once,
    however often it appears)."""
    rng = np.random.default_rng(seed)
    distinct = list(dict.fromkeys(tokens))
    token_table = rng.normal(0.0, INIT_STD, (len(distinct), BERT_WIDTH)).astype(np.float32)
    position_table = rng.normal(0.0, INIT_STD, (BERT_POSITIONS, BERT_WIDTH)).astype(np.float32)
    segment_table = rng.normal(0.0, INIT_STD, (BERT_SEGMENTS, BERT_WIDTH)).astype(np.float32)
    ids = [distinct.index(tok) for tok in tokens]
    return BertInput(ids, token_table[ids], position_table[positions], segment_table[segments])
