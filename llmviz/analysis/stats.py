"""One statistics rule for every timed figure: an effect measured over rounds, its interval at the
level it attains, and the looks a claim measured batch after batch may decide at. Pure numpy; the labs time, this
only reads their samples.

    rounds      a lab's repeats; where A and B ran in the same round (interleaved: A B, B A, ...) their i-th samples
                are a pair, and the effect is computed per round first: what drifts between rounds (another
                process, the clock, the caches) moves both sides of a pair and cancels in the ratio
    effect      the median over rounds of the per-round effect (robust: one stalled round moves it little)
    interval    median_interval: the distribution-free interval of a median, [x_(k), x_(n+1-k)] of the sorted
                values, k the largest rank whose exact coverage 1 - 2 P(Bin(n, 1/2) <= k - 1) reaches the level;
                its printed level is that coverage (96.9% at 6 rounds), and below MIN_ROUNDS rounds there is none at
                95%: (-inf, inf), which decides nothing. No resampling, so no seed. Unpaired sides: each side's
                interval at half the error, the effect's from the corners (unpaired_exact)
    looks       a claim judged after every batch (labs/rounds.until_decided) decides only where `Looks` plans a look,
                at its rank, so that over every look together "holds" at the band's very edge happens at most 2.5%
                of the time (an alpha-spending plan, exact: the rounds' signs about their median are fair coins)
    more        rounds still needed to exclude a line the interval crosses, from the measured spread: the
                interval's half-width shrinks about as 1 / sqrt(rounds)

An exact figure (counted bytes, counted slots) has rounds == 0 and low == value == high.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

ALPHA = 0.05  # two-sided: a 95% interval, at most 2.5% on each side
MIN_ROUNDS = 6  # the fewest rounds whose median has a 95% interval free of any law: [min, max] covers 1 - 2 / 2^6


@dataclass(frozen=True)
class Estimate:
    """An effect (a ratio - 1, a share saved, a gain in points) with its interval over `rounds` rounds, at the
    level it attains."""

    value: float
    low: float
    high: float
    rounds: int = 0  # 0: counted, not timed (exact)
    paired: bool = False
    level: float | None = None  # the interval's exact coverage at this look (None: exact, or no interval)
    looks: int = 1  # the looks that may decide, whose errors together stay within the level's (Looks)
    per_round: tuple = field(default=(), repr=False)  # the per-round effects (or slopes) the median is taken of

    def __post_init__(self):
        if not self.low <= self.value <= self.high:
            raise ValueError(f"an estimate lies within its interval: {self.low} <= {self.value} <= {self.high}")

    @classmethod
    def exact(cls, value: float) -> Estimate:
        return cls(value, value, value, 0)

    @property
    def is_exact(self) -> bool:
        return self.rounds == 0

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def faster(slow, fast):
    """How much faster `fast` is than `slow`: slow / fast - 1 (x1.8 -> 0.8)."""
    return slow / fast - 1


def saved(before, after):
    """The share `after` saves of `before`: 1 - after / before."""
    return 1 - after / before


def more_rounds(estimate: Estimate, line: float) -> int | None:
    """Rounds to add before the interval, shrinking as 1 / sqrt(rounds), no longer reaches `line` from where the
    estimate stands; None when it cannot be said (no spread measured, or the estimate sits on the line)."""
    distance = abs(estimate.value - line)
    reach = estimate.value - estimate.low if line < estimate.value else estimate.high - estimate.value
    if estimate.rounds < 2 or not math.isfinite(reach) or distance == 0:
        return None
    if reach < distance:
        return 0
    return max(1, math.ceil(estimate.rounds * (reach / distance) ** 2 - 1e-9) - estimate.rounds)


def _below(n: int, k: int) -> Fraction:
    """P(Bin(n, 1/2) <= k - 1), exactly: the chance that fewer than k of n rounds fall below their median, i.e.
    that x_(k) lies above it (a law without ties at the median)."""
    return Fraction(sum(math.comb(n, j) for j in range(k)), 2**n)


def coverage(n: int, k: int) -> float:
    """The exact coverage of [x_(k), x_(n+1-k)] for the median of n independent rounds: 1 - 2 P(Bin(n, 1/2) <=
    k - 1), whatever their law (ties only raise it); 1.0 for k = 0, the infinite interval."""
    return 1.0 if k == 0 else float(1 - 2 * _below(n, k))


def rank(n: int, alpha: float = ALPHA) -> int:
    """The largest k whose interval [x_(k), x_(n+1-k)] covers the median at least 1 - alpha of the time; 0 when not
    even [min, max] does (n < MIN_ROUNDS at 95%). Exact rational arithmetic: the same n and alpha, the same k."""
    bound, k = Fraction(alpha), 0
    while k < n // 2 and 2 * _below(n, k + 1) <= bound:
        k += 1
    return k


def _at_rank(values: np.ndarray, k: int) -> tuple[float, float, float]:
    """[x_(k), x_(n+1-k)] of `values` and its coverage; (-inf, inf, 1.0) for k = 0: nothing decided."""
    if k == 0:
        return -math.inf, math.inf, 1.0
    x = np.sort(values)
    return float(x[k - 1]), float(x[x.size - k]), coverage(int(x.size), k)


def _numbers(values, what: str) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0 or np.isnan(x).any():
        raise ValueError(f"{what} need at least one value and no NaN")
    return x


def median_interval(values: Sequence[float], alpha: float = ALPHA) -> tuple[float, float, float]:
    """The distribution-free interval of the median of `values` (independent rounds of one law, or of laws that
    share their median): (low, high, attained level), the level the exact coverage of its rank, >= 1 - alpha.
    Too few values for any rank: (-inf, inf, 1.0), which decides nothing; no randomness, so no seed."""
    x = _numbers(values, "a median's rounds")
    return _at_rank(x, rank(int(x.size), alpha))


def _median_estimate(per_round: np.ndarray, looks: Looks | None, paired: bool) -> Estimate:
    """The median of per-round figures with its exact interval: at ALPHA for one look, else at the rank `looks`
    gives this many rounds (none where it plans no decision)."""
    n = int(per_round.size)
    k, count = (rank(n), 1) if looks is None else (looks.rank(n), looks.count)
    low, high, level = _at_rank(per_round, k)
    value = float(np.median(per_round))
    return Estimate(value, low, high, n, paired, level, count, tuple(float(v) for v in per_round))


def paired_exact(a: Sequence[float], b: Sequence[float], effect: Callable, looks: Looks | None = None) -> Estimate:
    """The effect of paired rounds, effect(a_i, b_i) per round (arrays in, arrays out): its median and that
    median's exact interval (one look at 95%, or the look `looks` plans at this many rounds). What drifts between
    rounds cancels within each pair, and the sign law needs only that every round's effect has the same median."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"paired rounds need as many samples on each side, got {x.size} and {y.size}")
    return _median_estimate(_numbers(effect(x, y), "per-round effects"), looks, True)


def unpaired_exact(a: Sequence[float], b: Sequence[float], effect: Callable, looks: Looks | None = None) -> Estimate:
    """The effect of two medians measured apart: each side's median interval at half the error (ALPHA / 2, or the
    rank `looks.halved()` plans), the effect's interval the least and most of effect() at the four corners. Both
    sides' intervals hold their medians at least 1 - ALPHA of the time together (each misses at most ALPHA / 2),
    and then, for an effect monotone in each side (faster: slow / fast - 1, saved: 1 - after / before), the true
    effect lies between the corners. 95% needs 7 rounds a side (1 - 2 / 2^7 >= 97.5%); fewer leave no interval."""
    x, y = _numbers(a, "each side's rounds"), _numbers(b, "each side's rounds")
    side = None if looks is None else looks.halved()
    ka, kb = ((rank(n, ALPHA / 2) if side is None else side.rank(n)) for n in (int(x.size), int(y.size)))
    (la, ha, level_a), (lb, hb, level_b) = _at_rank(x, ka), _at_rank(y, kb)
    value = float(effect(np.median(x), np.median(y)))
    rounds, count = int(min(x.size, y.size)), 1 if side is None else side.count
    if not ka or not kb:
        return Estimate(value, -math.inf, math.inf, rounds, False, 1.0, count)
    corners = [float(effect(p, q)) for p in (la, ha) for q in (lb, hb)]
    level = 1 - (1 - level_a) - (1 - level_b)  # the sum of the two sides' misses bounds the joint one
    return Estimate(value, min(*corners, value), max(*corners, value), rounds, False, level, count)


def slope_by_rounds(x: Sequence[float], ys_per_round, looks: Looks | None = None) -> Estimate:
    """A slope measured round by round: `ys_per_round` rounds x len(x) (round r's y at each x), the least-squares
    slope of each round, their median and its exact interval (as paired_exact's). Rounds are the independent
    units, not points: a round that ran slow moves all its points together and cancels in its own slope, where
    the pairs bootstrap over points (`slope`) took its points as independent. With symmetric noise within a round
    the median per-round slope is the slope."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(ys_per_round, dtype=float)
    if ys.ndim != 2 or ys.shape[1] != xs.size or ys.shape[0] == 0 or xs.size < 2 or np.ptp(xs) == 0:
        raise ValueError("a slope by rounds needs rounds x len(x) values, and at least two different x")
    dx = xs - xs.mean()
    slopes = (ys - ys.mean(axis=1, keepdims=True)) @ dx / (dx @ dx)
    return _median_estimate(_numbers(slopes, "per-round slopes"), looks, True)


@dataclass(frozen=True)
class Looks:
    """Where a claim measured batch after batch (labs/rounds.until_decided: `batch` rounds a batch, at most
    `batches`) may decide, and at which rank, so that over every look together the interval lies wholly above the
    true median at most alpha / 2 of the time, and wholly below it as often: "holds" at the band's very edge, or
    "does not hold" just inside it, at most 2.5% each at 95%, however many looks were taken before stopping.

    The rounds' signs about their median are fair coins whatever the law, so the chance that a look at n rounds
    with rank k lies above the median, never having done so at an earlier look, is exact (a walk over the count
    below: `_plan`). Each look spends at most (alpha / 2) sqrt(n / N) in all (N = batch x batches: an
    alpha-spending function, front-loaded as a claim's time budget often ends it before the last batch), with the
    largest rank that stays within; a look whose rank would be 0 ([min, max] would spend too much) decides
    nothing and spends nothing, so its alpha goes to the next. Rounds counts the plan does not name decide
    nothing."""

    batch: int  # rounds a batch
    batches: int  # the most batches the budget allows (labs/rounds.MAX_BATCHES)
    alpha: float = ALPHA  # two-sided, over every look together

    def __post_init__(self):
        if self.batch < 1 or self.batches < 1 or not 0 < self.alpha < 1:
            raise ValueError(f"looks need a batch and batches >= 1 and 0 < alpha < 1, got {self}")

    @property
    def plan(self) -> tuple[tuple[int, int], ...]:
        """(rounds, rank) of every look that can decide, in order."""
        return _plan(self.batch, self.batches, self.alpha)[0]

    @property
    def rounds(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.plan)

    @property
    def count(self) -> int:
        """The looks that can decide: what the estimate carries as `looks`."""
        return len(self.plan)

    @property
    def false_holds(self) -> float:
        """The exact chance, over every look, that an interval lies wholly above the true median (so "holds" at
        the band's lower edge): at most alpha / 2."""
        return float(_plan(self.batch, self.batches, self.alpha)[1])

    def rank(self, n: int) -> int:
        """The rank a look at n rounds uses; 0 where the plan has no decision at n."""
        return dict(self.plan).get(n, 0)

    def level(self, n: int) -> float:
        """The exact coverage of that look's interval taken alone (1.0: no interval)."""
        return coverage(n, self.rank(n))

    def next(self, n: int) -> int | None:
        """The rounds of the first look after n that can decide (None: the plan has none left)."""
        return next((m for m in self.rounds if m > n), None)

    def halved(self) -> Looks:
        """The same looks at half the error: each side of an unpaired effect (unpaired_exact)."""
        return replace(self, alpha=self.alpha / 2)


def _more_rounds(alive: list[Fraction], m: int) -> list[Fraction]:
    """The count below the median after m more rounds, each a fair coin: `alive` convolved with Bin(m, 1/2)."""
    out = [Fraction(0)] * (len(alive) + m)
    for i, p in enumerate(alive):
        for j in range(m + 1):
            out[i + j] += p * Fraction(math.comb(m, j), 2**m)
    return out


@functools.cache
def _plan(batch: int, batches: int, alpha: float) -> tuple[tuple[tuple[int, int], ...], Fraction]:
    """Looks' ranks and their total one-sided error, exactly: `alive[b]` is the chance that b of the rounds so far
    lie below the median and no earlier look's interval lay wholly above it; a look at rank k stops the paths with
    b <= k - 1, the largest k whose stopped mass keeps the spent error within the spending function."""
    total, half = batch * batches, Fraction(alpha) / 2
    alive, spent, plan = [Fraction(1)], Fraction(0), []
    for n in range(batch, total + 1, batch):
        alive = _more_rounds(alive, batch)
        allowed = half * Fraction(math.sqrt(n / total))
        k, stopped = 0, Fraction(0)
        while k < n // 2 and spent + stopped + alive[k] <= allowed:
            stopped, k = stopped + alive[k], k + 1
        if k:
            spent, alive[:k], plan = spent + stopped, [Fraction(0)] * k, [*plan, (n, k)]
    return tuple(plan), spent


def looked(estimate: Estimate | None, looks: Looks | None) -> Estimate | None:
    """A paired estimate judged at a look of `looks`: its median's interval at the rank the plan gives its rounds
    (none where the plan has no decision there), carrying the plan's number of looks. Counted figures, unpaired
    ones and estimates without their rounds stand as they are."""
    if estimate is None or looks is None or not estimate.paired or not estimate.per_round:
        return estimate
    return _median_estimate(np.asarray(estimate.per_round, dtype=float), looks, True)
