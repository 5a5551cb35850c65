"""Run and step: a run on a loaded (shared, read-only) model, held by a `RunHandle` whose methods are the only way a
page or the CLI moves it (pages used to poke the engine's Session, `session.rewind`, `session.reseed`,
`session.sampling = ...`). Part of the service's door (llmviz/service/__init__.py); nothing here imports torch until
it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmviz.errors import NotAllowedError
from llmviz.service import models
from llmviz.trace.budget import keep_bounded
from llmviz.trace.config import KV_LAYOUTS, EngineConfig, SamplingConfig
from llmviz.trace.records import RunTrace, StepTrace

if TYPE_CHECKING:  # annotations only
    from llmviz.engine.loading.model import LoadedModel
    from llmviz.engine.session import Session


class RunHandle:
    """One live run: its trace, what it holds, and the ways to move it. The engine's Session stays inside."""

    __slots__ = ("_session",)

    def __init__(self, session: Session):
        self._session = session

    @property
    def trace(self) -> RunTrace:
        """The steps so far (the prefill is step 0), appended to by step()."""
        return self._session.trace

    @property
    def finished(self) -> str:
        """Why the run has ended ("eos", "max_seq_len"), or "" while it can step."""
        return self._session.finished

    @property
    def budget(self) -> int | None:
        """The bytes this run may hold, KV cache and trace together (a browser session's share)."""
        return self._session.budget

    def kv_bytes(self) -> int:
        """Bytes its KV cache holds now, read from the cache's tensors."""
        return self._session.kv_bytes()

    def step(self, sampling: SamplingConfig | None = None, seed: int | None = None) -> StepTrace:
        """The next step (the prefill first), appended to the trace. `sampling`: what this step's and every later
        step's tokens are drawn with (the sliders); `seed`: from this step on every row draws from a fresh generator
        seeded `seed + row` (a resample). SessionFinishedError once the run has ended."""
        if sampling is not None:
            self._session.sampling = sampling
        if seed is not None:
            self._session.reseed(seed)
        return self._session.step()

    def rewind(self, step: int) -> None:
        """Drop step `step` and every later one (their tokens and cache rows): the next step() computes step `step`
        again, with another seed if it is given one (C6, a teacher's "resample from this step"). One-row runs;
        ConfigError for a step the run cannot go back to."""
        self._session.rewind(step)

    def bound(self, budget: int, keep: tuple = ()) -> int:
        """After a step: everything the run holds (its KV cache and its trace's arrays) within `budget`, the steps in
        `keep` (the one shown) kept whole; every few steps the freed memory goes back to the OS. Returns how many
        steps' arrays are shed (llmviz/trace/budget.py)."""
        return keep_bounded(self._session.trace, budget, keep, models.release_memory, self._session.kv_bytes())


def start(lm: LoadedModel, prompt: str | list[str], config: EngineConfig, budget: int | None = None) -> RunHandle:
    """A new run on a loaded model, one row per prompt; nothing runs until step(). `budget`: the bytes its run may
    hold, KV cache and trace together (a browser session's; NotAllowedError when its cache alone would
    pass it)."""
    from llmviz.engine.session import Session

    return RunHandle(Session(lm, prompt, config, budget=budget))


def run(lm: LoadedModel, prompt: str | list[str], config: EngineConfig, max_new_tokens: int) -> RunTrace:
    """Prefill plus decode steps until max_new_tokens tokens exist, EOS, or the cache is full."""
    from llmviz.engine.session import Session

    return Session(lm, prompt, config).generate(max_new_tokens)


def start_layouts(lm: LoadedModel, prompts: list[str], config: EngineConfig,
                  layouts: tuple | None = None, budget: int | None = None) -> dict[str, RunHandle]:
    """One run per KV layout (default: every one a setting may choose) on the same prompts and settings, to be
    stepped in lockstep (C8, C9). `budget`: what they may hold together (a browser session's), each an
    equal share; caches that alone pass it are refused (NotAllowedError) before any step runs."""
    from llmviz.engine.session import Session

    chosen = tuple(KV_LAYOUTS) if layouts is None else layouts
    share = None if budget is None else budget // max(1, len(chosen))
    sessions = {layout: Session(lm, list(prompts), config.with_(kv_layout=layout)) for layout in chosen}
    held = sum(s.kv_bytes() for s in sessions.values())
    if budget is not None and held > budget:
        size, limit = f"{held / 1e6:,.1f} MB", f"{budget / 1e6:,.1f} MB"
        sessions.clear()
        raise NotAllowedError(f"these runs' KV caches alone need {size}; a session here keeps at most {limit} "
                              "(LLMVIZ_TRACE_BUDGET_MB): use fewer or shorter prompts, a smaller model or a shorter "
                              "max_seq_len", code="session_budget", size=size, limit=limit)
    for session in sessions.values():
        session.budget = share
    return {layout: RunHandle(session) for layout, session in sessions.items()}


def step_layouts(runs: dict[str, RunHandle]) -> dict[str, StepTrace]:
    """The next step of every run of start_layouts (each computes the same tokens: the layouts are exact)."""
    return {layout: run.step() for layout, run in runs.items()}
