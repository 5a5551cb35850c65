"""Memory calculator: for any config (the Home model, a bundled popular model, or a pasted config.json), the
weights and the KV cache of a batch, what fits in common GPUs and what each optimization saves (C17, with C4,
C9, C19, C20; claims K4, K9). Pure arithmetic, at once: nothing is loaded or measured here."""

import streamlit as st

from llmviz.analysis import kv_memory as kvm
from llmviz.analysis import memory_calc as mc
from llmviz.errors import LlmvizError
from llmviz.ui import article_view, names, server, state
from llmviz.ui.chrome import heading, translator
from llmviz.ui.errors import explain
from llmviz.ui.navigation import KEEP

HOME, PASTE = "home", "paste"
DTYPES = {"fp16": "fp16", "bf16": "bf16", "fp32": "fp32", "int8": "int8 (weights)", "int4": "int4 (weights)"}


def source(t, s) -> tuple[str, dict] | None:
    """(the config's name, its ModelConfig dict), or None after saying why not."""
    choices = [HOME, *mc.bundled_names(), PASTE]
    if not server.engine_available():  # a replay-only install: reading a model folder needs the engine
        st.caption(t("memory.no_engine"))
        choices.remove(HOME)
    pick = st.selectbox(t("memory.source"), choices, key="mem_source", **KEEP,
                        format_func=lambda c: {HOME: t("memory.source_home", model=s.model),
                                               PASTE: t("memory.source_paste")}.get(c, c))
    try:
        if pick == PASTE:
            text = st.text_area(t("memory.paste"), key="mem_paste", **KEEP, height=160, help=t("memory.paste_help"))
            if not text.strip():
                st.info(t("memory.paste_empty"))
                return None
            from llmviz import service

            return t("memory.pasted"), service.models.config_from_text(text)
        if pick == HOME:
            server.policy().check_model(s.model)
            from llmviz import service

            return s.model, service.models.model_config_dict(s.model)
        from llmviz import service

        return pick, service.models.config_from_text(mc.bundled_text(pick), pick)
    except (LlmvizError, OSError) as exc:
        explain(t, exc)
        return None


def question(t, config: dict) -> mc.MemoryQuestion:
    context = config["max_position_embeddings"]
    a, b, c, d = st.columns(4)
    batch = a.number_input(t("memory.batch"), 1, 4096, 1, key="mem_batch", **KEEP)
    max_seq = b.number_input(t("memory.max_seq"), 1, 10_000_000, min(context, 4096), key="mem_max_seq", **KEEP,
                             help=t("memory.max_seq_help", context=context))
    tokens = c.number_input(t("memory.tokens"), 0, 10_000_000, None, key="mem_tokens", **KEEP,
                            placeholder=t("memory.tokens_empty"), help=t("memory.tokens_help"))
    dtype = d.selectbox(t("memory.dtype"), list(DTYPES), key="mem_dtype", **KEEP, format_func=DTYPES.get)
    a, b, c, d = st.columns(4)
    kv_dtype = a.selectbox(t("memory.kv_dtype"), mc.KV_DTYPES, key="mem_kv_dtype", **KEEP,
                           help=t("memory.kv_dtype_help"))
    heads = config["num_heads"]
    options = [0, *(k for k in range(1, heads + 1) if heads % k == 0)]
    own = t("memory.kv_heads_own", n=config["num_kv_heads"])
    kv_heads = b.selectbox(t("memory.kv_heads"), options, key="mem_kv_heads", **KEEP, help=t("memory.kv_heads_help"),
                           format_func=lambda k: own if k == 0 else str(k))
    layout = c.selectbox(t("memory.layout"), mc.priced_layouts(), key="mem_layout", **KEEP,
                         format_func=lambda v: names.label(t, mc.LAYOUTS, v), help=names.abouts(t, mc.LAYOUTS))
    block = d.number_input(t("memory.block"), 1, 4096, 16, key="mem_block", **KEEP,
                           disabled=not names.takes(mc.LAYOUTS, layout, "kv_block_size"))
    quant = dtype if dtype in ("int8", "int4") else "none"
    held = None if tokens is None else min(int(tokens), int(max_seq))  # empty: each sequence fills max_seq
    return mc.MemoryQuestion(batch=int(batch), max_seq=int(max_seq), tokens=held,
                             dtype="fp16" if quant != "none" else dtype, quant=quant, kv_dtype=kv_dtype,
                             kv_heads=kv_heads or None, layout=layout, block_size=int(block))


def results(t, name: str, config: dict, q: mc.MemoryQuestion) -> None:
    a = mc.answer(config, q)
    cols = st.columns(4)
    cols[0].metric(t("memory.weights"), kvm.human(a.weights))
    cols[1].metric(t("memory.kv_token"), kvm.human(a.kv_per_token))
    cols[2].metric(t("memory.kv_sequence"), kvm.human(a.kv_per_sequence))
    cols[3].metric(t("memory.total", batch=q.batch), kvm.human(a.total))
    st.markdown(t("memory.formula", layers=config["num_layers"], kv=q.kv_heads or config["num_kv_heads"],
                  hd=config["head_dim"], per_token=f"{a.kv_per_token:,}", held=q.held, batch=q.batch,
                  kv_total=f"{a.kv_total:,}"))
    if a.windowed_layers:
        st.info(t("memory.windowed", n=a.windowed_layers, window=max(config["sliding_windows"])))
    if q.tokens is not None and q.tokens < q.max_seq and q.layout == "contiguous":
        st.caption(t("memory.contiguous_note", held=q.tokens, max_seq=q.max_seq))
    st.subheader(t("memory.gpus"))
    st.caption(t("memory.gpus_note"))
    fits = mc.fits(a, mc.gpus())
    st.dataframe({t("memory.col_gpu"): [f.gpu for f in fits],
                  t("memory.col_memory"): [kvm.human(f.memory_bytes) for f in fits],
                  t("memory.col_fits"): ["✓" if f.fits else "✗" for f in fits],
                  t("memory.col_share"): [f"{f.share:.0%}" for f in fits],
                  t("memory.col_max_batch", n=q.held): ["—" if f.max_batch is None else f"{f.max_batch:,}"
                                                         for f in fits]}, hide_index=True, height="content",
                 key="mem_gpus")
    st.subheader(t("memory.savings"))
    moves = mc.savings(config, q)
    st.dataframe({t("memory.col_move"): [t(f"memory.move_{m.key}") for m in moves],
                  t("memory.col_total"): [kvm.human(m.total) for m in moves],
                  t("memory.col_saved"): [("−" if m.saved < 0 else "") + kvm.human(abs(m.saved)) for m in moves],
                  t("memory.col_saved_share"): [f"{-m.saved / a.total:+.1%}" for m in moves]},
                 hide_index=True, key="mem_savings")
    article(t, name, config)
    article_view.redone_tables(t, name, config, q.dtype)


def article(t, name: str, config: dict) -> None:
    """The article's BERT-base example (4 tokens, fp32, per layer) redone with this config's KV shape."""
    st.subheader(t("memory.article"))
    here = kvm.KVExample(kvm.ARTICLE_EXAMPLE.tokens, config["num_kv_heads"], config["head_dim"],
                         kvm.ARTICLE_EXAMPLE.element_bytes, config["num_layers"])
    table = kvm.comparison(kvm.ARTICLE_EXAMPLE, here)
    st.dataframe({"": [t(f"prefill.row_{what}") for what, _, _ in table],
                  t("memory.col_article"): [x for _, x, _ in table],
                  t("memory.col_here", name=name): [y for _, _, y in table]}, hide_index=True, key="mem_article")
    st.caption(t("memory.article_note"))


def main() -> None:
    t = translator()
    heading(t, "memory")
    article_view.slips_here(t, "memory")
    s = state.settings()
    picked = source(t, s)
    if picked is None:
        return
    name, config = picked
    try:
        mc.check_shape(config)  # before any widget loops over its heads
        q = question(t, config)
        results(t, name, config, q)
    except LlmvizError as exc:
        explain(t, exc)


main()
