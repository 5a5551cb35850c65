"""K11 (C10): operator fusion cuts memory traffic by ~40%.

No CPU counter measures memory traffic: K11 is judged on what fusing q, k and v saves of the decode time (the
fused decode pair, labs/decode_pair.py); the bytes it saves are predicted beside it (predict.qkv_traffic_bytes),
never shown as measured.
"""

from llmviz.analysis.claim_parts import two_sides
from llmviz.analysis.claim_spec import LONG, SHARE, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import saving
from llmviz.analysis.predict import Setup, Shape, qkv_traffic_bytes


def rule(f: dict):
    _, head = two_sides(f)
    setup = Setup(Shape.from_config(f["model_config"]), dtype=f["dtype"])
    n = f["prompt_tokens"]
    unfused, fused = qkv_traffic_bytes(setup, n, False), qkv_traffic_bytes(setup, n, True)
    predicted_decode = 1 - qkv_traffic_bytes(setup, 1, True) / qkv_traffic_bytes(setup, 1, False)
    a, b = f["decode_ms_per_token"]
    return {"time_saved": saving(a, b)}, head | {
        "dtype": f["dtype"], "predicted_prefill_bytes_unfused": unfused, "predicted_prefill_bytes_fused": fused,
        "predicted_prefill_traffic_saved": 1 - fused / unfused, "predicted_decode_traffic_saved": predicted_decode}


def beside(head: dict) -> dict | None:
    if "predicted_decode_traffic_saved" not in head:
        return None
    return {"dtype": head.get("dtype", "?"), "prefill": head["predicted_prefill_traffic_saved"],
            "unfused": head["predicted_prefill_bytes_unfused"], "fused": head["predicted_prefill_bytes_fused"],
            "decode": head["predicted_decode_traffic_saved"]}


CLAIM = ClaimSpec(
    id="K11", concepts=("C10",), article="operator fusion: ~40% less memory traffic",
    effects=(EffectSpec("time_saved", SHARE, 0.4, from_bytes=True),),
    lab=Lab("decode_pair", LONG, {"preset": "fused"}), rule=rule, facts=("step_bytes",), predicted="time_saved",
    beside=beside, bytes_why="why_qkv", step_map={"prefill": ("embed", "q", "k", "v")},
)
