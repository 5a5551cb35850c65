"""The Prefill page's KV cache (C4, C6): what the prefill wrote, by the formula, by the recorded tensors and as
the cache holds it (used, allocated), beside the article's worked example."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import kv_memory as kvm
from llmviz.trace import hooks
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal
from llmviz.viz.kv_cache import kv_bytes_bars


def kv_section(t, run, step, layers: int) -> None:
    st.header(t("prefill.kv_header"))
    st.markdown(t("prefill.kv_explain"))
    kv = step.kv
    eb = int(kv["element_bytes"])
    rows = kvm.layer_kv([step.hook(name).shape for name in hooks.every_layer("k", layers)],
                        [step.hook(name).shape for name in hooks.every_layer("v", layers)], eb)
    st.dataframe({t("prefill.col_layer"): [r.layer for r in rows],
                  t("prefill.col_k"): [str(list(r.k_shape)) for r in rows],
                  t("prefill.col_v"): [str(list(r.v_shape)) for r in rows],
                  t("prefill.col_bytes"): [f"{r.bytes:,}" for r in rows]}, hide_index=True, key="prefill_kv_layers",
                 height=min(400, 38 + 35 * len(rows)))
    formula = kvm.kv_bytes(kv["seq_len"], kv["kv_heads"], kv["head_dim"], eb, kv["layers"], kv["batch"])
    written = [r for r in step.hooks if r.name == "kv.write"]  # the rows copied out of the cache tensor itself
    recorded = written[0].nbytes if written else sum(r.bytes for r in rows)
    st.markdown(t("prefill.kv_formula", n=kv["seq_len"], kv=kv["kv_heads"], hd=kv["head_dim"], eb=eb,
                  dtype=literal(str(kv["dtype"])), layers=kv["layers"], total=f"{formula:,}"))
    cols = st.columns(4)
    cols[0].metric(t("prefill.kv_by_formula"), f"{formula:,} B")
    cols[1].metric(t("prefill.kv_by_tensors"), f"{recorded:,} B")
    cols[2].metric(t("prefill.kv_used"), f"{kv['bytes_used']:,} B", help=t("prefill.kv_used_help"))
    cols[3].metric(t("prefill.kv_allocated"), f"{kv['bytes_allocated']:,} B",
                   help=t("prefill.kv_allocated_help", max_seq=kv["max_seq"], layout=literal(str(kv["layout"]))))
    names = [t(f"prefill.{k}") for k in ("kv_by_formula", "kv_by_tensors", "kv_used", "kv_allocated")]
    values = [formula, recorded, kv["bytes_used"], kv["bytes_allocated"]]
    chart(t, kv_bytes_bars(names, values, t("prefill.kv_bars_title"), t("prefill.bytes")),
             key="prefill_kv")
    st.subheader(t("prefill.article_header"))
    here = kvm.KVExample(kv["seq_len"], kv["kv_heads"], kv["head_dim"], eb, kv["layers"])
    table = kvm.comparison(kvm.ARTICLE_EXAMPLE, here)
    st.dataframe({"": [t(f"prefill.row_{what}") for what, _, _ in table],
                  t("prefill.col_article"): [a for _, a, _ in table],
                  t("prefill.col_here", name=literal(str(run.trace.model_card["name"]))): [b for _, _, b in table]},
                 hide_index=True, key="prefill_article")
    st.markdown(t("prefill.article_explain", article=kvm.ARTICLE_EXAMPLE.formula(), here=here.formula(),
                  ratio=f"{here.per_layer / kvm.ARTICLE_EXAMPLE.per_layer:.3g}"))
