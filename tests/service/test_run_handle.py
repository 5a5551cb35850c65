"""A run as a page holds it: service.runs.start returns a RunHandle, whose methods are the only way a page
moves a run. Each is checked against a run that never used it (an independent source): a rewind and a new seed
give the tokens of a run that drew with that seed from that step on; the sliders' sampling gives the tokens of a run
configured so from the start; bound() keeps the bytes the trace's own arrays report within the budget."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmviz import service
from llmviz.errors import ConfigError, SessionFinishedError
from llmviz.trace.config import EngineConfig, SamplingConfig

PROMPT = "The list of"
WARM = SamplingConfig(temperature=1.0)  # every token a draw, so a seed shows
GREEDY = SamplingConfig(temperature=0)


@pytest.fixture(scope="module")
def lm():
    return service.models.load("llmviz-tiny", EngineConfig())


def config(**changes) -> EngineConfig:
    return EngineConfig(sampling=WARM, seed=3, stop_at_eos=False, capture="off", logit_lens_top_k=0).with_(**changes)


def tokens(handle) -> list[int]:
    return [int(s.sampled[0]) for s in handle.trace.steps]


def array_bytes(trace) -> int:
    """Every numpy array a trace's steps hold, found by walking them (not the budget module's own list)."""
    values = [getattr(o, f.name) for s in trace.steps for o in (s, *s.hooks) for f in dataclasses.fields(o)]
    found = [v for v in values if isinstance(v, np.ndarray)]
    return sum(a.nbytes for a in found)


def test_a_handle_hides_the_engine_session(lm):
    handle = service.runs.start(lm, PROMPT, config())
    assert type(handle).__name__ == "RunHandle" and not hasattr(handle, "__dict__")  # __slots__: nothing else
    assert [a for a in dir(handle) if not a.startswith("__")] == [
        "_session", "bound", "budget", "finished", "kv_bytes", "rewind", "step", "trace"]
    first = handle.step()
    assert first.index == 0 and handle.trace.steps == [first] and handle.finished == ""
    assert len(first.kv["seq_lens"]) == 1 and first.kv["seq_lens"][0] == len(service.models.tokens(lm, PROMPT))


def test_rewind_and_a_seed_give_the_run_that_drew_with_that_seed_from_that_step(lm):
    drawn = service.runs.start(lm, PROMPT, config())
    for _ in range(6):
        drawn.step()
    first_draw = tokens(drawn)
    drawn.rewind(3)  # steps 3.. dropped: their tokens and cache rows
    assert len(drawn.trace.steps) == 3 and tokens(drawn) == first_draw[:3]
    drawn.step(seed=77)
    for _ in range(2):
        drawn.step()
    other = service.runs.start(lm, PROMPT, config())  # never rewound: steps 0-2 with seed 3, then seed 77
    for i in range(6):
        other.step(seed=77 if i == 3 else None)
    assert tokens(drawn) == tokens(other)
    assert drawn.kv_bytes() == other.kv_bytes()  # the cache rows of the dropped steps were given back
    assert drawn.trace.steps[3].sampling["seed"] == 77
    with pytest.raises(ConfigError, match="rewind to step 0"):
        drawn.rewind(0)  # the prefill is a new run


def test_the_sliders_sampling_is_the_configured_runs(lm):
    slid = service.runs.start(lm, PROMPT, config())
    slid.step(GREEDY)  # the sliders moved to greedy before the prefill drew
    for _ in range(4):
        slid.step()
    greedy = service.runs.run(lm, PROMPT, config(sampling=GREEDY), 5)
    assert tokens(slid) == [int(s.sampled[0]) for s in greedy.steps]
    assert all(s.sampling["temperature"] == 0 for s in slid.trace.steps)


def test_a_finished_run_says_so(lm):
    n = len(service.models.tokens(lm, PROMPT))
    handle = service.runs.start(lm, PROMPT, config(max_seq_len=n + 2))
    while not handle.finished:
        handle.step()
    # the cache holds n + 2 tokens: the prefill's n, then steps 1 and 2 cache the tokens drawn before them; the
    # token step 2 draws needs no slot, so 3 tokens are drawn
    assert handle.finished == "max_seq_len" and len(handle.trace.steps) == 3
    with pytest.raises(SessionFinishedError):
        handle.step()


def test_bound_keeps_the_run_within_its_budget_and_the_shown_step_whole(lm):
    full = config(capture="full", sampling=GREEDY)
    handle = service.runs.start(lm, PROMPT, full)
    for _ in range(6):
        handle.step()
    before = array_bytes(handle.trace)
    assert handle.bound(10 * before + handle.kv_bytes()) == 0 and array_bytes(handle.trace) == before  # room: kept
    shown = handle.trace.steps[2]
    budget = handle.kv_bytes() + before // 3
    shed = handle.bound(budget, keep=(2,))
    assert shed > 0 and array_bytes(handle.trace) + handle.kv_bytes() <= budget
    assert handle.trace.steps[2] is shown and shown.hooks  # the step shown keeps its tensors


def test_the_layouts_runs_are_handles_that_step_in_lockstep(lm):
    runs = service.runs.start_layouts(lm, [PROMPT, "A B"], config(sampling=GREEDY), ("contiguous", "paged"))
    for _ in range(3):
        steps = service.runs.step_layouts(runs)
        assert steps["contiguous"].sampled.tolist() == steps["paged"].sampled.tolist()
    assert {type(r).__name__ for r in runs.values()} == {"RunHandle"}
