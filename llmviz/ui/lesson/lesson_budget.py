"""Step 4.1.4's live refusal (C17; the article's OOM and its remedies, §4.1): the student's prompt grown to the
length they pick, run on the engine under the budget the step's slider sets, three ways (labs/kv_budget.py
through service.measure): contiguous rows reserved at the model's context, a shorter max_seq_len the budget
holds, and paged blocks from a pool the budget sizes. What each did is the engine's own: the typed error it
raised (by its name; its message under the table, as the engine wrote it), the positions its cache held, the
bytes its tensors hold.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.ui import measure, server, state
from llmviz.ui.chrome import literal
from llmviz.ui.lesson.lesson_prefill import ctl

STORE = "llmviz_lesson_budget"


def lengths(prompt: int, context: int) -> list[int]:
    """The request lengths offered: past the prompt, up to the longest the context holds."""
    return sorted({n for n in (64, 128, 256, 384, context - 1) if prompt < n < context})


def outcome(t, r: dict) -> str:
    """What the engine did with one setup, in words (a refusal's error by name in the messages under the table);
    a paged run's blocks taken."""
    key = r["outcome"] if r["outcome"] != "refused" else "refused_at" if r["held"] else "refused_start"
    said = t(f"lesson.budget.{key}", n=r["held"])
    return said + (t("lesson.budget.blocks", n=r["blocks"]) if r.get("blocks") else "")


def refusal(t, run, budget: int, per_token: int) -> None:
    """The request's length (the control) and the button that runs it; the three runs' table, then the engine's
    messages."""
    context = int(run.trace.model_card["config"]["max_position_embeddings"])
    ids = run.trace.prompt_ids
    options = lengths(len(ids), context)
    if not options or not server.engine_available() or run.key is None:  # a replayed recording: its model may be gone
        return
    left, right = st.columns([3, 2])
    tokens = left.select_slider(t("lesson.ctl.request"), options=options, value=options[-1], key=ctl("request"))
    s = state.settings()
    key = (s.model, s.device, tuple(ids), budget, tokens)
    if right.button(t("lesson.budget.run"), key="lesson_budget_run", help=t("lesson.budget.run_help")):
        def work(queued):
            lm = server.model(s.model, s.device, "fp32")
            with queued():
                from llmviz import service

                return service.measure.kv_budget(lm, list(ids), budget, tokens, per_token)

        measure.run(t, STORE, key, work, spinner=t("lesson.budget.running"))
    result = measure.kept(STORE, key)
    if result is None:
        return
    runs = result["runs"]
    setups = list(runs)  # the lab's order: reserved, shorter, paged
    st.table({t("lesson.budget.col_setup"): [t(f"lesson.budget.setup.{x}", max_seq=runs[x]["max_seq"],
                                              block=result["block"]) for x in setups],
              t("lesson.budget.col_outcome"): [outcome(t, runs[x]) for x in setups],
              t("lesson.budget.col_bytes"): [human(runs[x]["bytes"]) if runs[x]["bytes"] else "—" for x in setups]})
    said = [f"{runs[x]['error']}: {runs[x]['message']}" for x in setups if runs[x]["outcome"] == "refused"]
    if said:
        st.caption(t("lesson.budget.messages"))
        st.code("\n".join(said), language=None, wrap_lines=True)
    st.caption(t("lesson.budget.note", model=literal(result["model"]), budget=human(result["budget"]),
                 tokens=result["tokens"], context=result["context"]))
