"""Sections of the Tokens page (C1, C2), some shared with the lesson: which characters the vocabulary holds whole and
which it spells in UTF-8 bytes, the article's 济南的冬天 as BERT reads it (facts, no weights) beside the loaded model's
tokens, and the positions of this run (RoPE's angles or the learned rows)."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import article, positions
from llmviz.analysis import tokens as tk
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal
from llmviz.viz import embeddings


def character_section(t, groups) -> None:
    """Which characters the vocabulary holds whole and which it spells in bytes."""
    chars = tk.non_ascii_characters(groups)
    if not chars:
        return
    st.subheader(t("tokens.chars_title"))
    as_bytes = [c.char for c in chars if not c.whole]
    st.markdown(t("tokens.chars_explain", n=len(chars), whole=len(chars) - len(as_bytes), bytes=len(as_bytes),
                  listed=literal("".join(as_bytes)) if as_bytes else "—"))
    st.dataframe({t("tokens.col_char"): [c.char for c in chars], t("tokens.col_first"): [c.first for c in chars],
                  t("tokens.col_utf8"): [len(c.char.encode("utf-8")) for c in chars],
                  t("tokens.col_count"): [c.tokens for c in chars],
                  t("tokens.col_kind"): [t("tokens.kind_whole") if c.whole else t("tokens.kind_bytes", n=c.tokens)
                                         for c in chars]},
                 hide_index=True, key="tokens_chars")


def bert_section(t, run, ids: list[int], texts: list[str]) -> None:
    """The article's 济南的冬天 as BERT reads it (facts, no weights) beside what the loaded model reads."""
    st.header(t("tokens.bert_header"))
    bert = article.bert_view("济南的冬天")
    st.markdown(t("tokens.bert_explain", vocab=bert["vocab"], n=len(bert["tokens"]), last=bert["positions"][-1]))
    card = run.trace.model_card
    left, right = st.columns(2)
    left.dataframe({t("tokens.bert_col_position"): bert["positions"], t("tokens.bert_col_token"): bert["tokens"],
                    t("tokens.bert_col_segment"): bert["segments"]}, hide_index=True, key="tokens_bert")
    right.dataframe({t("tokens.bert_col_position"): list(range(len(ids))), t("tokens.col_id"): ids,
                     t("tokens.col_text"): [tk.visible(x) for x in texts]}, hide_index=True, key="tokens_bert_here")
    scheme = "rope" if card["config"]["position"] == "rope" else "learned"
    bos = card["config"].get("bos_token_id")
    st.markdown(t("tokens.bert_here", model=literal(str(card["name"])), n=len(ids),
                  vocab=card["config"]["vocab_size"], scheme=t(f"tokens.bert_scheme_{scheme}"),
                  bos="" if bos is not None and ids and ids[0] == bos else t("tokens.bert_bos")))
    if run.trace.prompt != "济南的冬天":
        st.caption(t("tokens.bert_other_prompt"))


def position_chart(t, run, step, labels: list[str], rows: int, key: str) -> None:
    """The positions this run fed (C2), as its model encodes them: RoPE's rotation angle of each position and
    dimension pair (the recorded `pos` hook [n, pairs]), or the learned position rows [n, d]; the first `rows`."""
    config = run.trace.model_card["config"]
    pos = step.hook("pos").array[0]  # [b, n, pos_dim] -> [n, pos_dim]
    rows = min(pos.shape[0], rows)
    if config["position"] != "rope":
        st.markdown(t("tokens.pos_learned_explain", d=pos.shape[1], table=config["max_position_embeddings"]))
        chart(t, embeddings.matrix_heatmap(pos[:rows], labels, t("tokens.pos_learned_title", n=pos.shape[0],
                                                                   d=pos.shape[1]),
                                           t("tokens.axis_dim"), t("tokens.axis_position"),
                                           t("tokens.value")), key=key)
        return
    rates = positions.rope_rates(pos, step.positions[0])
    st.markdown(t("tokens.pos_rope_explain", pairs=pos.shape[1], hd=2 * pos.shape[1]))
    chart(t, embeddings.angle_heatmap(positions.wrap_angles(pos[:rows]), pos[:rows], labels,
                                      t("tokens.pos_rope_title", n=pos.shape[0], pairs=pos.shape[1]),
                                      t("tokens.axis_pair"), t("tokens.axis_position"), t("tokens.angle")),
          key=key)
    if rates is not None:
        st.caption(t("tokens.pos_rope_rates", first=f"{rates.rates[0]:.3g}", last=f"{rates.rates[-1]:.3g}",
                     wave=f"{rates.wavelengths[-1]:,.0f}", pair=len(rates.rates) - 1))
