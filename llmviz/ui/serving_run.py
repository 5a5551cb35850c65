"""The Serving page's runs, kept in this browser session (C15, C16, C22): a trace through static and
continuous batching, prefix sharing on and off, a speculative run; each with a progress bar."""

from __future__ import annotations

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.trace.config import EMBEDDED_DRAFT, EMBEDDED_MODEL
from llmviz.ui import state

BATCHING_KEY, SHARING_KEY, SPEC_KEY = "llmviz_serve_batching", "llmviz_serve_sharing", "llmviz_serve_spec"
TRACES = ("mixed", "mixed-poisson", "shared-prompt")  # built in (assets/traces); their ids are the embedded tokenizer's
SERVE_MODELS = ("llmviz-tiny", "gpt2-124m-random")  # models that share that tokenizer
TARGET = EMBEDDED_MODEL
DRAFTS = (EMBEDDED_DRAFT, TARGET)  # its trained 2-layer draft, or itself (self-speculation: a sanity check)


def kept(key: str, wanted: tuple):
    value = st.session_state.get(key)
    return value[1] if value and value[0] == wanted else None


def _bar(t):
    bar = st.progress(0.0, text=t("serving.progress", step=0))
    return bar, (lambda f, stage, values: bar.progress(min(1.0, f), text=t("serving.progress", **values)))


def uploaded_trace(t, data: bytes, name: str):
    """A RequestTrace from an uploaded file, or None with the reason shown (a TraceFormatError)."""
    from llmviz import service

    try:
        state.policy().check_upload(len(data))
        return service.read_trace(data, name)
    except LlmvizError as exc:
        state.explain(t, exc)
        return None


def batching(t, wanted: tuple, trace) -> dict | None:
    """The trace (a built-in name or a RequestTrace) through static, then continuous batching; `wanted`
    = (device, model, the trace's key, slots) keeps the result for these settings."""
    from llmviz import service

    device, model, _, slots = wanted
    bar, progress = _bar(t)
    try:
        lm = state.model(model, device, "fp32")
        # before the queue: a trace too long for a sequence, or (public mode) more work than a turn may take,
        # is refused with its figures (issue 19: 1,024 requests x 2,047 tokens held the slot for hours)
        service.check_serving_work(lm, trace, state.policy().public)
        with state.heavy(t) as deadline:
            service.warm_up_serving(lm, slots, device)
            out = {name: service.serve(lm, trace, name, deadline.watch(progress), slots=slots, device=device)
                   for name in ("static", "continuous")}
    except (LlmvizError, MemoryError) as exc:
        state.explain(t, exc)
        return None
    finally:
        bar.empty()
    st.session_state[BATCHING_KEY] = (wanted, out)
    return out


def sharing(t, device: str, model: str, slots: int) -> dict | None:
    """The shared-prompt trace through continuous batching without and with prefix sharing."""
    from llmviz import service

    bar, progress = _bar(t)
    try:
        lm = state.model(model, device, "fp32")
        with state.heavy(t) as deadline:
            out = {on: service.serve(lm, "shared-prompt", "continuous", deadline.watch(progress), slots=slots,
                                     device=device, prefix_sharing=on) for on in (False, True)}
    except (LlmvizError, MemoryError) as exc:
        state.explain(t, exc)
        return None
    finally:
        bar.empty()
    st.session_state[SHARING_KEY] = ((device, model, slots), out)
    return out


def speculative(t, wanted: tuple) -> dict | None:
    """wanted = (device, prompt, k, draft, temperature, seed): the embedded model verifies `draft`'s proposals
    (its own 2-layer draft, or itself: self-speculation), greedy at temperature 0."""
    from llmviz import service
    from llmviz.trace.config import SamplingConfig

    device, prompt, k, draft_name, temperature, seed = wanted
    try:
        with st.spinner(t("serving.spec_running")):
            target, draft = state.model(TARGET, device, "fp32"), state.model(draft_name, device, "fp32")
            with state.heavy(t):  # 32 tokens of the embedded model: short (service.speculate reports no progress)
                out = service.speculate(target, draft, prompt, k, 32, SamplingConfig(temperature=temperature), seed)
    except (LlmvizError, MemoryError) as exc:
        state.explain(t, exc)
        return None
    st.session_state[SPEC_KEY] = (wanted, out)
    return out
