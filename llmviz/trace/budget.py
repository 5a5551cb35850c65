"""A bound on the memory one browser session keeps (issue 9): a run stepped for hours keeps every step's
tokens, top-k, timings, KV snapshot and, for each K and V row it wrote, the norm the cache grid colours that row
by; but its hook records (capture "full": attention maps, activations, K/V rows, with their shapes and norms) and
whole logits only for its newest steps, the prefill and the step shown, within a byte budget. The pages then say,
as for a trace recorded at capture "meta", that those steps no longer hold their tensors, and why.

Torch-free: it reads and trims a RunTrace (numpy arrays).
"""

from __future__ import annotations

import numpy as np

from llmviz.errors import NotAllowedError
from llmviz.trace.hooks import writes_cache_rows
from llmviz.trace.records import HookRecord, RunTrace, StepTrace

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


# Public mode: what a replayed trace may still hold once shed, in budgets. A live run's prefill and newest step are
# bounded by the model's context; a file's are bounded only by the archive's 2 GiB, so a server that promises no
# visitor can exhaust it refuses more (40 MB at the default 10 MB budget; the recorded demo holds 2.4 MB).
REPLAY_HELD_BUDGETS = 4


def held_bytes(trace: RunTrace) -> int:
    """Bytes of every array the trace holds: ids, positions, top-k, lens, logits, hook arrays and row norms."""
    total = 0
    for step in trace.steps:
        arrays = [step.input_ids, step.positions, step.sampled, step.logits, step.topk_ids, step.topk_logits,
                  step.logsumexp, step.lens_ids, step.lens_probs]
        arrays += [a for r in step.hooks for a in (r.array, r.row_norms)]
        total += sum(a.nbytes for a in arrays if isinstance(a, np.ndarray))
    return total


def bound_replay(trace: RunTrace, budget: int, public: bool = False) -> int:
    """A loaded trace (an upload) within the session's budget as a live run is (issue 19): a run recorded with a
    larger budget, or by the CLI, still replays, its oldest steps shed to their tokens, timings and K/V row norms,
    the prefill and the newest step kept whole. Shed rather than refused: the file is fine, only longer than this
    session keeps, and a live run that long would be shed the same way. A public server refuses (NotAllowedError)
    one that still holds more than REPLAY_HELD_BUDGETS budgets. Returns shed()'s count."""
    count = shed(trace, budget)
    if public and (held := held_bytes(trace)) > REPLAY_HELD_BUDGETS * budget:
        limit = REPLAY_HELD_BUDGETS * budget
        raise NotAllowedError(f"the trace holds {held / 1e6:,.1f} MB of arrays after its older steps were shed; this "
                              f"server keeps at most {limit / 1e6:,.1f} MB per session", code="upload_too_big",
                              size=f"{held / 1e6:,.1f} MB", limit=f"{limit / 1e6:,.1f} MB")
    return count
