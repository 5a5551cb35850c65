"""A toy scheduler, declared in this one file as an extension would add one: shortest-prompt-first admission over
continuous batching. Its policy is one method (the waiting requests' order); its declaration (name, words) and one
call make it a choice of `serve` and of the CLI's `serve-sim --scheduler`. tests/engine/test_scheduler_policies.py
reads it."""

from __future__ import annotations

from llmviz.engine.serving.continuous import ContinuousScheduler
from llmviz.trace.extensions import Extension

NAME = "shortest-first"
DECLARED = Extension(NAME, {"en": "Shortest prompt first", "zh": "最短提示优先"}, growth="blocks",
                     about={"en": "continuous batching that admits the waiting request with the shortest prompt first",
                            "zh": "先接纳提示最短的等待请求的持续批处理"})


class ShortestFirst(ContinuousScheduler):
    name = NAME

    def admission_order(self, waiting: list) -> list:
        """The shortest prompt first (ties: the earlier id); a preempted request (recomputing) stays at the front."""
        return sorted(waiting, key=lambda run: (not run.recomputing, len(run.request.prompt_ids), run.request.id))


def add() -> None:
    from llmviz.engine.serving.schedulers import register_scheduler

    register_scheduler(DECLARED, ShortestFirst)


def remove() -> None:
    from llmviz.engine.serving.schedulers import unregister_scheduler

    unregister_scheduler(NAME)
