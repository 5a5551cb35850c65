"""Read a page's numbers back to compare them with the engine's: the charts and metrics an AppTest page shows,
the same run made with the engine directly, and a page opened on a replayed trace (no model)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest
from ui_helpers import APP, open_app

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.ui.settings import Settings
from llmviz.ui.state import Run


def open_page(model, prompt: str, page: str = "app_pages/tokens.py", **params) -> AppTest:
    """`page` run on `model` and `prompt` (URL parameters), with no error shown."""
    at = open_app(page, model=model, prompt=prompt, **params)
    assert not at.error, [e.value for e in at.error]
    return at


def open_replay(trace, page: str) -> AppTest:
    """A page showing a replayed trace (no model: the run is put in the session as the Trace page does)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["llmviz_run"] = Run(None, trace, None, 0)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def charts(at) -> dict[str, dict]:
    """{title: spec} of every plotly chart on the page (read its arrays with plotly_data.array)."""
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return {s["layout"]["title"]["text"]: s for s in specs}


def metrics(at) -> dict:
    """{label: value} of every st.metric on the page."""
    return {m.label: m.value for m in at.metric}


def engine_prefill(model, prompt: str):
    """The same run the page made, made here with the engine itself: (the loaded model, its prefill step)."""
    settings = Settings(model=str(model), prompt=prompt)
    lm = load_model(str(model), device=settings.device, dtype=settings.dtype)
    return lm, Session(lm, prompt, settings.engine_config(lm.cfg.max_position_embeddings)).step()
