"""A bound on the memory one browser session keeps: a run stepped for hours keeps every step's
tokens, top-k, timings, KV snapshot and, for each K and V row it wrote, the norm the cache grid colours that row
by; but its hook records (capture "full": attention maps, activations, K/V rows, with their shapes and norms) and
whole logits only for its newest steps and the step shown, within a byte budget that counts everything the run
holds: its KV cache and every array of its trace (the model's weights apart: they are shared). The pages then say,
as for a trace recorded at capture "meta", that those steps no longer hold their tensors, and why.

The budget holds from step 0 on (a 505-token prefill of the GPT-2 shape copied 555 MB of tensors, all
kept): before a step runs, `plan_capture` picks which hook points it copies so that the step fits in what the
budget leaves, and the prefill is shed later like any other step.

Torch-free: it reads and trims a RunTrace (numpy arrays).
"""

from __future__ import annotations

import numpy as np

from llmviz.errors import NotAllowedError
from llmviz.trace.hooks import GLOBAL_POINTS, LAYER_POINTS, HookPoint, writes_cache_rows
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


def _shed_step(step: StepTrace) -> None:
    """A shed step keeps only its K and V records (their row norms), since ~50 records of shapes and norms per
    step add up over a thousand steps as well; top-k ids, logits and the logsumexp stay (exact top probabilities)."""
    step.hooks = [record for record in step.hooks if writes_cache_rows(record.name)]
    for record in step.hooks:
        drop_array(record)
    step.logits = None


def shed(trace: RunTrace, budget: int, keep: tuple = (), held_elsewhere: int = 0) -> int:
    """Drop the tensors of the oldest steps until everything the run holds (`held_elsewhere`, e.g. its KV cache,
    plus every array of the trace) fits in `budget`. The prefill is shed like the rest; the steps in `keep` (the
    one shown) go only once every other old step has, and the newest step never (its capture was planned to fit,
    plan_capture). Returns how many steps have no tensors left."""
    newest = len(trace.steps) - 1
    total = held_elsewhere + held_bytes(trace)
    kept_last = [s for s in trace.steps if s.index != newest and s.index not in keep]
    kept_last += [s for s in trace.steps if s.index != newest and s.index in keep]
    for step in kept_last:
        if total <= budget:
            break
        held = step_bytes(step)
        if held:
            total -= held
            _shed_step(step)
    return sum(1 for s in trace.steps if is_shed(s))


def keep_bounded(trace: RunTrace, budget: int, keep: tuple, release, held_elsewhere: int = 0) -> int:
    """After each step of a live run: shed within the budget, and every RELEASE_EVERY steps call release()
    (service.models.release_memory) so the freed arrays leave the process, not only the trace. Returns shed()'s
    count."""
    count = shed(trace, budget, keep, held_elsewhere)
    if len(trace.steps) % RELEASE_EVERY == 0:
        release()
    return count


# Public mode: what a replayed trace may still hold once shed, in budgets. A live run holds at most one budget from
# step 0 on; a file's newest step is bounded only by the archive, so a server that promises no visitor
# can exhaust it refuses more than a live run may hold (64 MB at the public default; the recorded demo holds 2.4 MB).
REPLAY_HELD_BUDGETS = 1


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
    """A loaded trace (an upload) within the session's budget as a live run is: a run recorded with a
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


# Which hook points a step copies first when the budget cannot hold all of them, the most useful per byte
# first: the token drawn, the logits and the embeddings every page reads; the K and V rows (the cache the article is
# about) and the queries; the attention map (probs) before the scores it is the softmax of; the residual stream and
# the MLP's input and output; last the scores, the MLP's wide activation and kv.write (a copy of every layer's K and V
# at once). A point is copied in every layer or in none, so a page never finds layer 3's map and not layer 4's.
CAPTURE_PRIORITY = ("sample", "logits", "final_norm", "embed", "pos", "k", "v", "q", "probs", "attn_out", "resid",
                    "attn_in", "mlp_in", "mlp_out", "scores", "mlp_act", "kv.write")
_POINTS = {p.name: p for p in (*GLOBAL_POINTS, *LAYER_POINTS)}
_PER_LAYER = {p.name for p in LAYER_POINTS}
COPY_BYTES = 4  # the capture copies every tensor as float32 (engine/capture.py)


def point_bytes(point: HookPoint, dims: dict) -> int:
    """Bytes of one float32 copy of the point in one layer, from its declared dimensions: `dims` maps each
    dimension name (b, n, n_k, d, h, kv, hd, f, pos_dim, V, L) to its size in this step; digits stand for
    themselves ("2" in kv.write's [L, 2, b, kv, n, hd])."""
    count = 1
    for dim in point.dims:
        count *= int(dim) if dim.isdigit() else int(dims[dim])
    return count * COPY_BYTES


def plan_capture(dims: dict, budget: int) -> frozenset:
    """The hook points (names as declared: "q", "embed", "kv.write") a step copies within `budget` bytes: taken in
    CAPTURE_PRIORITY order, each that still fits (in all dims["L"] layers for a layer point); one that does not fit
    is skipped and a smaller one after it may still be copied. The others are recorded without their tensor
    (shape, dtype, norm; K and V keep the norm of each row). A budget of 0 or less copies nothing."""
    chosen, used = [], 0
    for name in CAPTURE_PRIORITY:
        cost = point_bytes(_POINTS[name], dims) * (int(dims["L"]) if name in _PER_LAYER else 1)
        if used + cost <= budget:
            chosen.append(name)
            used += cost
    return frozenset(chosen)
