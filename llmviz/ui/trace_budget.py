"""A bound on the tensors one browser session keeps (issue 9): a run stepped for hours keeps every step's
tokens, top-k, timings, hook summaries (shape, norm) and K/V rows, but its other full tensors (capture
"full": attention maps, activations, whole logits) only for its newest steps, the prefill and the step
shown, within a byte budget. The pages then say, as for a trace recorded at capture "meta", that those
steps no longer hold their tensors, and why.

Torch-free: it reads and trims a RunTrace (numpy arrays).
"""

from __future__ import annotations

import numpy as np

from llmviz.engine.trace import RunTrace, StepTrace

RELEASE_EVERY = 16  # steps between handing freed memory back to the OS


def kept_always(name: str) -> bool:
    """The K and V rows a step wrote: small (one row per new token), and the cache grid of every later step
    is drawn from them."""
    return name.endswith((".k", ".v"))


def step_bytes(step: StepTrace) -> int:
    """Bytes of the step's arrays that can be dropped: its hook tensors (but K and V) and its full logits."""
    held = sum(r.array.nbytes for r in step.hooks if r.array is not None and not kept_always(r.name))
    return held + (step.logits.nbytes if isinstance(step.logits, np.ndarray) else 0)


def is_shed(step: StepTrace) -> bool:
    """Its tensors were dropped to keep within the budget (a 'meta' capture never had them)."""
    return step.timings.get("capture") == "full" and any(r.array is None and not kept_always(r.name)
                                                         for r in step.hooks)


def shed(trace: RunTrace, budget: int, keep: tuple = ()) -> int:
    """Drop the tensors of the oldest steps until the trace's droppable bytes fit in `budget`, never those of
    the prefill (step 0), the newest step or the steps in `keep`. Returns how many steps have none left."""
    protected = {0, len(trace.steps) - 1, *keep}
    total = sum(step_bytes(s) for s in trace.steps)
    for step in trace.steps:
        if total <= budget:
            break
        if step.index in protected or not step_bytes(step):
            continue
        total -= step_bytes(step)
        for record in step.hooks:
            if not kept_always(record.name):
                record.array = None
        step.logits = None  # top-k ids, logits and the logsumexp stay: exact probabilities of the top tokens
    return sum(1 for s in trace.steps if is_shed(s))


def keep_bounded(trace: RunTrace, budget: int, keep: tuple, release) -> int:
    """After each step of a live run: shed within the budget, and every RELEASE_EVERY steps call release()
    (service.release_memory) so the freed arrays leave the process, not only the trace. Returns shed()'s count."""
    count = shed(trace, budget, keep)
    if len(trace.steps) % RELEASE_EVERY == 0:
        release()
    return count
