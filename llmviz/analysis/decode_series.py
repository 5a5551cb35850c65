"""What the Decode page plots across steps, rebuilt from the trace alone (C6, C18).

The KV cache of a layer after step t is the concatenation of the `k` / `v` rows each step 0..t wrote
(`layers.{i}.k` is [b, kv, n_new, hd]), and the cache grid colours each row by its L2 norm; latency per token
is each decode step's timed total.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmviz.trace.hooks import layer_hook_name


def cache_norms(steps, layer: int, which: str = "k", upto: int | None = None) -> np.ndarray:
    """The L2 norm of each K (or V) row one layer's cache holds after step `upto`: [kv_heads, positions] (batch row
    0), from the rows each step wrote, or from the norms a step kept when its rows were dropped to bound memory."""
    upto = len(steps) - 1 if upto is None else upto
    parts = []
    for step in steps[: upto + 1]:
        record = step.hook(layer_hook_name(layer, which))
        if record.array is not None:
            parts.append(np.linalg.norm(record.array[0], axis=-1))  # [kv, n_new, hd] -> [kv, n_new]
        elif record.row_norms is not None:
            parts.append(record.row_norms[0])  # [kv, n_new]
        else:
            raise ValueError("this trace was captured without tensors (capture level meta)")
    return np.concatenate(parts, axis=1)  # [kv, positions]


def latency_series(steps, upto: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(positions, ms): each decode step's timed total against the position of the token it read."""
    upto = len(steps) - 1 if upto is None else upto
    decode = [s for s in steps[1 : upto + 1]]
    positions = np.array([int(s.positions[0, -1]) for s in decode], dtype=np.int64)
    ms = np.array([float(s.timings["total_ms"]) for s in decode], dtype=np.float64)
    return positions, ms


MIN_FIT_POINTS = 8  # fewer noisy timings give a slope whose sign flips from run to run
WARMUP_STEPS = 2  # the first decode steps carry one-off costs (allocator, caches, lazy init): left out of a fit


@dataclass(frozen=True)
class LatencyFit:
    """A straight line through decode latency against position (C18), and whether it says anything.

    `reason` is None when the slope stands out of its own uncertainty (|slope| > 2 standard errors);
    otherwise "few_points" (fewer than MIN_FIT_POINTS after the warm-up) or "noise" (the slope is within
    two standard errors of zero: the timings' noise hides any trend)."""

    slope: float | None  # ms per position
    intercept: float | None  # ms
    slope_se: float | None  # standard error of the slope, ms per position
    points: int  # timings the fit used
    left_out: int  # first timings left out as warm-up
    reason: str | None

    @property
    def meaningful(self) -> bool:
        return self.reason is None


def fit_latency(x: np.ndarray, y: np.ndarray, warmup: int = WARMUP_STEPS) -> LatencyFit:
    """Least squares of y (ms) over x (positions) without the first `warmup` points, with the slope's
    standard error sqrt(s^2 / sum((x - mean x)^2)), s^2 the residual variance over n - 2 degrees of freedom."""
    left_out = min(warmup, len(x))
    x, y = np.asarray(x, np.float64)[warmup:], np.asarray(y, np.float64)[warmup:]
    n = len(x)
    if n < MIN_FIT_POINTS or np.ptp(x) == 0:
        return LatencyFit(None, None, None, n, left_out, "few_points")
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    se = float(np.sqrt(residual @ residual / (n - 2) / np.sum((x - x.mean()) ** 2)))
    reason = None if abs(slope) > 2 * se else "noise"
    return LatencyFit(float(slope), float(intercept), se, n, left_out, reason)
