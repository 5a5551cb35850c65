"""One engine step, the same for every scheduler: plan -> run -> sample, timed, then the maps rebuilt.

    plan     each row's new tokens at its positions (the cache's lengths), the cache's slots reserved, the masks
    run      one forward pass over every row (padded, or packed end to end outside attention)
    sample   the rows that fed all they had draw their next token (the others wait: a prefill chunk); a row
             that draws nothing this step records -1

A Session (static batching: every row each step, one run), the continuous scheduler (which request takes which
row, chunked prefill, preemption) and speculative decoding (the draft's steps, the target's verification of k + 1
positions, its own acceptance rule in place of a draw) call `run_step`; what they differ in is their policy,
which rows they feed and what they do with the tokens drawn. The step then records the same StepTrace
(engine/recording.py) whoever scheduled it, so a page opens a serving step as it opens a Session's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.kv.base import KVCache
from llmviz.engine.phases import plan_step
from llmviz.engine.step_batch import StepBatch
from llmviz.engine.timing import StepTimer

NOT_DRAWN = -1  # the sampled id of a row that drew no token this step


@dataclass
class Ran:
    """What one step did: its batch (inputs, positions, the cache's addressing), the next-token logits [b, V], the
    ids drawn [b] (NOT_DRAWN where a row drew none; None where the caller draws) and the timed spans in ms."""

    step: StepBatch
    logits: torch.Tensor
    next_ids: torch.Tensor | None
    spans: dict


@dataclass(frozen=True)
class Feed:
    """Which rows a step feeds: each row's new tokens and its sequence id in the cache; `backend`, `windows`,
    `padding`, `static` (read every preallocated slot: a compiled step) and `packed` as plan_step takes them."""

    rows: list
    seq_ids: list
    backend: str
    windows: tuple
    device: torch.device
    padding: str = "right"
    static: bool = False
    packed: bool = False


def run_step(cache: KVCache, feed: Feed, ctx: RunContext, timer: StepTimer | None,
             forward: Callable[[StepBatch], torch.Tensor], draw: Callable[[torch.Tensor], torch.Tensor] | None,
             copy_plan: Callable[[StepBatch], frozenset | None] | None = None) -> Ran:
    """plan -> run -> sample under `timer`; `forward(step)` -> logits [b, V] (the model, or its compiled decode),
    `draw(logits)` -> ids [b] (NOT_DRAWN for a row that draws nothing; no draw: the caller draws by its own rule,
    speculative decoding's acceptance, and next_ids is None), `copy_plan(step)`: the hook points a
    capture may copy this step. Outside the timed region: the cache's overflow check, the maps a backend did not
    build rebuilt. No timer: no spans (a scheduler that times the whole step on the wall clock). The caller holds
    torch.inference_mode."""
    if timer is not None:
        timer.start()
    step = plan_step(cache, feed.rows, feed.seq_ids, backend=feed.backend, windows=feed.windows, device=feed.device,
                     padding=feed.padding, static=feed.static, packed=feed.packed)
    ctx.mark("mask")
    if copy_plan is not None:
        ctx.copy_points = copy_plan(step)
    logits = forward(step)
    next_ids = None
    if draw is not None:
        next_ids = ctx.hook("sample", draw(logits))
        ctx.mark("sample")
    spans = timer.spans_ms() if timer is not None else {}
    cache.check_overflow()
    ctx.rebuild_attention()  # everything from here on is outside the timed region
    return Ran(step, logits, next_ids, spans)
