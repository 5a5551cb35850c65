"""Decode slowing down, as the lesson's §4.2 step shows it (C18): a sweep of cached lengths on the
GPT-2-124M shape over its whole context (llmviz/labs/decode_slope.py), never a few steps of the student's own run,
whose noise hides a slope of microseconds. Its slope with the 95% interval, the slope the bytes predict, and KV's
share of a step's bytes at both ends (llmviz/analysis/decode_slope.py). The sweep runs when the student presses
its button (in a public server's queue); it is kept in the session, and the server's latest run is shown to
everyone who has not run it, labelled with its time.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.claims import shown_level
from llmviz.analysis.decode_slope import slowdown
from llmviz.ui import measure, server
from llmviz.ui.charts import chart
from llmviz.ui.claims import claims_run
from llmviz.viz import decode as fig

SLOPE_KEY = "llmviz_c18_slope"
LATEST = "C18"  # the server's latest sweep, kept beside its latest claims
MODEL = "gpt2-124m-random"


def run_sweep(t) -> dict | None:
    from llmviz import service

    def work(queued):
        lm = server.model(MODEL, "auto", "fp32")
        with queued() as progress:
            return service.measure.decode_slope(
                lm, progress=lambda f, stage, values: progress(f, t("lesson.slope_progress")))

    result = measure.run(t, SLOPE_KEY, MODEL, work, text=t("lesson.slope_progress"))
    if result is not None:
        server.latest_claims().put(LATEST, {"result": result, "when": claims_run.now()})
    return result


def draw(t, result: dict, layout: str, title: str, key: str) -> None:
    """A decode sweep (labs/decode_slope.py) as C18 reads it, wherever it is shown (this step, the Decode page): the
    medians with their rounds' range, the least-squares line, and the slope's verdict by its 95% interval beside the
    bytes' slope (analysis/decode_slope.py: one rule). Fewer than 3 lengths draw no line and say why."""
    cells = result["ms_per_token"][layout]
    if len(result["lengths"]) < 3:  # a context too short for the sweep: no slope to speak of
        chart(t, fig.latency_sweep(result["lengths"], cells["median"], cells["min"], cells["max"], None,
                                   (t("decode.sweep_median"), ""), (t("decode.sweep_length"), t("decode.ms")), title),
              key=key)
        st.caption(t("decode.sweep_few", n=len(result["lengths"]), need=3))
        return
    s = slowdown(result, result["model_config"], layout)
    us = 1000  # ms -> microseconds per cached token
    chart(t, fig.latency_sweep(result["lengths"], cells["median"], cells["min"], cells["max"],
                               (s.measured.value, s.intercept),
                               (t("decode.sweep_median"), t("lesson.slope_fit", slope=us * s.measured.value)),
                               (t("decode.sweep_length"), t("decode.ms")), title), key=key)
    predicted = t("lesson.slope_predicted", predicted=us * s.predicted,
                  gbps=result["bandwidth"]["gb_per_s"]) if s.predicted is not None else ""
    st.markdown(t(f"lesson.slope_{s.verdict}", slope=us * s.measured.value, low=us * s.measured.low,
                  level=shown_level(s.measured.level),
                  high=us * s.measured.high, n=s.measured.rounds, first=s.kv_share_first, last=s.kv_share_last,
                  shortest=s.lengths[0], longest=s.lengths[-1]) + " " + predicted)


def section(t) -> None:
    """The button, then this session's sweep or the server's latest, drawn with its slope and the prediction."""
    result, when = measure.kept(SLOPE_KEY, MODEL), None
    if st.button(t("lesson.slope_run"), key="lesson_slope_run"):
        result = run_sweep(t) or result
    if result is None and (latest := server.latest_claims().get(LATEST)) is not None:
        result, when = latest["result"], latest["when"]
    if result is None:
        st.caption(t("lesson.slope_intro", model=MODEL))
        return
    draw(t, result, "contiguous", t("lesson.slope_title", model=MODEL), "lesson_slope_chart")
    st.caption(t("lesson.slope_what", device=result["device"], threads=result["threads"], steps=result["steps"],
                 repeats=result["repeats"], seconds=result["seconds"])
               + (" " + t("lesson.slope_latest", when=when) if when else ""))
