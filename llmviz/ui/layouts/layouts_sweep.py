"""The KV layouts page's sweep (C8, C9; claim K3): decode ms/token of each layout at growing cached lengths, on a
built-in shape or the Home model (labs/layout_sweep.py through ui/layouts/layouts_run.py), its figure and numbers, K3
judged on it by the claims' one rule (analysis/claims.judge, through ui/claims/claims_run.py), and its downloads."""

from __future__ import annotations

import json

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.ui.chrome import table_csv
from llmviz.ui.claims import claim_rounds, claims_run, shared_runs
from llmviz.ui.layouts import layouts_run as run
from llmviz.viz import kv_layouts as fig


def section(t, s) -> None:
    """The sweep's controls, and its result once it has run (this session's, for these settings)."""
    st.header(t("layouts.sweep_title"))
    st.markdown(t("layouts.sweep_intro"))
    pressed = run.sweep_controls(t, s)
    o = run.options()
    result = run.run_sweep(t, s, o) if pressed else run.shown_sweep(s, o)
    if result is None:
        return
    chart, claim = st.columns([3, 2])
    names = {x: run.layout_name(t, x) for x in result["layouts"]}
    marks = {512: t("layouts.mark_short"), 1024: t("layouts.mark_long")}
    title = t("layouts.sweep_fig", model=result["model"])
    chart.plotly_chart(fig.sweep_lines(result, names, title, t("layouts.length"), t("layouts.ms_token"), marks),
                       width="stretch", key="kv_sweep")
    with claim:
        st.markdown(t("layouts.k3_article"))
        judged = claims_run.judged_sweep("layout_sweep", result)  # the claims' one rule, on this sweep
        claims_run.verdict_box(t, judged)
        shared_runs.page_caption(t, judged, result, "layouts")
        claims_run.floors(t, judged)
        claim_rounds.rounds_expander(t, judged, "kv_rounds")  # the rounds behind its figure
        if max(result["lengths"]) <= 1024:
            st.caption(t("layouts.k3_none_long", context=result["context"]))
        st.caption(t("layouts.k3_why", device=result["device"], threads=result["threads"],
                     weights=human(result["weight_bytes"]), kv=human(result["kv"]["contiguous"][-1]["bytes_used"]),
                     longest=result["lengths"][-1]))
    with st.expander(t("layouts.sweep_numbers")):
        ms = result["ms_per_token"]
        st.table({t("layouts.length"): result["lengths"],
                  **{names[x]: [f"{m:.2f} ({lo:.2f}–{hi:.2f})" for m, lo, hi in zip(ms[x]["median"], ms[x]["min"],
                                                                                   ms[x]["max"], strict=True)]
                     for x in result["layouts"]}})
    st.caption(t("layouts.sweep_timed", steps=result["steps"], warmup=result["warmup_steps"], repeats=result["repeats"],
                 bs=result["block_size"], device=result["device"], threads=result["threads"],
                 backend=result["attn_backend"], dtype=result["dtype"], seconds=result["seconds"]))
    rows = [{"layout": x, "cached_tokens": n, "ms_per_token_median": ms[x]["median"][i], "min": ms[x]["min"][i],
             "max": ms[x]["max"][i]} for x in result["layouts"] for i, n in enumerate(result["lengths"])]
    a, b = st.columns(2)
    a.download_button(t("compare.json"), json.dumps(result), "kv_layout_sweep.json", "application/json",
                      key="kv_sweep_json")
    b.download_button(t("compare.csv"), table_csv(rows), "kv_layout_sweep.csv", "text/csv", key="kv_sweep_csv")
