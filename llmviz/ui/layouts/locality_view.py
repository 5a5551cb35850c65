"""The KV layouts page's locality section (C12): the same cached tokens in paged blocks that lie in
order or scattered through the pool, decode ms/token of each (llmviz/labs/locality.py), on the sweep's model."""

from __future__ import annotations

import streamlit as st

from llmviz.ui import measure, server
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal
from llmviz.ui.layouts import layouts_run
from llmviz.ui.settings import Settings
from llmviz.viz.kv_layouts import read_order

LOCALITY_KEY = "llmviz_locality"
STEPS = 8


def key_of(s: Settings, o) -> tuple:
    return layouts_run.sweep_model(s, o), s.device, s.dtype, s.attn, o.repeats


def run(t, s: Settings, o) -> dict | None:
    from llmviz import service

    def work(queued):
        lm = server.model(layouts_run.sweep_model(s, o), s.device, s.dtype)
        with queued() as progress:
            def report(f, stage, values):
                progress(f, t("layouts.progress", what=values["what"]))

            return service.measure.locality_sweep(lm, None, STEPS, o.repeats, report, backend=s.attn, seed=s.seed)

    return measure.run(t, LOCALITY_KEY, key_of(s, o), work, text=t("layouts.progress", what="…"))


def cell(c: dict, i: int) -> str:
    return f"{c['median'][i]:.3f} ({c['min'][i]:.3f}–{c['max'][i]:.3f})"


def section(t, s: Settings, titled: bool = True) -> None:
    """The section (titled on the KV layouts page; in a lesson step, whose own title says what it is, without)."""
    if titled:
        st.header(t("locality.title"))
    st.markdown(t("locality.intro"))
    o = layouts_run.options()
    pressed = st.button(t("locality.run"), key="kv_locality_run", disabled=not server.engine_available())
    result = run(t, s, o) if pressed else measure.kept(LOCALITY_KEY, key_of(s, o))
    if result is None:
        st.caption(t("locality.none_yet"))
        return
    ms = result["ms_per_token"]
    n = len(result["lengths"])
    st.dataframe({t("locality.col_tokens"): result["lengths"],
                  t("locality.col_in_order"): [cell(ms["in_order"], i) for i in range(n)],
                  t("locality.col_scattered"): [cell(ms["scattered"], i) for i in range(n)],
                  t("locality.col_ratio"): [f"×{r:.3f}" for r in result["scattered_over_in_order"]]},
                 hide_index=True, key="kv_locality")
    st.caption(t("locality.timed", model=literal(result["model"]), device=result["device"],
                 threads=result["threads"], what=t.timed(result)))
    addresses(t, result)


def addresses(t, result: dict) -> None:
    """The article's prefetch loop tied to the measurement: the pool block each logical block of the longest run
    lay in, in the order a decode step reads them (the in-order run's fixed stride is `k_cache + i*stride`), and the
    measured difference beside the article's ~15%."""
    longest = {order: result["tables"][order][-1] for order in ("in_order", "scattered")}
    names = {order: t(f"locality.name_{order}") for order in longest}
    tokens = longest["in_order"]["tokens"]
    chart(t, read_order({o: v["blocks"] for o, v in longest.items()}, names,
                        t("locality.order_title", tokens=tokens, block=result["block_size"]),
                        (t("locality.axis_logical"), t("locality.axis_pool"))), key="kv_locality_order")
    ratio = result["scattered_over_in_order"][-1]
    st.markdown(t("locality.prefetch_link", tokens=tokens, slower=f"{100 * (ratio - 1):+.1f}%"))
