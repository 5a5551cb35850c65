"""Decode slowing down (C18, §4.2): decode ms/token against the tokens in the cache, from a sweep of
cached lengths (llmviz/labs/decode_slope.py), its slope with an exact interval over the rounds (stats.slope_by_rounds:
each round's least-squares slope over the lengths, their median and its interval, at the level it attains), and the
slope the bytes predict: each cached token adds its K and V in every layer to what a decode step
reads, so at the measured bandwidth a step takes kv_bytes_per_token / bandwidth longer per cached token. Beside
it, the share of a step's bytes that is KV cache at the shortest and the longest length.

Verdicts of the slope, by its interval: "grows" (the interval lies above zero), "flat" (it includes zero: this
sweep cannot tell a slope from its noise), "shrinks" (below zero), "few" (too few rounds for an interval). Pure
arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmviz.analysis import stats
from llmviz.analysis.predict import Setup, Shape, kv_bytes_per_token, kv_read_bytes, weight_read_bytes
from llmviz.analysis.stats import Estimate

SHORTEST = 16  # tokens: the shortest cache a slope sweep times


def spread_lengths(max_seq: int, points: int, steps: int) -> list[int]:
    """`points` cached lengths spread evenly from SHORTEST to the longest with room for `steps` decode steps (the
    lesson's sweep and the Decode page's)."""
    longest = max_seq - steps
    if longest <= SHORTEST:
        return [max(1, longest)]
    return sorted({round(SHORTEST + i * (longest - SHORTEST) / (points - 1)) for i in range(points)})


@dataclass(frozen=True)
class Slowdown:
    """A decode sweep read as C18: the measured slope (ms per cached token) with its interval, the predicted one,
    and KV's share of a step's bytes at the sweep's ends."""

    measured: Estimate  # ms per cached token
    intercept: float  # ms at no cached token, of the least-squares line
    predicted: float | None  # ms per cached token; None without a bandwidth
    kv_share_first: float
    kv_share_last: float
    lengths: tuple

    @property
    def verdict(self) -> str:
        if not math.isfinite(self.measured.high - self.measured.low):
            return "few"  # too few rounds for an interval: nothing said
        if self.measured.low > 0:
            return "grows"
        return "shrinks" if self.measured.high < 0 else "flat"

    @property
    def as_predicted(self) -> bool | None:
        """Whether the interval holds the predicted slope (None: no prediction)."""
        if self.predicted is None:
            return None
        return self.measured.low <= self.predicted <= self.measured.high


def points(result: dict, layout: str = "contiguous") -> tuple[list[int], list[float]]:
    """Every round of every length as one (cached tokens, ms/token) point."""
    cells = result["ms_per_token"][layout]["all"]
    xs = [n for n, rounds in zip(result["lengths"], cells, strict=True) for _ in rounds]
    return xs, [ms for rounds in cells for ms in rounds]


def slowdown(result: dict, model_config: dict, layout: str = "contiguous") -> Slowdown:
    """C18 from a decode sweep (its lengths, ms_per_token with every round, its element dtype "fp32", "bf16", ...
    and the bandwidth probe)."""
    xs, ys = points(result, layout)
    setup = Setup(Shape.from_config(model_config), dtype=result["element"])
    gbps = (result.get("bandwidth") or {}).get("gb_per_s")
    predicted = kv_bytes_per_token(setup) / (gbps * 1e9) * 1000 if gbps else None
    weights = weight_read_bytes(setup)

    def share(n: int) -> float:
        kv = kv_read_bytes(setup, n + 1)  # n cached and the one fed
        return kv / (kv + weights)

    lengths = tuple(result["lengths"])
    cells = result["ms_per_token"][layout]["all"]
    rounds = min(len(c) for c in cells)  # the r-th timing of every length is round r's
    measured = stats.slope_by_rounds(lengths, [[c[r] for c in cells] for r in range(rounds)])
    intercept = float(np.mean(ys) - measured.value * np.mean(xs))
    return Slowdown(measured, intercept, predicted, share(lengths[0]), share(lengths[-1]), lengths)
