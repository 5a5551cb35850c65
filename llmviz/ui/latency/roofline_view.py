"""The roofline section of the Claims page (C7): this device's ceilings measured now, and every step of
the run on Home/Decode placed on them from its real shapes, with its bound beside its measured time."""

from __future__ import annotations

import html

import streamlit as st

from llmviz.analysis.predict import ELEMENT_BYTES, Shape, block_matrices
from llmviz.analysis.roofline import DeviceLimits, run_points
from llmviz.ui import measure, server, state
from llmviz.ui.charts import chart
from llmviz.viz.claims import roofline_figure

LIMITS_KEY = "llmviz_device_limits"
SHOWN_STEPS = 12  # the table's rows: the prefill and the first decode steps


def layer_bytes(config: dict, dtype: str) -> int:
    """One transformer block's weights: the working set a decode step streams layer by layer. From a replayed
    trace's card (bounded as a pasted config, not as a real model): the probe clamps the buffer it allocates
    (llmviz/labs/probes.py CACHE_PROBE_MAX_BYTES)."""
    matrices, small = block_matrices(Shape.from_config(config), config["num_kv_heads"])
    return (matrices + small) * ELEMENT_BYTES.get(dtype, 4)


def run_probes(t, device: str, config: dict | None, dtype: str) -> dict | None:
    """The device's ceilings, kept whatever run is shown later (the result names its device and probe sizes)."""
    from llmviz import service

    def work(queued):
        with queued():  # the probes report no progress: a spinner shows
            return service.measure.device_limits(device, layer_bytes(config, dtype) if config else 4 * 2**20)

    return measure.run(t, LIMITS_KEY, None, work, spinner=t("roofline.measuring"))


def limits_of(raw: dict) -> DeviceLimits:
    return DeviceLimits(raw["peak"]["gflop_per_s"], raw["dram"]["gb_per_s"],
                        raw["cache"]["gb_per_s"] if "cache" in raw else None)


def section(t) -> None:
    st.header(t("roofline.title"))
    st.markdown(t("roofline.intro"))
    run = state.held_run()
    card = run.trace.model_card if run is not None else None
    engine = run.trace.engine_config if run is not None else {}
    if st.button(t("roofline.measure"), disabled=not server.engine_available(), key="roofline_go"):
        run_probes(t, state.settings().device, card["config"] if card else None, engine.get("dtype", "fp32"))
    raw = measure.kept(LIMITS_KEY)
    if raw is None:
        st.info(t("roofline.none_yet"))
        return
    limits = limits_of(raw)
    cols = st.columns(4)
    cols[0].metric(t("roofline.peak"), f"{limits.peak_gflop_per_s:,.1f}")
    cols[1].metric(t("roofline.dram"), f"{limits.dram_gb_per_s:,.1f}")
    cols[2].metric(t("roofline.cache"), f"{limits.cache_gb_per_s:,.1f}" if limits.cache_gb_per_s else "—")
    cols[3].metric(t("roofline.ridge"), f"{limits.ridge:,.1f}")
    st.caption(t("roofline.probes", device=raw["device"], threads=raw["threads"], dram=raw["dram"]["bytes"],
                 cache=raw.get("cache", {}).get("bytes", 0)))
    if run is None:
        st.info(t("roofline.no_run"))
        return
    points = run_points(run.trace.steps, card["config"], engine)
    names = {k: t(f"roofline.{k}_line") for k in ("dram", "cache", "prefill", "decode")}
    title = t("roofline.figure_title", model=html.escape(str(card["name"])))  # plotly reads <a href> in a title
    chart(t, roofline_figure(limits, points, names, title,
                             t("roofline.x"), t("roofline.y")), key="roofline")
    st.dataframe({t("roofline.col_step"): [p.index for p in points[:SHOWN_STEPS]],
                  t("roofline.col_tokens"): [p.new for p in points[:SHOWN_STEPS]],
                  t("roofline.col_flops"): [f"{p.flops:,}" for p in points[:SHOWN_STEPS]],
                  t("roofline.col_bytes"): [f"{p.bytes:,}" for p in points[:SHOWN_STEPS]],
                  t("roofline.col_intensity"): [round(p.intensity, 2) for p in points[:SHOWN_STEPS]],
                  t("roofline.col_bound"): [round(p.bound_ms(limits), 3) for p in points[:SHOWN_STEPS]],
                  t("roofline.col_measured"): [round(p.ms, 3) for p in points[:SHOWN_STEPS]]},
                 hide_index=True, key="roofline_table")
    st.caption(t("roofline.table_note", capture=run.trace.steps[-1].timings.get("capture", "?")))
