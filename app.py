"""llmviz: watch a language model run. Entry point: declares the pages, nothing else."""

import streamlit as st

st.set_page_config(page_title="llmviz", page_icon="🔬", layout="wide")
st.navigation([st.Page("pages/home.py", title="Home", icon="🏠", default=True)]).run()
