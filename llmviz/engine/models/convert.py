"""Load-time switches that rewrite the weights: grouped-query attention by mean-pooling, and fused or
split projections (C10, C19).

Both work on our parameter names, between reading the checkpoint and building the model:

  kv_heads N   each new KV head is the mean of r = kv_heads_before / N consecutive old heads' K and V
               weights and biases (the GQA paper's conversion; query head j keeps reading group j // (h/N)).
               GPT-2's fused c_attn is split first. Mean-pooling alone costs quality; the embedded
               model also ships uptrained GQA versions (see assets/).
  fused on     q, k, v become one [(h + 2kv) * hd, d] matmul, and a gated MLP's gate and up one [2f, d]
               matmul; `off` splits them again; `auto` keeps what the checkpoint stores.
Exact switches: fused on/off changes no logit beyond rounding; kv_heads is lossy.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from llmviz.errors import ConfigError
from llmviz.trace.config import FUSED_CHOICES
from llmviz.trace.model_config import ModelConfig


def check_kv_heads(cfg: ModelConfig, kv_heads: int) -> None:
    if not isinstance(kv_heads, int) or kv_heads < 1:
        raise ConfigError(f"kv_heads must be a positive integer, got {kv_heads!r}")
    if cfg.num_heads % kv_heads:
        raise ConfigError(f"kv_heads={kv_heads} must divide the {cfg.num_heads} query heads: each KV head "
                          "serves a whole group of query heads")
    if cfg.num_kv_heads % kv_heads:
        raise ConfigError(f"kv_heads={kv_heads} must divide the checkpoint's {cfg.num_kv_heads} KV heads: "
                          "mean-pooling merges whole groups of them")


def _split_qkv(cfg: ModelConfig, state: dict, layer: int) -> None:
    p = f"layers.{layer}.attn."
    sizes = [cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim]
    for kind in ("weight", "bias"):
        if p + f"qkv_proj.{kind}" in state:
            q, k, v = state.pop(p + f"qkv_proj.{kind}").split(sizes, dim=0)
            state.update({p + f"q_proj.{kind}": q, p + f"k_proj.{kind}": k, p + f"v_proj.{kind}": v})


def _fuse_qkv(state: dict, layer: int) -> None:
    p = f"layers.{layer}.attn."
    for kind in ("weight", "bias"):
        if p + f"q_proj.{kind}" in state:
            parts = [state.pop(p + f"{name}_proj.{kind}") for name in ("q", "k", "v")]
            state[p + f"qkv_proj.{kind}"] = torch.cat(parts, dim=0)  # [(h + 2kv) * hd, d] or [(h + 2kv) * hd]


def _pool_heads(t: torch.Tensor, heads: int, new: int) -> torch.Tensor:
    """[heads * hd, ...] -> [new * hd, ...]: the mean over each run of heads // new consecutive heads."""
    hd = t.shape[0] // heads
    grouped = t.reshape(new, heads // new, hd, *t.shape[1:])  # [new, r, hd, ...]
    return grouped.mean(dim=1).reshape(new * hd, *t.shape[1:])


def _gate_up(state: dict, layer: int, fuse: bool) -> None:
    p = f"layers.{layer}.mlp."
    for kind in ("weight", "bias"):
        if fuse and p + f"gate_proj.{kind}" in state:
            state[p + f"gate_up_proj.{kind}"] = torch.cat([state.pop(p + f"gate_proj.{kind}"),
                                                          state.pop(p + f"up_proj.{kind}")], dim=0)
        elif not fuse and p + f"gate_up_proj.{kind}" in state:
            gate, up = state.pop(p + f"gate_up_proj.{kind}").chunk(2, dim=0)
            state.update({p + f"gate_proj.{kind}": gate, p + f"up_proj.{kind}": up})


def convert(cfg: ModelConfig, state: dict, kv_heads: int | None = None,
            fused: str = "auto") -> tuple[ModelConfig, dict]:
    """The config and parameters of the model the switches ask for (state is changed in place)."""
    if fused not in FUSED_CHOICES:
        raise ConfigError(f"fused_qkv={fused!r} is not one of {', '.join(FUSED_CHOICES)}")
    if kv_heads is not None and kv_heads != cfg.num_kv_heads:
        check_kv_heads(cfg, kv_heads)
        for layer in range(cfg.num_layers):
            _split_qkv(cfg, state, layer)
            p = f"layers.{layer}.attn."
            for name in ("k_proj", "v_proj"):
                for kind in ("weight", "bias"):
                    if p + f"{name}.{kind}" in state:
                        state[p + f"{name}.{kind}"] = _pool_heads(state[p + f"{name}.{kind}"], cfg.num_kv_heads,
                                                                  kv_heads)
        cfg = replace(cfg, num_kv_heads=kv_heads, fused_qkv=False)
        if fused == "auto" and cfg.family == "gpt2":
            fused = "on"  # GPT-2 keeps its one fused projection
    if fused == "auto":
        return cfg, state
    fuse = fused == "on"
    for layer in range(cfg.num_layers):
        if fuse:
            _fuse_qkv(state, layer)
        else:
            _split_qkv(cfg, state, layer)
        if cfg.mlp == "gated":
            _gate_up(state, layer, fuse)
    return replace(cfg, fused_qkv=fuse, fused_mlp=fuse and cfg.mlp == "gated"), state
