"""A padded batch drawn (C13): its slot grid with the wasted slots counted, each row's prompt, output and end, and
the step's time; the Batch page's run, and the article's own batch at claim K5's lesson step."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import tokens as tk
from llmviz.analysis.batch_grid import CATEGORIES, batch_grid
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal
from llmviz.ui.trace_file import generated_text
from llmviz.viz.batch import batch_grid_figure


def cell_labels(tokens, ids) -> list[list[str]]:
    """Each slot's token [b][columns] as the lessons label it (a piece of a character as 济·1/3, not U+FFFD), ""
    for a pad or an idle slot; `ids` [b, columns], -1 where no token was fed."""
    out = []
    for row in ids.tolist():
        names = iter(tk.character_labels(tk.trace_token_bytes(tokens, [i for i in row if i >= 0])))
        out.append([next(names) if i >= 0 else "" for i in row])
    return out


def grid(t, trace, done: bool, key: str = "batch_grid", table: bool = True) -> None:
    """The grid of a batch's steps so far; `done`: every step the run will take is in (the rows' ends are final)."""
    steps = trace.steps
    g = batch_grid(steps)
    pieces = cell_labels(trace.tokens, g.ids)
    cols = st.columns(4)
    cols[0].metric(t("batch.rows"), g.kinds.shape[0])
    cols[1].metric(t("batch.slots"), g.slots, help=t("batch.slots_help"))
    cols[2].metric(t("batch.wasted"), g.wasted, help=t("batch.wasted_help"))
    cols[3].metric(t("batch.utilization"), f"{g.utilization:.0%}")
    names = {k: t(f"batch.kind.{k}") for k in CATEGORIES}
    labels = [t("batch.row", i=i) for i in range(g.kinds.shape[0])]
    chart(t, batch_grid_figure(g, pieces, names, t("batch.grid_title", steps=len(steps) - 1),
                               t("batch.x"), t("batch.y"), labels), key=key)
    last = steps[-1]
    if table:
        st.table({t("batch.col.row"): labels, t("batch.col.prompt"): [literal(p) for p in trace.prompts],
                  t("batch.col.output"): [literal(generated_text(trace, r)) for r in range(len(labels))],
                  t("batch.col.finished"): [t(f"batch.end.{f or 'max_new_tokens'}") if f or done else "…"
                                            for f in last.row_finished]})
    st.caption(t("batch.timed", ms=last.timings["total_ms"], device=last.timings["device"],
                 threads=last.timings["threads"]))
