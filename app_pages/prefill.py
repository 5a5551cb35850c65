"""Prefill (C3, C4): Q/K/V with their real shapes, scores, mask and softmax, every head, the KV cache, timings."""

import streamlit as st

from llmviz.analysis import attention as at
from llmviz.analysis import kv_memory as kvm
from llmviz.analysis.recorded import missing_tensors
from llmviz.analysis.tokens import position_labels, trace_token_bytes
from llmviz.trace import hooks
from llmviz.ui import article_view, state
from llmviz.ui.charts import chart
from llmviz.ui.chrome import (
    article_shapes,
    heading,
    literal,
    missing_note,
    scroll_to,
    shown_run,
    step_timing,
    translator,
)
from llmviz.viz.attention import attention_grid, attention_heatmap
from llmviz.viz.kv_cache import kv_bytes_bars

GRID_TILE = 24  # each small map is pooled to at most 24 x 24
MAPS_ANCHOR, SCROLL_KEY = "prefill-maps", "llmviz_prefill_scroll"
DRAWN = ("attn_in", "q", "k", "v", "scores", "probs")  # the hooks of every layer this page reads


def qkv_section(t, step, layer: int, head: int, sh: at.HeadShapes) -> None:
    st.header(t("prefill.qkv_header"))
    x, kvh = (sh.n, sh.d), sh.kv_head(head)
    st.markdown(t("prefill.qkv_explain", n=sh.n, d=sh.d, hd=sh.head_dim, heads=sh.heads, kv=sh.kv_heads))
    lines = [t("prefill.q_line", head=head, formula=at.matmul_text("X", x, "W_Q", (sh.d, sh.head_dim), "Q")),
             t("prefill.k_line", kvh=kvh, formula=at.matmul_text("X", x, "W_K", (sh.d, sh.head_dim), "K")),
             t("prefill.v_line", kvh=kvh, formula=at.matmul_text("X", x, "W_V", (sh.d, sh.head_dim), "V"))]
    st.markdown("\n".join(f"- {line}" for line in lines))
    if sh.group > 1:
        st.caption(t("prefill.gqa", group=sh.group, kv=sh.kv_heads, kvh=kvh, first=kvh * sh.group,
                     last=(kvh + 1) * sh.group - 1))


def scores_section(t, step, layer: int, head: int, sh: at.HeadShapes, labels: list[str]) -> None:
    st.header(t("prefill.scores_header"), anchor=MAPS_ANCHOR)
    if st.session_state.pop(SCROLL_KEY, False):
        scroll_to(MAPS_ANCHOR)
    scores = step.hook(hooks.scores(layer))
    s = scores.array[0, head]  # [b, h, n, n_k] -> [n, n_k]
    q = step.hook(hooks.q(layer)).array[0, head]  # [n, hd]
    k = step.hook(hooks.k(layer)).array[0, sh.kv_head(head)]  # [n_k, hd]
    gap = at.max_abs_gap(s, at.scores_from_qk(q, k, sh.scale))
    future, window = at.mask_counts(s)
    st.markdown(t("prefill.scores_explain", formula=at.matmul_text("Q", (sh.n, sh.head_dim), "Kᵀ",
                                                                   (sh.head_dim, sh.n_k), "S"),
                  hd=sh.head_dim, scale=f"{sh.scale:.4g}", masked=future, total=s.size))
    if window:  # masked keys before the query: a sliding window's, or a block-sparse pattern's (C20)
        sparse = "block-sparse" in scores.note
        st.markdown(t("prefill.sparse_masked" if sparse else "prefill.window_masked", n=window))
    if scores.recomputed:  # rebuilt from these same Q and K: the check below would be circular
        st.info(t("prefill.recomputed", backend=literal(str(step.timings.get("attn_backend", "?")))))
    else:
        st.caption(t("prefill.recheck", gap=f"{gap:.1e}"))
    left, right = st.columns(2)
    left.plotly_chart(attention_heatmap(s, labels, labels, t("prefill.scores_title", layer=layer, head=head),
                                        t("prefill.axis_key"), t("prefill.axis_query"), t("prefill.score")),
                      width="stretch", key="prefill_scores")
    probs = step.hook(hooks.probs(layer)).array[0, head]  # [n, n_k]
    right.plotly_chart(attention_heatmap(probs, labels, labels, t("prefill.probs_title", layer=layer, head=head),
                                         t("prefill.axis_key"), t("prefill.axis_query"), t("prefill.prob"),
                                         probabilities=True, hidden=at.masked(s)), width="stretch",
                       key="prefill_probs")
    st.caption(t("prefill.mask_note"))


def pick_from_grid(tile: tuple[int, int], layers: int, heads: int) -> None:
    """A click on a tile of the grid selects that layer and head (the maps above enlarge it)."""
    points = st.session_state["prefill_grid"].selection.points
    if points:
        layer, head = at.grid_cell(points[0]["x"], points[0]["y"], tile)
        if 0 <= layer < layers and 0 <= head < heads:
            st.session_state["prefill_layer"], st.session_state["prefill_head"] = layer, head
            st.session_state[SCROLL_KEY] = True  # bring the enlarged maps into view on the next draw


def grid_section(t, step, layers: int, sh: at.HeadShapes, layer: int, head: int) -> None:
    st.header(t("prefill.grid_header"))
    maps = [step.hook(name).array[0] for name in hooks.every_layer("probs", layers)]  # L views of [h, n, n_k]
    tiled = at.tile_maps(maps, GRID_TILE)
    tile = at.pool_map(maps[0][0], GRID_TILE).shape
    chart(t, attention_grid(tiled, layers, sh.heads, tile, 1, (layer, head),
                            t("prefill.grid_title", layers=layers, heads=sh.heads),
                            t("prefill.axis_head"), t("prefill.axis_layer")),
             key="prefill_grid", on_select=lambda: pick_from_grid(tile, layers, sh.heads),
             selection_mode="points")
    st.caption(t("prefill.grid_explain", layer=layer, head=head))


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


def timing_section(t, step) -> None:
    spans = step.timings.get("spans_ms") or {}
    if not spans:
        return
    st.header(t("prefill.time_header"))
    step_timing(t, step, t("prefill.time_title", total=f"{sum(spans.values()):.1f}"), "prefill_time")


def tensor_sections(t, run, step, layers: int) -> None:
    a, b = st.columns(2)
    layer = a.selectbox(t("prefill.layer"), list(range(layers)), key="prefill_layer")
    sh = at.head_shapes(*(step.hook(hooks.layer_hook_name(layer, p)).shape for p in ("attn_in", "q", "k", "scores")))
    head = b.selectbox(t("prefill.head"), list(range(sh.heads)), key="prefill_head")
    labels = position_labels(trace_token_bytes(run.trace.tokens, run.trace.prompt_ids))
    qkv_section(t, step, layer, head, sh)
    scores_section(t, step, layer, head, sh, labels)
    grid_section(t, step, layers, sh, layer, head)
    kv_section(t, run, step, layers)


def main() -> None:
    t = translator()
    heading(t, "prefill")
    article_view.slips_here(t, "prefill")
    run = shown_run(t)
    if run is not None:
        article_shapes(t, run, key="shapes_prefill")
        step = run.trace.steps[0]  # the prefill: every prompt token at once
        layers = int(run.trace.model_card["config"]["num_layers"])
        missing = missing_tensors(step, [hooks.layer_hook_name(i, p) for i in range(layers) for p in DRAWN])
        if missing:
            missing_note(t, step, missing)
        else:
            tensor_sections(t, run, step, layers)
        timing_section(t, step)
    state.sync_url()


main()
