"""How the Compare page draws a prediction and a result (see llmviz/labs/compare.py for each number)."""

from __future__ import annotations

import json

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.analysis.lab import csv_rows, gap_text, jsonable, table
from llmviz.analysis.predict import Prediction, in_millions, ratio
from llmviz.trace.extensions import Names
from llmviz.trace.switches import SWITCHES
from llmviz.ui import names
from llmviz.ui.charts import chart
from llmviz.ui.chrome import csv_text, literal
from llmviz.ui.claims import claims_run
from llmviz.viz.compare import attention_pair, drift_bars, timing_bars


def _x(b: float | None, a: float | None) -> str:
    r = ratio(b, a)
    return "—" if r is None else f"{r:.2f}×"


def prediction_table(t, a: Prediction, b: Prediction) -> None:
    rows = [("weight_bytes", a.weight_bytes, b.weight_bytes, human), ("weight_read", a.weight_read_bytes,
            b.weight_read_bytes, human), ("kv_read", a.kv_read_bytes, b.kv_read_bytes, human),
            ("kv_used", a.kv_used_bytes, b.kv_used_bytes, human), ("kv_held", a.kv_allocated_bytes,
            b.kv_allocated_bytes, human), ("flops", a.decode_flops, b.decode_flops, in_millions),
            ("bound", a.bound_ms, b.bound_ms, lambda v: "—" if v is None else f"{v:.3f} ms")]
    st.table({t("compare.col.what"): [t(f"compare.row.{k}") for k, *_ in rows],
              "A": [f(x) for _, x, _, f in rows], "B": [f(y) for _, _, y, f in rows],
              "B / A": [_x(y, x) for _, x, y, _ in rows]})


def metrics(t, result: dict) -> None:
    cols = st.columns(2)
    for col, side in zip(cols, "ab", strict=True):
        s, other = result[side], result["a"]
        with col:
            spec = literal(s["spec"]) if s["spec"] else t("compare.defaults")
            st.subheader(t("compare.side", side=side.upper(), spec=spec))
            st.caption(t("compare.lossy_note", names=", ".join(s["lossy"])) if s["lossy"] else t("compare.exact_note"))
            m = st.columns(2)
            for i, key in enumerate(("prefill_ms", "decode_ms_per_token")):
                v = s[key]
                delta = None if side == "a" else f"{v['median'] / other[key]['median']:.2f}×"
                m[i].metric(t(f"compare.m.{key}"), f"{v['median']:.2f} ms", delta, delta_color="off",
                            help=t("compare.spread", lo=v["min"], hi=v["max"], n=len(v["all"])))
            m = st.columns(2)
            m[0].metric(t("compare.m.tokens_per_s"), f"{s['tokens_per_s']:.1f}")
            m[1].metric(t("compare.m.weights"), human(s["weight_bytes"]))
            m = st.columns(2)
            alloc = t("compare.kv_alloc", alloc=human(s["kv_bytes_allocated"]), held=human(s["kv_bytes_held"]))
            m[0].metric(t("compare.m.kv_used"), human(s["kv_bytes_used"]), help=alloc)
            m[1].metric(t("compare.m.peak"), human(s["peak_memory"]["bytes"]),
                        help=t(f"compare.peak_{s['peak_memory']['kind']}", hook=s["largest_activation"]["hook"]))
            st.caption(alloc)
            if "perplexity" in s:
                st.metric(t("compare.m.perplexity"), f"{s['perplexity']:.2f}", help=t("compare.ppl_help"))
            if s["kv"].get("block_tables"):  # a layout of blocks (paged, or an extension's that records them)
                st.caption(t("compare.blocks", n=len(s["kv"]["block_tables"][0]), bs=s["kv"]["block_size"],
                             table=s["kv"]["block_tables"][0][:32]))


def outputs(t, result: dict) -> None:
    first = result["outputs"]["first_divergence"]
    st.markdown(t("compare.agreement", share=result["outputs"]["agreement"],
                  where=t("compare.identical") if first is None else t("compare.diverge_at", i=first)))
    cols = st.columns(2)
    for col, side in zip(cols, "ab", strict=True):
        same, diff = literal(result[side]["text_same"]), literal(result[side]["text_diff"])
        col.markdown(f"**{side.upper()}** · {literal(result['prompt'])}" + same +
                     (f":orange-background[{diff}]" if diff else ""))


def drift(t, result: dict) -> None:
    d = result["drift"]
    if d.get("max_abs_dlogit") is None:
        st.info(t("compare.no_drift"))
        return
    chart(t, drift_bars(d["max_abs_dlogit"], d["greedy_agree"], t("compare.drift_title", max=d["max"]),
                        t("compare.step"), "max |Δlogit|", t("compare.agree"), t("compare.differ")), key="cmp_drift")
    st.caption(t("compare.drift_note", share=d["greedy_agreement"]))


def attention(t, result: dict, labels: list[str]) -> None:
    maps = [result[s]["attention"]["probs"] for s in "ab"]
    titles = [f"{s.upper()}" + (f" ({t('compare.recomputed')})" if result[s]["attention"]["recomputed"] else "")
              for s in "ab"]
    chart(t, attention_pair(maps, titles, labels, t("compare.maps_title"), t("compare.prob")), key="cmp_maps")
    if any(result[s]["attention"]["recomputed"] for s in "ab"):
        st.caption(t("compare.recomputed_note"))


def result_view(t, result: dict, labels: list[str]) -> None:
    if result["steps"] < result["steps_asked"]:
        st.info(t("compare.cut_short", ran=result["steps"], asked=result["steps_asked"]))
    metrics(t, result)
    st.caption(t("compare.timed", device=result["device"], threads=result["threads"], warmup=result["warmup"],
                 repeats=result["repeats"]))
    noisy = [t(f"compare.m.{k}") for k, v in result["within_noise"].items() if v]
    if noisy:
        st.warning(t("compare.noise", what=", ".join(noisy)))
    elif None in result["within_noise"].values():
        st.info(t("compare.noise_unjudged"))
    for key, floor in result.get("control", {}).get("noise_floor", {}).items():  # the A-vs-A control
        claims_run.floor_caption(t, floor, t(f"compare.m.{key}"))
    chart(t, timing_bars(result, {"a": "A", "b": "B", "prefill_ms": t("compare.m.prefill_ms"),
                                  "decode_ms_per_token": t("compare.m.decode_ms_per_token")},
                         t("compare.timing_title"), "ms"), key="cmp_timing")
    st.subheader(t("compare.vs_title"))
    st.markdown(gap_text(t, result))
    rows = table(result)
    st.table({t("compare.col.what"): [t(f"compare.row.{r.what}") for r in rows],
              t("compare.col.predicted"): [_x(r.predicted_b, r.predicted_a) for r in rows],
              t("compare.col.measured"): [_x(r.measured_b, r.measured_a) for r in rows]})
    outputs(t, result)
    drift(t, result)
    attention(t, result, labels)
    downloads(t, result)


def downloads(t, result: dict) -> None:
    a, b = st.columns(2)
    a.download_button(t("compare.json"), json.dumps(jsonable(result), ensure_ascii=False), "compare.json",
                      "application/json", key="cmp_json")
    b.download_button(t("compare.csv"), csv_text(csv_rows(result)), "compare.csv", "text/csv", key="cmp_csv")


def switch_reference(t) -> None:
    """Every engine switch, its values and what it changes (exact or lossy)."""
    with st.expander(t("compare.switches")):
        switches = list(SWITCHES.values())
        st.table({t("compare.col.switch"): [s.name for s in switches],
                  t("compare.col.values"): [" | ".join(s.choices) if s.choices else t(_kind(s)) for s in switches],
                  t("compare.col.exact"): [_exactness(t, s) for s in switches],
                  t("compare.col.what"): [_what(t, s) for s in switches]})


def _exactness(t, switch) -> str:
    """Exact or lossy; for a table of declarations, each choice as its declaration says (an extension's may be
    lossy)."""
    if not isinstance(switch.choices, Names):
        return t("switch.exact") if switch.exact else t("switch.lossy")
    lossy = [n for n in switch.choices if not switch.exact_at(n)]
    return t("switch.lossy_only", names=", ".join(lossy)) if lossy else t("switch.exact")


def _what(t, switch) -> str:
    """The switch's line; for a table of declarations, each choice's own line after it."""
    if not isinstance(switch.choices, Names):
        return t(f"switch.{switch.name}")
    lines = [f"{n}: {names.about(t, switch.choices, n)}" for n in switch.choices if names.about(t, switch.choices, n)]
    return "; ".join([t(f"switch.{switch.name}"), *lines])


def _kind(switch) -> str:
    if switch.kind is bool:
        return "compare.kind.bool"
    return "compare.kind.int_optional" if switch.optional else "compare.kind.int"
