"""The Batch page's state (C13): one padded batch of prompts stepping on the shared model, and the
throughput sweep over batch sizes, both kept in this browser session."""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from llmviz.analysis.work import decode_seconds, run_seconds
from llmviz.errors import LlmvizError, NotAllowedError, PromptError
from llmviz.trace.config import EngineConfig
from llmviz.ui import measure, server, state
from llmviz.ui.claims import claims_run, shared_runs
from llmviz.ui.errors import explain
from llmviz.ui.settings import Settings

BATCH_KEY, SWEEP_KEY = "llmviz_batch", "llmviz_batch_sweep"
WORKLOADS = ("k5", "prompt")  # the sweep's prompt: K5's own (held-out text, labs/claims.sweep_workload) or the page's
EXAMPLES = ("The list of", "Return the value of the", "This module provides functions to read and write",
            "The")  # different lengths, so the prefill pads
MAX_ROWS, MAX_NEW = 8, 64
# A public server's most tokens of work in one batch (rows x the padded width: the longest prompt and the new tokens),
# the bound of an uploaded request trace (engine/serving/requests.PUBLIC_MAX_TRACE_TOKENS; a test checks they agree).
# Beyond it one prefill step, which no time limit can stop midway, ran 49 s and took 1.2 GB (8 x 1,982 tokens).
PUBLIC_WORK = 8_192


def prompts_of(s: Settings) -> list[str]:
    return [p for p in (s.batch.prompts.split("\n") if s.batch.prompts else EXAMPLES) if p.strip()]


def check(prompts: list[str]) -> None:
    if not 1 <= len(prompts) <= MAX_ROWS:
        raise PromptError(f"a batch here holds 1 to {MAX_ROWS} prompts, one per line; got {len(prompts)}",
                          code="batch_size", n=len(prompts), limit=MAX_ROWS)


def check_work(rows: int, width: int, public: bool) -> None:
    """On a public server a batch of `rows` rows padded to `width` tokens (prompt + new) is at most PUBLIC_WORK."""
    if public and rows * width > PUBLIC_WORK:
        raise NotAllowedError(f"this batch asks for {rows * width:,} tokens of work ({rows} rows x {width:,}); this "
                              f"public server runs at most {PUBLIC_WORK:,} per batch", code="batch_work",
                              work=rows * width, rows=rows, width=width, limit=PUBLIC_WORK)


@dataclass
class BatchRun:
    key: tuple
    handle: object  # llmviz.service.runs.RunHandle
    longest: int = 0  # the longest prompt's tokens (the padded batch's width at the prefill)
    model_config: dict = field(default_factory=dict)  # the model card's config (what a step costs: analysis/work)

    @property
    def trace(self):
        return self.handle.trace


def key_of(s: Settings, max_new: int) -> tuple:
    return run_key(s, prompts_of(s), s.batch.padding, max_new)


def run_key(s: Settings, prompts, padding: str, max_new: int) -> tuple:
    """What a batch's run depends on: the model and engine settings, its prompts, padding and new tokens."""
    return s.model, s.device, s.dtype, s.attn, s.seed, tuple(prompts), padding, max_new


def shown(s: Settings, max_new: int) -> BatchRun | None:
    run = st.session_state.get(BATCH_KEY)
    return run if run is not None and run.key == key_of(s, max_new) else None


def start(t, s: Settings, max_new: int) -> BatchRun | None:
    """Prefill the batch (capture off: the grid needs only the ids, the snapshot and the timings); in a public
    server's queue when it is heavy (8 prompts of 2,000 tokens on gpt2-124m-random: about a minute of CPU)."""
    run = begin(t, s, prompts_of(s), s.batch.padding, max_new)
    if run is not None:
        st.session_state[BATCH_KEY] = run
    return run


def begin(t, s: Settings, prompts: list[str], padding: str, max_new: int) -> BatchRun | None:
    """`prompts` as one padded batch on the settings' model, its prefill run; None after a message."""
    try:
        from llmviz import service

        check(prompts)
        lm = server.model(s.model, s.device, s.dtype)
        tokens = [len(service.models.tokens(lm, p)) for p in prompts]
        check_work(len(tokens), max(tokens) + max_new, server.policy().public)
        config = EngineConfig(device=s.device, dtype=s.dtype, attn_backend=s.attn, padding=padding,
                              sampling=s.sampling(), seed=s.seed, capture="off", logit_lens_top_k=0,
                              max_seq_len=min(lm.cfg.max_position_embeddings, max(tokens) + max_new + 1))
        with st.spinner(t("batch.running")), measure.heavy(t, run_seconds(lm.cfg.to_dict(), tokens, 0, s.dtype)):
            handle = service.runs.start(lm, prompts, config, server.policy().trace_budget_bytes)
            handle.step()
            state.bound_runs([handle])  # within the session's budget
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)
        return None
    return BatchRun(run_key(s, prompts, padding, max_new), handle, max(tokens), lm.cfg.to_dict())


def whole(t, s: Settings, prompts: tuple[str, ...], padding: str, max_new: int, store: str) -> BatchRun | None:
    """`prompts` through the prefill and its decode steps up to max_new (a lesson step's batch, drawn whole), kept
    in the session under `store` for these settings; the kept run when it is there."""
    kept = st.session_state.get(store)
    if kept is not None and kept.key == run_key(s, prompts, padding, max_new):
        return kept
    run = begin(t, s, list(prompts), padding, max_new)
    if run is None:
        return None
    advance(t, run, max_new, to_end=True)
    st.session_state[store] = run
    return run


def advance(t, run: BatchRun, max_new: int, to_end: bool = False) -> None:
    """One step, or every step to the end (in a public server's queue when that is heavy: 63 steps of 8 rows of
    2,000 tokens on gpt2-124m-random, ~8 s of CPU); a step that fails says why, and the steps before it stay."""
    done = len(run.trace.steps)
    steps = max(0, max_new - done) if to_end else 1
    cost = decode_seconds(run.model_config, len(run.trace.prompts), run.longest + done - 1, steps)
    try:
        with st.spinner(t("batch.running")), measure.heavy(t, cost) as deadline:
            while not run.handle.finished and len(run.trace.steps) < max_new:
                run.handle.step()
                state.bound_runs([run.handle])
                deadline.check()
                if not to_end:
                    break
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)


def sweep_key(s: Settings, model: str, workload: str) -> tuple:
    return (model, s.device, s.dtype, workload) + ((tuple(prompts_of(s))[:1],) if workload == "prompt" else ())


def sweep(t, s: Settings, model: str, workload: str = "k5") -> dict | None:
    """Batch 1, 2, 4, 8 copies of K5's prompt in K5's steps and rounds (workload "k5"; "judged" when this is the
    model K5 is judged on) or of the page's first prompt ("prompt"), with a progress bar; kept for what it ran."""
    from llmviz import service

    def work(queued):
        lm = server.model(model, s.device, s.dtype)
        if workload == "k5":  # the batch claim's own workload (its declaration's)
            claim = service.measure.sweep_workload("batch_sweep", lm)
            ids, options = claim["prompt"], {"steps": claim["steps"], "repeats": claim["repeats"]}
        else:
            prompts = prompts_of(s)
            check(prompts)
            ids, options, claim = service.models.tokens(lm, prompts[0]), {}, {"judged": False}
        with queued() as progress:
            result = service.measure.batch_sweep(lm, ids, device=s.device, progress=lambda f, stage, values: progress(
                f, t(f"progress.batch.{stage}", **values)), **options)
        result = result | {"judged_as": claim["claim"] if claim["judged"] else None}
        judged = {claim["claim"]: claims_run.judged_here(claim["claim"], result)} if claim["judged"] else {}
        return shared_runs.page_run(result, "batch", judged)  # the batch claim's own workload: shared

    return measure.run(t, SWEEP_KEY, sweep_key(s, model, workload), work)


def kept_sweep(s: Settings, model: str, workload: str = "k5") -> dict | None:
    return measure.kept(SWEEP_KEY, sweep_key(s, model, workload))
