"""RunContext: the per-step object the forward pass calls its hook points through.

One is made for every step of every session, so two sessions on one cached model never share
captures, and nothing is registered on the model. Capture levels:
  off  - hooks return at once; no hook records (the step itself still keeps its logits, tokens, KV
         snapshot and timings: see recording.py).
  meta - shape, dtype, bytes and L2 norm of every hook tensor (norms read once at the end of the step).
  full - meta plus a float32 CPU copy of every tensor whose name passes the filter patterns and whose hook
         point is in `copy_points` (None: all of them; a session's budget plans the set, trace/budget.py).
The copy is made inside the timed region (its cost shows); turning it into numpy happens after. A K or V row that
is not copied still keeps the norm of each row (the cache grid colours every cached row by it).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import torch

from llmviz.engine.timing import StepTimer
from llmviz.errors import ConfigError
from llmviz.trace.config import CAPTURE_LEVELS
from llmviz.trace.hooks import matches, point_of, writes_cache_rows
from llmviz.trace.records import RECOMPUTED_NOTE

# torch.float32 -> "float32" for the dtypes a hook holds (read-only; another dtype is named when it is met)
_DTYPE_NAMES = MappingProxyType({d: str(d).removeprefix("torch.") for d in (
    torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.int8, torch.uint8,
    torch.bool)})


@dataclass
class _Pending:
    shape: tuple
    dtype: str
    nbytes: int
    norm: torch.Tensor | None
    copy: np.ndarray | None  # float32, owned by numpy
    note: str
    recomputed: bool = False  # rebuilt after the timed region from the recorded q and k (rebuild_attention)
    row_norms: torch.Tensor | None = None  # [..., n] a K or V record's row norms when its rows are not copied


@dataclass
class PendingAttention:
    """What a fast attention backend leaves behind so the map can be rebuilt after the timed region."""

    scores_name: str
    probs_name: str
    q: torch.Tensor  # [b, h, n, hd]
    k: torch.Tensor  # [b, kv, n_k, hd]
    mask: torch.Tensor | None  # [b, 1, n, n_k] bool, True = may attend
    scale: float
    mask_note: str = ""


@dataclass
class RunContext:
    capture: str = "off"
    patterns: tuple = ()
    timer: StepTimer | None = None
    keep_lens: bool = False  # keep each layer's last-position residual for the logit lens
    records: dict = field(default_factory=dict)
    pending_attention: list = field(default_factory=list)
    lens_resid: list = field(default_factory=list)  # [b, d] views, one per layer
    copy_points: frozenset | None = None  # the hook points "full" copies (None: every one); trace.budget plans it

    def __post_init__(self):
        if self.capture not in CAPTURE_LEVELS:
            raise ConfigError(f"capture={self.capture!r} is not one of {CAPTURE_LEVELS}")
        self.active = self.capture != "off"
        self._match_cache: dict[str, bool] = {}

    def wants(self, name: str) -> bool:
        if not self.active:
            return False
        hit = self._match_cache.get(name)
        if hit is None:
            hit = self._match_cache[name] = matches(name, self.patterns)
        return hit

    def hook(self, name: str, tensor: torch.Tensor, note: str = "", masked: bool = False) -> torch.Tensor:
        """Record `tensor` under `name` at the run's capture level; always returns it unchanged."""
        if self.active and self.wants(name):
            self.records[name] = self._pending(name, tensor, note, masked)
        return tensor

    def copies(self, name: str) -> bool:
        """Whether capture "full" keeps a copy of this hook's tensor (within the session's planned budget)."""
        return self.capture == "full" and (self.copy_points is None or point_of(name) in self.copy_points)

    def _pending(self, name: str, tensor: torch.Tensor, note: str, masked: bool, recomputed: bool = False) -> _Pending:
        t = tensor.detach()
        values = torch.nan_to_num(t.float(), neginf=0.0) if masked else t.float()
        copy, row_norms = None, None
        if self.copies(name):  # numpy owns the copy: no torch tensor is kept alive per record
            copy = np.empty(t.shape, np.float32)
            torch.from_numpy(copy).copy_(t)
        elif self.capture == "full" and writes_cache_rows(name):
            row_norms = torch.linalg.vector_norm(values, dim=-1)  # [b, kv, n, hd] -> [b, kv, n]
        # linalg's norm, not Tensor.norm: the same value without torch.functional's Python dispatch, ~140 calls a
        # step at capture meta (meta within 1.10x of off)
        dtype = _DTYPE_NAMES.get(t.dtype) or sys.intern(str(t.dtype).removeprefix("torch."))
        return _Pending(tuple(t.shape), dtype, t.numel() * t.element_size(), torch.linalg.vector_norm(values), copy,
                        note, recomputed, row_norms)

    def mark(self, label: str) -> None:
        if self.timer is not None:
            self.timer.mark(label)

    def rebuild_later(self, scores_name: str, probs_name: str, q, k, mask, scale: float, mask_note: str) -> None:
        """After any backend but the one that recorded them (eager): if a hook wants a layer's scores or
        probabilities and none were recorded, keep q [b, h, n, hd] and k [b, kv, n_k, hd] to rebuild them after
        the timed region. So a backend an extension registers shows its maps as sdpa's are shown."""
        if not self.active:  # capture off: every layer of every step passes here
            return
        if any(self.wants(n) and n not in self.records for n in (scores_name, probs_name)):
            self.pending_attention.append(PendingAttention(scores_name, probs_name, q, k, mask, scale, mask_note))

    def rebuild_attention(self) -> None:
        """Recompute scores/probs that a fused backend never materialized (after the timed region)."""
        for item in self.pending_attention:
            k = item.k.repeat_interleave(item.q.shape[1] // item.k.shape[1], dim=1)  # [b, h, n_k, hd]
            scores = (item.q.float() @ k.float().transpose(-2, -1)) * item.scale  # [b, h, n, n_k]
            if item.mask is not None:
                scores = scores.masked_fill(~item.mask, float("-inf"))
            note = f"{RECOMPUTED_NOTE} after the timed region from the recorded q and k (the backend never built it)"
            if self.wants(item.scores_name):
                self.records[item.scores_name] = self._pending(item.scores_name, scores, f"{note}; {item.mask_note}",
                                                               masked=True, recomputed=True)
            if self.wants(item.probs_name):
                self.records[item.probs_name] = self._pending(item.probs_name, scores.softmax(-1), note, masked=False,
                                                              recomputed=True)
        self.pending_attention.clear()

    def finish(self) -> list[dict]:
        """Hook records as plain dicts of numbers and numpy arrays (one device sync here)."""
        out = []
        norms = [p.norm for p in self.records.values()]
        values = torch.stack(norms).cpu().tolist() if norms else []
        for (name, p), norm in zip(self.records.items(), values, strict=True):
            out.append({
                "name": name, "shape": list(p.shape), "dtype": p.dtype, "nbytes": p.nbytes,
                "norm": float(norm) if math.isfinite(norm) else None, "note": p.note,
                "recomputed": p.recomputed, "array": p.copy,
                "row_norms": None if p.row_norms is None else p.row_norms.float().cpu().numpy(),
            })
        self.records = {}
        return out
