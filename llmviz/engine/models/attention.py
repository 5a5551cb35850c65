"""Self-attention with a KV cache and two backends (C3, C5, C14, C19, C20).

eager: materializes softmax(QK^T / sqrt(hd)) (the article's formula, readable, O(n^2) memory).
sdpa:  torch's scaled_dot_product_attention, which picks flash / memory-efficient / math per device;
       when capture asks for the map, it is rebuilt from q and k after the timed region.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from llmviz.engine.capture import PendingAttention, RunContext
from llmviz.engine.hook_points import LayerHookNames
from llmviz.engine.models.config import ModelConfig
from llmviz.engine.models.layers import Rotary


@dataclass(frozen=True)
class StepMask:
    """Which keys each query may see, for one step and one window size.

    mask: [b, 1, n, n_k] bool (True = may attend), or None when every cached key is visible
    (a decode step without a window). causal_square: the step is a prefill from position 0 without
    a window, which SDPA can run with is_causal=True (and so pick the flash kernel).
    """

    mask: torch.Tensor | None
    causal_square: bool
    key_start: int  # first cached position the queries read (> 0 only for a sliding window in decode)
    window: int = 0

    @property
    def note(self) -> str:
        """What the mask did, in words (recorded with the scores)."""
        window = f" within a {self.window}-token sliding window" if self.window else ""
        if self.mask is None:
            return f"no mask needed: the one new query may see every cached key{window}"
        return f"causal mask{window}: -inf where a query may not look"


def step_mask(q_pos: torch.Tensor, total: int, window: int) -> StepMask:
    """q_pos [b, n] positions of this step's queries; keys are positions 0..total-1."""
    n = q_pos.shape[1]
    if n == 1:
        start = max(0, total - window) if window else 0
        return StepMask(None, False, start, window)  # one query sees every key from `start` on
    k_pos = torch.arange(total, device=q_pos.device)
    diff = q_pos[:, :, None] - k_pos[None, None, :]  # [b, n, n_k]
    allowed = diff >= 0
    if window:
        allowed &= diff < window
    return StepMask(allowed[:, None], total == n and not window, 0, window)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.cfg, self.layer = cfg, layer
        h, kv, hd, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.hidden_size
        if cfg.fused_qkv:
            self.qkv_proj = nn.Linear(d, (h + 2 * kv) * hd, bias=cfg.qkv_bias)
        else:
            self.q_proj = nn.Linear(d, h * hd, bias=cfg.qkv_bias)
            self.k_proj = nn.Linear(d, kv * hd, bias=cfg.qkv_bias)
            self.v_proj = nn.Linear(d, kv * hd, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(h * hd, d, bias=cfg.out_bias)
        self.scale = 1.0 / math.sqrt(hd)
        self.names = LayerHookNames.for_layer(layer)

    def project(self, x: torch.Tensor):
        """x [b, n, d] -> q [b, h, n, hd], k and v [b, kv, n, hd]."""
        b, n, _ = x.shape
        c = self.cfg
        if c.fused_qkv:
            q, k, v = self.qkv_proj(x).split([c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim,
                                              c.num_kv_heads * c.head_dim], dim=-1)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(b, n, c.num_heads, c.head_dim).transpose(1, 2)  # [b, n, h*hd] -> [b, h, n, hd]
        k = k.view(b, n, c.num_kv_heads, c.head_dim).transpose(1, 2)  # -> [b, kv, n, hd]
        v = v.view(b, n, c.num_kv_heads, c.head_dim).transpose(1, 2)  # -> [b, kv, n, hd]
        return q, k, v

    def forward(self, x, rope, cache, start: int, mask: StepMask, backend: str, ctx: RunContext):
        """x [b, n, d] (normed) -> [b, n, d]. `rope` is (cos, sin) or None; `cache` may be None."""
        b, n, _ = x.shape
        names = self.names
        q, k, v = self.project(x)
        if rope is not None:
            q, k = Rotary.apply(q, *rope), Rotary.apply(k, *rope)
        ctx.hook(names.q, q)
        ctx.hook(names.k, k)
        ctx.hook(names.v, v)
        if cache is not None:
            keys, values = cache.write(self.layer, start, k, v)  # [b, kv, start+n, hd]
        else:
            keys, values = k, v
        if mask.key_start:
            keys, values = keys[:, :, mask.key_start:], values[:, :, mask.key_start:]  # the window
        out = self._eager(q, keys, values, mask, ctx) if backend == "eager" else self._sdpa(q, keys, values, mask, ctx)
        out = out.transpose(1, 2).reshape(b, n, -1)  # [b, h, n, hd] -> [b, n, h*hd]
        return ctx.hook(names.attn_out, self.o_proj(out))

    def _eager(self, q, keys, values, mask: StepMask, ctx: RunContext):
        group = self.cfg.group_size
        if group > 1:  # GQA: each KV head serves `group` query heads
            keys = keys.repeat_interleave(group, dim=1)  # [b, kv, n_k, hd] -> [b, h, n_k, hd]
            values = values.repeat_interleave(group, dim=1)
        scores = (q @ keys.transpose(-2, -1)) * self.scale  # [b, h, n, n_k]
        if mask.mask is not None:
            scores = scores.masked_fill(~mask.mask, float("-inf"))
        ctx.hook(self.names.scores, scores, note=mask.note, masked=True)
        probs = scores.float().softmax(dim=-1).to(q.dtype)  # [b, h, n, n_k]
        ctx.hook(self.names.probs, probs)
        return probs @ values  # [b, h, n, hd]

    def _sdpa(self, q, keys, values, mask: StepMask, ctx: RunContext):
        if ctx.wants(self.names.scores) or ctx.wants(self.names.probs):
            ctx.pending_attention.append(PendingAttention(
                self.layer, self.names.scores, self.names.probs, q, keys, mask.mask, self.scale, mask.note))
        gqa = self.cfg.group_size > 1
        if mask.causal_square:
            return F.scaled_dot_product_attention(q, keys, values, is_causal=True, scale=self.scale,
                                                  enable_gqa=gqa)
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask.mask, scale=self.scale,
                                              enable_gqa=gqa)
