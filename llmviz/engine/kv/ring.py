"""Ring-buffer layout ("ring"): the contiguous layout for a sliding window, with window + rollback slots per row
(C20). Position p lives in slot p % slots; the oldest positions are overwritten, so memory stays flat
however long a sequence runs. A run never names it: kv_layout contiguous with a window shorter than max_seq is
built as a ring (llmviz.trace.config.stored_layout), and its snapshots say "ring" (older traces: "contiguous").

A step attends over the positions the ring still holds before it ([start - slots, start)), gathered in
position order, followed by the step's own new keys, so a long prefill never reads a slot that a later
token of the same step overwrote; then the last `slots` new rows are stored. The mask sees each key's
position (`key_positions`), so the window is exact. The `rollback` slots beyond the window are what
`truncate` may take back (a speculative step's rejected tokens): the ring refuses to go further back.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from llmviz.engine.kv.base import _store_outside_graph, view_bytes
from llmviz.engine.kv.contiguous import ContiguousKVCache
from llmviz.engine.step_batch import StepBatch
from llmviz.errors import ConfigError

NOWHERE = 2**62  # the position of an empty key slot: after every query, so always masked


@dataclass(frozen=True)
class RingAddress:
    rows: torch.Tensor  # [b] cache row of each batch row
    old_slots: torch.Tensor  # [b, t_old] ring slot of each retained position (0 where the row has fewer)
    old_positions: torch.Tensor  # [b, t_old] the positions, NOWHERE where the row has fewer
    first: int | None = None


class RingKVCache(ContiguousKVCache):
    layout = "ring"

    def __init__(self, cfg, max_seq, capacity, codec, device, window: int | None = None, rollback: int = 0,
                 budget: int | None = None, **_):
        if not window:
            raise ConfigError("the ring buffer keeps a sliding window's keys: it needs a window of at least 1 token")
        self.window, self.rollback = window, rollback
        self._slot_pos: dict[int, list[int]] = {}  # per sequence: the position each slot holds (-1: none)
        super().__init__(cfg, max_seq, capacity, codec, device, slots=min(max_seq, window + rollback), budget=budget)

    def _reserve(self, step: StepBatch) -> RingAddress:
        rows = torch.tensor([self._row[s] for s in step.seq_ids], dtype=torch.long, device=self.device)
        kept = [min(start, self.slots) for start in step.start_list]  # retained positions before the step
        t_old = max(kept)
        old = torch.full((step.batch, t_old), NOWHERE, dtype=torch.long)
        for i, (start, k) in enumerate(zip(step.start_list, kept, strict=True)):
            old[i, :k] = torch.arange(start - k, start)
        old = old.to(self.device)
        return RingAddress(rows, torch.where(old < NOWHERE, old % self.slots, 0), old)

    def key_positions(self, step: StepBatch) -> torch.Tensor:
        new = torch.where(step.real, step.positions, NOWHERE)  # [b, n]
        return torch.cat([step.kv.old_positions, new], dim=1)  # [b, t_old + n]

    def _store_and_read(self, layer, step, kp, vp):
        """The retained old rows (read before this step writes, in position order) followed by the new ones."""
        a: RingAddress = step.kv
        old = [self._gather(plane, layer, a.rows, a.old_slots) for plane in self.storage]  # [2, b, kv, t_old, w]
        _store_outside_graph(self, layer, step, kp, vp)
        keys = [torch.cat([p[0], new], dim=2) for p, new in zip(old, kp, strict=True)]
        values = [torch.cat([p[1], new], dim=2) for p, new in zip(old, vp, strict=True)]
        return keys, values

    def _stored(self, step: StepBatch) -> torch.Tensor:
        """[b, n] the real tokens the ring keeps: each row's last `slots` (earlier ones would be overwritten)."""
        ends = torch.tensor([s + n for s, n in zip(step.start_list, step.n_real, strict=True)], device=self.device)
        return step.real & (step.positions >= (ends - self.slots)[:, None])

    def _store(self, layer, step, kp, vp):
        a: RingAddress = step.kv
        keep = self._stored(step)
        rows = a.rows[:, None].expand_as(keep)[keep]
        slots = step.positions[keep] % self.slots
        for plane, kq, vq in zip(self.storage, kp, vp, strict=True):
            plane[layer, 0].transpose(1, 2)[rows, slots] = kq.transpose(1, 2)[keep]  # [m, kv, w]
            plane[layer, 1].transpose(1, 2)[rows, slots] = vq.transpose(1, 2)[keep]
        if layer == 0:  # which position each slot now holds (for truncate's check)
            for seq_id, start, n in zip(step.seq_ids, step.start_list, step.n_real, strict=True):
                held = self._slot_pos[seq_id]
                for pos in range(max(start, start + n - self.slots), start + n):
                    held[pos % self.slots] = pos

    def new_rows(self, layer, step):
        """What the ring stored this step, read back from its slots: [2, b, kv, n, hd], 0 where not stored."""
        a: RingAddress = step.kv
        slots = step.positions.clamp(min=0) % self.slots  # [b, n]
        kv = [self._gather(plane, layer, a.rows, slots) for plane in self.storage]  # [2, b, kv, n, w]
        rows = torch.stack([self.codec.decode([p[0] for p in kv], torch.float32),
                            self.codec.decode([p[1] for p in kv], torch.float32)])
        return rows * self._stored(step)[None, :, None, :, None]

    @staticmethod
    def _gather(plane, layer: int, rows: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """plane[layer] [2, R, kv, S, w] at rows [b] and slots [b, t] -> [2, b, kv, t, w] (a copy)."""
        by_slot = plane[layer].permute(1, 3, 0, 2, 4)  # [R, S, 2, kv, w] view
        return by_slot[rows[:, None], slots].permute(2, 0, 3, 1, 4)  # [b, t, 2, kv, w] -> [2, b, kv, t, w]

    def _on_add(self, seq_id):
        super()._on_add(seq_id)
        self._slot_pos[seq_id] = [-1] * self.slots

    def _on_free(self, seq_id):
        super()._on_free(seq_id)
        del self._slot_pos[seq_id]

    def truncate(self, seq_id, n):
        """Back to n tokens, if the ring still holds every key the next query needs (the last window - 1)."""
        held = self._slot_pos[seq_id]
        needed = range(max(0, n - self.window + 1), n)
        if any(held[q % self.slots] != q for q in needed):
            raise ConfigError(f"the ring buffer keeps {self.slots} slots (window {self.window} + rollback "
                              f"{self.rollback}): it no longer holds the keys that going back from "
                              f"{self._lengths[seq_id]} to {n} tokens needs; raise kv_rollback")
        super().truncate(seq_id, n)

    def bytes_used(self) -> int:
        return sum(view_bytes(plane[:, :, self._row[s], :, :min(n, self.slots)]) for plane in self.storage
                   for s, n in self._lengths.items())

    def _snapshot_extra(self) -> dict:
        return {**super()._snapshot_extra(), "window": self.window, "rollback": self.rollback,
                "slots_per_row": self.slots}
