"""The Prefill page's attention of one layer and head, on the prefill's recorded tensors (C3): Q, K and V with
their shapes and the GQA grouping, the scores (checked against Q and K) and the softmax with the mask, and every
layer's and head's map in one grid, whose tiles pick the layer and head shown."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import attention as at
from llmviz.trace import hooks
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal, scroll_to
from llmviz.viz.attention import attention_grid, attention_heatmap

GRID_TILE = 24  # each small map is pooled to at most 24 x 24
MAPS_ANCHOR, SCROLL_KEY = "prefill-maps", "llmviz_prefill_scroll"


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


def scores_section(t, step, layer: int, head: int, sh: at.HeadShapes, labels: list[str],
                   notes: list[str] | None = None) -> None:
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
                                        t("prefill.axis_key"), t("prefill.axis_query"), t("prefill.score"),
                                        notes=notes),
                      width="stretch", key="prefill_scores")
    probs = step.hook(hooks.probs(layer)).array[0, head]  # [n, n_k]
    right.plotly_chart(attention_heatmap(probs, labels, labels, t("prefill.probs_title", layer=layer, head=head),
                                         t("prefill.axis_key"), t("prefill.axis_query"), t("prefill.prob"),
                                         probabilities=True, hidden=at.masked(s), notes=notes), width="stretch",
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
