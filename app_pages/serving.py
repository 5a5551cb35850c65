"""Serving: continuous against static batching on a request trace, prefix sharing, speculative decoding, on
the real engine, stepped through like the decode stepper (C15, C16, C22; claims K7, K8, K9)."""

import hashlib

import streamlit as st

from llmviz.analysis.serving import STATES, serving_layout
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, EngineConfig
from llmviz.ui import measure, server, state
from llmviz.ui.charts import chart
from llmviz.ui.chrome import heading, literal, translator
from llmviz.ui.names import label
from llmviz.ui.navigation import KEEP
from llmviz.ui.serving import serving_run as run
from llmviz.ui.serving.serving_step import section as look_inside
from llmviz.ui.serving.serving_view import averaged, batching_view, downloads, metrics_table, stepper
from llmviz.ui.serving.sharing_tab import sharing_tab
from llmviz.ui.serving.speculative_tab import speculative_tab
from llmviz.viz.serving import gantt, series

UPLOAD = "upload"  # the trace select's last choice: a JSON file of the user's
FORMAT_EXAMPLE = """{"name": "my-trace", "note": "two requests",
 "requests": [
  {"id": 0, "arrival_step": 0, "prompt_ids": [412, 87, 1290], "output_len": 16},
  {"id": 1, "arrival_step": 3, "prompt_ids": [5, 77], "output_len": 8,
   "temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 7}]}"""


def batching_tab(t, s) -> None:
    st.markdown(t("serving.batching_intro"))
    a, b, c = st.columns(3)
    model = a.selectbox(t("serving.model"), run.SERVE_MODELS, key="serve_model_w", **KEEP)
    trace = b.selectbox(t("serving.trace"), (*run.TRACES, UPLOAD), key="serve_trace_w", **KEEP,
                        format_func=lambda n: t(f"serving.trace.{n}"))
    slots = c.number_input(t("serving.slots"), 1, 16, 8, key="serve_slots_w", **KEEP)
    requests, trace_key = trace, trace
    if trace == UPLOAD:
        requests, trace_key = uploaded(t)
        if requests is None:
            return
    backend, layout = run_engine(t, s)
    wanted = (s.device, model, trace_key, int(slots), backend, layout)
    clicked = st.button(t("serving.run"), type="primary")
    results = run.batching(t, wanted, requests) if clicked else measure.kept(run.BATCHING_KEY, wanted)
    if results is None:
        return
    view = batching_view(results)  # derived once per result: a rerun only draws
    m = view["metrics"]
    metrics_table(t, m)
    st.markdown(t("serving.verdict", ratio=m["continuous"]["tokens_per_s"] / m["static"]["tokens_per_s"],
                  static=m["static"]["slot_utilization"], cont=m["continuous"]["slot_utilization"],
                  same=t("serving.same") if view["same"] else t("serving.differ")))
    names = {k: t(f"serving.state.{k}") for k in STATES}
    which = st.radio(t("serving.show"), ("continuous", "static"), horizontal=True, key="serve_which_w", **KEEP,
                     format_func=lambda n: t(f"serving.sched.{n}"))
    result = results[which]
    steps = len(result["records"])
    step = stepper(t, f"serve_step_{which}", steps - 1)
    cells = view["timeline"][which]
    note = t("serving.gantt_binned", rows=cells.per_row, cols=cells.per_column) if cells.aggregated else None
    chart(t, gantt(cells, names, t("serving.gantt", sched=t(f"serving.sched.{which}")), t("serving.x_step"),
                   t("serving.y_request"), step, note), "serve_gantt")
    rec = result["records"][step]
    st.caption(t("serving.step_note", step=step, ms=rec.ms, rows=", ".join(
        f"{rid}→{slot} ({take} {t(f'serving.state.{kind}')})" for rid, slot, take, kind in rec.rows) or "—",
        waiting=rec.waiting, blocks=rec.blocks_used))
    look_inside(t, wanted, requests, step, which)  # that step re-run and recorded: its rows and their attention
    util = {t(f"serving.sched.{n}"): line[:2] for n, line in view["utilization"].items()}
    chart(t, series(util, t("serving.util_title"), t("serving.x_step"), t("serving.util_y"), percent=True,
                    note=averaged(t, max(line[2] for line in view["utilization"].values()))), "serve_util")
    if which == "continuous":
        blocks = view["blocks"]
        chart(t, series({t("serving.blocks"): blocks[:2]}, t("serving.blocks_title", total=result["blocks_total"]),
                        t("serving.x_step"), t("serving.blocks"), note=averaged(t, blocks[2])), "serve_blocks")
    st.caption(t("serving.timed"))
    downloads(t, [{"scheduler": n, **{k: v for k, v in fig.items() if not isinstance(v, dict)}}
                  for n, fig in m.items()], "batching")


def run_engine(t, s) -> tuple[str, str]:
    """Home's attention backend and KV layout, which both schedulers run on where they can; the page says where one
    cannot (continuous batching needs blocks: analysis/serving.serving_layout)."""
    backend, layout = s.attn, s.switches().get("kv_layout", EngineConfig.kv_layout)
    used = {n: serving_layout(n, layout) for n in ("static", "continuous")}
    why = "" if used["continuous"] == layout else t("serving.layouts_why", chosen=label(t, KV_LAYOUTS, layout))
    st.caption(t("serving.layouts", backend=label(t, ATTN_BACKENDS, backend),
                 static=label(t, KV_LAYOUTS, used["static"]), continuous=label(t, KV_LAYOUTS, used["continuous"]),
                 why=why))
    return backend, layout


def uploaded(t) -> tuple:
    """The uploaded request trace and a key naming its content, or (None, None) with what to do shown."""
    policy = server.policy()
    file = st.file_uploader(t("serving.upload"), type=["json"], key="serve_upload_w", help=t("serving.upload_help"),
                            max_upload_size=policy.upload_limit_mb if policy.public else None)
    with st.expander(t("serving.format")):
        st.markdown(t("serving.format_text"))
        st.code(FORMAT_EXAMPLE, language="json")
    if file is None:
        st.info(t("serving.upload_wait"))
        return None, None
    data = file.getvalue()
    requests = run.uploaded_trace(t, data, file.name)
    if requests is None:
        return None, None
    st.caption(t("serving.uploaded", name=literal(file.name), n=len(requests.requests)))
    return requests, "upload:" + hashlib.sha256(data).hexdigest()


def main() -> None:
    t = translator()
    heading(t, "serving")
    s = state.settings()
    if not server.engine_available():  # a replay-only install: everything here runs the engine
        st.info(t("compare.no_engine"))
        return
    tabs = st.tabs([t("serving.tab.batching"), t("serving.tab.sharing"), t("serving.tab.spec")])
    with tabs[0]:
        batching_tab(t, s)
    with tabs[1]:
        sharing_tab(t, s)
    with tabs[2]:
        speculative_tab(t, s)
    state.sync_url()


main()
