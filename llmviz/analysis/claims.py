"""The article's claims K1-K11 (docs/concepts.md) and the one rule that judges a measurement against each.

A claim's effect is one signed number: a speed-up as ratio - 1 (1.8x faster: 0.8), a saving as the share saved
(memory halved: 0.5), a utilization gain in points (30% -> 70%: 0.4). The measurement gives the same number with
its range over the repeats. The verdict (issue 11):

    holds            the effect has the article's sign, at least half its size, and its range excludes zero; for a
                     claim about a growth law (K1, "linear"), also at most one and a half times its size: a
                     prefill that quadruples when the prompt doubles is not linear
    does not hold    it was measured, and one of those fails (the reason says which)
    cannot measure   this device cannot run it (the reason says why)

Pure arithmetic; the measurements come from the engine's sweeps, compares and serving runs.
"""

from __future__ import annotations

from dataclasses import dataclass

HOLDS, DOES_NOT_HOLD, CANNOT = "holds", "does_not_hold", "cannot_measure"
MIN_SHARE_OF_ARTICLE = 0.5
MAX_SHARE_OF_ARTICLE = 1.5  # for BOUNDED effects only: a bigger effect contradicts the claim
# Effects whose claim is a law (K1: time ~ linear in length), not "at least this much": bounded on both sides.
# The article's 35 -> 68 ms is x1.94; the band x1.47-x2.41 holds "linear" (x2) and rejects quadratic (x4).
BOUNDED = frozenset({"doubling_256_to_512"})


@dataclass(frozen=True)
class Claim:
    """What the article says (on an A100) and which effect measures it."""

    id: str
    concepts: tuple  # the C ids it illustrates
    effects: tuple  # (name, the article's effect) pairs; a claim holds when all its effects do
    article: str  # the article's figures, as it gives them


CLAIMS = {c.id: c for c in (
    Claim("K1", ("C3",), (("doubling_256_to_512", 68 / 35 - 1),), "256 tokens 35 ms, 512 tokens 68 ms"),
    Claim("K2", ("C7",), (("memory_share", 0.6),), "~25 ms/token, ~60% of it memory access"),
    Claim("K3", ("C8", "C9"), (("contiguous_faster_short", 0.15), ("paged_faster_long", 0.2)),
          "contiguous 15% faster up to 512 tokens; paged 20% faster past 1024"),
    Claim("K4", ("C11",), (("kv_memory_saved", 0.5), ("decode_speedup", 0.8)), "FP16 KV: memory halved, decode 1.8x"),
    Claim("K5", ("C13",), (("prefill_throughput_gain", 4.0),), "batch 1 -> 8: 5x prefill throughput"),
    Claim("K6", ("C14",), (("attention_speedup", 2.0),), "flash attention 3x faster at length 2048"),
    Claim("K7", ("C15",), (("utilization_gain", 0.4),), "continuous batching: utilization 30% -> 70%"),
    Claim("K8", ("C16",), (("decode_time_saved", 0.4),), "speculative decoding: decode time up to 40% less"),
    Claim("K9", ("C22",), (("kv_memory_saved", 0.3),), "prefix sharing: ~30% less memory on similar requests"),
    Claim("K10", ("C14", "C21"), (("throughput_gain", 1.3),), "flash + FP8 KV: 120 tok/s, 2.3x the baseline"),
    # No CPU counter measures memory traffic: K11 is judged on what fusing q, k and v saves of the decode time; the
    # bytes it saves are predicted beside it (predict.qkv_traffic_bytes), never shown as measured
    Claim("K11", ("C10",), (("time_saved", 0.4),), "operator fusion: ~40% less memory traffic"),
)}


# How each effect reads: a ratio as "x1.80" (the effect + 1), a share as "50%", a gain in points as "+40 pts"
RATIO, SHARE, POINTS = "ratio", "share", "points"
EFFECT_KINDS = {"doubling_256_to_512": RATIO, "memory_share": SHARE, "contiguous_faster_short": RATIO,
                "paged_faster_long": RATIO, "kv_memory_saved": SHARE, "decode_speedup": RATIO,
                "prefill_throughput_gain": RATIO, "attention_speedup": RATIO, "utilization_gain": POINTS,
                "decode_time_saved": SHARE, "throughput_gain": RATIO, "time_saved": SHARE}


def shown(name: str, value: float, t) -> str:
    """An effect as a person reads it in the interface's language (`t`, its translator): x1.83, 54%, +39 pts
    (+39 个百分点)."""
    kind = EFFECT_KINDS[name]
    if kind == RATIO:
        return f"×{value + 1:.2f}"
    if kind == POINTS:
        return f"{100 * value:+.0f} {t('claims.pts')}"
    return f"{100 * value:.0f}%"


@dataclass(frozen=True)
class Effect:
    """A measured effect with its range over the repeats (low == high for an exact count of bytes)."""

    value: float
    low: float
    high: float

    @classmethod
    def exact(cls, value: float) -> Effect:
        return cls(value, value, value)


def speedup(slow: dict, fast: dict) -> Effect:
    """slow / fast - 1 from two timing spreads ({median, min, max}): how much faster `fast` is."""
    return Effect(slow["median"] / fast["median"] - 1, slow["min"] / fast["max"] - 1, slow["max"] / fast["min"] - 1)


def saving(before: dict, after: dict) -> Effect:
    """1 - after / before from two spreads (bytes, or time): the share `after` saves."""
    return Effect(1 - after["median"] / before["median"], 1 - after["max"] / before["min"],
                  1 - after["min"] / before["max"])


def judge(article: float, effect: Effect | None, why_not: str = "", bounded: bool = False) -> tuple[str, str]:
    """(verdict, reason code) for one effect against the article's; `bounded`: also at most 1.5 times its size."""
    if effect is None:
        return CANNOT, why_not or "not_measured"
    if effect.value * article <= 0:
        return DOES_NOT_HOLD, "opposite_sign" if effect.value else "no_effect"
    if abs(effect.value) < MIN_SHARE_OF_ARTICLE * abs(article):
        return DOES_NOT_HOLD, "too_small"
    if bounded and abs(effect.value) > MAX_SHARE_OF_ARTICLE * abs(article):
        return DOES_NOT_HOLD, "too_large"
    if effect.low <= 0 <= effect.high:
        return DOES_NOT_HOLD, "within_spread"
    return HOLDS, "holds"


def claim_verdict(claim: Claim, effects: dict, why_not: str = "") -> tuple[str, list]:
    """A claim's verdict from its effects ({name: Effect or None}) and each effect's own (name, verdict, reason):
    it holds when every effect holds; it cannot be measured when none could be."""
    parts = [(name, *judge(article, effects.get(name), why_not, name in BOUNDED)) for name, article in claim.effects]
    verdicts = [v for _, v, _ in parts]
    if all(v == HOLDS for v in verdicts):
        return HOLDS, parts
    if all(v == CANNOT for v in verdicts):
        return CANNOT, parts
    return DOES_NOT_HOLD, parts
