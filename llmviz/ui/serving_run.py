"""The Serving page's runs, kept in this browser session (C15, C16, C22): a trace through static and
continuous batching, prefix sharing on and off, a speculative run; each with a progress bar."""

from __future__ import annotations

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.ui import state

BATCHING_KEY, SHARING_KEY, SPEC_KEY = "llmviz_serve_batching", "llmviz_serve_sharing", "llmviz_serve_spec"
TRACES = ("mixed", "mixed-poisson", "shared-prompt")  # built in (assets/traces); their ids are the embedded tokenizer's
SERVE_MODELS = ("llmviz-tiny", "gpt2-124m-random")  # models that share that tokenizer
DRAFT = "llmviz-tiny-draft"


def kept(key: str, wanted: tuple):
    value = st.session_state.get(key)
    return value[1] if value and value[0] == wanted else None


def _bar(t):
    bar = st.progress(0.0, text=t("serving.progress", step=0))
    return bar, (lambda f, stage, values: bar.progress(min(1.0, f), text=t("serving.progress", **values)))


def batching(t, device: str, model: str, trace: str, slots: int) -> dict | None:
    """The trace through static, then continuous batching."""
    from llmviz import service

    bar, progress = _bar(t)
    try:
        lm = state.model(model, device, "fp32")
        service.warm_up_serving(lm, slots, device)
        out = {name: service.serve(lm, trace, name, progress, slots=slots, device=device)
               for name in ("static", "continuous")}
    except (LlmvizError, MemoryError) as exc:
        state.explain(t, exc)
        return None
    finally:
        bar.empty()
    st.session_state[BATCHING_KEY] = ((device, model, trace, slots), out)
    return out


def sharing(t, device: str, model: str, slots: int) -> dict | None:
    """The shared-prompt trace through continuous batching without and with prefix sharing."""
    from llmviz import service

    bar, progress = _bar(t)
    try:
        lm = state.model(model, device, "fp32")
        out = {on: service.serve(lm, "shared-prompt", "continuous", progress, slots=slots, device=device,
                                 prefix_sharing=on) for on in (False, True)}
    except (LlmvizError, MemoryError) as exc:
        state.explain(t, exc)
        return None
    finally:
        bar.empty()
    st.session_state[SHARING_KEY] = ((device, model, slots), out)
    return out


def speculative(t, device: str, prompt: str, k: int) -> dict | None:
    from llmviz import service

    try:
        with st.spinner(t("serving.spec_running")):
            target, draft = state.model("llmviz-tiny", device, "fp32"), state.model(DRAFT, device, "fp32")
            out = service.speculate(target, draft, prompt, k, max_new=32)
    except (LlmvizError, MemoryError) as exc:
        state.explain(t, exc)
        return None
    st.session_state[SPEC_KEY] = ((device, prompt, k), out)
    return out
