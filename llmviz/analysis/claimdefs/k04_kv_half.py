"""K4 (C11): an FP16 KV cache halves the cache's memory and decodes 1.8x faster.

Measured by the kv-fp16 decode pair (labs/decode_pair.py, shared with K2; a CPU runs the half cache as bf16):
the cache's bytes counted from both sides' allocated tensors (exact), B's decode speed-up paired by round,
and what the bytes each side's step reads predict for it.
"""

from llmviz.analysis.claim_parts import two_sides
from llmviz.analysis.claim_spec import LONG, RATIO, SHARE, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import Effect


def rule(f: dict):
    faster, head = two_sides(f)
    before, after = f["kv_bytes_allocated"]
    return {"kv_memory_saved": Effect.exact(1 - after / before), "decode_speedup": faster}, head | {
        "kv_bytes_a": before, "kv_bytes_b": after}


CLAIM = ClaimSpec(
    id="K4", concepts=("C11",), article="FP16 KV: memory halved, decode 1.8x",
    effects=(EffectSpec("kv_memory_saved", SHARE, 0.5), EffectSpec("decode_speedup", RATIO, 0.8, from_bytes=True)),
    lab=Lab("decode_pair", LONG, {"preset": "kv-fp16"}), rule=rule, predicted="decode_speedup",
    facts=("kv_share", "spec_b"), slips=("half_kv_bound",),
    step_map={"decode": ("weights", "cache/fp32", "cache/fp16")},
)
