"""The lesson's live panels of §2.1, §4 and §5, memory (C8, C9, C11, C17, C19-C21): the student's
sequence in preallocated rows and in blocks, the article's OOM budget and the right one, what fits in a budget,
and what the cache's dtype, GQA, a block-sparse mask and quantized weights change, each with one control
(`lesson_ctl_<panel>`). The byte rules are the ones the Memory page and the predictions use (analysis/predict.py,
analysis/kv_memory.py); the mask is the engine's (trace/sparsity.py).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from llmviz.analysis import article
from llmviz.analysis.kv_memory import human, kv_bytes
from llmviz.analysis.predict import (
    ELEMENT_BYTES,
    QUANT_BITS,
    Setup,
    Shape,
    kv_bytes_per_token,
    layer_slots,
    unquantized_bytes,
    weight_bytes,
)
from llmviz.trace.sparsity import BlockSparse, window_allows
from llmviz.ui.charts import chart
from llmviz.ui.lesson import lesson_budget, lesson_quant
from llmviz.ui.lesson.lesson_prefill import ctl
from llmviz.viz import kv_layouts
from llmviz.viz.attention import attention_heatmap


def held(run) -> int:
    """Tokens the run's cache holds at its last step."""
    return int(run.trace.steps[-1].kv["seq_len"])


def shape_of(run) -> Shape:
    return Shape.from_config(run.trace.model_card["config"])


def contiguous(t, run) -> None:
    """One row of max_seq slots preallocated per sequence (C8): what the student's sequence uses of it, and the
    waste; the control sets max_seq."""
    n, context = held(run), int(run.trace.model_card["config"]["max_position_embeddings"])
    max_seq = st.slider(t("lesson.ctl.max_seq"), n, context, min(context, max(n, 256)), key=ctl("contiguous"))
    slots = layer_slots("contiguous", n, max_seq)
    chart(t, kv_layouts.contiguous_rows([n], slots, [t("lesson.your_sequence")],
                                        (t("layouts.used"), t("layouts.unused")), t("lesson.contiguous_title"),
                                        t("lesson.slots")), key="lesson_contiguous")
    cols = st.columns(3)
    cols[0].metric(t("lesson.slots_used"), n)
    cols[1].metric(t("lesson.slots_held"), slots)
    cols[2].metric(t("lesson.waste"), f"{100 * (1 - n / slots):.1f}%")


def paged(t, run) -> None:
    """Blocks taken as the sequence grows, found through a block table (C9); the control sets the block size."""
    n = held(run)
    block = st.segmented_control(t("lesson.ctl.block"), (4, 8, 16, 32), default=16, required=True, key=ctl("paged"))
    slots = layer_slots("paged", n, n, block=block)
    blocks = slots // block
    names = {"free": t("layouts.free"), "waste": t("layouts.waste"), "block": t("layouts.block"),
             "slot": t("layouts.slot"), "position": t("layouts.position"), "row": t("layouts.blocks_row")}
    chart(t, kv_layouts.paged_pool([list(range(blocks))], [n], block, blocks, [t("lesson.your_sequence")],
                                   names, t("layouts.paged_fig", held=blocks, num=blocks, bs=block)),
          key="lesson_paged")
    st.caption(t("layouts.paged_note"))
    cols = st.columns(3)
    cols[0].metric(t("lesson.blocks"), blocks)
    cols[1].metric(t("lesson.slots_held"), slots)
    cols[2].metric(t("lesson.waste"), f"{100 * (1 - n / slots):.1f}%")


def oom_budget(t, run) -> None:
    """§4.1's max_seq_len x hidden_size x 2 x 4 bytes beside the right formula, layers x 2 x kv_heads x head_dim x
    bytes x tokens (C17); the control sets max_seq_len."""
    config = run.trace.model_card["config"]
    tokens = st.select_slider(t("lesson.ctl.max_seq"), options=[256, 512, 1024, 2048, 4096, 8192], value=2048,
                              key=ctl("oom_budget"))
    theirs = article.oom_article_bytes(tokens)  # the article's formula, at any max_seq_len
    held = min(tokens, int(config["max_position_embeddings"]))  # this model's cache never holds past its context
    layer = kv_bytes(held, config["num_kv_heads"], config["head_dim"], article.OOM_BYTES)
    cols = st.columns(3)
    cols[0].metric(t("lesson.oom_article"), human(theirs), help=f"{theirs:,} B")
    cols[1].metric(t("lesson.here_layer"), human(layer), help=f"{layer:,} B")
    cols[2].metric(t("lesson.here_model"), human(layer * config["num_layers"]),
                   help=f"{layer * config['num_layers']:,} B")
    st.caption(t("lesson.oom_note", tokens=tokens, hidden=article.OOM_HIDDEN, layers=config["num_layers"],
                 kv=config["num_kv_heads"], hd=config["head_dim"], held=held)
               + (" " + t("lesson.oom_context", tokens=tokens, held=held) if held < tokens else ""))


def max_seq(t, run) -> None:
    """The longest cache a budget holds, for this model in fp32 (C17; the article's max_seq_len=1024): the control
    is the budget, from a sixteenth of one sequence at the model's whole context to all of it, so what fits never
    passes the context a sequence can reach."""
    context = int(run.trace.model_card["config"]["max_position_embeddings"])
    per_token = kv_bytes_per_token(Setup(shape_of(run), dtype="fp32"))
    budgets = [per_token * context // part for part in (16, 8, 4, 2, 1)]
    budget = st.select_slider(t("lesson.ctl.budget_bytes"), options=budgets, value=budgets[2], format_func=human,
                              key=ctl("max_seq"))
    cols = st.columns(2)
    cols[0].metric(t("lesson.per_token"), f"{per_token:,} B")
    cols[1].metric(t("lesson.fits_tokens"), f"{budget // per_token:,}")
    st.caption(t("lesson.fits_context", context=context, whole=human(per_token * context)))
    lesson_budget.refusal(t, run, budget, per_token)  # the request run under this budget: the engine's refusal


def kv_dtype(t, run) -> None:
    """One token's K and V in every layer by the cache's dtype (C11; fp8 and int8 keep a scale per head)."""
    dtype = st.segmented_control(t("lesson.ctl.dtype"), ("fp32", "fp16", "bf16", "fp8", "int8"), default="fp32",
                                 required=True, key=ctl("kv_dtype"))
    shape = shape_of(run)
    per_token = kv_bytes_per_token(Setup(shape, kv_dtype=dtype))
    base = kv_bytes_per_token(Setup(shape, kv_dtype="fp32"))
    cols = st.columns([2, 1, 1])  # the first label is the longest: whole at 1280 px in Chinese
    cols[0].metric(t("lesson.per_token"), f"{per_token:,} B")
    cols[1].metric(t("lesson.at_1024"), human(1024 * per_token))
    cols[2].metric(t("lesson.of_fp32"), f"{100 * per_token / base:.1f}%")


def gqa(t, run) -> None:
    """KV heads shared by groups of query heads (C19; the article's 4 of 32): the control sets the KV heads, among
    the divisors of the heads."""
    shape = shape_of(run)
    choices = [k for k in range(1, shape.num_heads + 1) if shape.num_heads % k == 0]
    kv = st.select_slider(t("lesson.ctl.kv_heads"), options=choices, value=shape.num_kv_heads, key=ctl("gqa"))
    per_token = kv_bytes_per_token(Setup(shape, kv_heads=kv))
    full = kv_bytes_per_token(Setup(shape, kv_heads=shape.num_heads))
    cols = st.columns(2)  # two a row: each label whole at 1280 px in Chinese
    cols[0].metric(t("lesson.group"), shape.num_heads // kv)
    cols[1].metric(t("lesson.of_mha"), f"{100 * per_token / full:.1f}%")
    st.metric(t("lesson.per_token"), f"{per_token:,} B")


def sparse(t, run) -> None:
    """Which keys each query sees (C20; the engine's rules, trace/sparsity.py): under a block-sparse mask, or a
    sliding window (the article's 局部注意力), the first control; the second sets the block or the window."""
    n = len(run.trace.prompt_ids)
    kind = st.segmented_control(t("lesson.ctl.pattern"), ("block", "window"), default="block", required=True,
                                key=ctl("sparse_kind"), format_func=lambda k: t(f"lesson.pattern.{k}"))
    control, seen_col, share_col = st.columns([2, 1, 1])  # the counts beside the control: the map in one screen
    key = ctl("sparse" if kind == "block" else "sparse_window")  # a block and a window each keep their own
    size = control.segmented_control(t(f"lesson.ctl.{kind}"), (1, 2, 4, 8) if kind == "block" else (2, 3, 4, 6),
                                     default=2, required=True, key=key)
    pos = np.arange(n)
    seen = (BlockSparse(size, local=2, global_blocks=1).allows(pos[:, None], pos[None, :]) if kind == "block"
            else window_allows(pos[:, None], pos[None, :], size))  # [n, n] bool
    causal = n * (n + 1) // 2
    seen_col.metric(t("lesson.keys_seen"), int(seen.sum()))
    share_col.metric(t("lesson.of_causal"), f"{100 * seen.sum() / causal:.0f}%")
    labels = [str(i) for i in range(n)]
    chart(t, attention_heatmap(seen.astype(float), labels, labels, t(f"lesson.{kind}_title", size=size),
                               t("prefill.axis_key"), t("prefill.axis_query"), t("lesson.visible"),
                               probabilities=True, hidden=~seen), key="lesson_sparse")


def quant(t, run) -> None:
    """Every weight's bytes as stored (C21): fp32, fp16, int8 or 4-bit block matrices with their scales, and why a
    4-bit model is not an eighth of fp32 (the tables stay as they are); then the methods measured on held-out text
    (lesson_quant.py)."""
    choice = st.segmented_control(t("lesson.ctl.weights"), ("fp32", "fp16", *[q for q in QUANT_BITS if q != "none"]),
                                  default="fp32", required=True, key=ctl("quant"))
    shape = shape_of(run)
    setup = Setup(shape, dtype=choice) if choice in ELEMENT_BYTES else Setup(shape, quant=choice)
    base = weight_bytes(Setup(shape))
    cols = st.columns(2)
    cols[0].metric(t("lesson.weights"), human(weight_bytes(setup)), help=f"{weight_bytes(setup):,} B")
    cols[1].metric(t("lesson.of_fp32"), f"{100 * weight_bytes(setup) / base:.1f}%")
    if choice not in ("fp32", "fp16"):
        kept = unquantized_bytes(Setup(shape))
        bits = QUANT_BITS[choice]
        st.caption(t("lesson.quant_why_tied" if shape.tie_embeddings else "lesson.quant_why", kept=human(kept),
                     share=f"{100 * kept / base:.0f}%", vocab=shape.vocab_size, bits=bits, part=32 // bits))
    lesson_quant.measured(t, run, choice)


PANELS = {"contiguous": contiguous, "paged": paged, "oom_budget": oom_budget, "max_seq": max_seq,
          "kv_dtype": kv_dtype, "gqa": gqa, "sparse": sparse, "quant": quant}
