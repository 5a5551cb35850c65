"""One weight-quantization method measured on held-out text (C21; the article's "8-bit"/"4-bit" slip): its perplexity
through the engine's cache, the bytes its weights take, and for LLM.int8() how many input columns crossed its outlier
threshold. One rule for bench/quantization.py and the lesson's step 5.2.

Perplexity: assets/corpus/heldout.txt, one prefill per 512-token window (labs/evaluation.py), never the text GPTQ
was calibrated on (labs/calibration.py reads the training split).
"""

from __future__ import annotations

GROUPED = ("int4", "gptq-int4")  # the methods a group size changes


def quant_row(lm, mode: str, group: int, load_s: float | None = None) -> dict:
    """The loaded model `lm` (loaded with quant=mode, quant_group=group) measured: its held-out perplexity, its weight
    bytes, and the method's own counts (LLM.int8()'s outlier columns of all column-calls, GPTQ's calibration
    tokens)."""
    from llmviz.engine.models.quant_methods import LLM_INT8_THRESHOLD, count_outliers
    from llmviz.labs.evaluation import engine_perplexity, heldout_ids

    with count_outliers() as seen:
        ppl = engine_perplexity(lm, heldout_ids(lm.tokenizer))
    row = {"quant": mode, "group": group if mode in GROUPED else None, "perplexity": round(ppl, 3),
           "weight_bytes": lm.weight_bytes}
    if load_s is not None:
        row["load_s"] = round(load_s, 2)
    if mode == "llm-int8":
        row |= {"threshold": LLM_INT8_THRESHOLD, "outlier_columns": sum(n for _, n, _ in seen),
                "column_calls": sum(width for _, _, width in seen)}
    if "calibration_tokens" in lm.options:
        row["calibration_tokens"] = lm.options["calibration_tokens"]
    return row
