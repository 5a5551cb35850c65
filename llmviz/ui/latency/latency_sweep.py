"""The Decode page's length sweep (C18): decode ms/token at a few cached lengths, the median of
repeats, on the run's model with its KV layout and attention backend. A dozen live steps are too few and too
noisy for the trend; this measures it over the model's whole context.

The measurement is the engine's layout sweep (llmviz/labs/layout_sweep.py, one rule) with the run's one
layout; its own text says what was timed. Kept in this browser session.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.decode_series import MIN_FIT_POINTS
from llmviz.analysis.stats import MIN_ROUNDS
from llmviz.ui import measure, server
from llmviz.ui.latency import slowdown_view
from llmviz.ui.settings import Settings

SWEEP_KEY = "llmviz_dec_sweep"
POINTS, STEPS, REPEATS = MIN_FIT_POINTS, 4, MIN_ROUNDS  # as many lengths as a fit needs; rounds for an interval


def layout_of(s: Settings) -> str:
    return s.switches().get("kv_layout", "contiguous")


def key_of(s: Settings) -> tuple:
    return s.model, s.device, s.dtype, s.attn, s.engine


def run_sweep(t, s: Settings) -> dict | None:
    """Run the sweep with a progress bar (queued in public mode); None and a message when it cannot run."""
    from llmviz import service

    def work(queued):
        lm = server.model(s.model, s.device, s.dtype, **s.load_options())
        with queued() as progress:
            def report(f, stage, values):
                progress(f, t("decode.sweep_progress", what=values.get("what", "…")))

            # the lesson's C18 sweep (labs/decode_slope.py) on this run's model, layout and attention
            return service.measure.decode_slope(lm, report, points=POINTS, steps=STEPS, repeats=REPEATS, seed=s.seed,
                                                layout=layout_of(s), backend=s.attn)

    return measure.run(t, SWEEP_KEY, key_of(s), work, text=t("decode.sweep_progress", what="…"))


def section(t, s: Settings) -> None:
    """The button, and the kept result for these settings: medians with their range, and the fit."""
    st.subheader(t("decode.sweep_title"))
    result = measure.kept(SWEEP_KEY, key_of(s))
    if st.button(t("decode.sweep_run"), key="dec_sweep_run"):
        result = run_sweep(t, s) or result
    if result is None:
        st.caption(t("decode.sweep_intro", steps=STEPS, repeats=REPEATS))
        return
    layout = result["layouts"][0]
    slowdown_view.draw(t, result, layout, t("decode.sweep_chart"), "dec_sweep_chart")  # the lesson's one C18 rule
    st.caption(t("decode.sweep_what", layout=layout, backend=result["attn_backend"], device=result["device"],
                 threads=result["threads"], dtype=result["dtype"], steps=result["steps"], repeats=result["repeats"],
                 seconds=result["seconds"]))
