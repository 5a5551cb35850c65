"""llmviz: watch a language model run. Entry point: the language switch and the pages, nothing else."""

import streamlit as st

from llmviz.ui.chrome import sidebar

st.set_page_config(page_title="llmviz", page_icon="🔬", layout="wide")
t = sidebar()
pages = [
    st.Page("pages/home.py", title=t("nav.home"), icon="🏠", default=True, url_path="home"),
]
st.navigation(pages).run()
