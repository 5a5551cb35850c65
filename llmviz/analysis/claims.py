"""The article's claims K1-K11 (docs/concepts.md) and the one rule that judges a measurement against each.

A claim's effect is one signed number: a speed-up as ratio - 1 (1.8x faster: 0.8), a saving as the share saved
(memory halved: 0.5), a utilization gain in points (30% -> 70%: 0.4). The measurement gives the same number with
its 95% interval over the rounds (llmviz/analysis/stats.py). The article's band is where the claim holds: at least
half the article's effect, in its direction; for a claim about a growth law (K1, "linear") also at most one and a
half times it (a prefill that quadruples when the prompt doubles is not linear). The verdict (issue 36):

    holds            the whole interval lies within the band (so it excludes no effect)
    does not hold    the whole interval lies outside the band (the reason says where: the opposite direction, no
                     effect, too small, too large)
    cannot tell      the interval reaches both inside and outside the band: this run cannot decide; the rounds
                     that would, from the measured spread, go with it
    cannot measure   this device cannot run it (the reason says why)

A counted figure (bytes, slots) is exact: its interval is the figure itself. Pure arithmetic; the measurements come
from the engine's sweeps, compares and serving runs. Every page, the CLI and the exports read this verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmviz.analysis import stats
from llmviz.analysis.stats import Estimate

HOLDS, DOES_NOT_HOLD, CANNOT_TELL, CANNOT = "holds", "does_not_hold", "cannot_tell", "cannot_measure"
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


Effect = Estimate  # a measured effect: its value and 95% interval over the rounds (exact for a count)


def rounds_of(spread: dict) -> list:
    """A timing spread's rounds ({median, min, max, all}); its median alone for a recording that kept no rounds."""
    return spread.get("all") or [spread["median"]]


def _between(a: dict, b: dict, effect, paired: bool) -> Estimate:
    """An effect of two timing spreads ({median, min, max, all}) by the one statistics rule: per round where the
    lab ran A and B in the same rounds (`paired`), else of the two medians."""
    x, y = rounds_of(a), rounds_of(b)
    if paired and len(x) == len(y):
        return stats.paired(x, y, effect)
    return stats.unpaired(x, y, effect)


def speedup(slow: dict, fast: dict, paired: bool = True) -> Estimate:
    """slow / fast - 1 from two timing spreads: how much faster `fast` is."""
    return _between(slow, fast, stats.faster, paired)


def noise_floor(a: dict, control: dict) -> dict:
    """A-vs-A (issue 36): A's time over its second run's in the same rounds, minus 1, read as B's speed-up is read
    (speedup(a, b)): the interval this run's noise alone gives, as JSON."""
    e = speedup(a, control)
    bound = lambda x: x if math.isfinite(x) else None  # noqa: E731 (one round: no interval, None in JSON)
    return {"value": e.value, "low": bound(e.low), "high": bound(e.high), "rounds": e.rounds}


def saving(before: dict, after: dict, paired: bool = True) -> Estimate:
    """1 - after / before from two spreads (time): the share `after` saves."""
    return _between(before, after, stats.saved, paired)


@dataclass(frozen=True)
class Band:
    """The effects for which a claim holds: from `low` to `high` (infinite where the claim is "at least")."""

    low: float
    high: float

    @classmethod
    def of(cls, article: float, bounded: bool = False) -> Band:
        near, far = MIN_SHARE_OF_ARTICLE * article, (MAX_SHARE_OF_ARTICLE * article if bounded else
                                                     math.copysign(math.inf, article))
        return cls(min(near, far), max(near, far))

    def jsonable(self) -> list:
        return [x if math.isfinite(x) else None for x in (self.low, self.high)]


@dataclass(frozen=True)
class Judgement:
    """One effect judged: the verdict, the reason's code, the estimate it rests on, the band it was judged against,
    and for "cannot tell" the rounds that would decide (None when the spread cannot say)."""

    verdict: str
    reason: str
    estimate: Estimate | None
    band: Band
    more_rounds: int | None = None
    line: float | None = None  # cannot tell: the band's edge the interval crosses nearest the estimate


def judge(article: float, effect: Estimate | None, why_not: str = "", bounded: bool = False) -> Judgement:
    """One effect against the article's band (the rule in this module's docstring)."""
    band = Band.of(article, bounded)
    if effect is None:
        return Judgement(CANNOT, why_not or "not_measured", None, band)
    low, high = effect.low, effect.high
    if band.low <= low and high <= band.high:
        return Judgement(HOLDS, "holds_exact" if effect.is_exact else "holds", effect, band)
    if high < band.low or low > band.high:
        sign = math.copysign(1, article)
        near, far = sorted((sign * low, sign * high))  # the interval, the article's direction positive
        if far < 0:
            reason = "opposite_sign"
        elif near <= 0:
            reason = "no_effect"
        else:
            reason = "too_small" if sign * effect.value < abs(band.low if sign > 0 else band.high) else "too_large"
        return Judgement(DOES_NOT_HOLD, reason, effect, band)
    crossed = [edge for edge in (band.low, band.high) if low <= edge <= high]
    needed = [stats.more_rounds(effect, edge) for edge in crossed]  # every crossed edge must be cleared to decide
    more = None if None in needed else max(needed)
    return Judgement(CANNOT_TELL, "cannot_tell", effect, band, more, min(crossed, key=lambda e: abs(e - effect.value)))


def claim_verdict(claim: Claim, effects: dict, why_not: str = "") -> tuple[str, list]:
    """A claim's verdict from its effects ({name: Estimate or None}) and each effect's (name, Judgement): it holds
    when every effect holds, does not hold when one does not, cannot be measured when none could be, and otherwise
    this run cannot tell."""
    parts = [(name, judge(article, effects.get(name), why_not, name in BOUNDED)) for name, article in claim.effects]
    verdicts = [j.verdict for _, j in parts]
    if all(v == HOLDS for v in verdicts):
        return HOLDS, parts
    if all(v == CANNOT for v in verdicts):
        return CANNOT, parts
    if DOES_NOT_HOLD in verdicts:
        return DOES_NOT_HOLD, parts
    return CANNOT_TELL, parts
