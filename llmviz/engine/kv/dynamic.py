"""Dynamic layout: each sequence's K and V grow by `torch.cat` at every step, as the article shows (C6, C8).

Nothing is preallocated and nothing is wasted, but every step copies the whole cache of every layer
into a new tensor one row longer (the old one is freed): the cost that preallocation avoids. The snapshot
counts it: the bytes of the old tensors `torch.cat` copied in the last step and since the cache was made
(all layers, K and V, every plane). A batch of rows with different lengths is padded into one tensor when
it is read.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from llmviz.engine.kv.base import KVCache, storage_bytes, view_bytes


class DynamicKVCache(KVCache):
    layout = "dynamic"

    def __init__(self, cfg, max_seq, capacity, codec, device, **_):
        super().__init__(cfg, max_seq, capacity, codec, device)
        # seq_id -> per layer -> per plane -> [2, kv, t, w]
        self._store_of: dict[int, list[list[torch.Tensor]]] = {}
        self.copied_step = 0  # bytes of old rows torch.cat copied in the last step (reset by each reserve)
        self.copied_total = 0  # ... and since the cache was made

    def _empty(self) -> list[torch.Tensor]:
        kv = self.cfg.num_kv_heads
        return [torch.empty((2, kv, 0, p.width), dtype=p.dtype, device=self.device) for p in self.planes]

    def _on_add(self, seq_id):
        self._store_of[seq_id] = [self._empty() for _ in range(self.cfg.num_layers)]

    def _on_free(self, seq_id):
        del self._store_of[seq_id]

    def _on_truncate(self, seq_id, n):
        layers = self._store_of[seq_id]
        for i, planes in enumerate(layers):
            layers[i] = [p[:, :, :n].clone() for p in planes]  # a copy, so the longer tensor is freed

    def _reserve(self, step):
        self.copied_step = 0  # a new step begins
        return None

    def _store(self, layer, step, kp, vp):
        for i, seq_id in enumerate(step.seq_ids):
            k_new = step.n_real[i]
            if not k_new:
                continue
            last = int(step.last_cols[i])
            cols = slice(last - k_new + 1, last + 1)
            planes = self._store_of[seq_id][layer]
            for j, (k, v) in enumerate(zip(kp, vp, strict=True)):
                new = torch.stack([k[i, :, cols], v[i, :, cols]])  # [2, kv, k_new, w]
                copied = view_bytes(planes[j])  # the old tensor, copied whole into the new one
                planes[j] = torch.cat([planes[j], new], dim=2)  # the article's growth: copy, one row longer
                self.copied_step += copied
                self.copied_total += copied

    def _load(self, layer, step):
        t = step.key_len
        per_row = [self._store_of[s][layer] for s in step.seq_ids]
        out = []
        for j in range(len(self.planes)):
            tensors = [planes[j] for planes in per_row]  # [2, kv, t_i, w]
            if len(tensors) == 1:
                both = tensors[0][:, None]  # [2, 1, kv, t, w], a view
            else:
                both = torch.stack([F.pad(x, (0, 0, 0, t - x.shape[2])) for x in tensors], dim=1)
            out.append(both)
        return [p[0] for p in out], [p[1] for p in out]

    def _tensors(self):
        return [p for layers in self._store_of.values() for planes in layers for p in planes]

    def bytes_allocated(self) -> int:
        return storage_bytes(self._tensors())

    def bytes_used(self) -> int:
        return sum(view_bytes(p) for p in self._tensors())

    def slots_allocated(self) -> int:
        return self.tokens_used

    def _snapshot_extra(self) -> dict:
        return {"bytes_copied_step": self.copied_step, "bytes_copied_total": self.copied_total}
