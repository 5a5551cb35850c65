"""One statistics rule for every timed figure (issue 36): an effect measured over rounds, its 95% interval, and how
many more rounds would narrow it enough to decide. Pure numpy; the labs time, this only reads their samples.

    rounds      a lab's repeats; where A and B ran in the same round (interleaved: A B, B A, ...) their i-th samples
                are a pair, and the effect is computed per round first: what drifts between rounds (another
                process, the clock, the caches) moves both sides of a pair and cancels in the ratio
    effect      the median over rounds of the per-round effect (robust: one stalled round moves it little)
    interval    a seeded percentile bootstrap of that median over the rounds (RESAMPLES resamples; the same samples
                always give the same interval); unpaired samples are resampled side by side and the effect taken of
                the two medians. With one round there is no interval: (-inf, inf), which decides nothing
    more        rounds still needed to exclude a line the interval crosses, from the measured spread: the
                interval's half-width shrinks about as 1 / sqrt(rounds)

An exact figure (counted bytes, counted slots) has rounds == 0 and low == value == high.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
RESAMPLES = 4000
SEED = 36  # every bootstrap draws the same resamples: the same samples give the same interval


@dataclass(frozen=True)
class Estimate:
    """An effect (a ratio - 1, a share saved, a gain in points) with its 95% interval over `rounds` rounds."""

    value: float
    low: float
    high: float
    rounds: int = 0  # 0: counted, not timed (exact)
    paired: bool = False

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


def _quantiles(stats: np.ndarray) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(stats, [tail, 1 - tail])
    return float(low), float(high)


def bootstrap_median(values: Sequence[float], seed: int = SEED) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of the median of `values` (rounds resampled with replacement)."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return -math.inf, math.inf
    picks = np.random.default_rng(seed).integers(0, x.size, size=(RESAMPLES, x.size))
    return _quantiles(np.median(x[picks], axis=1))


def paired(a: Sequence[float], b: Sequence[float], effect: Callable) -> Estimate:
    """The effect of paired rounds: effect(a_i, b_i) per round (numpy arrays in, arrays out), its median and the
    bootstrap interval of that median."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"paired rounds need as many samples on each side, got {x.size} and {y.size}")
    per_round = effect(x, y)
    value = float(np.median(per_round))
    low, high = bootstrap_median(per_round)
    return Estimate(value, min(low, value), max(high, value), int(x.size), True)


def unpaired(a: Sequence[float], b: Sequence[float], effect: Callable, seed: int = SEED) -> Estimate:
    """The effect of two medians measured apart (not in the same rounds): each side resampled on its own."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        raise ValueError("each side needs at least one sample")
    value = float(effect(np.median(x), np.median(y)))
    rounds = int(min(x.size, y.size))
    if rounds < 2:
        return Estimate(value, -math.inf, math.inf, rounds)
    rng = np.random.default_rng(seed)
    mx = np.median(x[rng.integers(0, x.size, size=(RESAMPLES, x.size))], axis=1)
    my = np.median(y[rng.integers(0, y.size, size=(RESAMPLES, y.size))], axis=1)
    low, high = _quantiles(effect(mx, my))
    return Estimate(value, min(low, value), max(high, value), rounds)


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


def slope(x: Sequence[float], y: Sequence[float], seed: int = SEED) -> Estimate:
    """The least-squares slope of y over x and its 95% interval by the bootstrap over the points (each (x, y)
    resampled with replacement: the pairs bootstrap of a regression); rounds is the number of points. Fewer than
    3 points, or resamples whose x never vary, leave no interval."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.shape != ys.shape or xs.size < 2 or np.ptp(xs) == 0:
        raise ValueError("a slope needs as many y as x, and at least two different x")
    value = float(np.polyfit(xs, ys, 1)[0])
    if xs.size < 3:
        return Estimate(value, -math.inf, math.inf, int(xs.size))
    picks = np.random.default_rng(seed).integers(0, xs.size, size=(RESAMPLES, xs.size))
    px, py = xs[picks], ys[picks]
    dx = px - px.mean(axis=1, keepdims=True)
    sxx = (dx * dx).sum(axis=1)
    varied = sxx > 0
    slopes = (dx * (py - py.mean(axis=1, keepdims=True))).sum(axis=1)[varied] / sxx[varied]
    low, high = _quantiles(slopes)
    return Estimate(value, min(low, value), max(high, value), int(xs.size))
