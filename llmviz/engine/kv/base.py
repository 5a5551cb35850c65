"""KVCache: the one interface every layout implements (C4, C6, C8, C9).

The cache owns each sequence's cached length; nothing else assigns it. A step goes:

    cache.add(seq_id)                      once per sequence (claims a row, or an empty block table)
    step.kv = cache.reserve(step)          extends each row's length by its new tokens, returns addressing
    keys, values = cache.write(layer, step, k, v)   per layer: store the new rows, read the row's keys
    cache.truncate(seq_id, n)              roll back (a failed step, a rejected speculation); frees space
    cache.free(seq_id)                     the sequence is done

Layouts differ only in where the rows live. What they hold is read from their tensors
(`bytes_allocated`, `bytes_used`), not only computed from the formula.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from llmviz.engine.step_batch import StepBatch
from llmviz.errors import ConfigError, KVCacheFullError, KVOverflowError
from llmviz.trace.model_config import ModelConfig


def storage_bytes(tensors) -> int:
    """Bytes PyTorch reports for the storages behind these tensors, each storage counted once."""
    seen, total = set(), 0
    for t in tensors:
        storage = t.untyped_storage()
        if storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            total += storage.nbytes()
    return total


def view_bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _store_outside_graph(cache: KVCache, layer: int, step: StepBatch, kp: list, vp: list) -> None:
    """The cache write; in a torch.compile graph, kept out of it (llmviz/engine/kv/graph_break.py says why). Eager,
    the flag is False and this is a plain call: the wrapper's module imports torch._dynamo, 2 s of a process's
    start on a 2-core CPU, so only a compiling run imports it."""
    if torch.compiler.is_compiling():
        from llmviz.engine.kv.graph_break import store_outside_graph

        store_outside_graph(cache, layer, step, kp, vp)
    else:
        cache._store(layer, step, kp, vp)


class KVCache(ABC):
    layout: str = ""
    budget: int | None = None  # bytes the cache may hold (EngineConfig.kv_budget_bytes; make_kv_cache sets it)
    preallocated = False  # True: it allocates all it holds when made (checked against the budget then, not per step)

    def __init__(self, cfg: ModelConfig, max_seq: int, capacity: int, codec, device: torch.device):
        if max_seq <= 0 or capacity <= 0:
            raise ConfigError(f"a KV cache needs positive capacity and max_seq, got {capacity} and {max_seq}")
        self.cfg, self.max_seq, self.capacity = cfg, max_seq, capacity
        self.codec, self.device = codec, device
        self.planes = codec.planes(cfg.head_dim)
        self._lengths: dict[int, int] = {}
        self._overflow: torch.Tensor | None = None  # fp16 storage: a flag raised on the device, read once a step

    # --- sequences -----------------------------------------------------------------------------
    def add(self, seq_id: int) -> None:
        if seq_id in self._lengths:
            raise ConfigError(f"sequence {seq_id} is already in the cache")
        if len(self._lengths) >= self.capacity:
            raise KVCacheFullError(f"the KV cache holds {self.capacity} sequences; free one first")
        self._lengths[seq_id] = 0
        self._on_add(seq_id)

    def length(self, seq_id: int) -> int:
        """Tokens of this sequence stored in the cache."""
        return self._lengths[seq_id]

    def holds(self, seq_id: int) -> bool:
        return seq_id in self._lengths

    @property
    def seq_ids(self) -> list[int]:
        return list(self._lengths)

    def reserve(self, step: StepBatch):
        """Make room for this step's new tokens and extend each row's length; returns the addressing."""
        for seq_id, start, n in zip(step.seq_ids, step.start_list, step.n_real, strict=True):
            if start != self._lengths[seq_id]:
                raise ConfigError(f"sequence {seq_id}: the step starts at {start} but the cache holds "
                                  f"{self._lengths[seq_id]} tokens")
            if start + n > self.max_seq:
                raise KVCacheFullError(f"the KV cache holds {self.max_seq} tokens per sequence; position "
                                       f"{start + n - 1} does not fit (raise max_seq_len)")
        address = self._reserve(step)
        for seq_id, n in zip(step.seq_ids, step.n_real, strict=True):
            self._lengths[seq_id] += n
        if self.budget is not None and not self.preallocated and self.bytes_allocated() > self.budget:  # it grew
            raise KVCacheFullError(f"the KV cache now holds {self.bytes_allocated():,} B, past its budget of "
                                   f"{self.budget:,} B (kv_budget_bytes): raise it, or use a shorter max_seq_len")
        return address

    def key_positions(self, step: StepBatch) -> torch.Tensor | None:
        """[b, key_len] the position each key slot read this step holds, or None when slot s is position s."""
        return None

    def truncate(self, seq_id: int, n: int) -> None:
        """Keep the first n tokens of a sequence; space past them is released where the layout can."""
        if not 0 <= n <= self._lengths[seq_id]:
            raise ConfigError(f"cannot truncate sequence {seq_id} of {self._lengths[seq_id]} tokens to {n}")
        self._lengths[seq_id] = n
        self._on_truncate(seq_id, n)

    def free(self, seq_id: int) -> None:
        self._on_free(seq_id)
        del self._lengths[seq_id]

    # --- one layer of one step -----------------------------------------------------------------
    def write(self, layer: int, step: StepBatch, k: torch.Tensor, v: torch.Tensor):
        """Store k, v [b, kv, n, hd] (the real columns only) and return this layer's keys and values
        [b, kv, key_len, hd] of the step's rows, in k's dtype; slot s of a row holds its position s."""
        kp, vp = self.codec.encode(k), self.codec.encode(v)
        if self.codec.may_overflow:
            bad = ~(torch.isfinite(kp[0]).all() & torch.isfinite(vp[0]).all())
            self._overflow = bad if self._overflow is None else self._overflow | bad
        keys, values = self._store_and_read(layer, step, kp, vp)
        return self.codec.decode(keys, k.dtype), self.codec.decode(values, k.dtype)

    def _store_and_read(self, layer: int, step: StepBatch, kp: list, vp: list) -> tuple[list, list]:
        """The planes the step's queries attend to: by default, store the new rows, then read the row's keys."""
        _store_outside_graph(self, layer, step, kp, vp)
        return self._load(layer, step)

    def new_rows(self, layer: int, step: StepBatch) -> torch.Tensor:
        """What this step stored for one layer, read back from the cache: [2, b, kv, n, hd], pad slots 0. The new
        columns are gathered from each stored plane first and only they are decoded (a codec decodes each row on
        its own), not the whole cache."""
        cols = step.positions.clamp(min=0, max=step.key_len - 1)  # [b, n]

        def picked(planes: list) -> torch.Tensor:  # planes [b, kv, key_len, w] -> rows [b, kv, n, hd] in fp32
            return self.codec.decode([p.gather(2, cols[:, None, :, None].expand(-1, p.shape[1], -1, p.shape[-1]))
                                      for p in planes], torch.float32)

        keys, values = self._load(layer, step)
        rows = torch.stack([picked(keys), picked(values)])  # [2, b, kv, n, hd]
        return rows * step.real[None, :, None, :, None]

    def check_overflow(self) -> None:
        """Raise KVOverflowError if a value written since the last check did not fit the storage dtype."""
        flag, self._overflow = self._overflow, None
        if flag is not None and bool(flag):
            raise KVOverflowError("a K or V value overflowed the fp16 KV cache (|x| > 65504) and would be stored "
                                  "as inf: use kv_dtype bf16 (same bytes, fp32's range) or fp32", code="kv_overflow")

    # --- memory ------------------------------------------------------------------------------------
    def bytes_per_token(self) -> int:
        """C4's formula for one token of one sequence: layers x 2 (K, V) x kv_heads x bytes per head row
        (head_dim elements, plus a scale for the quantized kinds)."""
        c = self.cfg
        per_head = sum(p.width * torch.empty((), dtype=p.dtype).element_size() for p in self.planes)
        return c.num_layers * 2 * c.num_kv_heads * per_head

    @property
    def tokens_used(self) -> int:
        return sum(self._lengths.values())

    @abstractmethod
    def bytes_allocated(self) -> int:
        """Bytes of the tensors this cache holds, read from PyTorch's storages."""

    @abstractmethod
    def bytes_used(self) -> int:
        """Bytes of the stored tokens' rows, read from the tensors (views) that hold them."""

    @abstractmethod
    def slots_allocated(self) -> int:
        """Token slots the sequences hold (used or not): the waste is this minus tokens_used."""

    def snapshot(self) -> dict:
        c = self.cfg
        lengths = list(self._lengths.values())
        data = self.planes[0].dtype
        return {
            "layout": self.layout, "dtype": str(data).removeprefix("torch."), "kv_dtype": self.codec.name,
            "batch": len(lengths), "seq_len": lengths[0] if lengths else 0, "seq_lens": lengths,
            "seq_ids": list(self._lengths),  # which sequence each of seq_lens (and a block table) belongs to
            "max_seq": self.max_seq, "layers": c.num_layers, "kv_heads": c.num_kv_heads, "head_dim": c.head_dim,
            "element_bytes": torch.empty((), dtype=data).element_size(),
            "bytes_per_token": self.bytes_per_token(),
            "bytes_allocated": self.bytes_allocated(), "bytes_used": self.bytes_used(),
            "slots_allocated": self.slots_allocated(), "wasted_slots": self.slots_allocated() - self.tokens_used,
            # the first stored tensor's shape as torch holds it (a layout that keeps one tensor per sequence: None)
            "storage_shape": list(stored[0].shape) if (stored := getattr(self, "storage", None)) else None,
            **self._snapshot_extra(),
        }

    def _snapshot_extra(self) -> dict:
        return {}

    # --- what a layout implements (the three _on_ hooks are optional: a layout may keep nothing) ----
    def _on_add(self, seq_id: int) -> None:  # noqa: B027
        """A sequence joined: claim what it needs up front (a row, an empty block table)."""

    def _on_truncate(self, seq_id: int, n: int) -> None:  # noqa: B027
        """Its length dropped to n: release what lies past it."""

    def _on_free(self, seq_id: int) -> None:  # noqa: B027
        """It left: release everything it held."""

    @abstractmethod
    def _reserve(self, step: StepBatch):
        """Room for the step's tokens (lengths not yet extended); returns the layout's addressing."""

    @abstractmethod
    def _store(self, layer: int, step: StepBatch, kp: list, vp: list) -> None:
        """Write the encoded planes [b, kv, n, w] of the real columns."""

    @abstractmethod
    def _load(self, layer: int, step: StepBatch) -> tuple[list, list]:
        """The planes [b, kv, key_len, w] of the step's rows (slot s = position s)."""
