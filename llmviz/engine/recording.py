"""What a step leaves in the trace: numpy copies of its inputs, logits, sampled tokens and hook records,
taken after the timed region (C5, C6).

Padding is recorded as -1 (input ids and positions of pad slots; `sampled` of a row that had already
finished), so a page can tell it from a token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.platform.memory import process_memory
from llmviz.engine.step_batch import StepBatch
from llmviz.trace.check import COMPILE_STATES
from llmviz.trace.records import HookRecord, StepTrace

FULL_LOGITS_MAX_VOCAB = 65536  # above this a step keeps the top-k logits and the log-sum-exp only
TOP_K_KEPT = 20
PAD = -1


def is_recorded(capture: str, chosen: tuple, index: int) -> bool:
    """Whether a scheduler records step (or round) `index`: capture on, and `chosen` empty (every one) or naming it.
    The one rule continuous and static batching (ServeConfig.capture_steps) and speculative decoding (its rounds)
    follow."""
    return capture != "off" and (not chosen or index in chosen)


@dataclass(frozen=True)
class Recorder:
    """What a run records each step with, whoever schedules it (a Session, the continuous scheduler): its model,
    its cache, its capture level, backend and logit lens, and its trace's token table (extended with every id a
    step shows)."""

    lm: object  # LoadedModel
    cache: object  # KVCache
    capture: str
    backend: str
    lens_top_k: int
    tokens: dict


def record_step(rec: Recorder, index: int, phase: str, step: StepBatch, logits: torch.Tensor,
                next_ids: torch.Tensor, ctx: RunContext, spans: dict, *, sampling: dict, row_finished: list,
                run_finished: str = "", compiled_now: bool = False, kv: dict | None = None) -> StepTrace:
    """The step's StepTrace; `kv`: the cache's snapshot taken earlier (a scheduler's, before it retired or truncated
    rows), else taken now."""
    lm = rec.lm
    real = step.real.cpu().numpy()
    input_ids = np.where(real, step.ids.cpu().numpy(), PAD).astype(np.int64)
    positions = np.where(real, step.positions.cpu().numpy(), PAD).astype(np.int64)
    logits32 = logits.float()
    top = logits32.topk(min(TOP_K_KEPT, logits32.shape[-1]), dim=-1)
    lens_ids, lens_probs = _logit_lens(lm.model, ctx, rec.lens_top_k)
    sampled = next_ids.cpu().numpy().astype(np.int64)
    record = StepTrace(
        index=index, phase=phase,
        input_ids=input_ids, positions=positions, sampled=sampled,
        logits=logits32.cpu().numpy() if logits32.shape[-1] <= FULL_LOGITS_MAX_VOCAB else None,
        topk_ids=top.indices.cpu().numpy().astype(np.int64), topk_logits=top.values.cpu().numpy(),
        logsumexp=logits32.logsumexp(-1).cpu().numpy(), lens_ids=lens_ids, lens_probs=lens_probs,
        hooks=[HookRecord(**r) for r in ctx.finish()], kv=kv if kv is not None else rec.cache.snapshot(),
        timings={"spans_ms": spans, "total_ms": sum(spans.values()), "device": str(lm.device),
                 "threads": torch.get_num_threads(), "capture": rec.capture,
                 "attn_backend": rec.backend, "tokens": int(sum(step.n_real)),
                 "padded_slots": int(step.batch * step.width - sum(step.n_real)),
                 **({"logit_lens": "not recorded: a compiled decode step keeps no hook data"}
                    if step.static and rec.lens_top_k else {}),
                 **({"compile": COMPILE_STATES[0] if compiled_now else COMPILE_STATES[1]} if step.static else {})},
        memory=process_memory(lm.device), sampling=sampling, finished=run_finished, row_finished=row_finished,
    )
    shown = [*input_ids.ravel(), *sampled.ravel(), *record.topk_ids.ravel()]
    if lens_ids is not None:
        shown += list(lens_ids.ravel())
    rec.tokens.update(lm.tokenizer.describe(t for t in shown if t >= 0 and t not in rec.tokens))
    return record


def _logit_lens(model, ctx: RunContext, k: int):
    if not k or not ctx.lens_resid:
        return None, None
    resid = torch.stack(ctx.lens_resid)  # [L, b, d]
    probs = model.lens(resid).float().softmax(-1)  # [L, b, V]
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)
    ctx.lens_resid.clear()
    return top.indices.cpu().numpy().astype(np.int64), top.values.cpu().numpy()
