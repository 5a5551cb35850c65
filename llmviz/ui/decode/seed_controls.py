"""The Decode page's seed, "new sample" and "resample from this step", and the two samples side by
side: a teacher shows that sampling draws another answer each time, and where the answers part.

Every action runs in an on_click callback (before the page is drawn again); an error there is kept and shown
by the page (decode_controls.STEP_ERROR), as Next does.
"""

from __future__ import annotations

import secrets

import streamlit as st

from llmviz.ui import state
from llmviz.ui.chrome import with_bold_tail
from llmviz.ui.decode.decode_controls import STEP_ERROR
from llmviz.ui.settings import SEEDS, decode_reseed, encode_reseed
from llmviz.ui.trace_file import ids_text

SEED_KEY, BEFORE_KEY = "dec_seed", "llmviz_dec_before"


def fresh_seed() -> int:
    return secrets.randbelow(SEEDS[1] + 1)


def _keep_before(run, label: str) -> None:
    """The sample shown now, to set beside the next one."""
    st.session_state[BEFORE_KEY] = (label, run.trace.row_output_ids(0)[: run.cursor + 1])


def _restart(run, seed: int) -> None:
    """A new run with `seed`, taken to the step shown now (the same length, another draw)."""
    _keep_before(run, f"seed {state.settings().seed}")
    st.session_state[SEED_KEY] = seed
    state.update(seed=seed, step=run.cursor, reseed="", history="")
    state.forget_run()


# The callbacks read the run from the session state (state.held_run), never from their args.
def _apply_seed() -> None:
    if (run := state.held_run()) is not None:
        _restart(run, int(st.session_state[SEED_KEY]))


def _new_sample() -> None:
    if (run := state.held_run()) is not None:
        _restart(run, fresh_seed())


def _resample() -> None:
    """Draw the token of the step shown again, with a fresh seed, and go on from there."""
    run = state.held_run()
    if run is None or run.handle is None:
        return
    try:
        step, seed = run.cursor, fresh_seed()
        _keep_before(run, f"seed {run.step.sampling.get('seed', state.settings().seed)}")
        run.handle.rewind(step)
        kept = {k: v for k, v in decode_reseed(state.settings().reseed).items() if k < step}
        state.update(reseed=encode_reseed({**kept, step: seed}))  # state.advance draws step `step` from `seed`
        run.cursor = step - 1
        state.advance(run)
    except Exception as exc:  # a callback runs outside the page's guard
        st.session_state[STEP_ERROR] = exc


def controls(t, run) -> None:
    """Seed box, New sample, Resample from this step (live runs only: a replayed trace has no model)."""
    live = run.key is not None and run.handle is not None
    written = state.seed_widgets({"seed": SEED_KEY})
    a, b, c = st.columns([1, 1, 2])
    low, high = SEEDS
    # The setting as the box's default too (state.seed_widgets): under load a browser that lost the box's state
    # sent its default (0) back as a change, and _apply_seed resampled the run with seed 0.
    default = "min" if SEED_KEY in written else state.settings().seed
    a.number_input(t("decode.seed"), low, high, value=default, key=SEED_KEY, on_change=_apply_seed,
                   disabled=not live, help=t("decode.seed_help"))
    b.button(t("decode.new_sample"), on_click=_new_sample, disabled=not live, width="stretch",
             help=t("decode.new_sample_help"))
    c.button(t("decode.resample", step=run.cursor), on_click=_resample, width="stretch",
             disabled=not live or run.cursor == 0, help=t("decode.resample_help"))
    before(t, run)


def _text(tokens: dict, ids: list[int], start: int) -> str:
    """Token pieces as markdown, those from `start` on in bold (where this sample parts from the other)."""
    return with_bold_tail(ids_text(tokens, ids[:start]), ids_text(tokens, ids[start:]))


def before(t, run) -> None:
    """The previous sample and this one, the part where they differ in bold."""
    kept = st.session_state.get(BEFORE_KEY)
    if kept is None or run.key is None:
        return
    label, old = kept
    new = run.trace.row_output_ids(0)[: run.cursor + 1]
    start = next((i for i, (x, y) in enumerate(zip(old, new, strict=False)) if x != y), min(len(old), len(new)))
    tokens = run.trace.tokens
    st.markdown(t("decode.sample_before", label=label, text=_text(tokens, old, start)))
    st.markdown(t("decode.sample_now", seed=run.step.sampling.get("seed", "?"), text=_text(tokens, new, start)))
    st.caption(t("decode.sample_diff", n=start) if start < max(len(old), len(new)) else t("decode.sample_same"))
