"""The Decode page's stepper (Previous / Next / Play / Reset) and sampling sliders (C5, C6)."""

from __future__ import annotations

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.ui import state
from llmviz.ui.settings import SLIDERS

SLIDER_KEYS = {field: f"dec_{field}" for field in SLIDERS}
PLAYING, PLAY_ERROR = "dec_playing", "dec_play_error"


def _step(t, run) -> bool:
    try:
        return state.advance(run)
    except (LlmvizError, MemoryError) as exc:
        if st.session_state.get(PLAYING):
            st.session_state[PLAY_ERROR] = exc  # shown after the rerun that stops the timer
        else:
            state.explain(t, exc)
        return False


def controls(t, run) -> None:
    """Buttons and the step's headline figures; while playing, each fragment tick advances one step."""
    playing = st.session_state.get(PLAYING, False)
    if playing and not _step(t, run):
        st.session_state[PLAYING] = False
        st.rerun()
    if PLAY_ERROR in st.session_state:
        state.explain(t, st.session_state.pop(PLAY_ERROR))
    cols = st.columns([1, 1, 1, 1, 3])
    if cols[0].button(t("decode.prev"), disabled=run.cursor == 0, width="stretch"):
        state.back(run)
    can_next = run.cursor + 1 < len(run.trace.steps) or run.can_compute
    if cols[1].button(t("decode.next"), type="primary", disabled=not can_next, width="stretch"):
        _step(t, run)
    if cols[2].button(t("decode.pause") if playing else t("decode.play"), disabled=not can_next and not playing,
                      width="stretch"):
        st.session_state[PLAYING] = not playing
        st.rerun()
    if cols[3].button(t("decode.reset"), width="stretch"):
        run.cursor = 0
        st.session_state[PLAYING] = False
    step = run.step
    cols = st.columns(3)
    cols[0].metric(t("decode.step"), t("decode.step_value", step=step.index, phase=t(f"decode.phase_{step.phase}")))
    cols[1].metric(t("decode.kv_len"), step.kv["seq_len"])
    cols[2].metric(t("decode.generated"), step.index + 1)
    if step.finished:
        st.info(t(f"decode.finished_{step.finished}"))
    elif not run.can_compute and run.cursor + 1 == len(run.trace.steps):
        st.info(t("decode.end_of_trace"))


def _apply_sliders() -> None:
    state.update(**{field: st.session_state[key] for field, key in SLIDER_KEYS.items()})


def sampling_sliders(t, run) -> None:
    """Temperature / top-k / top-p: reshape the shown distribution now and govern the next sampled token."""
    current = state.settings()
    for field, key in SLIDER_KEYS.items():
        st.session_state.setdefault(key, getattr(current, field))
    for col, (field, (low, high, step)) in zip(st.columns(3), SLIDERS.items(), strict=True):
        col.slider(t(f"decode.{field}"), low, high, step=step, key=SLIDER_KEYS[field], on_change=_apply_sliders,
                   help=t(f"decode.{field}_help"))
    if run.key is None:
        st.caption(t("decode.sliders_replay"))
