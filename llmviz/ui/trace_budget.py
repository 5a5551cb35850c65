"""A bound on the memory one browser session keeps (issue 9): a run stepped for hours keeps every step's
tokens, top-k, timings, KV snapshot and, for each K and V row it wrote, the norm the cache grid colours that row
by; but its hook records (capture "full": attention maps, activations, K/V rows, with their shapes and norms) and
whole logits only for its newest steps, the prefill and the step shown, within a byte budget. The pages then say,
as for a trace recorded at capture "meta", that those steps no longer hold their tensors, and why.

Torch-free: it reads and trims a RunTrace (numpy arrays).
"""

from __future__ import annotations

import numpy as np

from llmviz.engine.hook_points import writes_cache_rows
from llmviz.engine.trace import HookRecord, RunTrace, StepTrace

RELEASE_EVERY = 16  # steps between handing freed memory back to the OS


def step_bytes(step: StepTrace) -> int:
    """Bytes of the step's arrays that can be dropped: its hook tensors and its full logits."""
    held = sum(r.array.nbytes for r in step.hooks if r.array is not None)
    return held + (step.logits.nbytes if isinstance(step.logits, np.ndarray) else 0)


def is_shed(step: StepTrace) -> bool:
    """Its tensors were dropped to keep within the budget (a 'meta' capture never had them)."""
    return step.timings.get("capture") == "full" and any(r.array is None for r in step.hooks)


def drop_array(record: HookRecord) -> None:
    """The record loses its tensor; a K or V record keeps the norm of each row ([b, kv, n, hd] -> [b, kv, n])."""
    if record.array is None:
        return
    if writes_cache_rows(record.name):  # the cache grid of every later step colours each cached row by its norm
        record.row_norms = np.linalg.norm(record.array, axis=-1).astype(np.float32)
    record.array = None


def shed(trace: RunTrace, budget: int, keep: tuple = ()) -> int:
    """Drop the tensors of the oldest steps until the trace's droppable bytes fit in `budget`, never those of
    the prefill (step 0), the newest step or the steps in `keep`; a shed step keeps only its K and V records (their
    row norms), since ~50 records of shapes and norms per step add up over a thousand steps as well. Returns how
    many steps have no tensors left."""
    protected = {0, len(trace.steps) - 1, *keep}
    total = sum(step_bytes(s) for s in trace.steps)
    for step in trace.steps:
        if total <= budget:
            break
        held = step_bytes(step)
        if step.index in protected or not held:
            continue
        total -= held
        step.hooks = [record for record in step.hooks if writes_cache_rows(record.name)]
        for record in step.hooks:
            drop_array(record)
        step.logits = None  # top-k ids, logits and the logsumexp stay: exact probabilities of the top tokens
    return sum(1 for s in trace.steps if is_shed(s))


def keep_bounded(trace: RunTrace, budget: int, keep: tuple, release) -> int:
    """After each step of a live run: shed within the budget, and every RELEASE_EVERY steps call release()
    (service.release_memory) so the freed arrays leave the process, not only the trace. Returns shed()'s count."""
    count = shed(trace, budget, keep)
    if len(trace.steps) % RELEASE_EVERY == 0:
        release()
    return count
