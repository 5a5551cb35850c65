"""Serving: continuous against static batching on a request trace, prefix sharing, speculative decoding, on
the real engine, stepped through like the decode stepper (C15, C16, C22; claims K7, K8, K9)."""

import hashlib

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.analysis.serving import (
    CLOSE,
    STATES,
    kv_figures,
    metrics,
    round_costs,
    round_gap,
)
from llmviz.analysis.tokens import token_label
from llmviz.ui import measure, server, state
from llmviz.ui import serving_run as run
from llmviz.ui.charts import chart
from llmviz.ui.chrome import heading, literal, translator
from llmviz.ui.navigation import KEEP
from llmviz.ui.serving_step import section as look_inside
from llmviz.ui.serving_view import averaged, batching_view, downloads, metrics_table, stepper
from llmviz.viz.serving import block_tables, gantt, rounds_figure, series

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
    wanted = (s.device, model, trace_key, int(slots))
    clicked = st.button(t("serving.run"), type="primary")
    results = run.batching(t, wanted, requests) if clicked else measure.kept(run.BATCHING_KEY, wanted)
    if results is None:
        return
    view = batching_view(results)  # derived once per result: a rerun only draws (issue 35)
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
    if which == "continuous":  # that step re-run and recorded: its rows, their blocks, their attention
        look_inside(t, wanted, requests, step)
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


def sharing_tab(t, s) -> None:
    st.markdown(t("serving.sharing_intro"))
    model = st.selectbox(t("serving.model"), run.SERVE_MODELS, key="share_model_w", **KEEP)
    wanted = (s.device, model, 8)
    results = run.sharing(t, *wanted) if st.button(t("serving.run_sharing")) else measure.kept(run.SHARING_KEY, wanted)
    if results is None:
        return
    kv = {on: kv_figures(results[on]) for on in (False, True)}
    saved = 1 - kv[True]["peak_kv_bytes"] / kv[False]["peak_kv_bytes"]
    fed = {on: kv[on]["prefill_tokens_fed"] for on in (False, True)}
    cols = st.columns(4)
    cols[0].metric(t("serving.kv_without"), human(kv[False]["peak_kv_bytes"]))
    cols[1].metric(t("serving.kv_with"), human(kv[True]["peak_kv_bytes"]), f"-{saved:.0%}", delta_color="inverse")
    cols[2].metric(t("serving.prefill_fed"), f"{fed[True]:,}", f"{fed[True] - fed[False]:,}", delta_color="inverse")
    ms = {on: kv[on]["prefill_steps_ms"] for on in (False, True)}
    cols[3].metric(t("serving.prefill_ms"), f"{ms[True]:,.0f} ms", f"{ms[True] - ms[False]:+,.0f} ms",
                   delta_color="inverse", help=t("serving.prefill_ms_help", without=ms[False]))
    same = results[True]["outputs"] == results[False]["outputs"]
    st.markdown(t("serving.k9", saved=saved, same=t("serving.same") if same else t("serving.differ")))
    records = results[True]["records"]
    step = stepper(t, "share_step_w", len(records) - 1, start=min(len(records) - 1, 5))
    chart(t, block_tables(list(records[step].tables), t("serving.tables_title", step=step), t("serving.x_block"),
                          t("serving.y_request"), t("serving.shared"), t("serving.own")), "share_tables")
    rows = [{"prefix_sharing": on, **kv[on], "tokens_per_s": metrics(results[on])["tokens_per_s"]}
            for on in (False, True)]
    downloads(t, rows, "prefix_sharing")


def speculative_tab(t, s) -> None:
    st.markdown(t("serving.spec_intro"))
    a, b, c, d = st.columns([2, 2, 1, 1])
    draft = a.selectbox(t("serving.draft"), run.DRAFTS, key="spec_draft_w", **KEEP,
                        format_func=lambda n: t("serving.draft.self") if n == run.TARGET else t("serving.draft.small"))
    k = b.slider(t("serving.k"), 1, 8, 4, key="spec_k_w", **KEEP)
    temperature = c.number_input(t("serving.temperature"), 0.0, 2.0, 0.0, 0.1, key="spec_temp_w", **KEEP,
                                 help=t("serving.temperature_help"))
    seed = d.number_input(t("serving.seed"), 0, 2**31 - 1, 0, key="spec_seed_w", **KEEP)
    st.caption(t("compare.prompt_note", prompt=literal(s.prompt)))
    wanted = (s.device, s.prompt, int(k), draft, round(float(temperature), 3), int(seed))
    result = run.speculative(t, wanted) if st.button(t("serving.run_spec")) else measure.kept(run.SPEC_KEY, wanted)
    if result is None:
        return
    cols = st.columns(4)
    cols[0].metric(t("serving.acceptance"), f"{result['acceptance_rate']:.0%}")
    cols[1].metric(t("serving.measured"), f"{result['measured_speedup']:.2f}×")
    cols[2].metric(t("serving.predicted"), f"{result['predicted_speedup']:.2f}×")
    cols[3].metric(t("serving.cost_ratio"), f"{result['cost_ratio']:.2f}")
    same = {True: t("serving.spec_same"), False: t("serving.spec_differ"), None: t("serving.spec_sampled")}[
        result["identical_outputs"]]
    st.markdown(t("serving.spec_verdict", same=same, ms=result["ms_per_token"],
                  alone=result["target_alone_ms_per_token"]))
    costs = round_costs(result)
    st.caption(f"{t('serving.spec_costs', step=costs['target_ms'], k1=costs['k'] + 1, **costs)} "
               f"{t('serving.spec_gap.' + round_gap(costs), close=CLOSE)}")
    tokens = result["tokens"]  # each shown by the one label rule: ␣, ↵, <e6>
    rounds = [{"proposed": r.proposed, "accepted": r.accepted,
               "pieces": [token_label(tokens, i) for i in r.proposed], "token_piece": token_label(tokens, r.token)}
              for r in result["rounds"]]
    names = {"accepted": t("serving.accepted"), "rejected": t("serving.rejected"), "target": t("serving.target_token")}
    chart(t, rounds_figure(rounds, names, t("serving.rounds_title", k=result["k"]), t("serving.x_position"),
                           t("serving.y_round")), "spec_rounds")
    downloads(t, [{"round": i, "proposed": " ".join(map(str, r.proposed)), "accepted": r.accepted, "token": r.token,
                   "draft_ms": r.draft_ms, "verify_ms": r.verify_ms} for i, r in enumerate(result["rounds"])],
              "speculative")


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
