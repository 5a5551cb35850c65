"""Step 5.2's measurement (C21; the article's "8-bit"/"4-bit" slip): the weight-quantization methods on the student's
model, each measured by held-out perplexity on this machine when the student presses the button
(service.measure.quantization), fp32 first as the reference; the methods measured so far in a table, so
round-to-nearest int8/int4, LLM.int8() and GPTQ stand side by side with their bytes.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.analysis.predict import QUANT_BITS
from llmviz.trace.config import EngineConfig
from llmviz.ui import measure, server, state

STORE = "llmviz_lesson_quant"  # {(model, method): row}, in the session
GROUP = EngineConfig().quant_group  # the 4-bit methods' group size: the engine's default


def method(choice: str) -> str | None:
    """The panel's choice as the engine's quant switch: fp32 is "none", a quant mode is itself (QUANT_BITS, the one
    table of them); fp16 is a dtype, not measured here (None)."""
    return "none" if choice == "fp32" else choice if choice in QUANT_BITS else None


def rows() -> dict:
    return measure.kept(STORE) or {}


def measured(t, run, choice: str) -> None:
    """The button that measures the chosen method (and fp32, the reference, once), then every row measured so far."""
    mode, s = method(choice), state.settings()
    if mode is None or not server.engine_available() or run.key is None:  # a replayed recording: its model may be gone
        return
    done = rows()
    if st.button(t("lesson.quant_measure", method=choice), key="lesson_quant_measure",
                 help=t("lesson.quant_measure_help")):
        todo = [m for m in dict.fromkeys(("none", mode)) if (s.model, m) not in done]
        for m in todo:
            def work(queued, m=m):
                lm = server.model(s.model, s.device, "fp32", quant=m, quant_group=GROUP)  # GPTQ calibrates here
                with queued():
                    from llmviz import service

                    return service.measure.quantization(lm, m, GROUP)

            row = measure.run(t, f"{STORE}_one", (s.model, m), work, text=t("lesson.quant_running", method=m),
                              what=(STORE, m))  # "about N s" from this method's last run: GPTQ's is its calibration
            if row is None:  # said why; the rows measured before it are kept
                break
            done = {**done, (s.model, m): row}
            measure.keep(STORE, None, done)
    shown = {m: r for (model, m), r in done.items() if model == s.model}
    if not shown:
        return
    base = shown.get("none")
    st.dataframe({t("lesson.quant_col_method"): list(shown),
                  t("lesson.quant_col_bytes"): [human(r["weight_bytes"]) for r in shown.values()],
                  t("lesson.quant_col_ppl"): [f"{r['perplexity']:.2f}" for r in shown.values()],
                  t("lesson.quant_col_vs"): [f"{r['perplexity'] / base['perplexity'] - 1:+.1%}" if base else "—"
                                             for r in shown.values()]},
                 hide_index=True, key="lesson_quant_table")
    if (r := shown.get("llm-int8")) is not None:
        st.caption(t("lesson.quant_outliers", n=f"{r['outlier_columns']:,}", calls=f"{r['column_calls']:,}",
                     threshold=r["threshold"]))
    if (r := shown.get("gptq-int4")) is not None and "calibration_tokens" in r:
        st.caption(t("lesson.quant_gptq", tokens=f"{r['calibration_tokens']:,}"))
