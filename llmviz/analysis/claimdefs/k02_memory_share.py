"""K2 (C7): a decode step of ~25 ms on an A100, ~60% of it memory access.

Measured on side A of the kv-fp16 decode pair (labs/decode_pair.py, shared with K4): per round, the bytes a step
reads at that round's own bandwidth probe, over that round's step time (the probe's drift between rounds is in
the interval too). A share of a step: it lies between 0 and 100%.
"""

from llmviz.analysis import stats
from llmviz.analysis.claim_parts import side_a
from llmviz.analysis.claim_spec import LONG, SHARE, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import rounds_of
from llmviz.analysis.lab import side_prediction


def rule(f: dict):
    ms, side = side_a(f)
    pred = side_prediction(side, f["prompt_tokens"], f["steps"], f["bandwidth"]["gb_per_s"])
    timed = rounds_of(ms)
    probed = f["bandwidth"].get("rounds_gb_per_s") or [f["bandwidth"]["gb_per_s"]] * len(timed)
    pair = stats.paired_exact if len(timed) == len(probed) else stats.unpaired_exact  # a recording's may not pair
    share = pair(timed, probed, lambda step_ms, gbps: pred.read_bytes / (gbps * 1e6) / step_ms)
    return {"memory_share": share}, {"decode_ms_per_token": ms["median"], "bound_ms": pred.bound_ms,
                                     "bandwidth_gb_per_s": f["bandwidth"]["gb_per_s"], "read_bytes": pred.read_bytes}


def beside(head: dict) -> dict | None:
    if "decode_ms_per_token" not in head:
        return None
    return {"ms": head["decode_ms_per_token"], "bound": head["bound_ms"], "bw": head["bandwidth_gb_per_s"]}


CLAIM = ClaimSpec(
    id="K2", concepts=("C7",), article="~25 ms/token, ~60% of it memory access",
    effects=(EffectSpec("memory_share", SHARE, 0.6, physical=(0.0, 1.0)),),
    lab=Lab("decode_pair", LONG, {"preset": "kv-fp16"}),
    rule=rule, predicted="memory_share", beside=beside, facts=("decode_ms", "bound_ms", "bandwidth"),
    slips=("decode_25ms",), step_map={"decode": ("weights", "cache")},
)
