"""The two phases of inference as explicit functions (C3, C4, C5).

prefill: every row's whole prompt in one parallel pass; every layer writes its rows of K and V into
         the cache; each row's last prompt token gives its first new token.
decode:  one new token per row and step; its q attends over every cached K/V (read, not recomputed),
         and the layer appends one row of K and V.
Both take a StepBatch (built by the caller, with the cache's addressing) and return the next-token
logits [b, V]. Sampling is separate (sampling.py).
"""

from __future__ import annotations

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.kv.base import KVCache
from llmviz.engine.models.transformer import DecoderModel
from llmviz.engine.step_batch import StepBatch, build_step
from llmviz.errors import ConfigError


def prefill(model: DecoderModel, cache: KVCache, step: StepBatch, ctx: RunContext) -> torch.Tensor:
    """Prompts from position 0 into empty cache rows -> logits [b, V]."""
    if any(step.start_list):
        raise ConfigError("prefill starts every row at position 0: its cache rows must be empty")
    return model(step, cache=cache, ctx=ctx, last_only=True)


def decode(model: DecoderModel, cache: KVCache, step: StepBatch, ctx: RunContext) -> torch.Tensor:
    """One token per row at its position cache.length(row) -> logits [b, V]."""
    if step.width != 1:
        raise ConfigError(f"decode takes one token per row, got {step.width}")
    return model(step, cache=cache, ctx=ctx, last_only=True)


def feed(model: DecoderModel, cache: KVCache, rows: list[list[int]], seq_ids: list[int], *, backend: str = "sdpa",
         ctx: RunContext | None = None, padding: str = "right", last_only: bool = True) -> torch.Tensor:
    """Feed each sequence its new tokens in one forward pass (any phase: a prefill, a decode step, a
    chunk, a speculative verification): builds the StepBatch from the cache's lengths, reserves the
    slots, runs the model. Returns logits [b, V] (last_only) or [b, n, V]."""
    step = build_step(rows, [cache.length(s) for s in seq_ids], backend=backend, windows=model.cfg.windows,
                      device=model.embed.weight.device, padding=padding, seq_ids=seq_ids)
    step.kv = cache.reserve(step)
    return model(step, cache=cache, ctx=ctx if ctx is not None else RunContext(), last_only=last_only)
