"""llmviz: watch a language model run. Entry point: the language switch and the pages, nothing else."""

import streamlit as st

from llmviz.ui.chrome import sidebar

st.set_page_config(page_title="llmviz", page_icon="🔬", layout="wide")
t = sidebar()
pages = [
    st.Page("app_pages/home.py", title=t("nav.home"), icon="🏠", default=True, url_path="home"),
    st.Page("app_pages/tokens.py", title=t("nav.tokens"), icon="🔤", url_path="tokens"),
    st.Page("app_pages/prefill.py", title=t("nav.prefill"), icon="🧮", url_path="prefill"),
    st.Page("app_pages/decode.py", title=t("nav.decode"), icon="⏭️", url_path="decode"),
    st.Page("app_pages/trace.py", title=t("nav.trace"), icon="💾", url_path="trace"),
]
st.navigation(pages).run()
