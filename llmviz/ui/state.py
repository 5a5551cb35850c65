"""Per-browser-session state and the shared model cache.

Streamlit runs each browser session in its own thread. The model is cached once per process with
st.cache_resource and only ever read; everything a run mutates (session, KV cache, generator, trace)
lives in st.session_state, which is per browser session.
"""

from __future__ import annotations

import streamlit as st

from llmviz import service
from llmviz.engine.config import EngineConfig
from llmviz.errors import LlmvizError


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def cached_model(name: str, device: str, dtype: str) -> service.LoadedModel:
    return service.load(name, EngineConfig(device=device, dtype=dtype))


def load_or_explain(name: str, device: str, dtype: str) -> service.LoadedModel | None:
    """The cached model, or None after showing why it could not be loaded."""
    try:
        return cached_model(name, device, dtype)
    except LlmvizError as exc:
        st.error(f"Could not load {name!r}: {exc}")
    except MemoryError:
        st.error(f"Out of memory while loading {name!r}: try a smaller model or dtype fp16/bf16.")
    return None
