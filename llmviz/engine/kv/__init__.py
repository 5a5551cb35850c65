"""KV caches: one interface (base.py), three layouts, five storage dtypes (C4, C6, C8, C9, C11).

`make_kv_cache` is the one way in: the layout and dtype names are looked up in their registries, so an
unknown name is a ConfigError listing the choices.
"""

from __future__ import annotations

import torch

from llmviz.engine.kv.base import KVCache
from llmviz.engine.kv.codecs import KV_CODECS, codec_for
from llmviz.engine.kv.contiguous import ContiguousKVCache
from llmviz.engine.kv.dynamic import DynamicKVCache
from llmviz.engine.kv.paged import PagedKVCache
from llmviz.engine.kv.ring import RingKVCache
from llmviz.engine.registry import Registry
from llmviz.trace.config import KV_LAYOUTS
from llmviz.trace.model_config import ModelConfig

KV_LAYOUT_CLASSES: Registry = Registry("kv_layout", KV_LAYOUTS)
for _cls in (ContiguousKVCache, DynamicKVCache, PagedKVCache):
    KV_LAYOUT_CLASSES.add(_cls.layout, _cls)

__all__ = ["KV_CODECS", "KV_LAYOUT_CLASSES", "KVCache", "make_kv_cache"]


def make_kv_cache(layout: str, cfg: ModelConfig, max_seq: int, *, capacity: int = 1, kv_dtype: str = "auto",
                  model_dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu",
                  block_size: int = 16, pool_blocks: int | None = None, window: int | None = None,
                  rollback: int = 0) -> KVCache:
    """A cache for up to `capacity` sequences of up to `max_seq` tokens each.

    With a sliding `window`, the contiguous layout becomes a ring buffer of window + rollback slots per
    sequence (memory stays flat however long it runs); the other layouts keep every token (the mask alone
    applies the window) and say so in their snapshot.
    """
    cls = KV_LAYOUT_CLASSES.get(layout)
    codec = codec_for(kv_dtype, model_dtype)
    if window and layout == "contiguous" and window + rollback < max_seq:
        return RingKVCache(cfg, max_seq, capacity, codec, torch.device(device), window=window, rollback=rollback)
    return cls(cfg, max_seq, capacity, codec, torch.device(device), block_size=block_size, pool_blocks=pool_blocks)
