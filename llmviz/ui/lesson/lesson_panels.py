"""The lesson's live panels by name, and the one call that adds a step to the lesson (C1-C22 as the steps show them).

A step's panel is a function (t, run) drawn beside its map; the stock ones are each chapter's (lesson_prefill.py,
lesson_decode.py, lesson_memory.py; the KV layouts page's locality section is the page's own, ui/layouts). A new step
is one declaration and one call, `add_step(Step(...), after="1.1.3", draw=fn, needs=(...))`: the step joins the
lesson's registry (analysis/lesson_plan.Lesson: its URL position, the chapter list, `llmviz class`), its panel this
table, and its words are the catalogue's `lesson.<id>.title` and `lesson.<id>.says`. The lesson page checks the whole
lesson when it is built (lesson_plan.check_built): a step without its panel or its words fails there, by its id.
Like the lesson's registry, the table is extended at import or in a test's fixture (`remove_step`), never per session.
"""

from __future__ import annotations

from collections.abc import Callable

from llmviz.analysis.lesson_plan import STEPS, Step
from llmviz.errors import ConfigError
from llmviz.ui.lesson import lesson_decode, lesson_memory, lesson_prefill

STOCK = {**lesson_prefill.PANELS, **lesson_decode.PANELS, **lesson_memory.PANELS}
_ADDED: dict[str, tuple[Callable, tuple]] = {}  # an added step's panel -> (its function, the tensors it reads)


def panels() -> dict[str, Callable]:
    """Every panel the lesson draws: the stock ones and the added steps'."""
    return {**STOCK, **{name: draw for name, (draw, _) in _ADDED.items()}}


def needs(panel: str, layers: int) -> tuple[str, ...]:
    """The prefill's recorded tensors a panel reads (a trace recorded without them says so instead of drawing)."""
    return _ADDED[panel][1] if panel in _ADDED else lesson_prefill.needs(panel, layers)


def add_step(step: Step, after: str, draw: Callable | None = None, needs: tuple = ()) -> Step:
    """`step` right after the step `after`, drawn by `draw` (t, run) (a claim's step: no panel, its Reveal draws)."""
    if draw is not None and (step.panel in STOCK or step.panel in _ADDED):
        raise ConfigError(f"lesson step {step.id}: the panel {step.panel!r} is taken", code="lesson_step")
    STEPS.add(step, after)
    if draw is not None:
        _ADDED[step.panel] = (draw, tuple(needs))
    return step


def remove_step(step_id: str) -> None:
    """Undo add_step (a test's fixture)."""
    step = next((s for s in STEPS if s.id == step_id), None)
    STEPS.remove(step_id)
    if step is not None:
        _ADDED.pop(step.panel, None)
