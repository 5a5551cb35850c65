"""§1.2's "about 60% of the time is memory access, so lowering decode latency means optimising the memory subsystem"
on the student's run (C7), under step 1.2.5's ridge once this machine's bandwidth is measured: the bytes one decode
step of this run reads (analysis/predict.py, the byte rule every page uses) over that bandwidth, against the run's
decode steps as the engine timed them: the share of a step that moving those bytes accounts for here. Then what
"optimising the memory subsystem" can mean in bytes: each memory-side switch's bytes and time at the same
bandwidth, with the step that measures it for real.
"""

from __future__ import annotations

import statistics

import streamlit as st

from llmviz.analysis import article
from llmviz.analysis.kv_memory import human
from llmviz.analysis.predict import Setup, Shape, decode_read_bytes

# each switch that reads fewer bytes per decode step, and the lesson step that measures it
REMEDIES = (("weights_fp16", {"dtype": "fp16", "kv_dtype": "fp32"}, "5.2"), ("weights_int8", {"quant": "int8"}, "5.2"),
            ("kv_fp16", {"kv_dtype": "fp16"}, "4.2.3"), ("gqa_half", None, "4.2.4"))


def bandwidth(raw: dict, nbytes: int) -> tuple[float, str]:
    """The measured GB/s a step of `nbytes` streams at: within the caches when it fits the cache probe's size,
    else from main memory; and which."""
    cache = raw.get("cache")
    if cache and nbytes <= cache["bytes"]:
        return cache["gb_per_s"], "cache"
    return raw["dram"]["gb_per_s"], "dram"


def memory_share(t, run, raw: dict) -> None:
    """The share of this run's decode step that its bytes account for at the measured bandwidth, beside the
    article's 60%; then the memory-side switches in bytes and ms."""
    decode = [s.timings["total_ms"] for s in run.trace.steps[1:] if s.timings.get("total_ms")]
    if not decode:
        return
    config = run.trace.model_card["config"]
    shape, cached = Shape.from_config(config), len(run.trace.prompt_ids)
    setup = Setup(shape, dtype=run.trace.engine_config.get("dtype", "fp32"))
    read = decode_read_bytes(setup, cached)
    gb_s, where = bandwidth(raw, read)
    memory_ms, step_ms = read / (gb_s * 1e6), statistics.median(decode)  # bytes / (GB/s x 1e9) x 1e3 = ms
    cols = st.columns(3)
    cols[0].metric(t("lesson.mem.step_ms"), f"{step_ms:.2f} ms", help=t("lesson.mem.step_ms_help", n=len(decode)))
    cols[1].metric(t("lesson.mem.memory_ms"), f"{memory_ms:.2f} ms", help=f"{read:,} B / {gb_s:,.1f} GB/s")
    cols[2].metric(t("lesson.mem.share"), f"{100 * memory_ms / step_ms:.0f}%",
                   help=t("lesson.mem.share_help", article=f"{article.DECODE_MEMORY_SHARE:.0%}"))
    kv = shape.num_kv_heads
    rows = []
    for name, changes, step in REMEDIES:
        if changes is None:  # half the KV heads, each shared by twice the query heads (GQA)
            if kv < 2 or kv % 2:
                continue
            changes = {"kv_heads": kv // 2}
        nbytes = decode_read_bytes(Setup(shape, **{"dtype": setup.dtype, **changes}), cached)
        rows.append((t(f"lesson.mem.remedy.{name}"), human(nbytes), f"{nbytes / (gb_s * 1e6):.2f}",
                     f"{100 * (nbytes / read - 1):+.1f}%", step))
    st.table({t(f"lesson.mem.col.{c}"): [r[i] for r in rows]
              for i, c in enumerate(("switch", "bytes", "ms", "change", "step"))})
    st.caption(t("lesson.mem.note", where=t(f"lesson.mem.where.{where}"), gb_s=f"{gb_s:,.1f}", cached=cached,
                 capture=run.trace.engine_config.get("capture", "?")))
