"""Shared building blocks: norms, rotary position embedding, MLPs (C2, C3).

Every block is stateless at run time: the forward pass mutates nothing, so one cached model can serve
several Streamlit sessions (threads) at once.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from llmviz.trace.model_config import ModelConfig


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, computed in fp32 as the Llama family does."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [b, n, d] -> [b, n, d]
        dtype = x.dtype
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(dtype)


def make_norm(cfg: ModelConfig) -> nn.Module:
    if cfg.norm == "rms":
        return RMSNorm(cfg.hidden_size, cfg.norm_eps)
    return nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)


def activation(name: str):
    return {
        "silu": F.silu,
        "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "relu": F.relu,
    }[name]


def _same(t: torch.Tensor) -> torch.Tensor:
    return t


class GatedMLP(nn.Module):
    """SwiGLU: down(act(gate(x)) * up(x)), the Llama-family MLP; gate and up as one matmul when fused (C10)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, f = cfg.hidden_size, cfg.intermediate_size
        self.fused = cfg.fused_mlp
        if self.fused:
            self.gate_up_proj = nn.Linear(d, 2 * f, bias=cfg.mlp_bias)
        else:
            self.gate_proj = nn.Linear(d, f, bias=cfg.mlp_bias)
            self.up_proj = nn.Linear(d, f, bias=cfg.mlp_bias)
        self.down_proj = nn.Linear(f, d, bias=cfg.mlp_bias)
        self.act = activation(cfg.activation)

    def forward(self, x: torch.Tensor, hook=_same) -> torch.Tensor:  # [b, n, d] -> [b, n, f] -> [b, n, d]
        if self.fused:
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)  # [b, n, 2f] -> 2 x [b, n, f]
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(hook(self.act(gate) * up))  # hook: the hidden activation [b, n, f]


class PlainMLP(nn.Module):
    """proj(act(fc(x))), the GPT-2 MLP."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, f = cfg.hidden_size, cfg.intermediate_size
        self.fc = nn.Linear(d, f, bias=cfg.mlp_bias)
        self.proj = nn.Linear(f, d, bias=cfg.mlp_bias)
        self.act = activation(cfg.activation)

    def forward(self, x: torch.Tensor, hook=_same) -> torch.Tensor:  # [b, n, d] -> [b, n, f] -> [b, n, d]
        return self.proj(hook(self.act(self.fc(x))))  # hook: the hidden activation [b, n, f]


def make_mlp(cfg: ModelConfig) -> nn.Module:
    return GatedMLP(cfg) if cfg.mlp == "gated" else PlainMLP(cfg)


def rope_inv_freq(cfg: ModelConfig) -> torch.Tensor:
    """Inverse frequencies theta^(-2i/hd) of the hd/2 dimension pairs, with the config's scaling. On the CPU, whatever
    the default device: a model built on the meta device still gets real values (and its ops import no torch._dynamo).
    """
    hd = cfg.head_dim
    pairs = torch.arange(0, hd, 2, dtype=torch.int64, device="cpu").float()
    inv_freq = 1.0 / (cfg.rope_theta ** (pairs / hd))  # [hd/2]
    scaling = cfg.rope_scaling
    rope_type = scaling.get("rope_type", "default")
    if rope_type == "linear":
        inv_freq = inv_freq / scaling["factor"]
    elif rope_type == "llama3":
        # Llama 3.1: keep high frequencies, divide low ones by `factor`, blend smoothly in between.
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_len = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old_len / low, old_len / high
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (old_len / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        inv_freq = torch.where(medium, blended, scaled)
    return inv_freq


class Rotary(nn.Module):
    """RoPE: rotates each (i, i + hd/2) pair of q and k by position * inv_freq[i]."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.register_buffer("inv_freq", rope_inv_freq(cfg), persistent=False)  # [hd/2]

    def angles(self, positions: torch.Tensor) -> torch.Tensor:
        """[b, n] integer positions -> [b, n, hd/2] rotation angles in radians (fp32)."""
        return positions[:, :, None].float() * self.inv_freq[None, None, :].float()

    @staticmethod
    def cos_sin(angles: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        emb = torch.cat((angles, angles), dim=-1)  # [b, n, hd]
        return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]  # [b, 1, n, hd] each

    @staticmethod
    def apply(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """x [b, heads, n, hd] rotated; the half-split pairing matches Hugging Face's weight layout."""
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin
