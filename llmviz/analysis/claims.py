"""The one rule that judges a measurement against one of the article's claims (their declarations:
llmviz/analysis/claim_spec.py).

A claim's effect is one signed number: a speed-up as ratio - 1 (1.8x faster: 0.8), a saving as the share saved
(memory halved: 0.5), a utilization gain in points (30% -> 70%: 0.4). The measurement gives the same number with
its interval over the rounds at the level it attains (llmviz/analysis/stats.py). The article's band is where the
claim holds: at least half the article's effect, in its direction; for a claim about a growth law (K1, "linear")
also at most one and a half times it (a prefill that quadruples when the prompt doubles is not linear). The
verdict:

    holds            the whole interval lies within the band (so it excludes no effect)
    does not hold    the whole interval lies outside the band (the reason says where: the opposite direction, no
                     effect (the whole interval within EQUIVALENT of none), short of the band but too noisy to
                     say in which direction, too small, too large)
    cannot tell      the interval reaches both inside and outside the band: this run cannot decide; the rounds
                     that would, from the measured spread, go with it. Also where too few rounds leave no interval
                     (fewer than 6, or a look the plan does not decide at: stats.Looks)
    cannot measure   this device cannot run it, or the figure lies outside the values it can take at all (a share
                     of a step above 100%: an input such as the bandwidth probe or the byte count is off); the
                     reason says which
    drifted          cannot tell too, where the run's A-vs-A control (A against itself in the same rounds) lies
                     wholly more than DRIFT from no effect: the machine changed during the run

A counted figure (bytes, slots) is exact: its interval is the figure itself. Pure arithmetic; the measurements come
from the engine's sweeps, compares and serving runs. Every page, the CLI and the exports read this verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmviz.analysis import stats
from llmviz.analysis.claim_spec import POINTS, RATIO, ClaimSpec, effect_kind
from llmviz.analysis.stats import Estimate

HOLDS, DOES_NOT_HOLD, CANNOT_TELL, CANNOT = "holds", "does_not_hold", "cannot_tell", "cannot_measure"
MIN_SHARE_OF_ARTICLE = 0.5
EQUIVALENT = 0.05  # "no effect" only when the whole interval lies within this of none (x0.95-x1.05, +-5 points)
DRIFT = 0.03  # an A-vs-A control further than this from no effect, its whole interval: the machine drifted
MAX_SHARE_OF_ARTICLE = 1.5  # for bounded effects only (a law, K1's "linear"): a bigger effect contradicts the claim
# K1's 35 -> 68 ms is x1.94; the band x1.47-x2.41 holds "linear" (x2) and rejects quadratic (x4).


def shown_as(kind: str, value: float, t) -> str:
    """A number of an effect of `kind` as a person reads it in the interface's language (`t`, its translator):
    x1.83, 54%, +39 pts (+39 个百分点)."""
    if kind == RATIO:
        return f"×{value + 1:.2f}"
    if kind == POINTS:
        return f"{100 * value:+.0f} {t('claims.pts')}"
    return f"{100 * value:.0f}%"


def shown_level(level: float | None) -> str:
    """An interval's level as printed: the coverage it attains, to a tenth of a percent (96.9%); "?" unknown."""
    return "?" if level is None else f"{100 * level:.1f}%"


def shown(name: str, value: float, t) -> str:
    """An effect, by its name, as a person reads it (shown_as of its declared kind)."""
    return shown_as(effect_kind(name), value, t)


Effect = Estimate  # a measured effect: its value and 95% interval over the rounds (exact for a count)


def rounds_of(spread: dict) -> list:
    """A timing spread's rounds ({median, min, max, all}); its median alone for a recording that kept no rounds."""
    return spread.get("all") or [spread["median"]]


def _between(a: dict, b: dict, effect, paired: bool) -> Estimate:
    """An effect of two timing spreads ({median, min, max, all}) by the one statistics rule: per round where the
    lab ran A and B in the same rounds (`paired`), else of the two medians (stats.py: exact intervals, one look
    at 95%; a claim measured batch after batch re-ranks it at its look, stats.looked)."""
    x, y = rounds_of(a), rounds_of(b)
    if paired and len(x) == len(y):
        return stats.paired_exact(x, y, effect)
    return stats.unpaired_exact(x, y, effect)


def speedup(slow: dict, fast: dict, paired: bool = True) -> Estimate:
    """slow / fast - 1 from two timing spreads: how much faster `fast` is."""
    return _between(slow, fast, stats.faster, paired)


def noise_floor(a: dict, control: dict) -> dict:
    """A-vs-A: A's time over its second run's in the same rounds, minus 1, read as B's speed-up is read
    (speedup(a, b)): the interval this run's noise alone gives, as JSON."""
    e = speedup(a, control)
    bound = lambda x: x if math.isfinite(x) else None  # noqa: E731 (too few rounds: no interval, None in JSON)
    return {"value": e.value, "low": bound(e.low), "high": bound(e.high), "rounds": e.rounds, "level": e.level,
            "per_round": list(e.per_round)}


def saving(before: dict, after: dict, paired: bool = True) -> Estimate:
    """1 - after / before from two spreads (time): the share `after` saves."""
    return _between(before, after, stats.saved, paired)


@dataclass(frozen=True)
class Band:
    """The effects for which a claim holds: from `low` to `high` (infinite where the claim is "at least")."""

    low: float
    high: float

    @classmethod
    def of(cls, article: float, bounded: bool = False, physical: tuple | None = None) -> Band:
        """The article's band, within the values the effect can take at all (`physical`: a share of a step at most
        100%, so an interval reaching past it is not wholly within the band)."""
        near, far = MIN_SHARE_OF_ARTICLE * article, (MAX_SHARE_OF_ARTICLE * article if bounded else
                                                     math.copysign(math.inf, article))
        low, high = min(near, far), max(near, far)
        if physical is not None:
            low, high = max(low, physical[0]), min(high, physical[1])
        return cls(low, high)

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


def judge(article: float, effect: Estimate | None, why_not: str = "", bounded: bool = False,
          physical: tuple | None = None, drifted: bool = False) -> Judgement:
    """One effect against the article's band (the rule in this module's docstring): first whether it could be
    measured at all (a median outside the values the effect can take means an input is off: cannot measure), then
    whether the run's A-vs-A control says the machine drifted (cannot tell), then its interval against the band."""
    band = Band.of(article, bounded, physical)
    if effect is None:
        return Judgement(CANNOT, why_not or "not_measured", None, band)
    if physical is not None and not physical[0] <= effect.value <= physical[1]:
        return Judgement(CANNOT, "out_of_range", effect, band)
    low, high = effect.low, effect.high
    if drifted and not effect.is_exact:
        return Judgement(CANNOT_TELL, "drifted", effect, band)
    if not effect.is_exact and not math.isfinite(high - low):  # too few rounds for an interval at this look
        return Judgement(CANNOT_TELL, "no_interval", effect, band)
    if band.low <= low and high <= band.high:
        return Judgement(HOLDS, "holds_exact" if effect.is_exact else "holds", effect, band)
    if high < band.low or low > band.high:
        sign = math.copysign(1, article)
        near, far = sorted((sign * low, sign * high))  # the interval, the article's direction positive
        if far < 0:
            reason = "opposite_sign"
        elif low >= -EQUIVALENT and high <= EQUIVALENT:  # the whole interval within the margin of none
            reason = "no_effect"
        elif near <= 0:  # short of the band, but too noisy to say which way: not "no effect"
            reason = "unclear"
        else:
            reason = "too_small" if sign * effect.value < abs(band.low if sign > 0 else band.high) else "too_large"
        return Judgement(DOES_NOT_HOLD, reason, effect, band)
    crossed = [edge for edge in (band.low, band.high) if low <= edge <= high]
    needed = [stats.more_rounds(effect, edge) for edge in crossed]  # every crossed edge must be cleared to decide
    more = None if None in needed else max(needed)
    return Judgement(CANNOT_TELL, "cannot_tell", effect, band, more, min(crossed, key=lambda e: abs(e - effect.value)))


def drifted(floor: dict | None) -> bool:
    """Whether an A-vs-A control (noise_floor's JSON) shows this machine drifted during the run: its interval
    excludes no effect by more than DRIFT either way (A ran more than 3% faster or slower than itself in every
    reading the rounds allow). Too few rounds for an interval: nothing can be said, so no."""
    if not floor or floor.get("low") is None or floor.get("high") is None:
        return False
    return floor["low"] > DRIFT or floor["high"] < -DRIFT


def claim_verdict(claim: ClaimSpec, effects: dict, why_not: str = "", drift: bool = False) -> tuple[str, list]:
    """A claim's verdict from its effects ({name: Estimate or None}) and each effect's (name, Judgement): it holds
    when every effect holds, does not hold when one does not, cannot be measured when none could be, and otherwise
    this run cannot tell. `drift`: the run's control drifted (every timed effect cannot tell)."""
    parts = [(e.name, judge(e.article, effects.get(e.name), why_not, e.bounded, e.physical, drift))
             for e in claim.effects]
    verdicts = [j.verdict for _, j in parts]
    if all(v == HOLDS for v in verdicts):
        return HOLDS, parts
    if all(v == CANNOT for v in verdicts):
        return CANNOT, parts
    if DOES_NOT_HOLD in verdicts:
        return DOES_NOT_HOLD, parts
    return CANNOT_TELL, parts
