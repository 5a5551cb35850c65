"""One layer at one step (C3): the residual stream through the block, what the norms do, the
MLP's shapes and activation, and what attention and the MLP each add, per token; all from recorded hooks."""

import streamlit as st

from llmviz.analysis import layer as ly
from llmviz.analysis.recorded import missing_tensors
from llmviz.analysis.tokens import cache_labels
from llmviz.trace import hooks
from llmviz.ui import state
from llmviz.ui.charts import chart
from llmviz.ui.chrome import article_shapes, heading, missing_note, shown_run, translator
from llmviz.viz import layer as fig


def pick(t, run) -> tuple[int, int]:
    """The layer (a slider) and the step (the run's step shown, which this slider moves too)."""
    c = run.trace.model_card["config"]
    a, b = st.columns(2)
    layer = a.select_slider(t("layer.pick"), options=list(range(c["num_layers"])), key="layer_layer")
    if len(run.trace.steps) > 1:
        run.cursor = b.select_slider(t("layer.step"), options=list(range(len(run.trace.steps))), value=run.cursor,
                                     key="layer_step")
    return layer, run.cursor


def sections(t, run, layer: int) -> None:
    step, c = run.step, run.trace.model_card["config"]
    view = ly.layer_view(step, layer, c["position"] == "learned")
    n = step.input_ids.shape[1]
    labels = cache_labels(run.trace, run.cursor)[-n:]  # this step's input tokens
    axis = t("layer.token")
    st.header(t("layer.stream_header"))
    st.markdown(t("layer.stream_explain", layer=layer, gap=f"{view.residual_gap:.1e}"))
    stream = [(t("layer.in"), view.norm_in, False), (t("layer.mid"), view.norm_mid, False),
              (t("layer.out"), view.norm_out, False)]
    chart(t, fig.per_token_lines(stream, labels,
                                 t("layer.stream_title", layer=layer), t("layer.norm"), axis), key="layer_stream")
    chart(t, fig.contribution_bars((t("layer.attn_adds"), t("layer.mlp_adds")), view.norm_attn, view.norm_mlp,
                                   labels, t("layer.adds_title"), t("layer.norm"), axis), key="layer_adds")
    st.header(t("layer.norm_header"))
    st.markdown(t("layer.norm_explain", kind=t(f"layer.kind_{c.get('norm', 'rms')}"), d=c["hidden_size"],
                  sqrt_d=c["hidden_size"] ** 0.5))
    lines = [(t("layer.in"), view.norm_in, True), (t("layer.after_norm1"), view.norm_h, False),
             (t("layer.mid"), view.norm_mid, True), (t("layer.after_norm2"), view.norm_m, False)]
    chart(t, fig.per_token_lines(lines, labels,
                                 t("layer.norm_title"), t("layer.norm"), axis), key="layer_norms")
    st.header(t("layer.mlp_header"))
    f = view.act.shape[-1]
    st.markdown(t("layer.mlp_shapes", n=n, d=c["hidden_size"], f=f, ratio=f / c["hidden_size"],
                  act=c.get("activation", "?"), kind=t(f"layer.mlp_{c.get('mlp', 'gated')}")))
    shares = ly.activation_shares(view.act)
    chart(t, fig.activation_histogram(view.act, t("layer.act_title", n=n, f=f), t("layer.act_value"),
                                      t("layer.count")), key="layer_act")
    st.caption(t("layer.act_caption", **{k: 100 * v for k, v in shares.items()}) + " " +
               t(f"layer.act_note_{c.get('mlp', 'gated')}"))


def main() -> None:
    t = translator()
    heading(t, "layer")
    run = shown_run(t)
    if run is not None:
        article_shapes(t, run, key="shapes_layer")
        layer, _ = pick(t, run)
        inputs = [hooks.layer_input(layer)]
        missing = missing_tensors(run.step, [*ly.needed(layer), *inputs])
        if missing:
            missing_note(t, run.step, missing)
        else:
            sections(t, run, layer)
    state.sync_url()


main()
