"""The Memory page's inputs (C17): its widgets, started from the link's section (ui/memory_url.py) and written back
to it, so a link reopens the same answer; the page (app_pages/memory.py) draws the answer."""

from __future__ import annotations

from dataclasses import asdict, replace

import streamlit as st

from llmviz.analysis import memory_calc as mc
from llmviz.ui import names, state
from llmviz.ui.memory_url import MAX_BATCH, MAX_TOKENS, WEIGHT_DTYPES, MemorySettings
from llmviz.ui.navigation import KEEP

DTYPES = {d: f"{d} (weights)" if d.startswith("int") else d for d in WEIGHT_DTYPES}  # int8/int4: quantized weights
SEEDED = "llmviz_memory_seeded"  # the MemorySettings the widgets were last set from (a link's, or their own)
INPUTS = tuple(f"mem_{name}" for name in ("batch", "max_seq", "tokens", "dtype", "kv_dtype", "kv_heads", "layout",
                                          "block"))
DEFAULT_MAX_SEQ = 4096  # max_seq_len 0 in the link: the model's context, at most this


def picked(source: str) -> None:
    """The config box's choice into the settings (and so the link)."""
    state.update(memory={"source": source})
    st.session_state[SEEDED + ".source"] = source


def seed_source(m: MemorySettings) -> None:
    """The config box starts from the link's choice, and takes it again only when the link's changed since."""
    if st.session_state.get(SEEDED + ".source") != m.source:
        st.session_state["mem_source"] = st.session_state[SEEDED + ".source"] = m.source


def seed(m: MemorySettings, context: int, heads: int) -> None:
    """The inputs start from the link's section (ui/memory_url.py) and take it again only when it changed since
    (a link, a reset) or the config did; 0 or -1 in the link: the config's context (at most DEFAULT_MAX_SEQ), each
    sequence full, its own KV heads."""
    seeded = (replace(m, source=""), context, heads)
    if st.session_state.get(SEEDED) == seeded and all(key in st.session_state for key in INPUTS):
        return  # re-seeded when a browser lost the widgets' state, never from their own defaults
    st.session_state.update({
        "mem_batch": m.batch, "mem_max_seq": m.max_seq or min(context, DEFAULT_MAX_SEQ),
        "mem_tokens": None if m.tokens < 0 else m.tokens, "mem_dtype": m.dtype, "mem_kv_dtype": m.kv_dtype,
        "mem_kv_heads": m.kv_heads if m.kv_heads and heads % m.kv_heads == 0 else 0, "mem_layout": m.layout,
        "mem_block": m.block})
    st.session_state[SEEDED] = seeded


def keep(context: int, heads: int) -> None:
    """What the widgets hold now into the session's settings (and so the link): each section writes its own."""
    w = st.session_state
    max_seq = int(w["mem_max_seq"])
    m = MemorySettings(source=w["mem_source"], batch=int(w["mem_batch"]),
                       max_seq=0 if max_seq == min(context, DEFAULT_MAX_SEQ) else max_seq,
                       tokens=-1 if w["mem_tokens"] is None else int(w["mem_tokens"]), dtype=w["mem_dtype"],
                       kv_dtype=w["mem_kv_dtype"], kv_heads=int(w["mem_kv_heads"]), layout=w["mem_layout"],
                       block=int(w["mem_block"]))
    state.update(memory=asdict(m))
    st.session_state[SEEDED] = (replace(m, source=""), context, heads)


def question(t, s, config: dict) -> mc.MemoryQuestion:
    context, heads = config["max_position_embeddings"], config["num_heads"]
    seed(s.memory, context, heads)
    a, b, c, d = st.columns(4)
    batch = a.number_input(t("memory.batch"), 1, MAX_BATCH, key="mem_batch", **KEEP)
    max_seq = b.number_input(t("memory.max_seq"), 1, MAX_TOKENS, key="mem_max_seq", **KEEP,
                             help=t("memory.max_seq_help", context=context))
    tokens = c.number_input(t("memory.tokens"), 0, MAX_TOKENS, None, key="mem_tokens", **KEEP,
                            placeholder=t("memory.tokens_empty"), help=t("memory.tokens_help"))
    dtype = d.selectbox(t("memory.dtype"), list(DTYPES), key="mem_dtype", **KEEP, format_func=DTYPES.get)
    a, b, c, d = st.columns(4)
    kv_dtype = a.selectbox(t("memory.kv_dtype"), mc.KV_DTYPES, key="mem_kv_dtype", **KEEP,
                           help=t("memory.kv_dtype_help"))
    options = [0, *(k for k in range(1, heads + 1) if heads % k == 0)]
    own = t("memory.kv_heads_own", n=config["num_kv_heads"])
    kv_heads = b.selectbox(t("memory.kv_heads"), options, key="mem_kv_heads", **KEEP, help=t("memory.kv_heads_help"),
                           format_func=lambda k: own if k == 0 else str(k))
    layout = c.selectbox(t("memory.layout"), mc.priced_layouts(), key="mem_layout", **KEEP,
                         format_func=lambda v: names.label(t, mc.LAYOUTS, v), help=names.abouts(t, mc.LAYOUTS))
    block = d.number_input(t("memory.block"), 1, 4096, key="mem_block", **KEEP,
                           disabled=not names.takes(mc.LAYOUTS, layout, "kv_block_size"))
    keep(context, heads)
    quant = dtype if dtype in ("int8", "int4") else "none"
    held = None if tokens is None else min(int(tokens), int(max_seq))  # empty: each sequence fills max_seq
    return mc.MemoryQuestion(batch=int(batch), max_seq=int(max_seq), tokens=held,
                             dtype="fp16" if quant != "none" else dtype, quant=quant, kv_dtype=kv_dtype,
                             kv_heads=kv_heads or None, layout=layout, block_size=int(block))
