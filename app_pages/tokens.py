"""Tokens and embeddings (C1, C2): the prompt as token ids and bytes, its embedding matrix, its positions."""

import streamlit as st

from llmviz.analysis import projection
from llmviz.analysis import tokens as tk
from llmviz.analysis.recorded import missing_tensors
from llmviz.ui import article_view, state, tokens_view
from llmviz.ui.charts import chart
from llmviz.ui.chrome import heading, missing_note, shown_run, translator
from llmviz.viz import embeddings
from llmviz.viz.tokens import token_chips

MAX_ROWS = 128  # tokens drawn in the matrices (the tables list them all)
MAX_STRIP = 96  # tokens drawn in the strip


def token_section(t, run, ids: list[int], texts: list[str], pieces: list[bytes]) -> None:
    card = run.trace.model_card
    groups = tk.group_by_character(pieces)
    split = tk.split_groups(groups)
    cols = st.columns(4)
    cols[0].metric(t("tokens.n_tokens"), len(ids))
    cols[1].metric(t("tokens.n_chars"), len(run.trace.prompt))
    cols[2].metric(t("tokens.n_bytes"), len(run.trace.prompt.encode("utf-8")))
    cols[3].metric(t("tokens.vocab"), f"{card['config']['vocab_size']:,}",
                   help=t("tokens.vocab_help", tokenizer=card.get("tokenizer_vocab", "?")))
    hexes = [tk.hex_spaced(p) for p in pieces]
    shown = [g for g in groups if g.stop <= MAX_STRIP]
    st.html(token_chips(texts, ids, hexes, shown, t("tokens.strip_title")))
    if len(ids) > MAX_STRIP:
        st.caption(t("tokens.truncated", shown=shown[-1].stop if shown else 0, n=len(ids)))
    entries = [run.trace.tokens[i]["piece"] for i in ids]
    st.dataframe({t("tokens.col_index"): list(range(len(ids))), t("tokens.col_id"): ids,
                  t("tokens.col_piece"): entries,
                  t("tokens.col_bytes"): hexes, t("tokens.col_text"): [tk.visible(s) for s in texts]},
                 hide_index=True, key="tokens_table", height=min(400, 38 + 35 * len(ids)),
                 column_config={t("tokens.col_piece"): st.column_config.TextColumn(help=t("tokens.piece_note"))})
    if entries != texts:  # the vocabulary spells some token otherwise than its text (Ġ, ▁, å for a byte)
        st.caption(t("tokens.piece_note"))
    tokens_view.character_section(t, groups)
    st.subheader(t("tokens.bytes_title"))
    if not split:
        st.caption(t("tokens.no_split"))
        return
    st.markdown(t("tokens.bytes_explain", chars=sum(len(g.text) for g in split),
                  tokens=sum(g.size for g in split)))
    st.dataframe({t("tokens.col_chars"): [g.text for g in split],
                  t("tokens.col_tokens"): [f"{g.start}–{g.stop - 1}" for g in split],
                  t("tokens.col_ids"): [" ".join(str(i) for i in ids[g.start:g.stop]) for g in split],
                  t("tokens.col_bytes"): [tk.hex_spaced(g.data) for g in split],
                  t("tokens.col_alone"): [" ".join(texts[g.start:g.stop]) for g in split]},
                 hide_index=True, key="tokens_groups")
    if any(not c.isascii() for c in run.trace.prompt):
        st.caption(t("tokens.article_note"))


def embedding_section(t, step, labels: list[str], notes: list[str]) -> None:
    st.header(t("tokens.embed_header"))
    embed = step.hook("embed").array[0]  # [b, n, d] -> [n, d]
    n, d = embed.shape
    st.markdown(t("tokens.embed_explain", n=n, d=d))
    rows = min(n, MAX_ROWS)
    chart(t, embeddings.matrix_heatmap(embed[:rows], labels, t("tokens.embed_title", n=n, d=d),
                                       t("tokens.axis_dim"), t("tokens.axis_token"), t("tokens.value"), notes),
          key="tokens_embed")
    if rows < n:
        st.caption(t("tokens.truncated", shown=rows, n=n))
    if n < 3:  # two points always lie on one line: a second axis would plot rounding noise
        st.caption(t("tokens.pca_too_few", n=n))
        return
    proj = projection.pca_2d(embed)
    pct = [f"{100 * e:.0f}" for e in proj.explained]
    chart(t, embeddings.projection_scatter(
        proj.coords, labels, t("tokens.pca_title"), t("tokens.pca_axis", i=1, pct=pct[0]),
        t("tokens.pca_axis", i=2, pct=pct[1]), t("tokens.axis_position")), key="tokens_pca")
    st.caption(t("tokens.pca_explain", pct=f"{100 * proj.explained.sum():.0f}"))


def position_section(t, run, step, labels: list[str]) -> None:
    st.header(t("tokens.pos_header"))
    tokens_view.position_chart(t, run, step, labels, MAX_ROWS, key="tokens_pos")


def main() -> None:
    t = translator()
    heading(t, "tokens")
    article_view.slips_here(t, "tokens")
    run = shown_run(t)
    if run is not None:
        step = run.trace.steps[0]  # the prefill holds the whole prompt
        ids = run.trace.prompt_ids
        pieces = tk.trace_token_bytes(run.trace.tokens, ids)
        texts = [tk.alone(p) for p in pieces]
        token_section(t, run, ids, texts, pieces)
        tokens_view.bert_section(t, run, ids, texts)
        missing = missing_tensors(step, ["embed", "pos"])
        if missing:
            missing_note(t, step, missing)
        else:
            labels = tk.position_labels(pieces)
            embedding_section(t, step, labels, tk.byte_notes(pieces))
            position_section(t, run, step, labels)
    state.sync_url()


main()
