"""The article's slips with their evidence, and its terms beside the app's: drawn from the one place
that keeps them (llmviz/analysis/article.py and the `slip.*` / `term.*` catalogue entries), for the pages and the
lesson."""

from __future__ import annotations

import json

import streamlit as st

from llmviz import service
from llmviz.analysis import article
from llmviz.analysis.kv_memory import human
from llmviz.analysis.memory_calc import bundled_text
from llmviz.paths import ASSETS
from llmviz.ui.markdown import escape

GQA_CARD = ASSETS / "llmviz-tiny-gqa4" / "card.json"


@st.cache_data(show_spinner=False)
def values() -> dict[str, dict]:
    """Each slip's numbers, from the bundled configs and the GQA model's card (the same for every session)."""
    gpt2, llama2, llama3 = (service.models.config_from_text(bundled_text(n))
                            for n in ("gpt2", "llama-2-7b", "llama-3-8b"))
    card = json.loads(GQA_CARD.read_text(encoding="utf-8")) if GQA_CARD.is_file() else None
    return article.slip_values(gpt2, llama2, llama3, card)


LIBRARY_SLIPS = ("bert_decodes", "block_tables", "flash_import", "kv_cache_dtype", "a100_fp8")  # cite a version


@st.cache_data(show_spinner=False)
def library() -> dict:
    """What the installed libraries say (service.models.library_facts): read once per process, when a slip that
    cites them is first shown."""
    return service.models.library_facts()


def evidence(t, slip_id: str) -> str:
    """One slip's evidence sentence, filled with its numbers (a slip whose numbers are missing says so)."""
    filled = values().get(slip_id, {}) | (library() if slip_id in LIBRARY_SLIPS else {})
    try:
        return t(f"slip.{slip_id}.evidence", **filled)
    except (KeyError, IndexError):  # e.g. the GQA card is not there: the sentence needs its figures
        return t("article.no_figures")


def slips_notes(t, ids: tuple[str, ...] | None = None) -> None:
    """The slips (all, or those named) as text, whole and in the article's order (article.SLIPS's): the section
    and what the article says, then the evidence. Text, not a table: a table's cells cut long sentences and show
    markdown raw (the article's *because*, its `model.config.kv_cache_dtype`)."""
    for s in (s for s in article.SLIPS if ids is None or s.id in ids):
        with st.container(border=True):
            st.markdown(f"**§{s.section}** · {t(f'slip.{s.id}.says')}")
            st.markdown(t("article.evidence_line", text=evidence(t, s.id)))
            if (drawn := SLIP_DRAWINGS.get(s.id)) is not None:
                drawn(t)


TABLES_KEY = "llmviz_slip_block_tables"  # the engine's run for the drawing, once a session


def block_tables_drawn(t) -> None:
    """vLLM's block table drawn as its paper draws it, from the engine's own paged cache: the article's two prompts,
    their logical blocks and the physical blocks their tables name (the block_tables slip)."""
    from llmviz.trace.config import EMBEDDED_MODEL
    from llmviz.ui import server
    from llmviz.ui.charts import chart
    from llmviz.viz.block_table import block_table_figure

    if not server.engine_available():
        return
    got = st.session_state.get(TABLES_KEY)
    if got is None:
        got = st.session_state[TABLES_KEY] = service.measure.block_tables(server.model(EMBEDDED_MODEL, "cpu", "fp32"))
    labels = [t("article.tables_logical", prompt=p) for p in got["prompts"]]
    chart(t, block_table_figure(got["tables"], got["texts"], labels, t("article.tables_pool"), t("layouts.free"),
                                t("article.tables_title", block=got["block"])), key="slip_block_tables")
    st.caption(t("article.tables_note", a=" → ".join(map(str, got["tables"][0])),
                 b=" → ".join(map(str, got["tables"][1])), block=got["block"], model=got["model"]))


def fp8_here(t) -> None:
    """Beside the datasheet's A100: what this machine's device does with FP8, read now (the a100_fp8 slip)."""
    from llmviz.ui import server

    if not server.engine_available():
        return
    from llmviz import service
    from llmviz.i18n.translator import shown_device

    f = service.measure.fp8_support()
    yes_no = {True: t("article.yes"), False: t("article.no")}
    if f["tensor_cores"] is None:
        st.caption(t("article.fp8_here", device=shown_device(f["device"]), max=f"{f['max']:g}",
                     stores=yes_no[f["stores"]], multiplies=yes_no[f["multiplies"]]))
    else:
        st.caption(t("article.fp8_here_cuda", name=f["name"], capability=".".join(map(str, f["capability"])),
                     cores=yes_no[f["tensor_cores"]], stores=yes_no[f["stores"]], multiplies=yes_no[f["multiplies"]]))


def masks(t) -> None:
    """BERT's mask beside a causal one on the same seven positions (the bert_decodes slip's live evidence)."""
    from llmviz.ui.charts import chart
    from llmviz.viz.attention import attention_heatmap

    tokens = article.bert_view("济南的冬天")["tokens"]
    n = len(tokens)
    for column, (name, seen) in zip(st.columns(2), (("bidirectional", article.bert_masks(n)[0]),
                                                  ("causal", article.bert_masks(n)[1])), strict=True):
        with column:
            chart(t, attention_heatmap(seen.astype(float), tokens, tokens,
                                       t(f"article.mask_{name}", seen=int(seen.sum()), total=n * n),
                                       t("prefill.axis_key"), t("prefill.axis_query"), t("lesson.visible"),
                                       probabilities=True, hidden=~seen), key=f"article_mask_{name}")


# what a slip draws beside its evidence, read from this machine or its engine
SLIP_DRAWINGS = {"bert_decodes": masks, "a100_fp8": fp8_here, "block_tables": block_tables_drawn}


def terms_table(t, key: str = "article_terms") -> None:
    st.dataframe({t("article.col_article_term"): [zh for _, zh, _ in article.TERMS],
                  t("article.col_app_term"): [t(f"term.{term}") for term, _, _ in article.TERMS],
                  t("article.col_concept"): [c for _, _, c in article.TERMS]}, hide_index=True, key=key)


def glossary_table(t, page_names: dict[str, str], key: str = "lesson_glossary_table") -> None:
    """The glossary: the article's word, this app's, one line, the page that shows it; a table whose
    cells wrap."""
    st.caption(t("lesson.glossary_intro"))
    def words(g):  # the article's word, and this app's where it says it otherwise
        ours = t(f"term.{g.id}")
        return g.article if ours in (g.article, g.article.lower()) else f"{g.article} → {ours}"

    st.table([{t("lesson.col_article_word"): words(g), t("lesson.col_line"): t(f"glossary.{g.id}"),
               t("lesson.col_page"): page_names[g.page]} for g in article.GLOSSARY], hide_index=True)


def section(t) -> None:
    st.header(t("article.slips_title"))
    st.markdown(t("article.slips_intro"))
    slips_notes(t)
    st.subheader(t("article.terms_title"))
    terms_table(t)


def shown(row: article.Redone, value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.1%}" if row.share else f"{int(value):,} B ({human(value)})"


def redone_tables(t, name: str, config: dict, dtype: str) -> None:
    """The article's cache figures and its OOM budget redone for a config (Memory page)."""
    st.subheader(t("memory.redo_title"))
    rows = article.cache_rows(config, dtype)
    st.dataframe({"": [t(f"article.redo.{r.key}") for r in rows],
                  t("memory.redo_col_article"): [shown(r, r.article) for r in rows],
                  t("memory.redo_col_here", name=name): [shown(r, r.here) for r in rows]},
                 hide_index=True, key="mem_redo")
    st.caption(t("memory.redo_note", dtype=dtype))
    st.subheader(t("memory.oom_title"))
    rows = article.oom_rows(config)
    st.dataframe({"": [t(f"article.redo.{r.key}") for r in rows],
                  t("memory.oom_col_article"): [shown(r, r.article) for r in rows],
                  t("memory.redo_col_here", name=name): [shown(r, r.here) for r in rows]},
                 hide_index=True, key="mem_oom")
    kv, hd = config["num_kv_heads"], config["head_dim"]
    st.caption(t("memory.oom_note", name=escape(name), kv=kv, hd=hd, kvhd=kv * hd, hidden=config["hidden_size"]))


PAGE_SLIPS = {  # which of the article's slips each page shows (by the concept it draws)
    "tokens": ("four_tokens", "bert_decodes"),
    "prefill": ("prefill_linear", "per_layer"),
    "decode": ("fifth_token", "only_q", "slowdown"),
    "kv_layouts": ("block_tables", "prefetch"),
    "batch": ("pad_sequences",),
    "compare": ("kv_cache_dtype", "gqa_config", "quant_names", "a100_fp8", "flash_import"),
    "memory": ("oom_budget", "per_layer"),
}


def slips_here(t, page: str) -> None:
    """The slips of the article this page's figures bear on, in an expander (the full list: the Claims page)."""
    with st.expander(t("article.slips_here", n=len(PAGE_SLIPS[page]))):
        slips_notes(t, PAGE_SLIPS[page])
