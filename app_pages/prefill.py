"""Prefill (C3, C4): Q/K/V with their real shapes, scores, mask and softmax, every head, the KV cache, timings."""

import streamlit as st

from llmviz.analysis import attention as at
from llmviz.analysis.recorded import missing_tensors
from llmviz.analysis.tokens import byte_notes, position_labels, trace_token_bytes
from llmviz.trace import hooks
from llmviz.ui import article_view, state
from llmviz.ui.chrome import article_shapes, heading, missing_note, shown_run, step_timing, translator
from llmviz.ui.prefill.attention_sections import grid_section, qkv_section, scores_section
from llmviz.ui.prefill.kv_section import kv_section

DRAWN = ("attn_in", "q", "k", "v", "scores", "probs")  # the hooks of every layer this page reads


def timing_section(t, step) -> None:
    spans = step.timings.get("spans_ms") or {}
    if not spans:
        return
    st.header(t("prefill.time_header"))
    step_timing(t, step, t("prefill.time_title", total=f"{sum(spans.values()):.1f}"), "prefill_time")


def tensor_sections(t, run, step, layers: int) -> None:
    a, b = st.columns(2)
    layer = a.selectbox(t("prefill.layer"), list(range(layers)), key="prefill_layer")
    sh = at.head_shapes(*(step.hook(hooks.layer_hook_name(layer, p)).shape for p in ("attn_in", "q", "k", "scores")))
    head = b.selectbox(t("prefill.head"), list(range(sh.heads)), key="prefill_head")
    pieces = trace_token_bytes(run.trace.tokens, run.trace.prompt_ids)
    qkv_section(t, step, layer, head, sh)
    scores_section(t, step, layer, head, sh, position_labels(pieces), byte_notes(pieces))
    grid_section(t, step, layers, sh, layer, head)
    kv_section(t, run, step, layers)


def main() -> None:
    t = translator()
    heading(t, "prefill")
    article_view.slips_here(t, "prefill")
    run = shown_run(t)
    if run is not None:
        article_shapes(t, run, key="shapes_prefill")
        step = run.trace.steps[0]  # the prefill: every prompt token at once
        layers = int(run.trace.model_card["config"]["num_layers"])
        missing = missing_tensors(step, [hooks.layer_hook_name(i, p) for i in range(layers) for p in DRAWN])
        if missing:
            missing_note(t, step, missing)
        else:
            tensor_sections(t, run, step, layers)
        timing_section(t, step)
    state.sync_url()


main()
