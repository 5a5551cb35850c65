"""Prefill time against prompt length, fitted with a + b*n + c*n^2 (C18; claim K1).

The article says prefill time is about linear in the prompt's length (256 tokens 35 ms, 512 tokens 68 ms) and,
in the same breath, that this is *because* attention is O(n^2). Both terms are there: the projections and the
MLP cost b*n (every token through every weight), attention's scores c*n^2 (every token against every earlier
one), and a fixed cost a. Which one dominates depends on n: at short lengths the linear term, past
n = b / c the quadratic one. The fit says where that is on this machine.

Pure numpy: least squares over the sweep's medians, with each coefficient's standard error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmviz.errors import ConfigError

TERMS = ("fixed", "linear", "quadratic")
MIN_POINTS = 4  # three coefficients and at least one degree of freedom for their uncertainty


@dataclass(frozen=True)
class PrefillFit:
    a: float  # ms, the fixed cost
    b: float  # ms per token
    c: float  # ms per token^2
    se: tuple  # standard errors of (a, b, c); nan with too few points
    r2: float
    lengths: tuple  # the prompt lengths fitted

    def at(self, n: float) -> float:
        return self.a + self.b * n + self.c * n * n

    def shares(self, n: float) -> dict:
        """Each term's share of the predicted time at length n (negative coefficients count as 0, and so does a
        quadratic term the data cannot tell from zero: a sentence that calls it indistinguishable from zero never
        sits beside a share of 30%)."""
        quadratic = self.c * n * n if self.quadratic_resolved else 0.0
        parts = {"fixed": max(self.a, 0.0), "linear": max(self.b * n, 0.0), "quadratic": max(quadratic, 0.0)}
        total = sum(parts.values()) or 1.0
        return {k: v / total for k, v in parts.items()}

    def dominant(self, n: float) -> str:
        shares = self.shares(n)
        return max(shares, key=shares.get)

    @property
    def quadratic_resolved(self) -> bool:
        """The quadratic coefficient is positive beyond twice its standard error (else the data cannot tell it
        from zero at these lengths)."""
        return self.c > 0 and np.isfinite(self.se[2]) and self.c > 2 * self.se[2]

    @property
    def takeover(self) -> float | None:
        """The length where the quadratic term overtakes the linear one (c*n^2 = b*n, so n = b / c); None when
        the fit cannot resolve a positive quadratic term or the linear term is not positive."""
        if not self.quadratic_resolved or self.b <= 0:
            return None
        return self.b / self.c


def fit_prefill(lengths, ms) -> PrefillFit:
    """Least squares of ms = a + b*n + c*n^2 over the measured (length, ms) pairs."""
    n = np.asarray(lengths, dtype=np.float64)
    y = np.asarray(ms, dtype=np.float64)
    if n.shape != y.shape or n.ndim != 1:
        raise ConfigError(f"lengths and ms must be two equal 1-D lists, got {n.shape} and {y.shape}")
    if len(np.unique(n)) < 3:
        raise ConfigError(f"a quadratic needs at least 3 distinct lengths, got {sorted(set(n.tolist()))}")
    x = np.stack([np.ones_like(n), n, n * n], axis=1)  # [points, 3]
    scale = np.array([1.0, n.max(), n.max() ** 2])  # columns of like size: a well-conditioned solve
    coef_scaled, *_ = np.linalg.lstsq(x / scale, y, rcond=None)
    coef = coef_scaled / scale
    residual = y - x @ coef
    dof = len(n) - 3
    if dof > 0:
        sigma2 = float(residual @ residual) / dof
        cov = sigma2 * np.linalg.pinv((x / scale).T @ (x / scale))
        se = tuple(float(s) for s in np.sqrt(np.clip(np.diag(cov), 0, None)) / scale)
    else:
        se = (float("nan"),) * 3
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(residual @ residual) / total if total > 0 else 1.0
    return PrefillFit(float(coef[0]), float(coef[1]), float(coef[2]), se, r2, tuple(int(v) for v in n))
