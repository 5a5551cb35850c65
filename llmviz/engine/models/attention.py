"""Self-attention with a KV cache and interchangeable backends (C3, C5, C14, C19, C20).

eager: materializes softmax(QK^T / sqrt(hd)) (the article's formula, readable, O(n^2) memory).
sdpa:  torch's scaled_dot_product_attention, which picks flash / memory-efficient / math per device;
       when capture asks for the map, it is rebuilt from q and k after the timed region.
flash: pinned to PyTorch's flash-attention kernel (CPU: any float dtype, masks allowed; CUDA: fp16/bf16,
       causal or no mask). It calls the kernel's own op rather than `sdpa_kernel(...)`, because that
       context manager flips process-wide flags, and Streamlit sessions are threads of one process.
Backends are looked up by name in ATTENTION_BACKENDS; each is one function of the same signature. A new one is
one call, `register_attention_backend(Extension(name, label, about, exact=...), fn)`: its name is then a choice
everywhere (EngineConfig, switch specs, the CLI, every page) with its own words; `unregister_attention_backend`
undoes a test's.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from llmviz.engine.capture import RunContext
from llmviz.engine.models.layers import Rotary
from llmviz.engine.registry import Registry
from llmviz.engine.step_batch import StepBatch, StepMask
from llmviz.errors import ConfigError
from llmviz.trace.config import ATTN_BACKENDS
from llmviz.trace.extensions import Extension
from llmviz.trace.hooks import LayerHookNames
from llmviz.trace.model_config import ModelConfig

ATTENTION_BACKENDS: Registry = Registry("attn_backend", ATTN_BACKENDS)


def register_attention_backend(declared: Extension | str, fn):
    """`fn(q, keys, values, mask, scale, names, ctx)` -> [b, h, n, hd] becomes the backend `declared` declares
    (llmviz/trace/extensions.py: its words, exact or lossy; a bare name has none). As eager below: q [b, h, n, hd],
    keys/values [b, kv, n_k, hd], mask a StepMask whose bool mask is None when every key is visible. At import
    or in a test's fixture, never per session."""
    if not callable(fn):
        raise ConfigError(f"an attention backend is a function, got {fn!r}")
    return ATTENTION_BACKENDS.declare(declared, fn)


def unregister_attention_backend(name: str) -> None:
    """Undo register_attention_backend; the stock backends stay."""
    ATTENTION_BACKENDS.remove(name)


# On a CPU, eager scores larger than this are computed a few heads at a time: still every head's whole [n, n_k]
# matrix, written and read back in memory, but a buffer that glibc keeps for reuse (its largest mmap threshold
# is 32 MiB; a larger one goes back to the OS after each layer and returns as page faults) and that stays near
# the caches. Measured (GPT-2-124M's shape, 2,047 tokens, one thread): 0.75 s a layer for all 12 heads at once,
# 0.35 s one head at a time. A GPU's caching allocator keeps its buffers: there all heads go at once.
EAGER_CHUNK_BYTES = 16 << 20


@ATTENTION_BACKENDS.register("eager")
def eager_attention(q, keys, values, mask: StepMask, scale: float, names: LayerHookNames, ctx: RunContext):
    """q [b, h, n, hd], keys/values [b, kv, n_k, hd] -> [b, h, n, hd]: softmax(QK^T * scale) V, a chunk of heads
    at a time (all of them when a hook asks for the scores or probabilities, or off a CPU)."""
    group = q.shape[1] // keys.shape[1]
    if group > 1:  # GQA: each KV head serves `group` query heads
        keys = keys.repeat_interleave(group, dim=1)  # [b, kv, n_k, hd] -> [b, h, n_k, hd]
        values = values.repeat_interleave(group, dim=1)
    hooked = ctx.wants(names.scores) or ctx.wants(names.probs)
    heads = q.shape[1] if hooked else _heads_per_chunk(q, keys)
    hidden = None if mask.mask is None else ~mask.mask  # [b, 1, n, n_k]: broadcast over each chunk's heads
    out = torch.empty_like(q)  # [b, h, n, hd]
    for start in range(0, q.shape[1], heads):
        part = slice(start, start + heads)
        _attend(q[:, part], keys[:, part], values[:, part], hidden, scale, out[:, part], names, ctx, mask.note)
    return out


def _heads_per_chunk(q, keys) -> int:
    """How many heads' scores an eager step computes at once: all of them, except on a CPU past EAGER_CHUNK_BYTES."""
    b, h, n, _ = q.shape
    if q.device.type != "cpu":
        return h
    per_head = b * n * keys.shape[2] * max(q.element_size(), 4)  # the softmax runs in fp32
    return max(1, min(h, EAGER_CHUNK_BYTES // per_head))


def _attend(q, keys, values, hidden, scale: float, out, names: LayerHookNames, ctx: RunContext, note: str) -> None:
    """One chunk of heads: q [b, c, n, hd], keys/values [b, c, n_k, hd] -> out [b, c, n, hd]. The hooks record
    only when the chunk is every head (eager_attention sees to it)."""
    scores = (q @ keys.transpose(-2, -1)).mul_(scale)  # [b, c, n, n_k]
    if hidden is not None:
        scores.masked_fill_(hidden, float("-inf"))
    ctx.hook(names.scores, scores, note=note, masked=True)
    probs = scores.float().softmax(dim=-1).to(q.dtype)  # [b, c, n, n_k]
    ctx.hook(names.probs, probs)
    torch.matmul(probs, values, out=out)


@ATTENTION_BACKENDS.register("sdpa")
def sdpa_attention(q, keys, values, mask: StepMask, scale: float, names: LayerHookNames, ctx: RunContext):
    gqa = q.shape[1] != keys.shape[1]
    if mask.causal_square:
        return F.scaled_dot_product_attention(q, keys, values, is_causal=True, scale=scale, enable_gqa=gqa)
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask.mask, scale=scale, enable_gqa=gqa)


_FLASH_DEVICES = "flash attention runs on the CPU (fp32, fp16, bf16) and on CUDA (fp16, bf16)"


@ATTENTION_BACKENDS.register("flash")
def flash_attention(q, keys, values, mask: StepMask, scale: float, names: LayerHookNames, ctx: RunContext):
    group = q.shape[1] // keys.shape[1]
    if group > 1:  # the kernel's own op wants one K/V head per query head
        keys, values = keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)
    try:
        return _flash_kernel(q, keys, values, mask, scale)
    except RuntimeError as exc:  # e.g. a head width the kernel does not take
        if "out of memory" in str(exc).lower():
            raise
        raise ConfigError(f"the flash kernel refused this input ({str(exc).splitlines()[0][:160]}); use "
                          "attn_backend sdpa") from exc


def _flash_kernel(q, keys, values, mask: StepMask, scale: float):
    causal = mask.causal_square
    if q.device.type == "cpu":
        bias = None
        if mask.mask is not None and not causal:  # the CPU kernel takes an additive mask in q's dtype
            bias = torch.zeros(mask.mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask.mask, float("-inf"))
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, keys, values, 0.0, causal, attn_mask=bias, scale=scale)[0]
    if q.device.type == "cuda" and q.dtype in (torch.float16, torch.bfloat16):
        if mask.mask is not None and not causal:
            raise ConfigError("the CUDA flash kernel takes no attention mask: a padded batch, a sliding window in "
                              "prefill or a block-sparse mask needs attn_backend sdpa or eager (or rows of equal "
                              "length)")
        return torch.ops.aten._scaled_dot_product_flash_attention(q, keys, values, 0.0, causal, False,
                                                                   scale=scale)[0]
    raise ConfigError(f"no flash kernel for {q.device.type} in {str(q.dtype).removeprefix('torch.')}: "
                      f"{_FLASH_DEVICES}; use attn_backend sdpa or eager")


def packed_attention(q, keys, values, mask: StepMask, scale: float, names: LayerHookNames,
                     step: StepBatch) -> torch.Tensor:
    """q [1, h, m, hd] packed; keys/values [b, kv, n_k, hd] each row's cache -> [1, h, m, hd].

    One backend call per group of equally wide rows (step.groups), so a prefill chunk beside one-token
    rows pads no query. A packed step records no hooks, so the backends get a context that records none."""
    backend, ctx = ATTENTION_BACKENDS.get(step.backend), RunContext()
    h, hd = q.shape[1], q.shape[3]
    out = torch.empty_like(q[0])  # [h, m, hd]
    for g in step.groups:
        # consecutive rows (the usual case: decode rows come first, a chunk is one row) are read through views
        rows, tokens = (g.rows, g.tokens) if g.span is None else (slice(*g.span[:2]), slice(*g.span[2:]))
        n, count = g.width, len(g.rows)
        q_g = q[0][:, tokens].view(h, count, n, hd).transpose(0, 1)  # [g, h, n, hd]
        k_g, v_g = keys[rows], values[rows]  # [g, kv, n_k, hd]
        m_g = mask.mask[rows][:, :, g.first_col:g.first_col + n]  # [g, 1, n, n_k]
        sub = StepMask(m_g, False, 0, mask.window, padded=True, sparse=mask.sparse)
        o_g = backend(q_g, k_g, v_g, sub, scale, names, ctx)  # [g, h, n, hd]
        out[:, tokens] = o_g.transpose(0, 1).reshape(h, count * n, hd)
    return out[None]


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

    def qkv(self, x: torch.Tensor, rope):
        """x [b, n, d] (normed) -> q [b, h, n, hd], k and v [b, kv, n, hd], with rotary positions when `rope`."""
        q, k, v = self.project(x)
        if rope is not None:
            q, k = Rotary.apply(q, *rope), Rotary.apply(k, *rope)
        return q, k, v

    def forward(self, x, rope, cache, step: StepBatch, mask: StepMask, ctx: RunContext):
        """x [b, n, d] (normed) -> [b, n, d]. `rope` is (cos, sin) or None; `cache` may be None.
        A packed step passes x [1, m, d]: attention itself runs on the padded rows, then packs again."""
        names = self.names
        q, k, v = self.qkv(x, rope)
        if step.packed:  # the cache stores padded rows: [1, kv, m, hd] -> [b, kv, n, hd]
            k, v = step.unpack(k), step.unpack(v)
        ctx.hook(names.q, q)
        ctx.hook(names.k, k)
        ctx.hook(names.v, v)
        if cache is not None:
            keys, values = cache.write(self.layer, step, k, v)  # [b, kv, key_len, hd]
        else:
            keys, values = k, v
        if mask.key_start:
            keys, values = keys[:, :, mask.key_start:], values[:, :, mask.key_start:]  # the window
        if step.packed:
            out = packed_attention(q, keys, values, mask, self.scale, names, step)  # [1, h, m, hd]
        else:
            out = ATTENTION_BACKENDS.get(step.backend)(q, keys, values, mask, self.scale, names, ctx)
            # a backend that built no map (sdpa, flash, an extension's): rebuilt after the timed region
            ctx.rebuild_later(names.scores, names.probs, q, keys, mask.mask, self.scale, mask.note)
        b, _, n, _ = out.shape
        out = out.transpose(1, 2).reshape(b, n, -1)  # [b, h, n, hd] -> [b, n, h*hd]
        return ctx.hook(names.attn_out, self.o_proj(out))
