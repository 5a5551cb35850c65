"""llmviz: watch a language model run. Entry point: the language switch and the pages, nothing else."""

from pathlib import Path

import streamlit as st

from llmviz.ui import navigation, presenter
from llmviz.ui.chrome import guarded, sidebar
from llmviz.ui.decode_controls import PLAYING
from llmviz.ui.state import apply_upload_limit, imported

ICON = Path(__file__).parent / "assets" / "ui" / "icon.png"  # served by this server: nothing is fetched offline
st.set_page_config(page_title="llmviz", page_icon=str(ICON), layout="wide")
imported()  # the heavy imports once per process, never by two sessions at the same time
apply_upload_limit()  # public mode: Streamlit refuses a file over the app's limit before taking it in
t = sidebar()
pages = [
    st.Page("app_pages/home.py", title=t("nav.home"), icon=":material/home:", default=True),
    st.Page("app_pages/tokens.py", title=t("nav.tokens"), icon=":material/abc:", url_path="tokens"),
    st.Page("app_pages/prefill.py", title=t("nav.prefill"), icon=":material/grid_on:", url_path="prefill"),
    st.Page("app_pages/decode.py", title=t("nav.decode"), icon=":material/skip_next:", url_path="decode"),
    st.Page("app_pages/layer.py", title=t("nav.layer"), icon=":material/layers:", url_path="layer"),
    st.Page("app_pages/compare.py", title=t("nav.compare"), icon=":material/compare_arrows:", url_path="compare"),
    st.Page("app_pages/kv_layouts.py", title=t("nav.layouts"), icon=":material/view_module:", url_path="kv-layouts"),
    st.Page("app_pages/batch.py", title=t("nav.batch"), icon=":material/view_list:", url_path="batch"),
    st.Page("app_pages/serving.py", title=t("nav.serving"), icon=":material/dns:", url_path="serving"),
    st.Page("app_pages/memory.py", title=t("nav.memory"), icon=":material/memory:", url_path="memory"),
    st.Page("app_pages/claims.py", title=t("nav.claims"), icon=":material/fact_check:", url_path="claims"),
    st.Page("app_pages/trace.py", title=t("nav.trace"), icon=":material/save:", url_path="trace"),
]
page = st.navigation(pages)
navigation.follow(page, pages)  # a page change that a late-arriving typed value took back goes on
if page.url_path != "decode":  # the Decode page's url_path
    st.session_state[PLAYING] = False  # Play is the Decode page's: leaving it stops it
presenter.frame()  # the presenter view's styles, when on
guarded(page.run)  # no traceback reaches the browser
presenter.footer(t)
navigation.finished(page)
