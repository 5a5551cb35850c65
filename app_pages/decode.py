"""Decode, step by step (C5, C6, C18): Next / Previous / Play / Reset over the real engine's steps."""

import streamlit as st

from llmviz.analysis.recorded import missing_row_norms, missing_tensors
from llmviz.analysis.tokens import cache_labels
from llmviz.trace import hooks
from llmviz.ui import article_view, client_gate, presenter, server, state
from llmviz.ui.chrome import heading, missing_note, shown_run, translator, with_bold_tail
from llmviz.ui.decode import seed_controls
from llmviz.ui.decode.cost_panels import memory_panel, timing_panel
from llmviz.ui.decode.decode_controls import (
    PLAYING,
    TICKING,
    controls,
    letter_keys,
    play_interval,
    reset_demo,
    sampling_sliders,
    speed_control,
)
from llmviz.ui.decode.step_panels import attention_panel, cache_panel, next_token_panel
from llmviz.ui.errors import guarded
from llmviz.ui.latency import latency_sweep
from llmviz.ui.trace_file import ids_text


def layer_and_gaps(t, run, presenting: bool) -> tuple[int, list[str], bool]:
    """The layer shown (a slider, or the last one chosen while presenting), the cache's labels, and whether every
    tensor the figures need is there (else a notice says why not)."""
    layers = run.trace.model_card["config"]["num_layers"]
    if presenting:
        layer = min(int(st.session_state.get("dec_layer", layers - 1)), layers - 1)
    else:
        layer = st.select_slider(t("decode.layer_pick"), options=list(range(layers)), value=layers - 1,
                                 key="dec_layer")
    missing = set(missing_tensors(run.step, [hooks.q(layer), hooks.probs(layer)]))
    for earlier in run.trace.steps[: run.cursor + 1]:  # the cache grid colours every step's k rows by their norm
        missing |= set(missing_row_norms(earlier, [hooks.k(layer)]))
    if run.shed and not presenting:  # the session's trace budget dropped the tensors of older steps
        st.info(t("budget.notice", n=run.shed, mb=server.policy().trace_budget_mb))
    if missing:  # not kept within the budget, or a trace recorded at capture meta/off or filtered: what it holds
        missing_note(t, run.step, sorted(missing))
    return layer, cache_labels(run.trace, run.cursor), not missing


def present_body(t, run) -> None:
    """The presenter view: the stepper, the text so far, the KV grid and the next-token chart in one screen at
    1280x720; below them the sampling controls and, when asked for, the attention of the new token."""
    controls(t, run)
    tokens = run.trace.tokens
    st.markdown(t("present.text", text=with_bold_tail(ids_text(tokens, run.trace.prompt_ids),
                                                      ids_text(tokens, run.trace.row_output_ids(0)[: run.cursor + 1]))))
    layer, labels, complete = layer_and_gaps(t, run, presenting=True)
    left, right = st.columns(2)
    with left:
        if complete:
            cache_panel(t, run, layer, labels, detail=False)
    with right:
        next_token_panel(t, run, state.settings(), detail=False)
    a, b = st.columns([3, 1])
    with a:
        speed_control(t)
    b.button(t("present.reset_demo"), on_click=reset_demo, key="present_reset", width="stretch")
    seed_controls.controls(t, run)
    sampling_sliders(t, run)
    # Below the fold, and off by default: its two figures cost ~0.1 s of drawing per step (the 0.5 s a step may take)
    if complete and st.toggle(t("present.attention"), key="present_attn", help=t("present.attention_help")):
        attention_panel(t, run, layer, labels)
    state.sync_url()


def body(t) -> None:
    run = shown_run(t)
    if run is None:
        return
    if presenter.active():
        present_body(t, run)
        return
    controls(t, run)
    seed_controls.controls(t, run)
    settings = state.settings()
    layer, labels, complete = layer_and_gaps(t, run, presenting=False)
    if complete:
        attention_panel(t, run, layer, labels)
        cache_panel(t, run, layer, labels)
    sampling_sliders(t, run)
    speed_control(t)
    next_token_panel(t, run, settings)
    timing_panel(t, run)
    if run.key is not None:  # a live run: its model can be measured (a replayed trace has none)
        latency_sweep.section(t, settings)
    memory_panel(t, run)
    state.sync_url()


def main() -> None:
    t = translator()
    heading(t, "decode")
    if not presenter.active():
        article_view.slips_here(t, "decode")
    playing = st.session_state[TICKING] = st.session_state.get(PLAYING, False)

    def fragment() -> None:  # Play reruns only this part; a fragment's rerun is guarded on its own
        guarded(t, lambda: body(t))

    # its own reruns (a step of Play) are a page's work: the page's budget and a turn (client_gate.gated)
    st.fragment(client_gate.gated(fragment, client_gate.PAGE), run_every=play_interval() if playing else None)()
    letter_keys()  # outside the fragment: drawn once per page, not on every step


main()
