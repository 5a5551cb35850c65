"""What the Decode page plots across steps, rebuilt from the trace alone (C6, C18).

The KV cache of a layer after step t is the concatenation of the `k` / `v` rows each step 0..t wrote
(`layers.{i}.k` is [b, kv, n_new, hd]); latency per token is each decode step's timed total.
"""

from __future__ import annotations

import numpy as np


def cache_rows(steps, layer: int, which: str = "k", upto: int | None = None) -> np.ndarray:
    """K or V of one layer as the cache holds it after step `upto`: [kv_heads, positions, hd] (batch row 0)."""
    upto = len(steps) - 1 if upto is None else upto
    parts = []
    for step in steps[: upto + 1]:
        record = step.hook(f"layers.{layer}.{which}")
        if record.array is None:
            raise ValueError("this trace was captured without tensors (capture level meta)")
        parts.append(record.array[0])  # [kv, n_new, hd]
    return np.concatenate(parts, axis=1)  # [kv, positions, hd]


def row_norms(rows: np.ndarray) -> np.ndarray:
    """[kv, positions, hd] -> [kv, positions] L2 norm of each cached vector (what the grid colours)."""
    return np.linalg.norm(rows, axis=-1)


def latency_series(steps, upto: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(positions, ms): each decode step's timed total against the position of the token it read."""
    upto = len(steps) - 1 if upto is None else upto
    decode = [s for s in steps[1 : upto + 1]]
    positions = np.array([int(s.positions[0, -1]) for s in decode], dtype=np.int64)
    ms = np.array([float(s.timings["total_ms"]) for s in decode], dtype=np.float64)
    return positions, ms


MIN_FIT_POINTS = 8  # fewer noisy timings give a slope whose sign flips from run to run


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float] | None:
    """Least-squares slope and intercept of y over x (None with fewer than MIN_FIT_POINTS points)."""
    if len(x) < MIN_FIT_POINTS or np.ptp(x) == 0:
        return None
    slope, intercept = np.polyfit(x.astype(np.float64), y, 1)
    return float(slope), float(intercept)
