"""Memory calculator: for any config (the Home model, a bundled popular model, or a pasted config.json), the
weights and the KV cache of a batch, what fits in common GPUs and what each optimization saves (C17, with C4,
C9, C19, C20; claims K4, K9). Pure arithmetic, at once: nothing is loaded or measured here."""

import streamlit as st

from llmviz.analysis import kv_memory as kvm
from llmviz.analysis import memory_calc as mc
from llmviz.errors import LlmvizError
from llmviz.ui import article_view, memory_inputs, server, state
from llmviz.ui.chrome import heading, translator
from llmviz.ui.errors import explain
from llmviz.ui.memory_url import HOME, PASTE
from llmviz.ui.navigation import KEEP


def source(t, s) -> tuple[str, dict] | None:
    """(the config's name, its ModelConfig dict), or None after saying why not."""
    choices = [HOME, *mc.bundled_names(), PASTE]
    if not server.engine_available():  # a replay-only install: reading a model folder needs the engine
        st.caption(t("memory.no_engine"))
        choices.remove(HOME)
    memory_inputs.seed_source(s.memory)
    if st.session_state.get("mem_source") not in choices:
        st.session_state["mem_source"] = choices[0]
    pick = st.selectbox(t("memory.source"), choices, key="mem_source", **KEEP,
                        format_func=lambda c: {HOME: t("memory.source_home", model=s.model),
                                               PASTE: t("memory.source_paste")}.get(c, c))
    memory_inputs.picked(pick)
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
    try:
        picked = source(t, s)
        if picked is None:
            return
        name, config = picked
        mc.check_shape(config)  # before any widget loops over its heads
        q = memory_inputs.question(t, s, config)
        results(t, name, config, q)
    except LlmvizError as exc:
        explain(t, exc)
    finally:
        state.sync_url()  # the page's inputs in the link: it reopens this answer


main()
