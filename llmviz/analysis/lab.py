"""Prediction beside measurement for an A/B comparison: ratios B/A of what arithmetic says and what the
engine measured, and the gap in words (message keys the pages and the CLI fill in) (C7, C11, K4, K10, K11).

Reads the plain dict `llmviz.labs.compare.compare` returns; pure arithmetic, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.analysis.predict import Prediction, Setup, Shape, predict, ratio
from llmviz.trace.config import ATTN_BACKENDS
from llmviz.trace.switches import SWITCHES

SMALL_MODEL_BYTES = 100 * 2**20  # below this a decode step on a CPU is mostly Python overhead
AS_PREDICTED = 0.15  # a measured ratio within 15% of the predicted one "matches"
# Which switch a gap is most likely due to, in the order they are looked for (the first found is named).
CAUSES = ("compile", "quant", "dtype", "kv-dtype", "attn", "kv-layout", "fused-qkv", "kv-heads", "sliding-window")


def side_prediction(side: dict, prompt_tokens: int, steps: int, bandwidth_gb_per_s: float | None) -> Prediction:
    """The prediction for one side of a compare result (its model config and engine config)."""
    engine = side["engine_config"]
    max_seq = side["kv"]["max_seq"]
    setup = Setup.of(Shape.from_config(side["model_config"]), engine, max_seq)
    return predict(setup, prompt_tokens, steps, bandwidth_gb_per_s)


@dataclass(frozen=True)
class Row:
    """One line of the predicted-vs-measured table: a quantity for A and B, predicted and measured."""

    what: str  # message-key suffix: weight_bytes, kv_used, kv_allocated, decode_ms
    predicted_a: float | None
    predicted_b: float | None
    measured_a: float | None  # None: arithmetic only (nothing measures it)
    measured_b: float | None

    @property
    def predicted_ratio(self) -> float | None:
        return ratio(self.predicted_b, self.predicted_a)

    @property
    def measured_ratio(self) -> float | None:
        return ratio(self.measured_b, self.measured_a)


def table(result: dict) -> list[Row]:
    pa, pb = predictions(result)
    a, b = result["a"], result["b"]
    return [
        Row("weight_bytes", pa.weight_bytes, pb.weight_bytes, a["weight_bytes"], b["weight_bytes"]),
        Row("kv_used", pa.kv_used_bytes, pb.kv_used_bytes, a["kv_bytes_used"], b["kv_bytes_used"]),
        Row("kv_held", pa.kv_allocated_bytes, pb.kv_allocated_bytes, a["kv_bytes_held"], b["kv_bytes_held"]),
        Row("read_per_token", pa.read_bytes, pb.read_bytes, None, None),
        Row("decode_ms", pa.bound_ms, pb.bound_ms, a["decode_ms_per_token"]["median"],
            b["decode_ms_per_token"]["median"]),
    ]


def predictions(result: dict) -> tuple[Prediction, Prediction]:
    gbps = result["bandwidth"]["gb_per_s"]
    n, steps = result["prompt_tokens"], result["steps"]
    return tuple(side_prediction(result[s], n, steps, gbps) for s in "ab")


def verdict(result: dict) -> tuple[str, dict]:
    """The gap between predicted and measured decode time, as (message key, values): within noise, as
    predicted, or slower/faster than predicted; values["hint"] names the message for the switch most likely
    responsible ("" when none)."""
    row = table(result)[-1]
    values = {"predicted": row.predicted_ratio or 1.0, "measured": row.measured_ratio or 1.0,
              "bound_a": row.predicted_a or 0.0, "share_a": (row.predicted_a or 0.0) / row.measured_a, "hint": ""}
    # None (fewer than 6 rounds): the noise cannot be judged, so the gap is read as it is
    if result["within_noise"]["decode_ms_per_token"]:
        if result["a"]["weight_bytes"] < SMALL_MODEL_BYTES:
            values["hint"] = "gap.noise.small"
        return "gap.noise", values
    if abs(values["measured"] / values["predicted"] - 1) <= AS_PREDICTED:
        return "gap.as_predicted", values
    direction = "slower" if values["measured"] > values["predicted"] else "faster"
    changed = changed_switches(result)
    cause = next((c for c in CAUSES if c in changed), None)
    if cause == "attn":  # what the two backends do, as declared, not their names
        cause = attention_change(result["a"]["engine_config"], result["b"]["engine_config"])
    if cause:
        values["hint"] = f"gap.{direction}.{cause}"
    return f"gap.{direction}", values


def attention_change(a: dict, b: dict) -> str:
    """How B's attention backend differs from A's, by their declarations (trace/config.ATTN_BACKENDS: whether each
    builds the score matrix): "attn" (B's never builds it, A's does), "attn_scores" (B's builds it, A's does not)
    or "attn_kernel" (they build it alike, or a backend does not say: only the kernel differs)."""
    built = [ATTN_BACKENDS.describe(x["attn_backend"]).scores if x["attn_backend"] in ATTN_BACKENDS.recorded else None
             for x in (a, b)]
    if built == [True, False]:
        return "attn"
    return "attn_scores" if built == [False, True] else "attn_kernel"


def gap_text(translate, result: dict) -> str:
    """The verdict in words; `translate(key, **values)` is a message catalog lookup."""
    key, values = verdict(result)
    text = translate(key, **values)
    return f"{text} {translate(values['hint'])}" if values["hint"] else text


def changed_switches(result: dict) -> list[str]:
    """Names of the switches whose values differ between A and B."""
    a, b = result["a"]["engine_config"], result["b"]["engine_config"]
    return [s.name for s in SWITCHES.values() if a.get(s.field) != b.get(s.field)]


def jsonable(value):
    """A compare result as plain JSON types (numpy arrays and numbers become lists and floats)."""
    import numpy as np

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return np.round(value.astype(float), 6).tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def csv_rows(result: dict) -> list[list]:
    """The comparison as a table: one row per measure, columns A, B, B/A (and the prediction)."""
    a, b = result["a"], result["b"]
    rows = [["measure", "A", "B", "B/A", "predicted A", "predicted B", "predicted B/A"],
            ["setting", a["spec"] or "defaults", b["spec"] or "defaults", "", "", "", ""]]
    for key in ("prefill_ms", "decode_ms_per_token"):
        x, y = a[key]["median"], b[key]["median"]
        rows.append([f"{key} (median)", round(x, 4), round(y, 4), round(y / x, 4), "", "", ""])
    rows.append(["tokens_per_s", round(a["tokens_per_s"], 2), round(b["tokens_per_s"], 2),
                 round(b["tokens_per_s"] / a["tokens_per_s"], 4), "", "", ""])
    for row in table(result):
        pr = row.predicted_ratio
        rows.append([row.what, row.measured_a, row.measured_b, _round(row.measured_ratio), _round(row.predicted_a),
                     _round(row.predicted_b), _round(pr)])
    rows.append(["peak_memory_bytes", a["peak_memory"]["bytes"], b["peak_memory"]["bytes"],
                 _round(ratio(b["peak_memory"]["bytes"], a["peak_memory"]["bytes"])), "", "", ""])
    drift = result["drift"].get("max")
    rows.append(["max_abs_dlogit", "", _round(drift), "", "", "", ""])
    rows.append(["token_agreement", "", round(result["outputs"]["agreement"], 4), "", "", "", ""])
    return rows


def _round(x):
    return None if x is None else round(x, 4)
