"""Steps of runs whose next-token logits nobody shows: serving schedulers, benchmarks, the timed rounds of a
comparison.

A step keeps its whole next-token logits when the vocabulary is at most 65,536 ids (recording.py), so a
Decode page can redraw any distribution. A run that only reads its tokens, timings and KV snapshots would
hold b x V x 4 bytes per step for nothing: static batching of 16 rows on GPT-2's 50,257 ids keeps 3.2 MB
a step, ~20 MB/s on a CPU. These helpers drop them once the step is recorded; the top-k logits and the
log-sum-exp (a few hundred bytes a row) stay, so a page can still show the likeliest tokens.
"""

from __future__ import annotations

from llmviz.engine.session import Session
from llmviz.trace.records import RunTrace, StepTrace


def lean_step(session: Session) -> StepTrace:
    """session.step(), keeping no whole logits in the trace."""
    step = session.step()
    step.logits = None
    return step


def lean_generate(session: Session, max_new_tokens: int) -> RunTrace:
    """Session.generate (max_new_tokens steps, EOS or a full cache), each step kept without its whole logits."""
    return session.generate(max_new_tokens, keep_logits=False)


def drop_logits(trace: RunTrace) -> RunTrace:
    """A finished run kept for its tokens, timings and KV only: its steps' whole logits let go."""
    for step in trace.steps:
        step.logits = None
    return trace
