"""Next-token sampling: repetition penalty, temperature, top-k, top-p, then a seeded draw (C5).

Each session owns its torch.Generator, so the same settings and seed give the same tokens, and two
sessions never disturb each other's random stream.
"""

from __future__ import annotations

import torch

from llmviz.engine.config import SamplingConfig


def apply_repetition_penalty(logits: torch.Tensor, history: torch.Tensor, penalty: float) -> torch.Tensor:
    """logits [b, V], history [b, t]: seen tokens' logits divided by penalty if > 0, else multiplied."""
    if penalty == 1.0 or history.numel() == 0:
        return logits
    seen = logits.gather(1, history)  # [b, t]
    seen = torch.where(seen > 0, seen / penalty, seen * penalty)
    return logits.scatter(1, history, seen)


def filter_logits(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """Temperature, then top-k, then top-p: logits [b, V] with excluded tokens at -inf."""
    logits = logits / cfg.temperature
    if 0 < cfg.top_k < logits.shape[-1]:
        kth = logits.topk(cfg.top_k, dim=-1).values[:, -1:]  # [b, 1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if cfg.top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        cumulative = sorted_logits.softmax(-1).cumsum(-1)
        drop_sorted = cumulative - sorted_logits.softmax(-1) >= cfg.top_p  # keep the token that crosses p
        drop = drop_sorted.scatter(1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample(logits: torch.Tensor, cfg: SamplingConfig, generator: torch.Generator,
           history: torch.Tensor) -> torch.Tensor:
    """logits [b, V] (any dtype) -> token ids [b]."""
    logits = apply_repetition_penalty(logits.float(), history, cfg.repetition_penalty)
    if cfg.greedy:
        return logits.argmax(dim=-1)
    probs = filter_logits(logits, cfg).softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)
