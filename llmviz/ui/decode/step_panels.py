"""The Decode page's panels of one step (C3, C5, C6): the new token's query and attention row, the KV cache
grid, the next-token distribution and the logit lens. Each reads a run as the stepper holds it (its trace, the step
shown, whether it is live) and draws from what the step recorded."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.decode_series import cache_norms
from llmviz.analysis.sampling import distribution, stored_logits
from llmviz.analysis.tokens import token_label
from llmviz.trace import hooks
from llmviz.trace.config import KV_LAYOUTS
from llmviz.ui import names, presenter
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal
from llmviz.ui.markdown import escape
from llmviz.viz import decode as fig

SHOWN = 10  # bars of the next-token chart (and the drawn token's, when it ranks lower)


def attention_panel(t, run, layer: int, labels: list[str]) -> None:
    step = run.step
    q = step.hook(hooks.q(layer)).array[0, :, -1, :]  # [1, h, n, hd] -> the last query: [h, hd]
    probs_rec = step.hook(hooks.probs(layer))
    probs = probs_rec.array[0, :, -1, :]  # [1, h, n, n_k] -> [h, n_k]
    n_k = probs.shape[1]
    start = int(step.positions[0, -1]) + 1 - n_k  # > 0 only for a sliding window
    left, right = st.columns([2, 3])
    with left:
        n = step.input_ids.shape[1]
        key = "decode.q_shape_prefill" if step.phase == "prefill" else "decode.q_shape"
        st.markdown(t(key, heads=q.shape[0], hd=q.shape[1], n=n))
        chart(t, fig.vector_heatmap(q, t("decode.head"), "head_dim", t("decode.q_title", layer=layer),
                                    t("decode.value")), key="q")
    with right:
        st.markdown(t("decode.attn_text", n_k=n_k))
        chart(t, fig.attention_row(probs, labels, start, t("decode.head"), t("decode.attn_title"),
                                   t("decode.weight")), key="attn")
        if probs_rec.recomputed:
            st.caption(t("decode.recomputed", backend=literal(str(step.timings.get("attn_backend", "?")))))


def cache_panel(t, run, layer: int, labels: list[str], detail: bool = True) -> None:
    step, kv = run.step, run.step.kv
    new = step.input_ids.shape[1]
    norms = cache_norms(run.trace.steps, layer, "k", run.cursor)  # [kv, positions]
    title = t("decode.kv_title" if detail else "decode.kv_title_short", layer=layer, used=kv["seq_len"],
              max_seq=kv["max_seq"])
    chart(t, presenter.enlarge(fig.kv_grid(norms, new, labels, t("decode.kv_head"), title)),
             key="kvgrid")
    if not detail:
        return
    layout = str(kv.get("layout", "contiguous"))
    note = names.about(t, KV_LAYOUTS, layout)  # its declaration's line; a layout not declared here: its name
    st.caption(t("decode.kv_caption", before=kv["seq_len"] - new, after=kv["seq_len"], kv=kv["kv_heads"],
                 hd=kv["head_dim"], used=kv["bytes_used"], alloc=kv["bytes_allocated"],
                 share=100 * kv["bytes_used"] / kv["bytes_allocated"],
                 layout_note=escape(note) if note else t("decode.kv_layout.other", layout=literal(layout))))


def next_token_panel(t, run, settings, detail: bool = True) -> None:
    step, tokens = run.step, run.trace.tokens
    ids, logits, lse = stored_logits(step)
    chosen_id = int(step.sampled[0])
    dist = distribution(ids, logits, lse, settings.temperature, settings.top_k, settings.top_p, show=SHOWN,
                        include=chosen_id)
    chosen = next((i for i, v in enumerate(dist.ids) if v == chosen_id), None)
    pieces = [token_label(tokens, int(i)) for i in dist.ids]
    title = t("decode.dist_title", n=SHOWN)
    if chosen is not None and dist.ranks[chosen] > SHOWN:  # drawn from further down: one more bar, its rank said
        pieces[chosen] = f"#{dist.ranks[chosen]} {pieces[chosen]}"
        title = t("decode.dist_title_drawn", n=SHOWN, rank=int(dist.ranks[chosen]))
    chart(t, presenter.enlarge(fig.next_token_bars(pieces, dist.probs, dist.raw_probs, dist.kept, chosen, (
        t("decode.raw"), t("decode.shaped"), t("decode.drawn")), title)), key="dist")
    if not detail:
        return
    caption = "decode.dist_caption_replay" if run.key is None else "decode.dist_caption"
    st.caption(t(caption, kept=dist.kept_count, used=step.sampling.get("temperature", "?"),
                 token=literal(token_label(tokens, chosen_id))))
    if step.logits is None:  # a large vocabulary: only the top tokens were stored
        st.caption(t("decode.dist_topk_only", stored=len(ids), vocab=run.trace.model_card["config"]["vocab_size"]))
    if step.lens_ids is not None:
        lens_pieces = [[token_label(tokens, int(i)) for i in row] for row in step.lens_ids[:, 0]]
        chart(t, fig.logit_lens(lens_pieces, step.lens_probs[:, 0], t("decode.layer"),
                                t("decode.lens_title")), key="lens")
        st.caption(t("decode.lens_caption"))
