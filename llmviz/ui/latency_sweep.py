"""The Decode page's length sweep (C18, issue 10): decode ms/token at a few cached lengths, the median of
repeats, on the run's model with its KV layout and attention backend. A dozen live steps are too few and too
noisy for the trend; this measures it over the model's whole context.

The measurement is the engine's layout sweep (llmviz/labs/layout_sweep.py, one rule) with the run's one
layout; its own text says what was timed. Kept in this browser session.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.decode_series import MIN_FIT_POINTS, fit_latency
from llmviz.trace.config import default_max_seq
from llmviz.ui import measure, server
from llmviz.ui.charts import chart
from llmviz.ui.settings import Settings
from llmviz.viz import decode as fig

SWEEP_KEY = "llmviz_dec_sweep"
POINTS, STEPS, REPEATS, SHORTEST = MIN_FIT_POINTS, 8, 3, 16  # as many lengths as a fit needs


def lengths_for(context: int, points: int = POINTS, steps: int = STEPS) -> list[int]:
    """`points` cached lengths spread evenly from SHORTEST to the longest that leaves room for `steps`."""
    longest = context - steps
    if longest <= SHORTEST:
        return [max(1, longest)]
    return sorted({round(SHORTEST + i * (longest - SHORTEST) / (points - 1)) for i in range(points)})


def layout_of(s: Settings) -> str:
    return s.switches().get("kv_layout", "contiguous")


def key_of(s: Settings) -> tuple:
    return s.model, s.device, s.dtype, s.attn, s.engine


def run_sweep(t, s: Settings) -> dict | None:
    """Run the sweep with a progress bar (queued in public mode); None and a message when it cannot run."""
    from llmviz import service

    def work(queued):
        lm = server.model(s.model, s.device, s.dtype, **s.load_options())
        lengths = lengths_for(default_max_seq(lm.cfg.max_position_embeddings))  # what the sweep's caches hold
        with queued() as progress:
            def report(f, stage, values):
                progress(f, t("decode.sweep_progress", what=values["what"]))

            return service.layout_sweep(lm, lengths, (layout_of(s),), STEPS, REPEATS, report,
                                        backend=s.attn, seed=s.seed)

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
    cells = result["ms_per_token"][layout]
    fit = fit_latency(result["lengths"], cells["median"], warmup=0)
    line = (fit.slope, fit.intercept) if fit.meaningful else None
    chart(t, fig.latency_sweep(result["lengths"], cells["median"], cells["min"], cells["max"], line,
                               (t("decode.sweep_median"), t("decode.fit", slope=1000 * (fit.slope or 0),
                                                            se=1000 * (fit.slope_se or 0), n=fit.points)),
                               (t("decode.sweep_length"), t("decode.ms")), t("decode.sweep_chart")),
          key="dec_sweep_chart")
    if fit.reason == "few_points":  # a model whose context holds fewer lengths
        st.caption(t("decode.sweep_few", n=fit.points, need=MIN_FIT_POINTS))
    else:
        st.caption(t("decode.sweep_ok" if fit.meaningful else "decode.sweep_noise", slope=1000 * fit.slope,
                     se=1000 * fit.slope_se, first=cells["median"][0], last=cells["median"][-1],
                     shortest=result["lengths"][0], longest=result["lengths"][-1]))
    st.caption(t("decode.sweep_what", layout=layout, backend=result["attn_backend"], device=result["device"],
                 threads=result["threads"], dtype=result["dtype"], steps=result["steps"], repeats=result["repeats"],
                 seconds=result["seconds"]))
