"""The two phases of inference as explicit functions (C3, C4, C5).

prefill: the whole prompt [b, n] in one parallel pass; every layer writes n rows of K and V into the
         cache; the last position's logits give the first new token.
decode:  one new token [b, 1] per step; its q attends over every cached K/V (read, not recomputed),
         and the layer appends one row of K and V.
Both return the next-token logits [b, V]. Sampling is separate (sampling.py).
"""

from __future__ import annotations

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.kv_cache import KVCache
from llmviz.engine.models.transformer import DecoderModel


def prefill(model: DecoderModel, cache: KVCache, ids: torch.Tensor, ctx: RunContext, backend: str) -> torch.Tensor:
    """ids [b, n] at positions 0..n-1 into an empty cache -> logits [b, V]."""
    if cache.seq_len:
        raise ValueError("prefill needs an empty cache")
    return model(ids, cache=cache, ctx=ctx, backend=backend, last_only=True)


def decode(model: DecoderModel, cache: KVCache, ids: torch.Tensor, ctx: RunContext, backend: str) -> torch.Tensor:
    """ids [b, 1] at position cache.seq_len -> logits [b, V]."""
    if ids.shape[1] != 1:
        raise ValueError(f"decode takes one token per sequence, got {ids.shape[1]}")
    return model(ids, cache=cache, ctx=ctx, backend=backend, last_only=True)
