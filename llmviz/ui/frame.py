"""The app's frame: the page setup, the client's budget (a run over it shows the wait and nothing else),
the sidebar (the language switch, public mode's notes), the navigation and the presenter view around the pages,
nothing else.

Streamlit runs a script; two scripts call `run()`: `app.py` at the root of a checkout (`streamlit run app.py`)
and `llmviz/webapp/app.py` in an installed package (`llmviz app`). The pages are found through llmviz.paths,
so both serve the same files, from the checkout or from the wheel.
"""

from __future__ import annotations

import streamlit as st

from llmviz.errors import ConfigError
from llmviz.i18n.translator import LANGUAGES, Translator
from llmviz.paths import APP_PAGES, ICON
from llmviz.ui import client_gate, lesson_link, navigation, phone, presenter, server, state
from llmviz.ui.errors import guarded
from llmviz.ui.markdown import escape
from llmviz.ui.navigation import PLAYING
from llmviz.ui.server import apply_upload_limit, imported

# (file in app_pages/, title key, icon, url path; "" is the default page)
PAGES = (
    ("home.py", "nav.home", ":material/home:", ""),
    ("lesson.py", "nav.lesson", ":material/school:", "lesson"),
    ("tokens.py", "nav.tokens", ":material/abc:", "tokens"),
    ("prefill.py", "nav.prefill", ":material/grid_on:", "prefill"),
    ("decode.py", "nav.decode", ":material/skip_next:", "decode"),
    ("layer.py", "nav.layer", ":material/layers:", "layer"),
    ("compare.py", "nav.compare", ":material/compare_arrows:", "compare"),
    ("kv_layouts.py", "nav.layouts", ":material/view_module:", "kv-layouts"),
    ("batch.py", "nav.batch", ":material/view_list:", "batch"),
    ("serving.py", "nav.serving", ":material/dns:", "serving"),
    ("memory.py", "nav.memory", ":material/memory:", "memory"),
    ("claims.py", "nav.claims", ":material/fact_check:", "claims"),
    ("trace.py", "nav.trace", ":material/save:", "trace"),
)


def sidebar(plugin_problems=()) -> Translator:
    """Draw the language switch; return the translator of this browser session."""
    current = state.settings()
    with st.sidebar:
        lang = st.radio("Language / 语言", list(LANGUAGES), format_func=LANGUAGES.get,
                        index=list(LANGUAGES).index(current.lang), horizontal=True, key="lang_switch")
    if lang != current.lang:  # the prompt follows only while it is the other language's default
        st.session_state[state.SETTINGS_KEY] = current.with_language(lang)
    t = Translator(lang)
    presenter.toggle(t)
    policy = server.policy()
    if policy.public:
        st.sidebar.caption(t("public.banner"))
    for problem in (*policy.problems, *map(escape, plugin_problems)):  # for whoever runs the server
        st.sidebar.warning(problem)
    problems = st.session_state.pop("llmviz_url_problems", None)
    if problems:
        st.warning(t("error.url", items=escape(", ".join(problems))))  # the link's own values: any text
    return t


def declared(t: Translator) -> list:
    """The st.Page of every entry of PAGES, titled in this session's language."""
    return [st.Page(APP_PAGES / file, title=t(title), icon=icon, url_path=path or None, default=not path)
            for file, title, icon, path in PAGES]


def run() -> None:
    st.set_page_config(page_title="llmviz", page_icon=str(ICON), layout="wide")
    try:
        refused = client_gate.over()  # this client's budget first: over it, only the wait
    except ConfigError as exc:  # LLMVIZ_TRUSTED_PROXIES or LLMVIZ_CLIENT_BUDGET malformed: said, never a traceback
        st.error(escape(str(exc)))
        st.stop()
    if refused is not None:
        t = Translator(state.settings().lang)
        st.navigation(declared(t), expanded=True)  # the page and its URL stay as they were; nothing of it runs
        client_gate.refuse(t, refused)  # stops the run
    with client_gate.turn():  # when the process is busy, the client that has used it least goes next
        framed()


def framed() -> None:
    """The frame and the page, once the run's budget and turn are granted."""
    plugins = imported()  # the extensions, then the heavy imports, once per process (never two sessions at once)
    apply_upload_limit()  # public mode: Streamlit refuses a file over the app's limit before taking it in
    server.class_sweeping()  # a class past its time ends with no one on its pages (one thread a process)
    t = sidebar(plugins)
    pages = declared(t)
    page = st.navigation(pages, expanded=True)  # all thirteen pages listed (past ten Streamlit folds the rest)
    navigation.follow(page, pages)  # a page change that a late-arriving typed value took back goes on
    navigation.guard()  # and in the browser, a typed value is sent before the page change that follows it
    if page.url_path != "decode":  # the Decode page's url_path
        st.session_state[PLAYING] = False  # Play is the Decode page's: leaving it stops it
    presenter.frame()  # the presenter view's styles, when on
    phone.frame()  # a phone's styles (none above its width)
    lesson_link.back_offer(t, page.url_path)  # opened from a lesson step: the way back to it
    guarded(t, page.run)  # no traceback reaches the browser
    presenter.footer(t)
    navigation.finished(page)
