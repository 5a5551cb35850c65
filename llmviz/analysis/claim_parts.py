"""What several claims' rules read the same way (their declarations: llmviz/analysis/claimdefs/): a length's
spread from a sweep's per-length lists, the two sides of a decode pair, the bytes each side's step reads and
the effect those bytes predict. Pure arithmetic on a lab's figures.
"""

from __future__ import annotations

from llmviz.analysis.claim_spec import RATIO, ClaimSpec, EffectSpec
from llmviz.analysis.claims import noise_floor, speedup
from llmviz.analysis.lab import side_prediction


def at(spreads: dict, i: int) -> dict:
    """The i-th length's {median, min, max, all} from per-length lists."""
    return {k: spreads[k][i] for k in ("median", "min", "max", "all") if k in spreads}


def two_sides(f: dict):
    """A decode pair's B speed-up over A (paired by round) and its headline: both sides' ms, their specs, the
    cached tokens, the A-vs-A control's interval and the bytes each side's step reads (labs/decode_pair.py)."""
    a, b = f["decode_ms_per_token"]
    extra = {k: f[k] for k in ("context",) if k in f}
    if f.get("control_ms_per_token"):
        extra["noise_floor"] = noise_floor(a, f["control_ms_per_token"])
    return speedup(a, b), {"decode_ms_a": a["median"], "decode_ms_b": b["median"], "spec_a": f["specs"][0],
                           "spec_b": f["specs"][1], **extra} | bytes_read(f)


def bytes_read(f: dict) -> dict:
    """What a decode step of each side reads, by the arithmetic (analysis/predict.py: this run's shapes, dtypes,
    prompt and steps), and KV's share of A's. {} for a recording from before the sides were kept."""
    if "sides" not in f:
        return {}
    pa, pb = (side_prediction(s, f["prompt_tokens"], f["steps"], None) for s in f["sides"])
    return {"read_bytes_a": pa.read_bytes, "read_bytes_b": pb.read_bytes, "kv_read_bytes_a": pa.kv_read_bytes,
            "kv_share_of_read_a": pa.kv_read_bytes / pa.read_bytes}


def from_bytes(effect: EffectSpec, read: dict) -> float:
    """What a decode step's bytes predict for an effect on its time: a speed-up (A's bytes over B's, minus 1) or a
    saving (1 - B's over A's)."""
    ratio = read["read_bytes_b"] / read["read_bytes_a"]
    return 1 / ratio - 1 if effect.kind == RATIO else 1 - ratio


def bytes_speedup(f: dict) -> float | None:
    """B's decode speed-up over A's that the bytes each side's step reads predict; None without the sides."""
    read = bytes_read(f)
    return read["read_bytes_a"] / read["read_bytes_b"] - 1 if read else None


def predicted_effect(claim: ClaimSpec, f: dict) -> dict:
    """{effect: what the bytes a decode step reads predict for it} from a run's or a workload's sides (measured or
    not yet: Measurer.workload), for the claim's effects on a decode step's time. {} for the others, and for a
    recording without its sides."""
    read = bytes_read(f)
    return {e.name: from_bytes(e, read) for e in claim.from_bytes} if read else {}


def side_a(f: dict) -> tuple[dict, dict]:
    """Side A of a decode pair's figures: (its ms per token spread, its settings and shapes). A recording from
    before both sides were kept held A's alone."""
    ms = f["decode_ms_per_token"]
    return (ms[0], f["sides"][0]) if isinstance(ms, list) else (ms, f["side"])

