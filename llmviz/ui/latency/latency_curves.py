"""The Claims page's latency curves for the current settings (C18): decode ms/token against the cached
length (the Decode page's sweep, llmviz.ui.latency.latency_sweep) and prefill ms against the prompt's length,
fitted with a + b*n + c*n^2 (llmviz.analysis.prefill_fit), each the median of repeats."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.decode_slope import spread_lengths
from llmviz.trace.config import default_max_seq
from llmviz.ui import measure, server, state
from llmviz.ui.charts import chart
from llmviz.ui.claims import claims_run
from llmviz.ui.latency import latency_sweep
from llmviz.ui.markdown import escape
from llmviz.ui.settings import Settings

PREFILL_KEY = "llmviz_prefill_sweep"
POINTS, REPEATS = 7, 3


def prefill_lengths(context: int, points: int = POINTS) -> list[int]:
    """`points` prompt lengths from SHORTEST to the longest prompt the context holds (one slot left)."""
    return spread_lengths(min(default_max_seq(context), context), points, 1)


def run_prefill(t, s: Settings) -> dict | None:
    from llmviz import service

    def work(queued):
        lm = server.model(s.model, s.device, s.dtype, **s.load_options())
        with queued() as progress:
            return service.measure.prefill_sweep(lm, prefill_lengths(lm.cfg.max_position_embeddings), REPEATS, s.attn,
                                                 lambda f, stage, values: progress(f, t("curves.progress", **values)))

    # the Decode page's sweep's inputs: the same settings time both curves
    return measure.run(t, PREFILL_KEY, latency_sweep.key_of(s), work, text=t("curves.progress", tokens="…"))


def section(t) -> None:
    st.header(t("curves.title"))
    st.markdown(t("curves.intro"))
    s = state.settings()
    if not server.engine_available():
        return
    latency_sweep.section(t, s)
    st.subheader(t("curves.prefill_title"))
    result = measure.kept(PREFILL_KEY, latency_sweep.key_of(s))
    if st.button(t("curves.prefill_run"), key="curves_prefill_run"):
        result = run_prefill(t, s) or result
    if result is None:
        st.caption(t("curves.prefill_intro", repeats=REPEATS, model=escape(s.model)))
        return
    view = claims_run.fit_view(t, result["lengths"], result["prefill_ms"],
                               t("curves.prefill_chart", model=result["model"]))
    if view is None:  # a context too short for three lengths
        st.info(t("curves.too_short"))
        return
    chart(t, view[0], key="curves_prefill_chart")
    st.markdown(view[1])
    st.caption(t("curves.timed", device=result["device"], threads=result["threads"], what=t.timed(result)))
