"""The one driver every scheduler runs on: a scheduler is a Policy over it (C13, C15, C16; claims K7, K8).

Each step of a run, whichever policy schedules it:

    plan     the policy says what this step feeds (Planned: the cache, each row's new tokens, the model, the draw
             rule), or nothing (an idle step: no request is ready); a speculative policy's draft proposes here
    run      engine/step_loop.run_step: the one forward pass, the draw
    settle   the policy applies what was drawn (tokens kept, requests retired, blocks freed, caches truncated)
    log      the policy's typed record of its decisions (trace/schedule.py: a StepRecord, a speculative Round)
    record   when the step is recorded (engine/recording.is_recorded: capture on, and the step chosen or none
             chosen), the StepTrace every page reads

One timing for every policy: a step's wall time runs from plan to the end of settle with the device synchronized
(`ms`), split at the end of plan (`plan_ms`: scheduling, or the draft's steps); a policy's untimed set-up
(`prepare`: a static batch's cache) comes before the clock starts, as a continuous scheduler's pool is allocated
before its first step; an idle step runs nothing and takes 0 ms; recording happens after the clock stops, so a
recorded step costs what an unrecorded one does, and its StepTrace carries the in-step spans (StepTimer) instead.
One rule of which steps are recorded: is_recorded.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.kv.base import KVCache
from llmviz.engine.platform.devices import synchronize
from llmviz.engine.platform.memory import typed_out_of_memory
from llmviz.engine.recording import Recorder, is_recorded, record_step
from llmviz.engine.step_loop import Feed, Ran, run_step
from llmviz.engine.timing import StepTimer
from llmviz.errors import ConfigError
from llmviz.trace.progress import Progress
from llmviz.trace.records import StepTrace

SMALLER = "use fewer slots, shorter requests or a smaller model"


@dataclass(frozen=True)
class Planned:
    """What one step feeds: `feed`'s rows into `cache` through `model` (every fed position's logits unless
    `last_only`), and `draw(logits [b, V]) -> ids [b]` (None: the policy draws by its own rule in settle)."""

    cache: KVCache
    feed: Feed
    model: torch.nn.Module
    draw: object = None
    last_only: bool = True


@dataclass(frozen=True)
class Clock:
    """A step's wall time in ms: all of it (plan to settle, synchronized) and its plan's part."""

    ms: float
    plan_ms: float


@dataclass(frozen=True)
class Recording:
    """What a recorded step shows: its phase, the logits its tokens were drawn from [b, V], those tokens [b]."""

    phase: str
    logits: torch.Tensor
    next_ids: torch.Tensor
    sampling: dict
    row_finished: list


class Policy(ABC):
    """A scheduler: which rows each step feeds and what it does with what they draw. The driver runs it."""

    name: str = ""
    plans_on_device = False  # its plan runs forward passes (a speculative draft): plan_ms waits for the device

    def __init__(self, lm, capture: str = "off", chosen: tuple = ()):
        self.lm, self.capture, self.chosen = lm, capture, tuple(chosen)
        self.records: list = []  # the policy's log, one typed record per step (trace/schedule.py)
        self.steps: dict[int, StepTrace] = {}  # step index -> what it recorded (capture on)
        self.tokens: dict = {}  # the recorded steps' token table
        self.start_ms = 0.0  # the work before the first step (start), timed as a step is

    @property
    @abstractmethod
    def finished(self) -> bool: ...

    @property
    @abstractmethod
    def recorder(self) -> Recorder:
        """What a recorded step is recorded with (its cache, capture level, backend)."""

    def start(self) -> None:
        """Work before the first step (speculative decoding's prefill of both models); none by default."""
        return None

    def prepare(self, index: int) -> None:
        """Untimed set-up before step `index` (a static batch's cache, allocated when its batch begins); none by
        default."""
        return None

    def idle_steps(self) -> list:
        """Records of idle steps to log at once before the next step (no request can run until an arrival)."""
        return []

    @abstractmethod
    def plan(self, index: int) -> Planned | None: ...

    @abstractmethod
    def settle(self, index: int, planned: Planned | None, ran: Ran | None) -> object:
        """Apply the step's draws; whatever `log` needs from it."""

    @abstractmethod
    def log(self, index: int, planned: Planned | None, settled, clock: Clock):
        """The step's typed record (trace/schedule.py)."""

    @abstractmethod
    def recording(self, index: int, ran: Ran, settled) -> Recording: ...

    def progress(self, record) -> tuple[float, dict] | None:
        """What a progress callback hears after a step: (share done, detail), or None (nothing to report)."""
        return None

    @abstractmethod
    def result(self) -> dict: ...

    def records_step(self, index: int) -> bool:
        return is_recorded(self.capture, self.chosen, index)


def step_once(policy: Policy):
    """Run the policy's next step; its record (also appended to policy.records)."""
    index = len(policy.records)
    device = policy.lm.device
    recorded = policy.records_step(index)
    timer = StepTimer(device) if recorded else None
    ctx = RunContext(policy.capture if recorded else "off", (), timer)
    with torch.inference_mode(), typed_out_of_memory(f"step {index} of the {policy.name} schedule", SMALLER):
        policy.prepare(index)  # off the clock, as a continuous scheduler's pool is allocated before its first step
    began = time.perf_counter()
    with torch.inference_mode(), typed_out_of_memory(f"step {index} of the {policy.name} schedule", SMALLER):
        planned = policy.plan(index)
        if policy.plans_on_device:  # elsewhere the plan is host work only: no sync on the hot path
            synchronize(device)
        planned_at = time.perf_counter()
        ran, kv, paused = None, None, 0.0
        if planned is not None:
            cache = planned.cache
            ran = run_step(cache, planned.feed, ctx, timer,
                           lambda step: planned.model(step, cache=cache, ctx=ctx, last_only=planned.last_only),
                           planned.draw)
            if recorded:  # the cache as the step left it, before settle retires or truncates rows; off the clock
                paused = time.perf_counter()
                kv = cache.snapshot()
                paused = time.perf_counter() - paused
        settled = policy.settle(index, planned, ran)
        synchronize(device)
    ended = time.perf_counter() - paused
    clock = Clock((ended - began) * 1000, (planned_at - began) * 1000) if planned is not None else Clock(0.0, 0.0)
    record = policy.log(index, planned, settled, clock)
    policy.records.append(record)
    if recorded and ran is not None:
        with torch.inference_mode():
            shown = policy.recording(index, ran, settled)
            policy.steps[index] = record_step(policy.recorder, index, shown.phase, ran.step, shown.logits,
                                              shown.next_ids, ctx, ran.spans, sampling=shown.sampling,
                                              row_finished=shown.row_finished, kv=kv)
    return record


def drive(policy: Policy, progress: Progress | None = None, until: int | None = None,
          max_steps: int = 100_000) -> dict:
    """Steps until the policy is finished, or step `until` has run (a look inside that step); its result."""
    began = time.perf_counter()
    with torch.inference_mode():
        policy.start()
    synchronize(policy.lm.device)
    policy.start_ms = (time.perf_counter() - began) * 1000
    while not policy.finished and (until is None or len(policy.records) <= until):
        policy.records += policy.idle_steps()
        if len(policy.records) >= max_steps:
            raise ConfigError(f"the {policy.name} schedule did not finish in {max_steps} steps")
        if until is not None and len(policy.records) > until:  # the idle steps reached the step asked for
            break
        record = step_once(policy)
        report = policy.progress(record) if progress else None
        if report is not None:
            progress(report[0], "step", report[1])
    return policy.result()
