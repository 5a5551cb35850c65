"""The script an installed package serves (`llmviz app` runs `streamlit run llmviz/webapp/app.py`). It sits in a
folder of its own because Streamlit puts the script's folder on sys.path: beside llmviz/ui's modules, their
names (markdown, state, settings) would shadow other packages'."""
