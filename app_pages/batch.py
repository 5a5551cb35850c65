"""Batch: several prompts of different lengths as one padded batch, step by step, with its wasted slots,
each row's tokens and its own end; then throughput at batch 1, 2, 4, 8 measured (C13; claim K5)."""

import json

import streamlit as st

from llmviz.analysis.batch_grid import throughput_table
from llmviz.trace.config import PADDINGS, RANDOM_MODELS
from llmviz.ui import article_view, state
from llmviz.ui.batch import batch_run, batch_view
from llmviz.ui.charts import chart
from llmviz.ui.chrome import heading, literal, table_csv, translator
from llmviz.ui.claims import claim_rounds, claims_run, shared_runs
from llmviz.ui.navigation import KEEP
from llmviz.viz.batch import throughput_figure


def controls(t, s) -> tuple[int, str]:
    st.session_state.setdefault("batch_prompts_w", "\n".join(batch_run.prompts_of(s)))
    st.session_state.setdefault("batch_padding_w", s.batch.padding)
    left, right = st.columns([3, 1])
    left.text_area(t("batch.prompts"), key="batch_prompts_w", **KEEP, height=130, help=t("batch.prompts_help"))
    right.selectbox(t("batch.padding"), PADDINGS, key="batch_padding_w", **KEEP, help=t("switch.padding"),
                    format_func=lambda side: t(f"batch.padding.{side}"))
    max_new = right.number_input(t("batch.max_new"), 2, batch_run.MAX_NEW, 16, key="batch_max_new_w", **KEEP)
    text = st.session_state["batch_prompts_w"]
    wanted = "" if [p for p in text.split("\n") if p.strip()] == list(batch_run.EXAMPLES) else text.strip()
    state.update(batch={"prompts": wanted, "padding": st.session_state["batch_padding_w"]})
    a, b, c = st.columns(3)
    action = "start" if a.button(t("batch.run"), type="primary") else ""
    action = "next" if b.button(t("batch.next")) else action
    return int(max_new), "end" if c.button(t("batch.to_end")) else action


def throughput(t, s) -> None:
    st.subheader(t("batch.sweep_title"))
    st.markdown(t("batch.k5"))
    left, right = st.columns(2)
    model = left.selectbox(t("compare.model"), [s.model, *(m for m in RANDOM_MODELS if m != s.model)],
                           key="batch_model_w", help=t("compare.model_help"))
    # K5's own workload (the Claims page's and the lesson's) or the first prompt above
    workload = right.radio(t("batch.workload"), batch_run.WORKLOADS, key="batch_workload_w", horizontal=True,
                           format_func=lambda w: t(f"batch.workload.{w}"), help=t("batch.workload_help"))
    pressed = st.button(t("batch.sweep"))
    result = batch_run.sweep(t, s, model, workload) if pressed else batch_run.kept_sweep(s, model, workload)
    if result is None:
        return
    rows = throughput_table(result)
    chart(t, throughput_figure(rows, t("batch.sweep_chart"), t("batch.size"), t("batch.tokens_per_s"),
                               t("batch.decode"), t("batch.prefill")), key="batch_sweep")
    top = rows[-1]
    st.markdown(t("batch.sweep_verdict", b=top["batch"], decode=top["decode_speedup"], prefill=top["prefill_speedup"]))
    if result.get("judged_as"):  # the claims' one rule, on the batch claim's own workload and model
        judged = claims_run.judged_here(result["judged_as"], result)
        claims_run.verdict_box(t, judged)
        shared_runs.page_caption(t, judged, result, "batch")
        claims_run.floors(t, judged)
        claim_rounds.rounds_expander(t, judged, "batch_rounds")  # the rounds behind its figure
    else:
        st.caption(t("batch.not_k5"))
    st.caption(t("batch.sweep_note", model=literal(str(result["model"])), device=result["device"],
                 threads=result["threads"],
                 steps=result["steps"], repeats=result["repeats"]))
    a, b = st.columns(2)
    a.download_button(t("compare.json"), json.dumps(result), "batch_sweep.json", "application/json", key="batch_json")
    b.download_button(t("compare.csv"), table_csv(rows), "batch_sweep.csv", "text/csv", key="batch_csv")


def main() -> None:
    t = translator()
    heading(t, "batch")
    article_view.slips_here(t, "batch")
    s = state.settings()
    max_new, action = controls(t, s)
    s = state.settings()
    run = batch_run.shown(s, max_new)
    if action == "start" or (action and run is None):
        run = batch_run.start(t, s, max_new)
    elif run is not None and action:
        batch_run.advance(t, run, max_new, to_end=action == "end")
    if run is not None:
        batch_view.grid(t, run.trace, len(run.trace.steps) >= max_new)
    throughput(t, s)
    state.sync_url()


main()
