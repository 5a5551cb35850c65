"""Contiguous layout: every sequence owns a preallocated row of max_seq slots (C8).

One tensor per plane, `[layers, 2 (K, V), rows, kv_heads, max_seq, w]`: the article's
`[seq, kv_heads, head_dim]` per layer with the heads axis before the sequence, so that the first t
slots of consecutive rows are a strided view the attention matmul reads in place. Everything past a
row's length is allocated but unused: the waste C8 is about.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from llmviz.engine.kv.base import KVCache, storage_bytes, view_bytes
from llmviz.engine.platform.memory import check_fits
from llmviz.engine.step_batch import StepBatch


@dataclass(frozen=True)
class RowAddress:
    rows: torch.Tensor | None  # [b] the cache row of each batch row; None when slices serve (no index needed)
    first: int | None  # rows are first, first+1, ...: read and write through slices (no copy)


class ContiguousKVCache(KVCache):
    layout = "contiguous"
    preallocated = True  # its rows (and the ring's, a subclass), checked against a budget before allocating

    def __init__(self, cfg, max_seq, capacity, codec, device, slots: int | None = None, budget: int | None = None,
                 **_):
        super().__init__(cfg, max_seq, capacity, codec, device)
        self.slots = slots or max_seq  # slots per row: max_seq, or the ring's window + rollback
        check_fits(self.bytes_per_token() * self.slots * capacity, device,
                   f"the KV cache ({capacity} x {self.slots} tokens, {codec.name})",
                   "use a shorter max_seq_len, a paged cache or an fp16/bf16 KV cache", budget=budget)
        shape = (cfg.num_layers, 2, capacity, cfg.num_kv_heads, self.slots)
        self.storage = [torch.zeros((*shape, p.width), dtype=p.dtype, device=device) for p in self.planes]
        self._free_rows = list(range(capacity))
        self._row: dict[int, int] = {}

    def _on_add(self, seq_id):
        self._row[seq_id] = self._free_rows.pop(0)

    def _on_free(self, seq_id):
        self._free_rows.append(self._row.pop(seq_id))
        self._free_rows.sort()

    def _reserve(self, step: StepBatch) -> RowAddress:
        rows = [self._row[s] for s in step.seq_ids]
        first = rows[0] if rows == list(range(rows[0], rows[0] + len(rows))) else None
        if first is not None and step.uniform and not step.static:
            return RowAddress(None, first)  # the common decode step: slices only, no index tensor to upload
        return RowAddress(torch.tensor(rows, dtype=torch.long, device=self.device), first)

    def _store(self, layer, step, kp, vp):
        a: RowAddress = step.kv
        if step.uniform and a.first is not None and not step.static:
            r, s, e = slice(a.first, a.first + step.batch), step.start, step.start + step.width
            for plane, k, v in zip(self.storage, kp, vp, strict=True):
                plane[layer, 0, r, :, s:e] = k
                plane[layer, 1, r, :, s:e] = v
            return
        if step.uniform:  # every token is real: index with the position tensor itself (no Python ints)
            for plane, k, v in zip(self.storage, kp, vp, strict=True):
                plane[layer, 0].transpose(1, 2)[a.rows[:, None], step.positions] = k.transpose(1, 2)  # [b, n, kv, w]
                plane[layer, 1].transpose(1, 2)[a.rows[:, None], step.positions] = v.transpose(1, 2)
            return
        rows, pos = a.rows[step.real_rows], step.real_positions  # [m] each
        for plane, k, v in zip(self.storage, kp, vp, strict=True):
            # [rows, kv, S, w] seen as [rows, S, kv, w]: one (row, position) pair addresses a token's slot
            plane[layer, 0].transpose(1, 2)[rows, pos] = k.transpose(1, 2)[step.real]  # [m, kv, w]
            plane[layer, 1].transpose(1, 2)[rows, pos] = v.transpose(1, 2)[step.real]

    def _load(self, layer, step):
        a: RowAddress = step.kv
        t = step.key_len
        if a.first is not None:
            views = [plane[layer, :, a.first:a.first + step.batch, :, :t] for plane in self.storage]
        else:
            views = [plane[layer][:, a.rows, :, :t] for plane in self.storage]  # [2, b, kv, t, w]
        return [v[0] for v in views], [v[1] for v in views]

    def bytes_allocated(self) -> int:
        return storage_bytes(self.storage)

    def bytes_used(self) -> int:
        return sum(view_bytes(plane[:, :, row, :, :n]) for plane in self.storage
                   for row, n in ((self._row[s], n) for s, n in self._lengths.items()))

    def slots_allocated(self) -> int:
        return self.capacity * self.slots  # every row is preallocated whole

    def _snapshot_extra(self) -> dict:
        return {"rows": [self._row[s] for s in self._lengths], "capacity": self.capacity}
