"""The Batch page's state (C13): one padded batch of prompts stepping on the shared model, and the
throughput sweep over batch sizes, both kept in this browser session."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from llmviz.errors import LlmvizError, PromptError
from llmviz.trace.config import EngineConfig
from llmviz.ui import measure, server
from llmviz.ui.errors import explain
from llmviz.ui.settings import Settings

BATCH_KEY, SWEEP_KEY = "llmviz_batch", "llmviz_batch_sweep"
EXAMPLES = ("The list of", "Return the value of the", "This module provides functions to read and write",
            "The")  # different lengths, so the prefill pads
MAX_ROWS, MAX_NEW = 8, 64


def prompts_of(s: Settings) -> list[str]:
    return [p for p in (s.batch.split("\n") if s.batch else EXAMPLES) if p.strip()]


def check(prompts: list[str]) -> None:
    if not 1 <= len(prompts) <= MAX_ROWS:
        raise PromptError(f"a batch here holds 1 to {MAX_ROWS} prompts, one per line; got {len(prompts)}",
                          code="batch_size", n=len(prompts), limit=MAX_ROWS)


@dataclass
class BatchRun:
    key: tuple
    session: object  # llmviz.engine.session.Session

    @property
    def trace(self):
        return self.session.trace


def key_of(s: Settings, max_new: int) -> tuple:
    return s.model, s.device, s.dtype, s.attn, s.seed, tuple(prompts_of(s)), s.padding, max_new


def shown(s: Settings, max_new: int) -> BatchRun | None:
    run = st.session_state.get(BATCH_KEY)
    return run if run is not None and run.key == key_of(s, max_new) else None


def start(t, s: Settings, max_new: int) -> BatchRun | None:
    """Prefill the batch (capture off: the grid needs only the ids, the snapshot and the timings)."""
    try:
        from llmviz import service

        prompts = prompts_of(s)
        check(prompts)
        lm = server.model(s.model, s.device, s.dtype)
        longest = max(len(lm.tokenizer.encode(p)) for p in prompts)
        config = EngineConfig(device=s.device, dtype=s.dtype, attn_backend=s.attn, padding=s.padding,
                              sampling=s.sampling(), seed=s.seed, capture="off", logit_lens_top_k=0,
                              max_seq_len=min(lm.cfg.max_position_embeddings, longest + max_new + 1))
        session = service.start(lm, prompts, config)
        service.step(session)
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)
        return None
    run = BatchRun(key_of(s, max_new), session)
    st.session_state[BATCH_KEY] = run
    return run


def advance(t, run: BatchRun, max_new: int, to_end: bool = False) -> None:
    from llmviz import service

    try:
        while not run.session.finished and len(run.trace.steps) < max_new:
            service.step(run.session)
            if not to_end:
                break
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)


def sweep(t, s: Settings, model: str) -> dict | None:
    """Batch 1, 2, 4, 8 copies of the page's first prompt on `model`, with a progress bar; kept for `model`."""
    from llmviz import service

    def work(queued):
        prompts = prompts_of(s)
        check(prompts)
        lm = server.model(model, s.device, s.dtype)
        with queued() as progress:
            return service.batch_sweep(lm, lm.tokenizer.encode(prompts[0]), device=s.device,
                                       progress=lambda f, stage, values: progress(
                                           f, t(f"progress.batch.{stage}", **values)))

    return measure.run(t, SWEEP_KEY, model, work)


def kept_sweep(model: str) -> dict | None:
    return measure.kept(SWEEP_KEY, model)
