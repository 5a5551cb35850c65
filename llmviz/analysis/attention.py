"""Attention in prefill, read from the recorded tensors (C3).

Shapes come from the hook records, never from the config: attn_in [b, n, d], q [b, h, n, hd],
k and v [b, kv, n, hd], scores and probs [b, h, n, n_k]. With grouped-query attention (kv < h) query
head j reads K/V head j // (h / kv). The scores are QK^T / sqrt(d_k) with -inf where the causal mask
(or a sliding window) hides a key; softmax turns each row into the attention map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HeadShapes:
    n: int  # tokens in this step (queries)
    n_k: int  # keys each query can be compared with
    d: int  # d_model, the width of the layer's input
    heads: int  # query heads
    kv_heads: int  # K/V heads (fewer than heads with GQA)
    head_dim: int  # d_head = d_k

    @property
    def group(self) -> int:
        """Query heads sharing one K/V head."""
        return self.heads // self.kv_heads

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.head_dim)

    def kv_head(self, head: int) -> int:
        return head // self.group


def head_shapes(attn_in: list, q: list, k: list, scores: list) -> HeadShapes:
    """From the recorded shapes: attn_in [b, n, d], q [b, h, n, hd], k [b, kv, n_k', hd], scores [b, h, n, n_k]."""
    return HeadShapes(n=int(q[2]), n_k=int(scores[3]), d=int(attn_in[-1]), heads=int(q[1]),
                      kv_heads=int(k[1]), head_dim=int(q[3]))


def scores_from_qk(q: np.ndarray, k: np.ndarray, scale: float) -> np.ndarray:
    """One head's scores before masking: q [n, hd] x k^T [hd, n_k] -> [n, n_k], times scale."""
    return (q.astype(np.float64) @ k.astype(np.float64).T) * scale


def weighted_values(probs: np.ndarray, v: np.ndarray, row: int) -> np.ndarray:
    """What attention outputs for one query (C3): probs [n, n_k] (a head's softmax rows), v [n_k, head_dim] (its KV
    head's values), `row` the query -> [row + 2, head_dim]: each key's value scaled by its probability, p[row, j] *
    v[j] for j = 0..row (the causal keys), then their sum, which is the head's output for that query."""
    parts = probs[row, : row + 1, None] * v[: row + 1]  # [row + 1, head_dim]
    return np.concatenate([parts, parts.sum(axis=0, keepdims=True)])


def masked(scores: np.ndarray) -> np.ndarray:
    """Where the mask hid a key: True at the -inf entries of recorded scores [..., n, n_k]."""
    return np.isneginf(scores)


def mask_counts(scores: np.ndarray) -> tuple[int, int]:
    """(future, window): masked entries of one map [n, n_k] whose key comes after the query (the causal mask),
    and those before it (a sliding window's: keys too far back). The queries are the last n of the n_k keys."""
    n, n_k = scores.shape[-2:]
    later = np.arange(n_k)[None, :] > (np.arange(n)[:, None] + n_k - n)  # [n, n_k] key after the query
    hidden = masked(scores)
    return int((hidden & later).sum()), int((hidden & ~later).sum())


def max_abs_gap(recorded: np.ndarray, recomputed: np.ndarray) -> float:
    """Largest |recorded - recomputed| over the entries the mask left visible."""
    visible = ~masked(recorded)
    if not visible.any():
        return 0.0
    return float(np.abs(recorded[visible] - recomputed[visible]).max())


def pool_map(m: np.ndarray, size: int) -> np.ndarray:
    """Shrink an attention map [n, n_k] to at most [size, size] for the small multiples.

    Queries are cut into blocks and averaged; keys are cut into blocks and summed. Each pooled row is
    then still a distribution (it sums to 1 like the rows of softmax), so a head that puts all its weight
    on one key stays as dark as before. A map already small enough is returned as is.
    """
    n, n_k = m.shape
    if n <= size and n_k <= size:
        return m
    row_starts = _block_starts(n, size)  # [r]
    col_starts = _block_starts(n_k, size)  # [c]
    summed = np.add.reduceat(m.astype(np.float64), col_starts, axis=1)  # [n, n_k] -> [n, c]
    counts = np.diff(np.append(row_starts, n))  # [r] queries per block
    return np.add.reduceat(summed, row_starts, axis=0) / counts[:, None]  # [n, c] -> [r, c]


def _block_starts(length: int, size: int) -> np.ndarray:
    """First index of each of min(length, size) nearly equal blocks (as np.array_split cuts them)."""
    return np.array([block[0] for block in np.array_split(np.arange(length), min(length, size))])


def tile_maps(maps, size: int = 32, gap: int = 1) -> np.ndarray:
    """All layers' and heads' maps as one matrix, NaN between the tiles.

    maps: one array [H, n, n_k] per layer (a list of views, so nothing big is copied), or [L, H, n, n_k].
    Each map is pooled to at most [size, size] = [s, s_k]; the result is
    [L * (s + gap) - gap, H * (s_k + gap) - gap], layer down, head across, so one heatmap draws the grid.
    """
    layers, heads = len(maps), maps[0].shape[0]
    pooled = [[pool_map(maps[i][j], size) for j in range(heads)] for i in range(layers)]
    s, s_k = pooled[0][0].shape
    out = np.full((layers * (s + gap) - gap, heads * (s_k + gap) - gap), np.nan)
    for i in range(layers):
        for j in range(heads):
            top, left = i * (s + gap), j * (s_k + gap)
            out[top:top + s, left:left + s_k] = pooled[i][j]
    return out


def matmul_text(x: str, a: tuple, w: str, b: tuple, out: str) -> str:
    """'X [20, 64] × W_Q [64, 16] → Q [20, 16]': a matmul written with its real shapes."""
    if a[-1] != b[0]:
        raise ValueError(f"{x} {list(a)} × {w} {list(b)}: inner dimensions differ")
    return f"{x} {list(a)} × {w} {list(b)} → {out} {[*a[:-1], b[-1]]}"


def grid_cell(x: float, y: float, tile: tuple[int, int], gap: int = 1) -> tuple[int, int]:
    """The (layer, head) whose tile holds the point (x, y) of a `tile_maps` matrix (x across, y down)."""
    s, s_k = tile
    return round(y) // (s + gap), round(x) // (s_k + gap)
