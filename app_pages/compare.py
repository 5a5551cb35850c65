"""Compare: two settings of the engine on one prompt; predicted first, then measured side by side (C8-C11,
C14, C19-C21; claims K4, K6, K10, K11)."""

import streamlit as st

from llmviz import service
from llmviz.errors import LlmvizError
from llmviz.trace.config import RANDOM_MODELS
from llmviz.ui import article_view, server, state
from llmviz.ui.chrome import heading, literal, translator
from llmviz.ui.compare import compare_run, compare_view, long_decode
from llmviz.ui.errors import explain
from llmviz.ui.navigation import KEEP

WIDGETS = {f"compare.{name}": f"cmp_{name}_w" for name in ("model", "a", "b", "steps", "repeats", "ppl")}


def seed_widgets() -> None:
    state.seed_widgets(WIDGETS)


def apply() -> None:
    values = state.widget_values(WIDGETS)
    state.update(compare={**{k.removeprefix("compare."): v for k, v in values.items()}, "run": False})


def use_preset(table: dict) -> None:
    name = st.session_state.get("cmp_preset_w")
    if name in table:
        st.session_state["cmp_a_w"], st.session_state["cmp_b_w"] = table[name].a, table[name].b
        apply()


def controls(t, s, config: dict, device: str) -> bool:
    seed_widgets()
    table = service.measure.presets(config, device)
    home = s.model
    models = [""] + [m for m in RANDOM_MODELS if m != home]
    st.selectbox(t("compare.model"), models, key="cmp_model_w", on_change=apply,
                 format_func=lambda m: t("compare.model_home", name=home) if not m else t("compare.model_random"),
                 help=t("compare.model_help"))
    st.pills(t("compare.presets"), list(table), key="cmp_preset_w", on_change=use_preset, args=(table,),
             format_func=lambda n: t(f"preset.{n}"), help=t("compare.presets_help"))
    a, b = st.columns(2)
    a.text_input(t("compare.spec", side="A"), key="cmp_a_w", **KEEP, on_change=apply, help=t("compare.spec_help"),
                 placeholder=t("compare.defaults"))
    b.text_input(t("compare.spec", side="B"), key="cmp_b_w", **KEEP, on_change=apply, help=t("compare.spec_help"),
                 placeholder=t("compare.defaults"))
    a, b, c, d = st.columns([1, 1, 1, 2])
    a.number_input(t("compare.steps"), 1, 128, key="cmp_steps_w", **KEEP, on_change=apply)
    b.number_input(t("compare.repeats"), 1, 10, key="cmp_repeats_w", **KEEP, on_change=apply)
    c.checkbox(t("compare.ppl"), key="cmp_ppl_w", **KEEP, on_change=apply, help=t("compare.ppl_help"))
    d.caption(t("compare.prompt_note", prompt=literal(s.prompt)))
    compare_view.switch_reference(t)
    return st.button(t("compare.run"), type="primary")


def main() -> None:
    t = translator()
    heading(t, "compare")
    article_view.slips_here(t, "compare")
    s = state.settings()
    try:
        base = compare_run.base_model(s)
    except ImportError:  # a replay-only install without torch
        st.info(t("compare.no_engine"))
        return
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)
        st.page_link("app_pages/home.py", label=t("error.go_home"), icon=":material/home:")
        return
    pressed = controls(t, s, base.card()["config"], base.device.type)
    s = state.settings()
    st.subheader(t("compare.predict_title"))
    try:
        pa, pb, n = compare_run.preview(s)
        compare_view.prediction_table(t, pa, pb)
        st.caption(t("compare.predict_note", n=n, steps=s.compare.steps))
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)
        return
    result = compare_run.shown_result(s)
    linked = s.compare.run and result is None
    if linked and not pressed and server.policy().public:  # a link must not run a measurement for every visitor
        st.info(t("compare.link_waits"))
        linked = False
    if pressed or linked:
        result = compare_run.run(t, s)
        if result is not None:
            state.update(compare={"run": True})  # the link now reopens (and reruns) this comparison
            state.sync_url()
            st.rerun()  # draw the prediction again with the bandwidth just measured
    if result is not None:
        labels = service.models.token_texts(base, s.prompt)
        compare_view.result_view(t, result, labels)
    long_decode.section(t, s, compare_run.model_of(s), compare_run.max_seq(s), server.load)
    state.sync_url()


main()
