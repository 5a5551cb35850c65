"""The lesson's live panels of §1.1, prefill (C1-C4): each draws one thing from the student's own run
with the figure its full page draws, and has one control that changes it at once. A panel reads only the run's
recorded trace, so a replayed recording draws it as well as a live run.

Every panel is `panel(t, run)`; its control's key is `lesson_ctl_<panel>`. The numbers a test reads are metrics.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import article
from llmviz.analysis import attention as at
from llmviz.analysis import tokens as tk
from llmviz.analysis.bert_input import bert_input
from llmviz.analysis.kv_memory import kv_bytes
from llmviz.analysis.model_map import shape_text
from llmviz.analysis.predict import ELEMENT_BYTES, format_of
from llmviz.analysis.recorded import missing_tensors
from llmviz.trace import hooks
from llmviz.ui import tokens_view
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal, missing_note
from llmviz.ui.lesson import lesson_growth
from llmviz.viz import embeddings
from llmviz.viz.attention import attention_heatmap
from llmviz.viz.tokens import field_chips, token_chips

KV_DTYPES = ("fp32", "fp16", "bf16", "int8")  # what one cached number may take (the article's is fp32)
SHOWN_ROWS = 64  # prompt tokens drawn in a panel's matrix


def ctl(panel: str) -> str:
    return f"lesson_ctl_{panel}"


def prompt_pieces(run) -> tuple[list[int], list[bytes], list[str]]:
    ids = run.trace.prompt_ids
    pieces = tk.trace_token_bytes(run.trace.tokens, ids)
    return ids, pieces, [tk.alone(p) for p in pieces]


def tokens(t, run) -> None:
    """The prompt cut into tokens (C1); the control picks one, whose id and bytes are shown."""
    ids, pieces, texts = prompt_pieces(run)
    groups = [g for g in tk.group_by_character(pieces) if g.stop <= 96]
    st.html(token_chips(texts, ids, [tk.hex_spaced(p) for p in pieces], groups, t("tokens.strip_title")))
    i = st.select_slider(t("lesson.ctl.token"), options=list(range(len(ids))), key=ctl("tokens"),
                         format_func=lambda i: f"{i} · {literal(tk.label(pieces[i]))}")  # its options are markdown
    cols = st.columns([1, 1, 1, 2])  # the bytes' label and hex (up to 4 bytes) need room in Chinese at 1280 px
    cols[0].metric(t("tokens.n_tokens"), len(ids))
    cols[1].metric(t("tokens.n_chars"), len(run.trace.prompt))
    cols[2].metric(t("tokens.col_id"), ids[i])
    cols[3].metric(t("tokens.col_bytes"), tk.hex_spaced(pieces[i]))


def bert(t, run) -> None:
    """济南的冬天 as BERT reads it, or as this model does (the control); the positions run across (one screen)."""
    ids, _, texts = prompt_pieces(run)
    view = article.bert_view("济南的冬天")
    which = st.segmented_control(t("lesson.ctl.reader"), ("bert", "bert_sum", "here"), default="bert", required=True,
                                 key=ctl("bert"), format_func=lambda w: t(f"lesson.reader.{w}"))
    if which == "bert_sum":
        bert_sum(t, view)
        return
    cols = st.columns(3)
    if which == "bert":
        cols[0].metric(t("tokens.n_tokens"), len(view["tokens"]))
        cols[1].metric(t("tokens.vocab"), f"{view['vocab']:,}")
        cols[2].metric(t("lesson.last_position"), view["positions"][-1])
        across(t("tokens.bert_col_position"), view["positions"],
               {t("tokens.bert_col_token"): view["tokens"], t("tokens.bert_col_segment"): view["segments"]},
               key="lesson_bert")
    else:
        cols[0].metric(t("tokens.n_tokens"), len(ids))
        cols[1].metric(t("tokens.vocab"), f"{run.trace.model_card['config']['vocab_size']:,}")
        cols[2].metric(t("lesson.last_position"), len(ids) - 1)
        across(t("tokens.bert_col_position"), list(range(len(ids))),
               {t("tokens.col_id"): ids, t("tokens.col_text"): [tk.visible(x) for x in texts]}, key="lesson_bert_here")


def bert_sum(t, view: dict) -> None:
    """BERT's input for the article's example: token + position + segment rows, summed (analysis/bert_input.py),
    on random tables of BERT's shapes, said so; the first 64 of 768 columns drawn."""
    got = bert_input(view["tokens"], view["positions"], view["segments"])
    shapes = {k: shape_text(v) for k, v in got.shapes.items()}
    st.metric(t("lesson.shape"), shape_text(got.summed.shape))
    labels = [f"{p}:{tok}" for p, tok in zip(view["positions"], view["tokens"], strict=True)]
    chart(t, embeddings.matrix_heatmap(got.summed[:, :64], labels, t("lesson.bert_sum_title"), t("tokens.axis_dim"),
                                       t("tokens.axis_token"), t("tokens.value")), key="lesson_bert_sum")
    st.caption(t("lesson.bert_sum_note", **shapes))


def across(corner: str, positions: list, rows: dict[str, list], key: str) -> None:
    """One chip per position, its fields under it (viz/tokens.field_chips): they wrap on a phone."""
    with st.container(key=key):
        st.html(field_chips(corner, positions, rows))


def embedding(t, run) -> None:
    """The prompt's embeddings [n, d] (C2), or the positions this run fed as its model encodes them (the first
    control); the second says how many of the d columns are drawn."""
    step, (_, pieces, _) = run.trace.steps[0], prompt_pieces(run)
    embed = step.hook("embed").array[0]  # [b, n, d] -> [n, d]
    n, d = embed.shape
    left, right = st.columns([2, 3])  # the two controls on one row: the chart stays in the first screen
    view = left.segmented_control(t("lesson.ctl.vectors"), ("tokens", "positions"), default="tokens", required=True,
                                  key=ctl("embedding_view"), format_func=lambda v: t(f"lesson.vectors.{v}"))
    if view == "positions":
        if missing := missing_tensors(step, ("pos",)):  # a recording captured without its positions
            missing_note(t, step, missing)
            return
        ids = [int(p) for p in step.positions[0]]  # the positions fed: 0 .. n-1 for a prompt
        st.metric(t("lesson.positions_fed"), f"{ids[0]} … {ids[-1]}" if len(ids) > 1 else str(ids[0]))
        tokens_view.position_chart(t, run, step, tk.position_labels(pieces)[:SHOWN_ROWS], SHOWN_ROWS,
                                   key="lesson_positions")
        return
    shown = right.slider(t("lesson.ctl.columns"), 1, d, min(d, 64), key=ctl("embedding"))
    st.metric(t("lesson.shape"), shape_text((n, d)))
    chart(t, embeddings.matrix_heatmap(embed[:SHOWN_ROWS, :shown], tk.position_labels(pieces)[:SHOWN_ROWS],
                                       t("tokens.embed_title", n=n, d=d), t("tokens.axis_dim"),
                                       t("tokens.axis_token"), t("tokens.value"), tk.byte_notes(pieces)),
             key="lesson_embed")


def head_shapes(step, layer: int = 0) -> at.HeadShapes:
    return at.head_shapes(*(step.hook(hooks.layer_hook_name(layer, p)).shape for p in ("attn_in", "q", "k", "scores")))


def qkv(t, run) -> None:
    """X [n, d] times W_Q [d, head_dim] is one head's Q [n, head_dim] (C3); the control picks the head."""
    step = run.trace.steps[0]
    sh = head_shapes(step)
    control, shape = st.columns([3, 1])
    head = control.select_slider(t("prefill.head"), options=list(range(sh.heads)), key=ctl("qkv"))
    x, kvh = (sh.n, sh.d), sh.kv_head(head)
    q = step.hook(hooks.q(0)).array[0, head]  # [n, head_dim]
    shape.metric(t("lesson.shape_q"), shape_text(q.shape))
    st.caption("  \n".join((  # one line each, small: the chart stays in the first screen
        t("prefill.q_line", head=head, formula=at.matmul_text("X", x, "W_Q", (sh.d, sh.head_dim), "Q")),
        t("prefill.k_line", kvh=kvh, formula=at.matmul_text("X", x, "W_K", (sh.d, sh.head_dim), "K")),
        t("prefill.v_line", kvh=kvh, formula=at.matmul_text("X", x, "W_V", (sh.d, sh.head_dim), "V")))))
    pieces = prompt_pieces(run)[1]
    chart(t, embeddings.matrix_heatmap(q[:SHOWN_ROWS], tk.position_labels(pieces)[:SHOWN_ROWS],
                                       t("lesson.q_title", head=head), "head_dim", t("tokens.axis_token"),
                                       t("tokens.value"), tk.byte_notes(pieces)), key="lesson_q")


STAGES = ("scores", "softmax", "output", "growth")  # the scores panel's views of one head: QKᵀ/√d_k, softmax, × V;
# and the O(n²) term, measured (lesson_growth.py)


def scores(t, run) -> None:
    """Q Kᵀ / √d_k [n, n] with the causal mask, after softmax, or what attention outputs: a query's probabilities
    times V, summed (the control; then a second picks the query) (C3). Layer 0, head 0, as recorded. Or how the
    score matrix and its time grow with the prompt's length, measured (lesson_growth.py)."""
    stage = st.segmented_control(t("lesson.ctl.stage"), STAGES, default="scores", required=True, key=ctl("scores"),
                                 format_func=lambda s: t(f"lesson.stage.{s}"))
    if stage == "growth":
        lesson_growth.growth(t, run)
        return
    step = run.trace.steps[0]
    sh = head_shapes(step)
    pieces = prompt_pieces(run)[1]
    labels, notes = tk.position_labels(pieces), tk.byte_notes(pieces)
    s = step.hook(hooks.scores(0)).array[0, 0]  # [b, h, n, n_k] -> layer 0, head 0: [n, n_k]
    cols = st.columns(2)
    cols[0].metric(t("lesson.shape_scores"), shape_text(s.shape))
    cols[1].metric(t("lesson.scale"), f"1/√{sh.head_dim} = {sh.scale:.4g}")
    probs = step.hook(hooks.probs(0)).array[0, 0] if stage != "scores" else None
    if stage == "output":
        output(t, step, probs, labels, sh)
        return
    if stage == "softmax":
        fig = attention_heatmap(probs, labels, labels, t("prefill.probs_title", layer=0, head=0), t("prefill.axis_key"),
                                t("prefill.axis_query"), t("prefill.prob"), probabilities=True, hidden=at.masked(s),
                                notes=notes)
    else:
        fig = attention_heatmap(s, labels, labels, t("prefill.scores_title", layer=0, head=0), t("prefill.axis_key"),
                                t("prefill.axis_query"), t("prefill.score"), notes=notes)
    chart(t, fig, key="lesson_scores")


def output(t, step, probs, labels: list[str], sh) -> None:
    """The query the student picks: each key's V row scaled by its probability, and their sum, the head's output
    for that query (analysis/attention.weighted_values), from the recorded softmax and V."""
    n = probs.shape[0]
    row = st.select_slider(t("lesson.ctl.query"), options=list(range(n)), value=n - 1, key=ctl("scores_row"),
                           format_func=lambda i: literal(labels[i]))  # its options are markdown
    v = step.hook(hooks.v(0)).array[0, sh.kv_head(0)]  # [b, kv, n, hd] -> head 0's KV head: [n, hd]
    parts = at.weighted_values(probs, v, row)  # [row + 2, hd]: p_j * V_j for each key j, then the sum
    rows = [t("lesson.weighted_row", p=f"{probs[row, j]:.3f}", token=labels[j]) for j in range(row + 1)]
    title = t("lesson.output_title", query=labels[row])
    chart(t, embeddings.matrix_heatmap(parts, [*rows, t("lesson.output_row")], title, "head_dim",
                                       t("prefill.axis_key"), t("tokens.value")), key="lesson_output")
    st.caption(t("lesson.output_note", query=literal(labels[row]), n=row + 1,
                 total=f"{probs[row, : row + 1].sum():.3f}"))


def kv_shape(t, run) -> None:
    """Each layer's cache as [tokens, kv heads, head_dim] (C4; the article's k_cache.shape); the control picks the
    layer, read from the recorded K of the step shown (the cache after the prompt)."""
    steps = run.trace.steps
    layers = run.trace.model_card["config"]["num_layers"]
    layer = st.select_slider(t("prefill.layer"), options=list(range(layers)), key=ctl("kv_shape"))
    b, kv, n, hd = steps[0].hook(hooks.k(layer)).shape  # [b, kv_heads, n, head_dim]: what attention reads
    snap = steps[0].kv
    eb = int(snap["element_bytes"])
    cols = st.columns(3)
    cols[0].metric(t("lesson.shape_cache", layer=layer), shape_text((n, kv, hd)))
    cols[1].metric(t("lesson.layer_bytes"), f"{kv_bytes(n, kv, hd, eb):,} B")
    cols[2].metric(t("lesson.model_bytes"), f"{kv_bytes(n, kv, hd, eb, layers):,} B")
    # the same K with the batch's axis, as attention reads it; and the cache's tensor as torch holds it (every layer,
    # K and V, the batch's rows, every slot a layout keeps: a contiguous cache's max_seq), when the run recorded it
    read, stored = st.columns(2)
    read.metric(t("lesson.shape_engine", layer=layer), shape_text((b, kv, n, hd)))
    if snap.get("storage_shape"):
        stored.metric(t("lesson.shape_engine_all", layout=literal(str(snap["layout"]))),
                      shape_text(snap["storage_shape"]))
    st.caption(t("lesson.kv_shape_note", dtype=literal(str(snap["dtype"])), eb=eb))


def kv_bytes_panel(t, run) -> None:
    """The article's 24 KB (4 tokens x 12 heads x 64 x K and V x 4 bytes, one layer) beside this run's prompt in the
    same arithmetic; the control is the bytes of one number."""
    kv = run.trace.steps[0].kv
    layers, n = run.trace.model_card["config"]["num_layers"], len(run.trace.prompt_ids)
    dtype = st.segmented_control(t("lesson.ctl.dtype"), KV_DTYPES, default="fp32", required=True, key=ctl("kv_bytes"))
    eb = ELEMENT_BYTES[dtype]
    ex = article.ARTICLE_PREFILL
    theirs = kv_bytes(ex.tokens, ex.kv_heads, ex.head_dim, eb)
    ours = kv_bytes(n, kv["kv_heads"], kv["head_dim"], eb)
    cache_bytes(t, theirs, ex.layers, ours, layers)
    st.caption(t("lesson.kv_bytes_formula", n=n, kv=kv["kv_heads"], hd=kv["head_dim"], eb=eb, layers=layers,
                 ours=ours, theirs=theirs, dtype=dtype))
    stored = str(kv.get("kv_dtype") or format_of(int(kv["element_bytes"])))  # the run's format (a codec's name)
    if dtype != stored:  # the figures above are this dtype's arithmetic; the run's cache (the map) is its own
        st.caption(t("lesson.kv_bytes_stored", dtype=dtype, stored=literal(stored)))


def cache_bytes(t, theirs: int, their_layers: int, ours: int, our_layers: int) -> None:
    """The article's cache bytes beside this model's, one layer and all layers (two rows: the byte counts are long)."""
    for who, per_layer, layers in (("article", theirs, their_layers), ("here", ours, our_layers)):
        one, every = st.columns(2)
        one.metric(t(f"lesson.{who}_layer"), f"{per_layer:,} B")
        every.metric(t(f"lesson.{who}_model"), f"{per_layer * layers:,} B")


PANELS = {"tokens": tokens, "bert": bert, "embedding": embedding, "qkv": qkv, "scores": scores, "kv_shape": kv_shape,
          "kv_bytes": kv_bytes_panel}
# The trace's tensors each panel reads (a trace recorded without them says so instead of drawing)
FIRST_LAYER = tuple(hooks.layer_hook_name(0, p) for p in ("attn_in", "q", "k", "scores", "probs"))
SCORES = (*FIRST_LAYER, hooks.v(0))  # the scores panel's output view reads V too


def needs(panel: str, layers: int) -> tuple[str, ...]:
    """The prefill's recorded tensors a panel reads (a trace recorded without them says so instead of drawing)."""
    return {"embedding": ("embed",), "qkv": FIRST_LAYER, "scores": SCORES,
            "kv_shape": tuple(hooks.every_layer("k", layers))}.get(panel, ())
