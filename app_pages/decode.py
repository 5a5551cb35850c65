"""Decode, step by step (C5, C6, C18): Next / Previous / Play / Reset over the real engine's steps."""

import streamlit as st

from llmviz.analysis.decode_series import MIN_FIT_POINTS, cache_norms, fit_latency, latency_series
from llmviz.analysis.kv_memory import in_one_unit
from llmviz.analysis.recorded import missing_row_norms, missing_tensors
from llmviz.analysis.sampling import distribution, stored_logits
from llmviz.analysis.tokens import cache_labels, token_label
from llmviz.trace import hooks
from llmviz.trace.config import KV_LAYOUTS
from llmviz.ui import article_view, latency_sweep, names, presenter, seed_controls, server, state
from llmviz.ui.charts import chart
from llmviz.ui.chrome import heading, literal, missing_note, shown_run, step_timing, translator, with_bold_tail
from llmviz.ui.decode_controls import (
    PLAYING,
    TICKING,
    controls,
    letter_keys,
    play_interval,
    reset_demo,
    sampling_sliders,
    speed_control,
)
from llmviz.ui.errors import guarded
from llmviz.ui.markdown import escape
from llmviz.ui.trace_file import ids_text
from llmviz.viz import decode as fig

SHOWN = 10  # bars of the next-token chart (and the drawn token's, when it ranks lower)


def attention_panel(t, run, layer: int, labels: list[str]) -> None:
    step = run.step
    q = step.hook(hooks.q(layer)).array[0, :, -1, :]  # [1, h, n, hd] -> the last query: [h, hd]
    probs_rec = step.hook(hooks.probs(layer))
    probs = probs_rec.array[0, :, -1, :]  # [1, h, n, n_k] -> [h, n_k]
    n_k = probs.shape[1]
    start = int(step.positions[0, -1]) + 1 - n_k  # > 0 only for a sliding window
    left, right = st.columns([2, 3])
    with left:
        n = step.input_ids.shape[1]
        key = "decode.q_shape_prefill" if step.phase == "prefill" else "decode.q_shape"
        st.markdown(t(key, heads=q.shape[0], hd=q.shape[1], n=n))
        chart(t, fig.vector_heatmap(q, t("decode.head"), "head_dim", t("decode.q_title", layer=layer),
                                    t("decode.value")), key="q")
    with right:
        st.markdown(t("decode.attn_text", n_k=n_k))
        chart(t, fig.attention_row(probs, labels, start, t("decode.head"), t("decode.attn_title"),
                                   t("decode.weight")), key="attn")
        if probs_rec.recomputed:
            st.caption(t("decode.recomputed", backend=literal(str(step.timings.get("attn_backend", "?")))))


def cache_panel(t, run, layer: int, labels: list[str], detail: bool = True) -> None:
    step, kv = run.step, run.step.kv
    new = step.input_ids.shape[1]
    norms = cache_norms(run.trace.steps, layer, "k", run.cursor)  # [kv, positions]
    title = t("decode.kv_title" if detail else "decode.kv_title_short", layer=layer, used=kv["seq_len"],
              max_seq=kv["max_seq"])
    chart(t, presenter.enlarge(fig.kv_grid(norms, new, labels, t("decode.kv_head"), title)),
             key="kvgrid")
    if not detail:
        return
    layout = str(kv.get("layout", "contiguous"))
    note = names.about(t, KV_LAYOUTS, layout)  # its declaration's line; a layout not declared here: its name
    st.caption(t("decode.kv_caption", before=kv["seq_len"] - new, after=kv["seq_len"], kv=kv["kv_heads"],
                 hd=kv["head_dim"], used=kv["bytes_used"], alloc=kv["bytes_allocated"],
                 share=100 * kv["bytes_used"] / kv["bytes_allocated"],
                 layout_note=escape(note) if note else t("decode.kv_layout.other", layout=literal(layout))))


def next_token_panel(t, run, settings, detail: bool = True) -> None:
    step, tokens = run.step, run.trace.tokens
    ids, logits, lse = stored_logits(step)
    chosen_id = int(step.sampled[0])
    dist = distribution(ids, logits, lse, settings.temperature, settings.top_k, settings.top_p, show=SHOWN,
                        include=chosen_id)
    chosen = next((i for i, v in enumerate(dist.ids) if v == chosen_id), None)
    pieces = [token_label(tokens, int(i)) for i in dist.ids]
    title = t("decode.dist_title", n=SHOWN)
    if chosen is not None and dist.ranks[chosen] > SHOWN:  # drawn from further down: one more bar, its rank said
        pieces[chosen] = f"#{dist.ranks[chosen]} {pieces[chosen]}"
        title = t("decode.dist_title_drawn", n=SHOWN, rank=int(dist.ranks[chosen]))
    chart(t, presenter.enlarge(fig.next_token_bars(pieces, dist.probs, dist.raw_probs, dist.kept, chosen, (
        t("decode.raw"), t("decode.shaped"), t("decode.drawn")), title)), key="dist")
    if not detail:
        return
    caption = "decode.dist_caption_replay" if run.key is None else "decode.dist_caption"
    st.caption(t(caption, kept=dist.kept_count, used=step.sampling.get("temperature", "?"),
                 token=literal(token_label(tokens, chosen_id))))
    if step.logits is None:  # a large vocabulary: only the top tokens were stored
        st.caption(t("decode.dist_topk_only", stored=len(ids), vocab=run.trace.model_card["config"]["vocab_size"]))
    if step.lens_ids is not None:
        lens_pieces = [[token_label(tokens, int(i)) for i in row] for row in step.lens_ids[:, 0]]
        chart(t, fig.logit_lens(lens_pieces, step.lens_probs[:, 0], t("decode.layer"),
                                t("decode.lens_title")), key="lens")
        st.caption(t("decode.lens_caption"))


def fit_caption(t, fit) -> str:
    """What the trend line says, or why there is none (C18: the cost per token grows with the context)."""
    if fit.reason == "few_points":
        return t("decode.fit_few", need=MIN_FIT_POINTS, warmup=fit.left_out, n=fit.points)
    values = {"slope": 1000 * fit.slope, "se": 1000 * fit.slope_se, "n": fit.points, "warmup": fit.left_out}
    return t("decode.fit_noise" if fit.reason == "noise" else "decode.fit_ok", **values)


def timing_panel(t, run) -> None:
    step = run.step
    positions, ms = latency_series(run.trace.steps)
    left, right = st.columns(2)
    with left:
        if len(ms):
            current = int(step.positions[0, -1]) if step.phase == "decode" else None
            fit = fit_latency(positions, ms)
            line = (fit.slope, fit.intercept) if fit.meaningful else None
            names = (t("decode.ms_series"), t("decode.warmup", n=fit.left_out),
                     t("decode.fit", slope=1000 * (fit.slope or 0), se=1000 * (fit.slope_se or 0), n=fit.points))
            chart(t, fig.latency(positions, ms, current, line, fit.left_out, names,
                                 (t("decode.position"), t("decode.ms")), t("decode.latency_title")), key="latency")
            live = run.key is not None  # a live run gets the length sweep below
            st.caption(fit_caption(t, fit) + (" " + t("decode.fit_sweep_hint") if live and not fit.meaningful else ""))
        else:
            st.info(t("decode.latency_empty"))
    with right:
        step_timing(t, step, t("decode.spans_title", step=step.index), "spans")


def memory_panel(t, run) -> None:
    step, card = run.step, run.trace.model_card
    public = server.policy().public  # a public server keeps its own process's memory to itself
    cols = st.columns(3 if public else 4)
    weights, used, allocated = in_one_unit([card["weight_bytes"], step.kv["bytes_used"], step.kv["bytes_allocated"]])
    cols[0].metric(t("decode.mem_weights"), weights, help=t("decode.mem_bytes", n=card["weight_bytes"]))
    cols[1].metric(t("decode.mem_kv_used"), used, help=t("decode.mem_bytes", n=step.kv["bytes_used"]))
    cols[2].metric(t("decode.mem_kv_alloc"), allocated, help=t("decode.mem_bytes", n=step.kv["bytes_allocated"]))
    if not public and "rss_bytes" in step.memory:  # a public server's trace download leaves it out (trace_file)
        cols[3].metric(t("decode.mem_rss"), in_one_unit([step.memory["rss_bytes"]])[0], help=t("decode.mem_rss_help"))
    if "cuda_allocated_bytes" in step.memory and not public:
        st.caption(t("decode.mem_cuda", alloc=step.memory["cuda_allocated_bytes"] / 2**20,
                     peak=step.memory["cuda_peak_allocated_bytes"] / 2**20))


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
    # Below the fold, and off by default: its two figures cost ~0.1 s of drawing per step (issue 10's 0.5 s target)
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

    st.fragment(fragment, run_every=play_interval() if playing else None)()
    letter_keys()  # outside the fragment: drawn once per page, not on every step


main()
