"""A 2-D picture of d_model-wide token vectors: principal component analysis by SVD (C2).

Each prompt token's embedding is a point in d_model dimensions; the two directions along which these
points spread the most (the first two right singular vectors of the centered matrix) give a flat map
of them. The share of the variance each direction keeps says how faithful the map is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Projection:
    coords: np.ndarray  # [n, 2] each token's position along the two principal directions
    explained: np.ndarray  # [2] share of the total variance each direction keeps (0..1)
    components: np.ndarray  # [2, d] the directions themselves (unit vectors, zero rows if absent)


def pca_2d(x: np.ndarray) -> Projection:
    """Project the rows of x [n, d] onto their first two principal components.

    Signs are fixed (the largest loading of each component is positive) so the picture does not flip
    between runs. Fewer than two points, or points that all coincide, give zeros.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"pca_2d wants a matrix [n, d], got shape {x.shape}")
    n, d = x.shape
    coords, explained, components = np.zeros((n, 2)), np.zeros(2), np.zeros((2, d))
    if n < 2:
        return Projection(coords, explained, components)
    centered = x - x.mean(axis=0, keepdims=True)  # [n, d]
    _, s, vt = np.linalg.svd(centered, full_matrices=False)  # s [r], vt [r, d], r = min(n, d)
    variance = s**2
    total = variance.sum()
    if total <= 0:
        return Projection(coords, explained, components)
    k = min(2, len(s))
    top = vt[:k]  # [k, d]
    signs = np.sign(top[np.arange(k), np.abs(top).argmax(axis=1)])  # [k]
    top = top * np.where(signs == 0, 1.0, signs)[:, None]
    components[:k] = top
    coords[:, :k] = centered @ top.T  # [n, d] x [d, k] -> [n, k]
    explained[:k] = variance[:k] / total
    return Projection(coords, explained, components)
