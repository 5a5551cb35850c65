"""The recorded default demo: a trace of the app's default run shipped in assets/, so the
stepper works before any model is loaded (or where none can load: no torch, a broken install), always labelled
as a recording. One recording per interface language, of the prompt that language starts with (the
Chinese one is 济南的冬天). scripts/record_demo.py makes them; a test checks them against the engine."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from llmviz.paths import DEMO
from llmviz.trace.records import trace_from_zip
from llmviz.ui import state
from llmviz.ui.errors import report
from llmviz.ui.markdown import escape
from llmviz.ui.settings import LANGS

# One recording per interface language: default-run.zip (English), default-run-zh.zip, ...
DEMO_PATHS = {lang: DEMO / ("default-run.zip" if lang == "en" else f"default-run-{lang}.zip") for lang in LANGS}
DEMO_STEPS = 24  # decode steps after the prefill
DEMO_KEY = "llmviz_demo_shown"


def recording() -> Path:
    """The recording of this session's interface language."""
    return DEMO_PATHS[state.settings().lang]


def _open() -> None:
    """A callback: replay the recording, marked as the demo."""
    try:
        state.replay(trace_from_zip(recording().read_bytes()))
        st.session_state[DEMO_KEY] = True
    except Exception as exc:  # a callback runs outside the page's guard: shown on the next draw
        st.session_state["llmviz_demo_error"] = exc


def offer(t, key: str) -> None:
    """A button that opens the recording (when the file is there)."""
    if recording().is_file():
        st.button(t("demo.open"), on_click=_open, key=key, help=t("demo.open_help", steps=DEMO_STEPS))
    error = st.session_state.pop("llmviz_demo_error", None)
    if error is not None:
        report(t, error)


def showing(run) -> bool:
    """Whether the run shown is the recording (a replay opened through offer())."""
    return run is not None and run.key is None and bool(st.session_state.get(DEMO_KEY))


def notice(t, run) -> None:
    card, step = run.trace.model_card, run.trace.steps[0]
    st.info(t("demo.notice", model=escape(card.get("name", "?")), device=escape(step.timings.get("device", "?")),
              steps=len(run.trace.steps) - 1))
