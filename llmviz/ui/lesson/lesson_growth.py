"""Step 1.1.5's fourth view (C3; the article's "O(n²)", §1.1): the score matrix's size and the attention call's time
against prompt length, beside the same layer's Q/K/V projection (a linear term), measured on the student's model
when the view opens (llmviz/labs/attention_growth.py through service.measure), again on the button. The score
matrix's size is counted (h x n x n); the times are this machine's, each with its min and max, each doubling's ratio
taken within a round.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.ui import measure, server, state
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal
from llmviz.viz.timing import growth_lines

STORE = "llmviz_lesson_growth"
REPEATS = 7
PARTS = ("attention", "projection")


def key_of(s) -> tuple:
    return s.model, s.device, s.dtype


def measured(t, s) -> dict | None:
    def work(queued):
        lm = server.model(s.model, s.device, s.dtype)
        with queued() as progress:
            from llmviz import service

            def report(f, stage, values):
                progress(f, t("lesson.growth_running", n=values["tokens"]))

            return service.measure.attention_growth(lm, REPEATS, report)

    return measure.run(t, STORE, key_of(s), work, text=t("lesson.growth_running", n="…"))


def ratio(r: dict) -> str:
    return f"×{r['median']:.2f} ({r['min']:.2f}–{r['max']:.2f})"


def growth(t, run) -> None:
    """The measurement (made once per model and settings, again on the button), its last doubling as metrics, the
    log-log chart with its n and n² guides, and every length in a table."""
    s = state.settings()
    if not server.engine_available() or run.key is None:  # a replayed recording: its model may be gone
        st.caption(t("lesson.growth_no_engine"))
        return
    again = st.button(t("lesson.growth_again"), key="lesson_growth_again")
    result = None if again else measure.kept(STORE, key_of(s))
    result = result or measured(t, s)
    if result is None:  # measure.run said why
        return
    last, n = result["ratios"][-1], result["lengths"]
    cols = st.columns(3)
    cols[0].metric(t("lesson.growth_scores", a=last["from"], b=last["to"]), f"×{last['scores']:.2f}",
                   help=t("lesson.growth_scores_help", a=last["from"], b=last["to"]))
    cols[1].metric(t("lesson.growth_attention", a=last["from"], b=last["to"]), ratio(last["attention"]))
    cols[2].metric(t("lesson.growth_projection", a=last["from"], b=last["to"]), ratio(last["projection"]))
    names = {p: t(f"lesson.growth_{p}_line") for p in PARTS}
    guides = {"attention": t("lesson.growth_guide_n2"), "projection": t("lesson.growth_guide_n")}
    parts = {p: {k: [x[k] for x in result[f"{p}_ms"]] for k in ("median", "min", "max")} for p in PARTS}
    chart(t, growth_lines(n, parts, names, guides, t("lesson.growth_title"),
                          (t("lesson.growth_axis_n"), "ms")), key="lesson_growth")
    cell = "{median:.3f} ({min:.3f}–{max:.3f})".format
    st.table({t("lesson.growth_col_n"): n,  # a table wraps its cells: whole in the lesson's column and on a phone
              t("lesson.growth_col_scores", h=result["heads"]): [f"{x:,}" for x in result["score_numbers"]],
              t("lesson.growth_col_bytes"): [human(b) for b in result["score_bytes"]],
              t("lesson.growth_col_attention"): [cell(**x) for x in result["attention_ms"]],
              t("lesson.growth_col_projection"): [cell(**x) for x in result["projection_ms"]]})
    st.caption(t("lesson.growth_note", model=literal(result["model"]), device=result["device"],
                 threads=result["threads"], what=t.timed(result)))
