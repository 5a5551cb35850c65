"""What a claim's step draws under its prediction and Reveal, so that the step shows what it measures, not only
the number (§3.1 K5, §3.2 K7; their full pages draw the same with every control):

- K5 (C13): the article's own batch, 济南的冬天 and 人工智能 padded to one length (its `pad_sequences`), run on
  the student's model: the grid of computed slots, the padded ones counted (ui/batch/batch_view.py, the Batch
  page's); K5 itself is measured on equal rows, which pad nothing, and the caption says so.
- K7 (C15): K7's own workload (the `mixed` trace, 8 slots, the embedded model, both schedulers: the claim's lab),
  served here when the student asks, as the Serving page's Gantt; the slot utilization under it is the claim's
  rule (analysis/serving.metrics) on this run, a count that is the same on every run (a fixed trace, greedy).
  In a class, K7's step draws the class's own requests instead (lesson_workload.py).
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import claim_spec
from llmviz.analysis.article import ARTICLE_BATCH
from llmviz.analysis.serving import STATES
from llmviz.trace.config import EMBEDDED_MODEL
from llmviz.ui import measure, state
from llmviz.ui.batch import batch_run, batch_view
from llmviz.ui.charts import chart, fitted
from llmviz.ui.lesson import lesson_class
from llmviz.ui.serving import serving_run
from llmviz.ui.serving.serving_view import batching_view
from llmviz.viz.serving import gantt

ARTICLE_PADDING = "left"  # pad_sequences pads in front of a row by default
NEW_TOKENS = 4  # the prefill and three decode steps: a finished row's idle slots would need longer outputs
BATCH_STORE = "llmviz_lesson_k5_batch"
SCHEDULERS = ("static", "continuous")


def k5_view(t, spec: claim_spec.ClaimSpec) -> None:
    s = state.settings()
    run = batch_run.whole(t, s, ARTICLE_BATCH, ARTICLE_PADDING, NEW_TOKENS, BATCH_STORE)
    if run is None:  # said why
        return
    batch_view.grid(t, run.trace, done=True, key="lesson_k5_grid", table=False)
    st.caption(t("lesson.k5_grid_note"))


def claim_workload(spec: claim_spec.ClaimSpec) -> tuple:
    """The Serving page's run of a serving claim's own workload: its lab's trace on its model (the embedded one),
    the serving claims' slots, and the backend and static layout ServeConfig has, which the lab leaves as they are
    (device, model, trace, slots, backend, layout: serving_run.batching's key)."""
    from llmviz import service

    engine = service.serving.serve_config()
    return (state.settings().device, EMBEDDED_MODEL, spec.lab.options["trace"], claim_spec.SERVING_SLOTS,
            engine.backend, engine.layout)


def k7_view(t, spec: claim_spec.ClaimSpec) -> None:
    wanted = claim_workload(spec)
    trace = wanted[2]
    pressed = st.button(t("lesson.k7_run"), key="lesson_k7_run")
    results = serving_run.batching(t, wanted, trace) if pressed else measure.kept(serving_run.BATCHING_KEY, wanted)
    if results is None:
        st.caption(t("lesson.k7_none_yet"))
        return
    view = batching_view(results)  # the Serving page's figures of this run, derived once per run
    which = st.segmented_control(t("serving.show"), SCHEDULERS, default="continuous", required=True,
                                 key="lesson_k7_which", format_func=lambda n: t(f"serving.sched.{n}"))
    for col, name in zip(st.columns(2), SCHEDULERS, strict=True):
        col.metric(t("lesson.k7_used", sched=t(f"serving.sched.{name}")),
                   f"{view['metrics'][name]['slot_utilization']:.1%}")
    cells = view["timeline"][which]
    note = t("serving.gantt_binned", rows=cells.per_row, cols=cells.per_column) if cells.aggregated else None
    names, title = {k: t(f"serving.state.{k}") for k in STATES}, t("serving.gantt", sched=t(f"serving.sched.{which}"))
    chart(t, gantt(cells, names, title, t("serving.x_step"), t("serving.y_request"), None, note, row_px=12),
          key="lesson_k7_gantt")
    st.caption(t("lesson.k7_note", requests=len(results[which]["token_steps"]), slots=wanted[3]))


VIEWS = {"C13": k5_view, "C15": k7_view}  # by the concept a claim's step draws (its claim's first): padded
# batching's grid, continuous batching's Gantt (a claim's id is written only where it is declared)
IN_A_CLASS = ("C15",)  # a class draws its own requests there instead (lesson_workload.py)


def panel(t, claim_id: str) -> None:
    """The claim's picture, folded under its Reveal (the prediction and the verdict keep the first screen), drawn
    (and K5's batch run) only while the student holds it open; it stays open across the runs a press makes."""
    spec = claim_spec.claim(claim_id)
    concept = spec.concepts[0]
    view = VIEWS.get(concept)
    if view is None or (concept in IN_A_CLASS and lesson_class.role() is not None):
        return
    folded = st.expander(t(f"lesson.view.{concept}"), key=f"lesson_view_{claim_id}", on_change="rerun")
    with folded, fitted(None):  # below the first screen: the Gantt's 32 rows at their height, not the panel's cap
        if folded.open:
            view(t, spec)
