"""Home: what prefill and decode are, the model picker, the prompt, the loaded model's card."""

import streamlit as st

from llmviz.i18n.translator import shown_device
from llmviz.trace.config import ATTN_BACKENDS, DTYPES
from llmviz.ui import demo, names, phone, server, state
from llmviz.ui.chrome import heading, literal, shown_run, translator
from llmviz.ui.compare.compare_view import switch_reference
from llmviz.ui.navigation import KEEP
from llmviz.ui.settings import DEFAULT_MODEL, DEVICES, EXAMPLE_PROMPTS
from llmviz.viz.phases import phases_dot

WIDGETS = {"model": "home_model", "device": "home_device", "dtype": "home_dtype", "attn": "home_attn",
           "engine": "home_engine", "prompt": "home_prompt"}


def apply() -> None:
    state.update(**state.widget_values(WIDGETS), step=0, history="")
    state.forget_run()  # a fresh prefill (and the end of any replayed trace)


def use_example() -> None:
    """An example prompt runs at once (with the model settings currently in the widgets). The pill does not
    stay selected: clicking it again, after the prompt was edited, runs it again."""
    choice = st.session_state.get("home_example")
    st.session_state["home_example"] = None
    if choice:
        st.session_state["home_prompt"] = choice
        apply()


def model_box(t) -> None:
    """Any name or folder in the local tool; on a public server, a choice from its allow-list."""
    policy = server.policy()
    if not policy.public:
        st.text_input(t("home.model"), key="home_model", **KEEP, help=t("home.model_help"))
        return
    if st.session_state.get("home_model") not in policy.models:
        st.session_state["home_model"] = policy.models[0]
    st.selectbox(t("home.model"), policy.models, key="home_model", **KEEP, help=t("public.model_help"))


def picker(t) -> None:
    state.seed_widgets(WIDGETS)
    left, right = st.columns([2, 1])
    with left:
        st.text_area(t("home.prompt"), key="home_prompt", **KEEP, height=90)
        st.pills(t("home.examples"), EXAMPLE_PROMPTS, key="home_example", on_change=use_example)
        st.caption(t("home.languages"))
    with right:
        model_box(t)
        a, b, c = st.columns(3)
        a.selectbox(t("home.device"), DEVICES, key="home_device", **KEEP,
                    format_func=lambda d: t("home.device_auto") if d == "auto" else shown_device(d))
        b.selectbox(t("home.dtype"), DTYPES, key="home_dtype", **KEEP)
        c.selectbox(t("home.attn"), ATTN_BACKENDS, key="home_attn", **KEEP, format_func=lambda v: names.label(
            t, ATTN_BACKENDS, v), help=f"{names.abouts(t, ATTN_BACKENDS)}\n\n{t('home.attn_help')}")
        st.text_input(t("home.engine"), key="home_engine", **KEEP, help=t("home.engine_help"),
                      placeholder="kv-layout=paged")
        switch_reference(t)
    a, b = st.columns([1, 3])
    a.button(t("home.run"), type="primary", on_click=apply)
    with b:
        demo.offer(t, key="demo_home")


def model_card(t, run) -> None:
    card = run.trace.model_card
    c = card["config"]
    st.subheader(t("home.card", name=literal(str(card["name"]))))
    cols = st.columns(5)
    cols[0].metric(t("card.parameters"), f"{card['parameters']:,}")
    cols[1].metric(t("card.layers"), c["num_layers"])
    cols[2].metric(t("card.heads"), f"{c['num_heads']} / {c['num_kv_heads']}", help=t("card.heads_help"))
    cols[3].metric(t("card.head_dim"), c["head_dim"])
    cols[4].metric(t("card.vocab"), f"{c['vocab_size']:,}")
    cols = st.columns(5)
    cols[0].metric(t("card.d_model"), c["hidden_size"])
    cols[1].metric(t("card.position"), t("card.rope") if c["position"] == "rope" else t("card.learned"))
    cols[2].metric(t("card.dtype"), literal(str(card["dtype"])))  # a metric's value is markdown too: a file's text
    cols[3].metric(t("card.device"), literal(str(shown_device(card["device"]))))
    cols[4].metric(t("card.weight_bytes"), f"{card['weight_bytes'] / 2**20:,.1f} MiB")
    n = len(run.trace.prompt_ids)
    st.markdown(t("home.prompt_tokens", n=n, prompt=literal(run.trace.prompt)))  # a link's prompt: any text
    if card["name"] == DEFAULT_MODEL and not run.trace.prompt.isascii():
        st.info(t("home.cjk_note", chars=len(run.trace.prompt), n=n))


def main() -> None:
    t = translator()
    heading(t, "home")
    st.page_link("app_pages/lesson.py", label=t("home.lesson"), icon=":material/school:")  # offered first
    labels = (t("home.dia.prompt"), t("home.dia.prefill"), t("home.dia.cache"), t("home.dia.decode"),
              t("home.dia.token"), (t("home.dia.write"), t("home.dia.read"), t("home.dia.append")))
    with st.container(key=f"{phone.WIDE_ONLY}-phases"):  # the styles show one of the two (ui/phone.py)
        st.graphviz_chart(phases_dot(*labels))
    with st.container(key=f"{phone.PHONE_ONLY}-phases"), st.expander(t("home.dia.open")):  # tall: the prompt first
        st.graphviz_chart(phases_dot(*labels, rankdir="TB"))
    picker(t)
    run = shown_run(t, link_home=False)
    if run is not None:
        model_card(t, run)
    state.sync_url()


main()
