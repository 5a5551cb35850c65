"""The Decode page's stepper (Previous / Next / Play / Reset) and sampling sliders (C5, C6).

The buttons act in on_click callbacks, which run before the page is drawn again, so every button's
enabled state always matches the step now shown.
"""

from __future__ import annotations

import time

import streamlit as st

from llmviz.ui import keys, state
from llmviz.ui.errors import report
from llmviz.ui.navigation import PLAYING
from llmviz.ui.settings import SLIDERS, Settings

SLIDER_KEYS = {field: f"dec_{field}" for field in SLIDERS}
STEP_ERROR = "dec_step_error"
TICKING = "dec_ticking"  # whether the page built the fragment with Play's timer (main() of app_pages/decode.py)
PRESSED_AT, REPLAY_S = "dec_pressed_at", 1.0  # when Play / Pause last changed Play's state (time.monotonic)
PREV_KEY, NEXT_KEY, SPEED_KEY = "dec_prev", "dec_next", "dec_speed"
SPEEDS = {"slow": 1.6, "normal": 0.8, "fast": 0.4}  # seconds between Play's steps
# n and p press Next and Previous (the arrows are the buttons' own shortcuts; a button takes one)
LETTERS = {"n": NEXT_KEY, "p": PREV_KEY}


# What "Reset demo" puts back: the run a class starts from.
DEMO_FIELDS = ("model", "device", "dtype", "attn", "engine", "prompt", "seed", "temperature", "top_k", "top_p")


def reset_demo() -> None:
    """The default prompt (the interface language's), model, seed and sampling, from the prefill (a callback)."""
    default = Settings.fresh(state.settings().lang)
    state.update(**{f: getattr(default, f) for f in DEMO_FIELDS}, step=0, history="", reseed="")
    st.session_state[PLAYING] = False
    state.forget_run()


def letter_keys() -> None:
    keys.press(LETTERS)


def play_interval() -> float:
    return SPEEDS.get(st.session_state.get(SPEED_KEY, "normal"), SPEEDS["normal"])


def speed_control(t) -> None:
    st.segmented_control(t("decode.speed"), list(SPEEDS), key=SPEED_KEY, default="normal", required=True,
                         format_func=lambda k: t(f"decode.speed_{k}"))


def _next() -> bool:
    """Next (a callback, and each tick of Play)."""
    run = state.held_run()
    try:
        return run is not None and state.advance(run)
    except Exception as exc:  # a callback runs outside the page's guard: shown by controls() on the next rerun
        st.session_state[STEP_ERROR] = exc
        return False


def _play(on: bool) -> None:
    """Play or Pause pressed. While Play ticks, Streamlit may deliver one press twice: a tick's request sent before the
    press's run has ended carries the press again, and its callback, registered anew by the run that drew the other
    label, undoes it (logged in a browser on 2 cores: 3 Pauses in 10 undone 0.06-0.8 s later). So a press that undoes
    the change of less than REPLAY_S ago is taken for that replay and dropped."""
    now, last = time.monotonic(), st.session_state.get(PRESSED_AT)
    if last is not None and now - last < REPLAY_S:
        return
    st.session_state[PRESSED_AT] = now
    st.session_state[PLAYING] = on


def _reset() -> None:
    if (run := state.held_run()) is not None:
        run.cursor = 0
    st.session_state[PLAYING] = False


def controls(t, run) -> None:
    """Buttons and the step's headline figures; while playing, each fragment tick advances one step."""
    playing = st.session_state.get(PLAYING, False)
    if playing != st.session_state.get(TICKING, False):
        st.rerun()  # Play or Pause was just pressed: the whole app, to set or stop the fragment's timer
    if playing and not _next():
        st.session_state[PLAYING] = False
        st.rerun()  # the whole app, so the fragment stops ticking
    if STEP_ERROR in st.session_state:
        report(t, st.session_state.pop(STEP_ERROR))
    can_next = run.cursor + 1 < len(run.trace.steps) or run.can_compute
    cols = st.columns(4)
    cols[0].button(t("decode.prev"), disabled=run.cursor == 0, width="stretch", on_click=state.back,
                   key=PREV_KEY, shortcut="Left")
    cols[1].button(t("decode.next"), type="primary", disabled=not can_next, width="stretch", on_click=_next,
                   key=NEXT_KEY, shortcut="Right")
    cols[2].button(t("decode.pause") if playing else t("decode.play"), disabled=not can_next and not playing,
                   width="stretch", key="dec_play", shortcut="Space", on_click=_play, args=(not playing,))
    cols[3].button(t("decode.reset"), width="stretch", on_click=_reset, key="dec_reset")
    step = run.step
    cols = st.columns(4)
    cols[0].metric(t("decode.step"), step.index)
    cols[1].metric(t("decode.phase"), t(f"decode.phase_{step.phase}"))
    cols[2].metric(t("decode.kv_len"), step.kv["seq_len"])
    cols[3].metric(t("decode.generated"), step.index + 1)
    if step.finished:
        st.info(t(f"decode.finished_{step.finished}"))
    elif not run.can_compute and run.cursor + 1 == len(run.trace.steps):
        st.info(t("decode.end_of_trace"))


def _apply_sliders() -> None:
    state.update(**{field: st.session_state[key] for field, key in SLIDER_KEYS.items()})


def sampling_sliders(t, run) -> None:
    """Temperature / top-k / top-p: reshape the shown distribution now and govern the next computed token.

    Each slider starts from the session's settings (value=...), so it shows the right value even when
    Streamlit drops a widget's state on a rerun that stopped before the slider was drawn (Pause does).
    """
    current = state.settings()
    for col, (field, (low, high, step)) in zip(st.columns(3), SLIDERS.items(), strict=True):
        col.slider(t(f"decode.{field}"), low, high, value=getattr(current, field), step=step,
                   key=SLIDER_KEYS[field], on_change=_apply_sliders, help=t(f"decode.{field}_help"))
    if run.key is None:
        st.caption(t("decode.sliders_replay"))
    elif run.cursor + 1 < len(run.trace.steps):
        st.caption(t("decode.sliders_recorded", first=len(run.trace.steps), first_minus=len(run.trace.steps) - 1))
