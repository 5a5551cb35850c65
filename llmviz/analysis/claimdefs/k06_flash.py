"""K6 (C14): flash attention is 3x faster at length 2,048.

Measured as the article states it ("replace the original attention computation: flash_attention(q, k, v)",
§3.1): one layer's attention alone on the GPT-2 shape's whole context, eager against SDPA, interleaved in
rounds, eager once more in each round as the control (labs/claim_labs.py).
"""

from llmviz.analysis.claim_spec import LONG, RATIO, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import noise_floor, speedup


def rule(f: dict):
    eager, sdpa = f["attention_ms"]["eager"], f["attention_ms"]["sdpa"]
    floor = {"noise_floor": noise_floor(eager, f["control_ms"])} if "control_ms" in f else {}  # eager vs eager
    return {"attention_speedup": speedup(eager, sdpa)}, {"eager_ms": eager["median"], "sdpa_ms": sdpa["median"],
                                                       "tokens": f["tokens"], **floor}


CLAIM = ClaimSpec(
    id="K6", concepts=("C14",), article="flash attention 3x faster at length 2048",
    effects=(EffectSpec("attention_speedup", RATIO, 2.0),),
    lab=Lab("attention", LONG, {"backends": ("eager", "sdpa"), "timed": "timed.k6"}), rule=rule,
    predicted="attention_speedup", slips=("flash_import",), step_map={"prefill": ("q", "k", "scores")},
)
