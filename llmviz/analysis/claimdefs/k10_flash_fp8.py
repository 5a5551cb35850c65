"""K10 (C14, C21): flash attention and an FP8 KV cache give 120 tok/s, 2.3x the baseline.

Measured by the sdpa-fp8 decode pair (labs/decode_pair.py): eager attention with an fp32 cache against SDPA
with an fp8 one, B's decode speed-up paired by round beside what the bytes each side's step reads predict.
"""

from llmviz.analysis.claim_parts import two_sides
from llmviz.analysis.claim_spec import LONG, RATIO, ClaimSpec, EffectSpec, Lab


def rule(f: dict):
    faster, head = two_sides(f)
    return {"throughput_gain": faster}, head


def beside(head: dict) -> dict | None:
    if "decode_ms_b" not in head:
        return None
    return {"a": 1000 / head["decode_ms_a"], "b": 1000 / head["decode_ms_b"], "spec_a": head["spec_a"],
            "spec_b": head["spec_b"]}


CLAIM = ClaimSpec(
    id="K10", concepts=("C14", "C21"), article="flash + FP8 KV: 120 tok/s, 2.3x the baseline",
    effects=(EffectSpec("throughput_gain", RATIO, 1.3, from_bytes=True),),
    lab=Lab("decode_pair", LONG, {"preset": "sdpa-fp8"}), rule=rule, predicted="throughput_gain",
    beside=beside, facts=("kv_share",), slips=("a100_fp8",),
    step_map={"decode": ("weights", "cache/fp32", "cache/fp16")},
)
