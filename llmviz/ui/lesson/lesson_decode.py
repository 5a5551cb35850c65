"""The lesson's live panels of §1.2 and §4.2, decode (C5-C7, C18): the new token's one row, its Q, K and
V, the cache growing row by row, what a step reads and why that makes decode memory-bound, and the continuation
of the student's prompt. Each reads the run's recorded steps (the lesson computes the first DECODE_STEPS of a live
run), draws with the Decode page's figures, and has one control (`lesson_ctl_<panel>`).
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import article
from llmviz.analysis.decode_series import cache_norms
from llmviz.analysis.kv_memory import human, kv_bytes
from llmviz.analysis.model_map import shape_text
from llmviz.analysis.predict import Setup, Shape, in_millions, kv_read_bytes, step_flops, weight_read_bytes
from llmviz.analysis.tokens import cache_labels
from llmviz.trace import hooks
from llmviz.ui import measure, server, state
from llmviz.ui.charts import chart
from llmviz.ui.chrome import with_bold_tail
from llmviz.ui.latency import slowdown_view
from llmviz.ui.lesson import lesson_memshare
from llmviz.ui.lesson.lesson_prefill import cache_bytes, ctl
from llmviz.ui.trace_file import ids_text
from llmviz.viz import decode as fig

DECODE_STEPS = 4  # the article's 4 prompt tokens grow to 8: [4,12,64] -> [5,12,64] -> ... -> [8,12,64]


def decode_steps(run) -> int:
    """Decode steps the run holds (the prefill is step 0)."""
    return len(run.trace.steps) - 1


def step_picker(t, run, panel: str) -> int:
    """The one control of a decode panel: which decode step (1 = the first token after the prompt)."""
    last = decode_steps(run)
    if last < 2:
        return last
    return st.select_slider(t("lesson.ctl.decode_step"), options=list(range(1, last + 1)), key=ctl(panel))


def decode_input(t, run) -> None:
    """The prefill fed [n, d]; a decode step feeds one row [1, d] (C5): the new token's embedding."""
    i = step_picker(t, run, "decode_input")
    prefill, step = run.trace.steps[0].hook("embed").shape, run.trace.steps[i].hook("embed")
    cols = st.columns(3)
    cols[0].metric(t("lesson.prefill_input"), shape_text(prefill[1:]))
    cols[1].metric(t("lesson.decode_input"), shape_text(step.shape[1:]))
    cols[2].metric(t("decode.kv_len"), run.trace.steps[i].kv["seq_len"])
    if step.array is not None:
        chart(t, fig.vector_heatmap(step.array[0], t("tokens.axis_token"), t("tokens.axis_dim"),
                                    t("lesson.new_row_title", step=i), t("decode.value")),
                 key="lesson_new_row")


def decode_qkv(t, run) -> None:
    """The new token's Q [1, heads, head_dim], and its K and V, which join the cache (C5); the control picks the
    layer."""
    layers = run.trace.model_card["config"]["num_layers"]
    layer = st.select_slider(t("prefill.layer"), options=list(range(layers)), key=ctl("decode_qkv"))
    step = run.trace.steps[1]
    q, k, v = (step.hook(name(layer)) for name in (hooks.q, hooks.k, hooks.v))  # [1, heads, 1, head_dim]
    cols = st.columns(3)
    for col, name, rec in zip(cols, ("q", "k", "v"), (q, k, v), strict=True):
        col.metric(t(f"lesson.new_{name}"), shape_text((rec.shape[2], rec.shape[1], rec.shape[3])))
    if q.array is not None:
        chart(t, fig.vector_heatmap(q.array[0, :, -1, :], t("decode.head"), "head_dim",
                                    t("decode.q_title", layer=layer), t("decode.value")),
                 key="lesson_new_q")


def cache_growth(t, run) -> None:
    """One layer's cache after each decode step, a row more each time (C6); the control picks the step."""
    i = step_picker(t, run, "cache_growth")
    layer = run.trace.model_card["config"]["num_layers"] - 1
    kv = run.trace.steps[i].kv
    st.metric(t("lesson.shape_cache", layer=layer), shape_text((kv["seq_len"], kv["kv_heads"], kv["head_dim"])))
    try:
        norms = cache_norms(run.trace.steps, layer, "k", i)  # [kv_heads, positions]
    except ValueError:  # a trace captured without tensors: the shape stands alone
        return
    chart(t, fig.kv_grid(norms, 1, cache_labels(run.trace, i), t("decode.kv_head"),
                         t("decode.kv_title_short", layer=layer, used=kv["seq_len"], max_seq=kv["max_seq"])),
          key="lesson_cache_grid")


def kv_bytes_1024(t, run) -> None:
    """The article's 6 MB at 1,024 tokens (fp32, one layer) and this model's, at a cache length the control sets."""
    config = run.trace.model_card["config"]
    tokens = st.slider(t("lesson.ctl.cached"), 1, 4096, 1024, key=ctl("kv_bytes_1024"))
    ex = article.ARTICLE_DECODE
    theirs = kv_bytes(tokens, ex.kv_heads, ex.head_dim, ex.element_bytes)
    ours = kv_bytes(tokens, config["num_kv_heads"], config["head_dim"], ex.element_bytes)
    cache_bytes(t, theirs, ex.layers, ours, config["num_layers"])
    if server.engine_available():  # the article's layer allocated for real: what torch holds, not the formula
        from llmviz import service

        real = service.measure.article_cache(tokens)
        st.caption(t("lesson.real_cache", tokens=tokens, shape=shape_text(real["shape"][0]), dtype=real["dtype"],
                     held=f"{real['bytes']:,}", human=human(real["bytes"])))


def intensity(t, run) -> None:
    """FLOPs per byte of one step of this model (C7): a decode step (1 new token) does about one or two per byte
    read, far below what a chip can do per byte it fetches: memory-bound. The control sets the new tokens, so the
    same arithmetic shows a prefill's."""
    config = run.trace.model_card["config"]
    new = st.select_slider(t("lesson.ctl.new_tokens"), options=[1, 2, 4, 8, 16, 64, 256], key=ctl("intensity"))
    setup = Setup(Shape.from_config(config))
    cached = len(run.trace.prompt_ids)
    flops = step_flops(setup, new, cached)
    read = weight_read_bytes(setup) + kv_read_bytes(setup, cached + new)
    cols = st.columns(3)
    cols[0].metric(t("lesson.flops"), in_millions(flops))
    cols[1].metric(t("lesson.bytes_read"), human(read), help=f"{read:,} B")
    cols[2].metric(t("lesson.intensity"), f"{flops / read:.2f}")
    st.caption(t("lesson.intensity_note", cached=cached))
    ridges(t, run, flops / read)


def ridges(t, run, intensity: float) -> None:
    """The A100's ridge point beside this machine's, measured by the Claims page's probes (kept in the session, one
    button here): the balance of FLOPs and bytes the article speaks of, on the hardware at hand."""
    from llmviz.ui.latency.roofline_view import LIMITS_KEY, limits_of, run_probes

    a100 = article.a100_ridge()
    cols = st.columns(2)
    cols[0].metric(t("lesson.ridge_a100"), f"{a100:.0f}", help=t("lesson.ridge_a100_help"))
    raw = measure.kept(LIMITS_KEY)
    if raw is None:
        if cols[1].button(t("roofline.measure"), key=ctl("ridge")):
            raw = run_probes(t, state.settings().device, None, "fp32")
        if raw is None:
            return
    here = limits_of(raw).ridge
    cols[1].metric(t("lesson.ridge_here", device=raw["device"]), f"{here:.1f}")
    st.caption(t("lesson.ridge_note", a100=a100, here=here, intensity=intensity,
                 bound=t("lesson.ridge_memory" if intensity < here else "lesson.ridge_compute")))
    lesson_memshare.memory_share(t, run, raw)  # §1.2's 60% and "optimise the memory subsystem", on this run


def slowdown(t, run) -> None:
    """A decode step reads the whole cache: its bytes grow by one token's K and V per step, O(n) (C18). The
    control sets the cache length; below, the slowdown measured on the GPT-2 shape (ui/latency/slowdown_view.py)."""
    config = run.trace.model_card["config"]
    cached = st.slider(t("lesson.ctl.cached"), 1, int(config["max_position_embeddings"]), 512, key=ctl("slowdown"))
    setup = Setup(Shape.from_config(config))
    cols = st.columns(3)
    kv, weights = kv_read_bytes(setup, cached), weight_read_bytes(setup)
    cols[0].metric(t("lesson.kv_read"), human(kv))  # whole bytes overflow a third of the page: in the caption
    cols[1].metric(t("lesson.weights_read"), human(weights))
    share = 1 - article.weight_share(weights, kv)
    cols[2].metric(t("lesson.kv_share"), f"{100 * share:.0f}%")
    st.caption(t("lesson.exact_bytes", kv=f"{kv:,}", weights=f"{weights:,}"))
    slowdown_view.section(t)


def _one_more() -> None:
    """The continuation's button (a callback): one more token of the run shown."""
    run = state.held_run()
    if run is not None:
        run.cursor = len(run.trace.steps) - 1
        state.advance(run)


def continuation(t, run) -> None:
    """The embedded model continues the prompt (C5, C6): the text so far, one token more per press."""
    tokens = run.trace.tokens
    out = run.trace.row_output_ids(0)
    st.markdown(t("present.text", text=with_bold_tail(ids_text(tokens, run.trace.prompt_ids), ids_text(tokens, out))))
    cols = st.columns([1, 2])
    cols[0].button(t("lesson.ctl.one_more"), key=ctl("continuation"), on_click=_one_more,
                   disabled=not run.can_compute, width="stretch")
    cols[1].metric(t("decode.generated"), len(out))


PANELS = {"decode_input": decode_input, "decode_qkv": decode_qkv, "cache_growth": cache_growth,
          "kv_bytes_1024": kv_bytes_1024, "roofline": intensity, "slowdown": slowdown, "continuation": continuation}
