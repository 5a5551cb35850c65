"""The Serving page's prefix sharing tab (C15; claim K9): the shared-prompt trace through continuous batching
with and without sharing the prompt's KV blocks: the peak KV bytes, the prefill tokens fed and their time, whether the
outputs are the same, and each step's block tables."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.analysis.serving import kv_figures, metrics
from llmviz.ui import measure
from llmviz.ui.charts import chart
from llmviz.ui.navigation import KEEP
from llmviz.ui.serving import serving_run as run
from llmviz.ui.serving.serving_view import downloads, stepper
from llmviz.viz.serving import block_tables


def sharing_tab(t, s) -> None:
    st.markdown(t("serving.sharing_intro"))
    model = st.selectbox(t("serving.model"), run.SERVE_MODELS, key="share_model_w", **KEEP)
    wanted = (s.device, model, 8)
    results = run.sharing(t, *wanted) if st.button(t("serving.run_sharing")) else measure.kept(run.SHARING_KEY, wanted)
    if results is None:
        return
    kv = {on: kv_figures(results[on]) for on in (False, True)}
    saved = 1 - kv[True]["peak_kv_bytes"] / kv[False]["peak_kv_bytes"]
    fed = {on: kv[on]["prefill_tokens_fed"] for on in (False, True)}
    cols = st.columns(4)
    cols[0].metric(t("serving.kv_without"), human(kv[False]["peak_kv_bytes"]))
    cols[1].metric(t("serving.kv_with"), human(kv[True]["peak_kv_bytes"]), f"-{saved:.0%}", delta_color="inverse")
    cols[2].metric(t("serving.prefill_fed"), f"{fed[True]:,}", f"{fed[True] - fed[False]:,}", delta_color="inverse")
    ms = {on: kv[on]["prefill_steps_ms"] for on in (False, True)}
    cols[3].metric(t("serving.prefill_ms"), f"{ms[True]:,.0f} ms", f"{ms[True] - ms[False]:+,.0f} ms",
                   delta_color="inverse", help=t("serving.prefill_ms_help", without=ms[False]))
    same = results[True]["outputs"] == results[False]["outputs"]
    st.markdown(t("serving.k9", saved=saved, same=t("serving.same") if same else t("serving.differ")))
    records = results[True]["records"]
    step = stepper(t, "share_step_w", len(records) - 1, start=min(len(records) - 1, 5))
    chart(t, block_tables(list(records[step].tables), t("serving.tables_title", step=step), t("serving.x_block"),
                          t("serving.y_request"), t("serving.shared"), t("serving.own")), "share_tables")
    rows = [{"prefix_sharing": on, **kv[on], "tokens_per_s": metrics(results[on])["tokens_per_s"]}
            for on in (False, True)]
    downloads(t, rows, "prefix_sharing")
