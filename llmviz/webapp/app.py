"""The app as an installed package serves it (`llmviz app`); a checkout's `streamlit run app.py` runs the same."""

from llmviz.ui.frame import run

run()
