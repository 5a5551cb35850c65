"""Two extensions written as a user would write them: each is one declaration (its words in English and
Chinese, exact, the options it reads, its slot rule) and one implementation, registered with one call. Nothing
else in llmviz names them: the tests open every page, the CLI and the switch list with them.

- "chunked", a KV layout: each sequence's rows grow by whole chunks of kv_block_size slots (a copy at each new
  chunk, not at each token as the growing layout does); priced by its own slot rule, ceil(held / chunk) * chunk.
- "online", an attention backend: softmax over the keys a chunk at a time with a running maximum and sum (the
  recurrence flash attention computes), written out in tensor operations; exact up to rounding.

`registered()` adds both and takes them back however the test ends; toy_plugin.py registers them for good, for a
fresh process that names it in LLMVIZ_EXTENSIONS.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from llmviz.engine.kv import register_kv_layout, unregister_kv_layout
from llmviz.engine.kv.base import view_bytes
from llmviz.engine.kv.dynamic import DynamicKVCache
from llmviz.engine.models.attention import register_attention_backend, unregister_attention_backend
from llmviz.trace.extensions import Extension

KEY_CHUNK = 16  # keys per step of the online softmax


def chunk_slots(held: int, max_seq: int, window: int, block: int) -> int:
    """Whole chunks of `block` slots; it keeps every token (a window is the mask's alone)."""
    return math.ceil(held / block) * block


CHUNKED = Extension(
    "chunked", {"en": "Chunked", "zh": "分块增长"}, slots=chunk_slots, options=("kv_block_size",), growth="copies",
    about={"en": "Each sequence grows by whole chunks of block-size slots: one copy per chunk, not per token.",
           "zh": "每个序列按整块（块大小个槽位）增长：每满一块复制一次，而不是每个 token 复制一次。"})
ONLINE = Extension(
    "online", {"en": "Online softmax", "zh": "在线 softmax"}, scores=False,
    about={"en": "The keys 16 at a time with a running maximum and sum: flash attention's recurrence, written out.",
           "zh": "每次 16 个键，随时维护最大值与累加和：flash attention 的递推，逐步写出。"})


class ChunkedKVCache(DynamicKVCache):
    """The growing layout's per-sequence tensors (its `_store_of`, its byte counts), grown a chunk at a time."""

    layout = "chunked"

    def __init__(self, cfg, max_seq, capacity, codec, device, block_size: int = 16, **_):
        super().__init__(cfg, max_seq, capacity, codec, device)
        self.chunk = block_size

    def _resize(self, seq_id: int, tokens: int) -> None:
        """Every layer's planes [2, kv, slots, w] to the whole chunks that hold `tokens` (a copy when that
        changes)."""
        slots = chunk_slots(tokens, self.max_seq, 0, self.chunk)
        for planes in self._store_of[seq_id]:
            for j, p in enumerate(planes):
                if p.shape[2] != slots:
                    grown = p.new_zeros((*p.shape[:2], slots, p.shape[3]))
                    keep = min(slots, p.shape[2])
                    grown[:, :, :keep] = p[:, :, :keep]
                    planes[j] = grown

    def _on_truncate(self, seq_id, n):
        self._resize(seq_id, n)

    def _reserve(self, step):
        for seq_id, start, n in zip(step.seq_ids, step.start_list, step.n_real, strict=True):
            if start + n > self._store_of[seq_id][0][0].shape[2]:
                self._resize(seq_id, start + n)
        return None

    def _store(self, layer, step, kp, vp):
        for i, (seq_id, start, n) in enumerate(zip(step.seq_ids, step.start_list, step.n_real, strict=True)):
            if not n:
                continue
            last = int(step.last_cols[i])
            cols = slice(last - n + 1, last + 1)  # the step's columns of this row's real tokens
            for p, k, v in zip(self._store_of[seq_id][layer], kp, vp, strict=True):
                p[0, :, start:start + n] = k[i, :, cols]
                p[1, :, start:start + n] = v[i, :, cols]

    def _load(self, layer, step):
        t = step.key_len
        out = []
        for j in range(len(self.planes)):
            rows = [self._store_of[s][layer][j][:, :, :t] for s in step.seq_ids]  # [2, kv, <=t, w]
            out.append(torch.stack([F.pad(r, (0, 0, 0, t - r.shape[2])) for r in rows], dim=1))  # [2, b, kv, t, w]
        return [p[0] for p in out], [p[1] for p in out]

    def bytes_used(self) -> int:
        return sum(view_bytes(p[:, :, :self.length(s)]) for s, layers in self._store_of.items() for planes in layers
                   for p in planes)

    def slots_allocated(self) -> int:
        return sum(layers[0][0].shape[2] for layers in self._store_of.values())

    def _snapshot_extra(self) -> dict:
        return {}  # it copies a chunk at a time, not each step: the growing layout's counters would mislead


class OnlineAttention:
    """The backend: a function of the stock signature, counting its calls (so a test sees that it ran)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, q, keys, values, mask, scale, names, ctx):
        """q [b, h, n, hd], keys/values [b, kv, n_k, hd] -> [b, h, n, hd], KEY_CHUNK keys at a time."""
        self.calls += 1
        group = q.shape[1] // keys.shape[1]  # GQA: each KV head serves `group` query heads
        keys, values = keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)
        top = torch.full((*q.shape[:3], 1), float("-inf"), dtype=torch.float32, device=q.device)  # [b, h, n, 1]
        total = torch.zeros_like(top)
        acc = torch.zeros(q.shape, dtype=torch.float32, device=q.device)  # [b, h, n, hd]
        for start in range(0, keys.shape[2], KEY_CHUNK):
            part = slice(start, start + KEY_CHUNK)
            scores = (q.float() @ keys[:, :, part].float().transpose(-1, -2)) * scale  # [b, h, n, c]
            if mask.mask is not None:
                scores = scores.masked_fill(~mask.mask[..., part], float("-inf"))
            new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
            safe = torch.where(torch.isinf(new_top), torch.zeros_like(new_top), new_top)  # a row with no key yet
            weights = torch.exp(scores - safe)
            rescale = torch.exp(top - safe)
            total = total * rescale + weights.sum(dim=-1, keepdim=True)
            acc = acc * rescale + weights @ values[:, :, part].float()
            top = new_top
        return (acc / total).to(q.dtype)


def register_both() -> OnlineAttention:
    """Both extensions, one call each; the backend's instance (its call count)."""
    backend = OnlineAttention()
    register_kv_layout(CHUNKED, ChunkedKVCache)
    try:
        register_attention_backend(ONLINE, backend)
    except BaseException:
        unregister_kv_layout(CHUNKED.name)
        raise
    return backend


def unregister_both() -> None:
    unregister_attention_backend(ONLINE.name)
    unregister_kv_layout(CHUNKED.name)


@contextmanager
def registered():
    """Both extensions, one call each, undone however the block ends; yields the backend (its call count)."""
    backend = register_both()
    try:
        yield backend
    finally:
        unregister_both()
