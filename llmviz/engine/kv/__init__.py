"""KV caches: one interface (base.py), four layouts, five storage dtypes (C4, C6, C8, C9, C11, C20).

`make_kv_cache` is the one way in. The layout a run chooses (contiguous, dynamic, paged) is checked against
the torch-free table of llmviz/trace/config.py, `stored_layout` there says what it is built as (contiguous with
a sliding window shorter than max_seq is the ring, never chosen by name), and that name's class is looked up
here: an unknown name is an UnknownNameError listing the choices.

A new layout is one call, `register_kv_layout(Extension(name, label, about, slots=rule, ...), cls)`: its torch-free
declaration (llmviz/trace/extensions.py: its words in each language, the options it reads, the slot rule that
prices it for llmviz/analysis/predict.layer_slots; without one, pricing it is an UnknownNameError) and a KVCache
subclass whose `layout` is its name. Its name is then a choice everywhere (EngineConfig, switch specs, the CLI,
the trace checker, every page, in its own words). Registration happens at import, or in a test whose fixture
calls `unregister_kv_layout`.
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
from llmviz.errors import ConfigError
from llmviz.trace.config import KV_LAYOUTS, stored_layout
from llmviz.trace.extensions import Extension
from llmviz.trace.model_config import ModelConfig

KV_LAYOUT_CLASSES: Registry[type[KVCache]] = Registry("kv_layout", KV_LAYOUTS)
for _cls in (ContiguousKVCache, DynamicKVCache, PagedKVCache, RingKVCache):
    KV_LAYOUT_CLASSES.add(_cls.layout, _cls)

__all__ = ["KV_CODECS", "KV_LAYOUT_CLASSES", "KVCache", "make_kv_cache", "register_kv_layout",
           "unregister_kv_layout"]


def register_kv_layout(declared: Extension | str, cls: type[KVCache]) -> type[KVCache]:
    """Make `cls` the layout `declared` declares (a choice of kv_layout from now on; a bare name: no words, no
    price)."""
    name = declared.name if isinstance(declared, Extension) else declared
    if not (isinstance(cls, type) and issubclass(cls, KVCache)) or cls.layout != name:
        raise ConfigError(f"a KV layout is a KVCache subclass whose `layout` is its name {name!r} (its snapshots "
                          f"record that name), got {cls!r}")
    return KV_LAYOUT_CLASSES.declare(declared, cls)


def unregister_kv_layout(name: str) -> None:
    """Undo register_kv_layout (a test's fixture); the stock layouts stay."""
    KV_LAYOUT_CLASSES.remove(name)


def make_kv_cache(layout: str, cfg: ModelConfig, max_seq: int, *, capacity: int = 1, kv_dtype: str = "auto",
                  model_dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu",
                  block_size: int = 16, pool_blocks: int | None = None, window: int | None = None,
                  rollback: int = 0, budget: int | None = None) -> KVCache:
    """A cache for up to `capacity` sequences of up to `max_seq` tokens each.

    With a sliding `window`, contiguous is built as the ring of window + rollback slots per sequence (memory
    stays flat however long it runs; llmviz.trace.config.stored_layout); the other layouts keep every token
    (the mask alone applies the window) and say so in their snapshot. Every class takes every option and uses
    those it needs. `budget`: the bytes the cache may hold (C17): a layout that reserves refuses past it before
    allocating (KVCacheTooLargeError), a paged pool is sized to it, and a layout that grows stops at the step that
    takes it past (KVCacheFullError)."""
    cls = KV_LAYOUT_CLASSES.get(stored_layout(layout, max_seq, window, rollback))
    codec = codec_for(kv_dtype, model_dtype)
    cache = cls(cfg, max_seq, capacity, codec, torch.device(device), block_size=block_size, pool_blocks=pool_blocks,
                window=window, rollback=rollback, budget=budget)
    cache.budget = budget  # refused before allocating by a preallocated layout; held at each step by one that grows
    return cache
