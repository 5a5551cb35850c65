"""The Decode page's cost of a step (C18): its latency against the position with the trend line, the step's
spans, and the memory the weights, the KV cache and the process hold."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.decode_series import MIN_FIT_POINTS, fit_latency, latency_series
from llmviz.analysis.kv_memory import in_one_unit
from llmviz.ui import server
from llmviz.ui.charts import chart
from llmviz.ui.chrome import step_timing
from llmviz.viz import decode as fig


def fit_caption(t, fit) -> str:
    """What the trend line says, or why there is none (C18: the cost per token grows with the context)."""
    if fit.reason == "few_points":
        return t("decode.fit_few", need=MIN_FIT_POINTS, warmup=fit.left_out, n=fit.points)
    values = {"slope": 1000 * fit.slope, "se": 1000 * fit.slope_se, "n": fit.points, "warmup": fit.left_out}
    return t("decode.fit_noise" if fit.reason == "noise" else "decode.fit_ok", **values)


def timing_panel(t, run) -> None:
    step = run.step
    positions, ms = latency_series(run.trace.steps)
    left, right = st.columns(2)
    with left:
        if len(ms):
            current = int(step.positions[0, -1]) if step.phase == "decode" else None
            fit = fit_latency(positions, ms)
            line = (fit.slope, fit.intercept) if fit.meaningful else None
            names = (t("decode.ms_series"), t("decode.warmup", n=fit.left_out),
                     t("decode.fit", slope=1000 * (fit.slope or 0), se=1000 * (fit.slope_se or 0), n=fit.points))
            chart(t, fig.latency(positions, ms, current, line, fit.left_out, names,
                                 (t("decode.position"), t("decode.ms")), t("decode.latency_title")), key="latency")
            live = run.key is not None  # a live run gets the length sweep below
            st.caption(fit_caption(t, fit) + (" " + t("decode.fit_sweep_hint") if live and not fit.meaningful else ""))
        else:
            st.info(t("decode.latency_empty"))
    with right:
        step_timing(t, step, t("decode.spans_title", step=step.index), "spans")


def memory_panel(t, run) -> None:
    step, card = run.step, run.trace.model_card
    public = server.policy().public  # a public server keeps its own process's memory to itself
    cols = st.columns(3 if public else 4)
    weights, used, allocated = in_one_unit([card["weight_bytes"], step.kv["bytes_used"], step.kv["bytes_allocated"]])
    cols[0].metric(t("decode.mem_weights"), weights, help=t("decode.mem_bytes", n=card["weight_bytes"]))
    cols[1].metric(t("decode.mem_kv_used"), used, help=t("decode.mem_bytes", n=step.kv["bytes_used"]))
    cols[2].metric(t("decode.mem_kv_alloc"), allocated, help=t("decode.mem_bytes", n=step.kv["bytes_allocated"]))
    if not public and "rss_bytes" in step.memory:  # a public server's trace download leaves it out (trace_file)
        cols[3].metric(t("decode.mem_rss"), in_one_unit([step.memory["rss_bytes"]])[0], help=t("decode.mem_rss_help"))
    if "cuda_allocated_bytes" in step.memory and not public:
        st.caption(t("decode.mem_cuda", alloc=step.memory["cuda_allocated_bytes"] / 2**20,
                     peak=step.memory["cuda_peak_allocated_bytes"] / 2**20))
