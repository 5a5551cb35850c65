"""Paged layout: a pool of fixed-size blocks and one block table per sequence (C9, as vLLM's PagedAttention).

Pool tensor per plane `[layers, 2, kv_heads, blocks, block_size, w]`: heads outermost, so that each head's
blocks are rows of one matrix and a run of consecutive blocks reads as `[kv, t, w]`, the layout the
attention kernels read fastest (token-major, PyTorch's CPU flash kernel took twice as long per layer at
510 tokens). A block is one `[block_size, w]` tile per head. A sequence holds the blocks its table lists,
taken from the pool's free list as it grows; `truncate` and `free` give whole blocks back. Its waste is
the unused tail of its last block (< one block), instead of everything up to max_seq. The price is an
indirection: the attention reads each row's keys through its block table, a gather on every device (a
paged-attention kernel would read the blocks in place; one row whose blocks lie in order is read in place).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from llmviz.engine.kv.base import KVCache, storage_bytes, view_bytes
from llmviz.engine.kv.block_pool import BlockPool
from llmviz.engine.kv.prefix import PrefixIndex
from llmviz.engine.platform.memory import check_fits
from llmviz.engine.step_batch import StepBatch


@dataclass(frozen=True)
class BlockAddress:
    slots: torch.Tensor | None  # [m] flat slot (block * block_size + offset) of every real token, row-major
    tables: torch.Tensor | None  # [b, max_blocks] block ids of each row (padded with block 0; masked on read)
    # (first, end) when the batch is one row whose blocks are first, first+1, ..., end-1: its slots are then
    # consecutive and the read is a view of the pool (as a paged-attention kernel reads blocks where they
    # are); otherwise None: slots and a gather through the block tables
    run: tuple | None = None
    heads: torch.Tensor | None = None  # [b * kv * max_blocks] (head, block) rows of a layer's pool to gather


class PagedKVCache(KVCache):
    layout = "paged"
    preallocated = True  # its pool, checked against a budget before allocating

    def __init__(self, cfg, max_seq, capacity, codec, device, block_size=16, pool_blocks=None,
                 budget: int | None = None, **_):
        super().__init__(cfg, max_seq, capacity, codec, device)
        self.block_size = block_size
        # default: enough blocks for every sequence to reach max_seq (the pool never runs dry), or, under a KV
        # budget, the blocks it holds (at least one): a sequence then takes blocks as it grows until the pool is
        # empty (KVCacheFullError at the token that needs one more)
        need = capacity * math.ceil(max_seq / block_size)
        block_bytes = self.bytes_per_token() * block_size
        self.num_blocks = pool_blocks or (need if budget is None else max(1, min(need, budget // block_bytes)))
        check_fits(block_bytes * self.num_blocks, device,
                   f"the KV block pool ({self.num_blocks} blocks of {block_size} tokens, {codec.name})",
                   "use fewer blocks, a shorter max_seq_len or an fp16/bf16 KV cache", budget=budget)
        shape = (cfg.num_layers, 2, cfg.num_kv_heads, self.num_blocks, block_size)
        self.storage = [torch.zeros((*shape, p.width), dtype=p.dtype, device=device) for p in self.planes]
        sized = pool_blocks is None and budget is not None  # the budget sized the pool: raising it is the fix
        self.pool = BlockPool(self.num_blocks, *(("raise kv_budget_bytes (--kv-budget-bytes), use a shorter "
                                                  "request, or run fewer sequences",) if sized else ()))
        self.tables: dict[int, list[int]] = {}
        self.prefix: PrefixIndex | None = None  # prefix sharing, when enabled (C22)

    def _on_add(self, seq_id):
        self.tables[seq_id] = []

    def _release(self, block: int) -> None:
        self.pool.release(block)
        if self.prefix is not None and self.pool.refs[block] == 0:
            self.prefix.forget(block)

    def _on_truncate(self, seq_id, n):
        table = self.tables[seq_id]
        keep = math.ceil(n / self.block_size)
        for block in table[keep:]:
            self._release(block)
        del table[keep:]
        if n % self.block_size and table:  # the last kept block is cut: later writes go into it
            last = table[-1]
            if self.pool.refs[last] > 1:  # shared: copy on write
                table[-1] = self.pool.allocate()
                for plane in self.storage:
                    plane[:, :, :, table[-1]] = plane[:, :, :, last]
                self._release(last)
            elif self.prefix is not None:
                self.prefix.forget(last)  # its content will change: no longer the block its name stands for

    def _on_free(self, seq_id):
        for block in self.tables.pop(seq_id):
            self._release(block)

    # --- prefix sharing (C22) ----------------------------------------------------------------------
    def enable_prefix_sharing(self) -> None:
        self.prefix = PrefixIndex(self.block_size)

    def share_prefix(self, seq_id: int, ids) -> int:
        """Before a new sequence's prefill: point its table at blocks that already hold its first full blocks
        (their ref counts go up); returns the tokens now cached, always fewer than len(ids) (the last prompt
        token is fed, so the prefill yields the next token's logits)."""
        if self.prefix is None or self.tables[seq_id] or self._lengths[seq_id]:
            return self._lengths[seq_id]
        blocks = self.prefix.lookup(ids, (len(ids) - 1) // self.block_size)
        for block in blocks:
            self.pool.share(block)
        self.tables[seq_id].extend(blocks)
        self._lengths[seq_id] = len(blocks) * self.block_size
        return self._lengths[seq_id]

    def register_prefix(self, seq_id: int, ids) -> None:
        """The sequence's full blocks (of `ids`, its tokens) become findable by later sequences."""
        if self.prefix is not None:
            full = self._lengths[seq_id] // self.block_size
            self.prefix.register(ids, self.tables[seq_id][:full])

    @property
    def shared_blocks(self) -> int:
        """Blocks held by more than one sequence."""
        return sum(1 for r in self.pool.refs if r > 1)

    def _reserve(self, step: StepBatch) -> BlockAddress:
        bs = self.block_size
        taken: list[tuple[int, int]] = []
        try:
            for seq_id, start, n in zip(step.seq_ids, step.start_list, step.n_real, strict=True):
                table = self.tables[seq_id]
                while len(table) * bs < start + n:
                    table.append(self.pool.allocate())
                    taken.append((seq_id, table[-1]))
        except BaseException:
            for seq_id, block in reversed(taken):  # all or nothing
                self.tables[seq_id].remove(block)
                self.pool.release(block)
            raise
        if step.batch == 1 and step.uniform and not step.static:  # one row feeding real tokens only
            table = self.tables[step.seq_ids[0]]
            if table == list(range(table[0], table[0] + len(table))):  # in order in the pool: no indirection
                return BlockAddress(None, None, (table[0], table[0] + len(table)))
        width = max(1, max(len(self.tables[s]) for s in step.seq_ids))
        # [b, width], a short table padded with block 0 (gathered with the rest, then masked: past the row's length)
        tables = torch.tensor([[*self.tables[s], *[0] * (width - len(self.tables[s]))] for s in step.seq_ids],
                              dtype=torch.long, device=self.device)
        rows, pos = step.real_rows, step.real_positions  # [m] each
        slots = tables[rows, pos // bs] * bs + pos % bs  # [m]
        # the pool's [kv, blocks] as one axis: row (b, head, j) reads block tables[b, j] of that head, so a
        # single index_select lands every row's keys in [b, kv, t, w] order (no strided copy after it)
        kv = self.cfg.num_kv_heads
        heads = (torch.arange(kv, device=self.device)[None, :, None] * self.num_blocks + tables[:, None, :])
        return BlockAddress(slots, tables, heads=heads.flatten())

    def _store(self, layer, step, kp, vp):
        a: BlockAddress = step.kv
        for plane, k, v in zip(self.storage, kp, vp, strict=True):
            flat = plane[layer].flatten(2, 3)  # [2, kv, blocks * block_size, w] view
            if a.run is not None:  # one row, its blocks in order: its new tokens' slots are consecutive
                first = a.run[0] * self.block_size + step.start
                flat[0, :, first:first + step.width] = k[0]  # [kv, n, w]
                flat[1, :, first:first + step.width] = v[0]
                continue
            flat[0][:, a.slots] = k.transpose(0, 1)[:, step.real]  # [kv, m, w]
            flat[1][:, a.slots] = v.transpose(0, 1)[:, step.real]

    def _load(self, layer, step):
        a: BlockAddress = step.kv
        t = step.key_len
        out = []
        for plane in self.storage:
            # a view of the pool when one row's blocks lie in order there (read in place), else a gather
            # through the block tables (a copy)
            if a.run is not None:  # [2, 1, kv, t, w]: a view, each head's blocks one after another
                rows = plane[layer][:, None, :, a.run[0]:a.run[1]].flatten(3, 4)
            else:  # [2, kv * blocks, block_size, w] -> [2, b * kv * max_blocks, block_size, w] -> [2, b, kv, t, w]
                b = a.tables.shape[0]
                gathered = plane[layer].flatten(1, 2).index_select(1, a.heads)
                rows = gathered.view(2, b, plane.shape[2], -1, plane.shape[-1])
            out.append(rows[:, :, :, :t])
        return [p[0] for p in out], [p[1] for p in out]

    def bytes_allocated(self) -> int:
        return storage_bytes(self.storage)

    def bytes_held(self) -> int:
        """Bytes of the blocks the sequences hold, read from those blocks' slices of the pool."""
        blocks = sorted({b for table in self.tables.values() for b in table})
        return sum(view_bytes(plane[:, :, :, i]) for plane in self.storage for i in blocks)

    def bytes_used(self) -> int:
        bs, total = self.block_size, 0
        for seq_id, n in self._lengths.items():
            table = self.tables[seq_id]
            for j, block in enumerate(table):
                filled = min(bs, n - j * bs)
                if filled > 0:
                    total += sum(view_bytes(plane[:, :, :, block, :filled]) for plane in self.storage)
        return total

    def slots_allocated(self) -> int:
        return sum(len(t) for t in self.tables.values()) * self.block_size

    def _snapshot_extra(self) -> dict:
        return {"block_size": self.block_size, "num_blocks": self.num_blocks, "blocks_free": self.pool.free_count,
                "block_tables": [list(self.tables[s]) for s in self._lengths], "bytes_held": self.bytes_held()}
