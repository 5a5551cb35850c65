"""A toy lesson step, declared in this one file as an extension would add one: its Step (panel, page, concepts,
map), its panel (how long each prompt token's embedding row is, read from the student's own prefill) and its words in
both languages. `add` places it after step 1.1.3 (the embedding); a claim's toy step (K99, tests/support/toy_claim.py)
goes after the chapter's claim. tests/ui/test_lesson_extension.py reads it."""

from __future__ import annotations

import numpy as np
import streamlit as st

from llmviz.analysis.lesson_plan import CLAIM, Step

STEP = Step("1.1.9", "toy_norms", "tokens", ("C2",), map={"prefill": ("ids", "embed")})
AFTER, CLAIM_AFTER = "1.1.3", "1.1.8"
NEEDS = ("embed",)  # the hook point it reads (llmviz/trace/hooks.py)
LINES = {"en": {"lesson.1.1.9.title": "How long is each token's row?",
                "lesson.1.1.9.says": "Each prompt token's embedding row has a length (its L2 norm): here, yours.",
                "lesson.1.1.10.title": "A toy claim", "lesson.1.1.10.says": "Predict the toy, then reveal it.",
                "lesson.cause.K99": "A short prompt's prefill here is mostly fixed costs, not its tokens."},
         "zh": {"lesson.1.1.9.title": "每个 token 的行有多长？",
                "lesson.1.1.9.says": "每个提示 token 的嵌入行都有长度（L2 范数）：这里是你的提示的。",
                "lesson.1.1.10.title": "玩具声明", "lesson.1.1.10.says": "先预测这个玩具声明，再揭晓。",
                "lesson.cause.K99": "这里短提示的预填充主要是固定开销，而不是 token 本身。"}}


def norms(run) -> list[float]:
    """Each prompt token's embedding row's L2 norm, from the run's recorded prefill."""
    rows = run.trace.steps[0].hook("embed").array[0]  # [n, d]
    return [float(x) for x in np.linalg.norm(rows, axis=-1)]


def draw(t, run) -> None:
    values = norms(run)
    st.dataframe({"token": list(range(len(values))), "norm": values}, key="toy_norms")


def add() -> None:
    from llmviz.ui.lesson.lesson_panels import add_step

    add_step(STEP, AFTER, draw, NEEDS)


def add_claim_step() -> None:
    """K99's step (the claim declared first: a step checks the claim it names)."""
    from llmviz.ui.lesson.lesson_panels import add_step

    add_step(Step("1.1.10", CLAIM, "claims", ("K99", "C3"), claim="K99"), CLAIM_AFTER)


def remove() -> None:
    from llmviz.analysis.lesson_plan import STEPS
    from llmviz.ui.lesson.lesson_panels import remove_step

    for step_id in (STEP.id, "1.1.10"):
        if step_id in [s.id for s in STEPS]:
            remove_step(step_id)
