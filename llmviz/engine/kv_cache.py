"""KV caches behind one interface (C4, C6, C8).

The attention layer of every model calls `write(layer, start, k, v)` and gets back all keys and values
of that layer so far. Layouts differ only in how they store them. This file holds the interface and
the contiguous preallocated layout; later layouts (growing, paged) implement the same methods.

Contiguous layout: one tensor `[layers, 2 (K,V), batch, kv_heads, max_seq, head_dim]`. It is the
article's `[seq, kv_heads, head_dim]` per layer with the heads axis moved before the sequence, so
that the slice of the first `t` tokens is a strided view the attention matmul reads in place.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from llmviz.engine.memory import check_fits
from llmviz.engine.models.config import ModelConfig
from llmviz.errors import ConfigError


class KVCache(ABC):
    layout: str = ""

    def __init__(self, cfg: ModelConfig, batch: int, max_seq: int, dtype: torch.dtype,
                 device: torch.device):
        if max_seq <= 0 or batch <= 0:
            raise ConfigError(f"a KV cache needs positive batch and max_seq, got {batch} and {max_seq}")
        self.cfg, self.batch, self.max_seq = cfg, batch, max_seq
        self.dtype, self.device = dtype, device
        self.seq_len = 0  # tokens stored per sequence (all rows of the batch share it for now)

    @property
    def element_bytes(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()

    def bytes_for(self, tokens: int) -> int:
        """C4's formula: tokens x kv_heads x head_dim x 2 (K and V) x bytes/element x layers x batch."""
        c = self.cfg
        return tokens * c.num_kv_heads * c.head_dim * 2 * self.element_bytes * c.num_layers * self.batch

    @abstractmethod
    def write(self, layer: int, start: int, k: torch.Tensor, v: torch.Tensor):
        """Store k, v [b, kv, n, hd] at positions start..start+n-1 and return this layer's
        keys and values [b, kv, start+n, hd] in the compute dtype of k."""

    @abstractmethod
    def rows(self, layer: int, start: int, end: int) -> torch.Tensor:
        """K and V of positions start..end-1 of one layer: [2, b, kv, end-start, hd]."""

    def advance(self, n: int) -> None:
        """Called once per step after every layer wrote its n new rows."""
        self.seq_len += n

    @abstractmethod
    def bytes_allocated(self) -> int:
        """Bytes of the tensors this cache holds, read from the tensors themselves."""

    @abstractmethod
    def bytes_used(self) -> int:
        """Bytes of the cached rows (tokens stored so far), read from the tensors that hold them."""

    def snapshot(self) -> dict:
        c = self.cfg
        return {
            "layout": self.layout, "dtype": str(self.dtype).removeprefix("torch."),
            "batch": self.batch, "seq_len": self.seq_len, "max_seq": self.max_seq,
            "layers": c.num_layers, "kv_heads": c.num_kv_heads, "head_dim": c.head_dim,
            "element_bytes": self.element_bytes,
            "bytes_allocated": self.bytes_allocated(), "bytes_used": self.bytes_used(),
        }


class ContiguousKVCache(KVCache):
    layout = "contiguous"

    def __init__(self, cfg: ModelConfig, batch: int, max_seq: int, dtype: torch.dtype,
                 device: torch.device):
        super().__init__(cfg, batch, max_seq, dtype, device)
        shape = (cfg.num_layers, 2, batch, cfg.num_kv_heads, max_seq, cfg.head_dim)
        check_fits(self.bytes_for(max_seq), device, f"the KV cache {list(shape)} in {dtype}",
                   "use a shorter max_seq_len or an fp16/bf16 KV cache")
        self.storage = torch.zeros(shape, dtype=dtype, device=device)

    def write(self, layer: int, start: int, k: torch.Tensor, v: torch.Tensor):
        end = start + k.shape[2]
        if end > self.max_seq:
            raise ConfigError(f"the KV cache holds {self.max_seq} tokens; position {end - 1} does not fit "
                              "(raise max_seq_len)")
        kv = self.storage[layer]  # [2, b, kv, max_seq, hd]
        kv[0, :, :, start:end] = k
        kv[1, :, :, start:end] = v
        keys, values = kv[0, :, :, :end], kv[1, :, :, :end]  # [b, kv, end, hd] views
        if keys.dtype != k.dtype:  # a lower-precision cache is widened on read (C11)
            keys, values = keys.to(k.dtype), values.to(k.dtype)
        return keys, values

    def rows(self, layer: int, start: int, end: int) -> torch.Tensor:
        return self.storage[layer, :, :, :, start:end]

    def bytes_allocated(self) -> int:
        return self.storage.numel() * self.storage.element_size()

    def bytes_used(self) -> int:
        used = self.storage[:, :, :, :, : self.seq_len]  # [L, 2, b, kv, t, hd] view of the filled rows
        return used.numel() * used.element_size()


LAYOUT_CLASSES = {cls.layout: cls for cls in (ContiguousKVCache,)}  # the names EngineConfig.kv_layout accepts


def make_kv_cache(layout: str, cfg: ModelConfig, batch: int, max_seq: int, dtype: torch.dtype,
                  device: torch.device) -> KVCache:
    if layout not in LAYOUT_CLASSES:
        raise ConfigError(f"kv_layout={layout!r} is not one of {tuple(LAYOUT_CLASSES)}")
    return LAYOUT_CLASSES[layout](cfg, batch, max_seq, dtype, device)
