"""A look inside one step of continuous or static batching: the trace run again up to that step, the
step itself padded and recorded at capture full as the StepTrace every page reads (engine/step_loop.py). What it
shows is read from that trace (analysis/serving_step.py): which request holds which row, what each fed at which
positions, what its cache holds after the step and in which blocks, the token it drew, and each row's attention over
the keys the step read, the slots it may not see greyed. A request of the step opens as its own run in the Decode or
Prefill view (trace/rows.py)."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.serving_step import last_query_attention, step_rows
from llmviz.analysis.tokens import token_label
from llmviz.trace.budget import shed
from llmviz.ui import measure, server, state
from llmviz.ui.charts import chart
from llmviz.ui.serving.serving_run import LOOK_KEY, OPEN_KEY, look, open_request
from llmviz.viz.attention import attention_heatmap


def section(t, wanted: tuple, requests, step: int, scheduler: str = "continuous") -> None:
    """The button under the stepper, and what the step recorded once it has run."""
    if st.button(t("serving.look", step=step), key="serve_look_w"):
        result = look(t, wanted, requests, step, scheduler)
    else:
        result = measure.kept(LOOK_KEY, (*wanted, step, scheduler))
    if result is None:
        return
    trace = result.get("steps", {}).get(step)
    if trace is None:  # no request was scheduled: an idle step records nothing
        st.info(t("serving.look_idle", step=step))
        return
    rows = step_rows(trace, result["records"][step])
    st.dataframe(rows_table(t, rows, result["tokens"]), hide_index=True, key="serve_look_rows")
    layer = trace.kv["layers"] - 1
    z, hidden = last_query_attention(trace, layer)
    labels = [t("serving.look.row_label", row=i, request=r["request"]) for i, r in enumerate(rows)]
    chart(t, attention_heatmap(z, labels, [str(s) for s in range(z.shape[1])],
                               t("serving.look.title", step=step, layer=layer), t("serving.look.x"),
                               t("serving.look.y"), t("serving.look.value"), probabilities=True, hidden=hidden),
          "serve_look_attention")
    if "block_size" in trace.kv:  # continuous batching's paged pool
        st.caption(t("serving.look.caption", block=trace.kv["block_size"], padded=trace.timings["padded_slots"]))
    else:  # static batching: one padded batch over a contiguous cache
        st.caption(t("serving.look.caption_static", slots=trace.kv["max_seq"], padded=trace.timings["padded_slots"]))
    open_controls(t, wanted, requests, step, rows, result["records"], scheduler)


def rows_table(t, rows: list[dict], tokens: dict) -> list[dict]:
    """The step's rows as the table shows them: each row's request, slot, what it fed where, its cache and draw."""
    return [{t("serving.look.row"): i, t("serving.look.request"): r["request"], t("serving.look.slot"): r["slot"],
             t("serving.look.kind"): t(f"serving.state.{r['kind']}"), t("serving.look.fed"): r["fed"],
             t("serving.look.positions"): "—" if r["first"] is None else f"{r['first']}–{r['last']}",
             t("serving.look.cached"): r["cached"], t("serving.look.blocks"): " ".join(map(str, r["blocks"] or [])),
             t("serving.look.drew"): "—" if r["drew"] is None else token_label(tokens, r["drew"])}
            for i, r in enumerate(rows)]


def open_controls(t, wanted: tuple, requests, step: int, rows: list[dict], records: list, scheduler: str) -> None:
    """A request of the step (one that has drawn a token) opened as its own run in the Decode or Prefill view."""
    ready = [r["request"] for r in rows if r["kind"] == "decode" or r["drew"] is not None]  # not idle, not mid-prompt
    if not ready:
        st.caption(t("serving.open.none"))
        return
    a, b, c = st.columns([2, 1, 1], vertical_alignment="bottom")
    rid = a.selectbox(t("serving.open.request"), ready, key="serve_open_w", help=t("serving.open.request_help"),
                      format_func=lambda r: t("serving.open.label", request=r))
    for column, page in ((b, "decode"), (c, "prefill")):
        if column.button(t(f"serving.open.{page}"), key=f"serve_open_{page}_w", width="stretch"):
            trace = open_request(t, wanted, requests, step, rid, records, scheduler)
            if trace is not None:  # within the session's trace budget, as a live run is
                cursor = len(trace.steps) - 1 if page == "decode" else 0
                shed(trace, server.policy().trace_budget_bytes, keep=(cursor,))
                st.session_state.pop(OPEN_KEY, None)  # held once, by the replay
                state.replay(trace, cursor=cursor)
                st.switch_page(f"app_pages/{page}.py")
