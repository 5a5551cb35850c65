"""llmviz: watch a language model run. Entry point of a checkout (`streamlit run app.py`): the frame, nothing else
(llmviz/ui/frame.py; an installed package serves the same with `llmviz app`)."""

from llmviz.ui.frame import run

run()
