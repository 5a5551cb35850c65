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
from llmviz.engine.step_batch import StepBatch, build_step, layer_windows
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


def plan_step(cache: KVCache, rows: list[list[int]], seq_ids: list[int], *, backend: str, windows: tuple,
              device: torch.device, padding: str = "right", static: bool = False, packed: bool = False) -> StepBatch:
    """The StepBatch for feeding each sequence its new tokens: positions from the cache's lengths, the
    cache's slots reserved (its addressing in step.kv), and the masks over the keys the cache will read.
    static: read every preallocated slot (fixed shapes for a compiled step; contiguous layout only).
    packed: the rows' real tokens end to end outside attention (see step_batch)."""
    step = build_step(rows, [cache.length(s) for s in seq_ids], backend=backend, windows=windows, device=device,
                      padding=padding, seq_ids=seq_ids, static_len=cache.max_seq if static else None,
                      packed=packed)
    step.kv = cache.reserve(step)
    key_positions = cache.key_positions(step)
    if key_positions is not None:
        step.set_masks(key_positions)
    return step


def feed(model: DecoderModel, cache: KVCache, rows: list[list[int]], seq_ids: list[int], *, backend: str = "sdpa",
         ctx: RunContext | None = None, padding: str = "right", last_only: bool = True,
         window: int | None = None, packed: bool = False) -> torch.Tensor:
    """Feed each sequence its new tokens in one forward pass (any phase: a prefill, a decode step, a
    chunk, a speculative verification). Returns logits [b, V] (last_only) or [b, n, V]; a packed step
    returns [b, V] only (last_only)."""
    if packed and not last_only:
        raise ConfigError("a packed step returns each row's last logits only (last_only=True)")
    step = plan_step(cache, rows, seq_ids, backend=backend, windows=layer_windows(model.cfg, window),
                     device=model.embed.weight.device, padding=padding, packed=packed)
    return model(step, cache=cache, ctx=ctx if ctx is not None else RunContext(), last_only=last_only)
