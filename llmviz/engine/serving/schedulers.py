"""The serving schedulers by name: each a Policy over the one driver (serving/driver.py), declared in the torch-free
table trace/config.SCHEDULERS (its words, and the KV growth it needs) and implemented here (C13, C15; claim K7).

A new scheduler is one call, `register_scheduler(Extension(name, label, about), cls)` with cls a Policy taking
(lm, trace, config): its name is then a choice of `serve` and of the CLI's `serve --scheduler`. A test's fixture
undoes it with `unregister_scheduler`.
"""

from __future__ import annotations

from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.registry import Registry
from llmviz.engine.serving.continuous import ContinuousScheduler, ServeConfig
from llmviz.engine.serving.driver import Policy, drive
from llmviz.engine.serving.requests import Request, RequestTrace
from llmviz.engine.serving.static import StaticBatching
from llmviz.errors import ConfigError
from llmviz.trace.config import SCHEDULERS
from llmviz.trace.extensions import Extension
from llmviz.trace.progress import Progress

SCHEDULER_CLASSES: Registry[type[Policy]] = Registry("scheduler", SCHEDULERS)
SCHEDULER_CLASSES.add(StaticBatching.name, StaticBatching)
SCHEDULER_CLASSES.add(ContinuousScheduler.name, ContinuousScheduler)


def register_scheduler(declared: Extension, cls: type[Policy]) -> type[Policy]:
    """Make `cls` (a Policy whose `name` is the declared name) a scheduler every entry can choose."""
    if not (isinstance(cls, type) and issubclass(cls, Policy)) or cls.name != declared.name:
        raise ConfigError(f"a scheduler is a Policy subclass whose `name` is its name {declared.name!r}, got {cls!r}")
    return SCHEDULER_CLASSES.declare(declared, cls)


def unregister_scheduler(name: str) -> None:
    SCHEDULER_CLASSES.remove(name)


def serve(lm: LoadedModel, requests: RequestTrace, scheduler: str, config: ServeConfig,
          progress: Progress | None = None, until: int | None = None) -> dict:
    """A request trace through a scheduler by name: the one entry the app, the CLI and the claims use. `until`: stop
    after that step (a look inside it)."""
    return drive(SCHEDULER_CLASSES.get(scheduler)(lm, requests, config), progress, until)


def warm_up(lm: LoadedModel, config: ServeConfig) -> None:
    """Two short requests through static and continuous batching, untimed, so the first timed run pays no one-time
    costs."""
    warm = RequestTrace("warm-up", (Request(0, 0, (1, 2, 3, 4), 3), Request(1, 0, (5, 6), 3)))
    for scheduler in (StaticBatching.name, ContinuousScheduler.name):
        serve(lm, warm, scheduler, config)
