"""Position schemes read from the `pos` hook (C2).

Learned absolute positions (GPT-2): `pos` is [b, n, d], the table rows added to the embeddings.
RoPE (Llama, Qwen2, Mistral): `pos` is [b, n, hd/2], the angle in radians by which position p rotates
dimension pair i of q and k, p * theta_i. The rate theta_i (radians per token) falls from 1 for the
first pair to about 1/base for the last, so early pairs spin fast (they tell near positions apart)
and late pairs barely turn (they carry long-range position). Rope scaling (Llama 3.1) changes the
rates; reading them from the recorded angles shows what this model really does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RopeRates:
    rates: np.ndarray  # [pairs] radians per token of each dimension pair
    wavelengths: np.ndarray  # [pairs] tokens for one full turn (2 pi / rate)


def rope_rates(angles: np.ndarray, positions: np.ndarray) -> RopeRates | None:
    """Rotation rate of each pair from angles [n, pairs] recorded at `positions` [n].

    The angle is linear in the position, so rate = angle / position at the farthest position.
    None when the only position is 0 (every angle is 0 there).
    """
    angles = np.asarray(angles, dtype=np.float64)
    positions = np.asarray(positions, dtype=np.float64)
    far = int(np.argmax(positions))
    if positions[far] <= 0:
        return None
    rates = angles[far] / positions[far]  # [pairs]
    with np.errstate(divide="ignore"):
        wavelengths = np.where(rates > 0, 2 * np.pi / np.where(rates > 0, rates, 1.0), np.inf)
    return RopeRates(rates, wavelengths)


def wrap_angles(angles: np.ndarray) -> np.ndarray:
    """Angles folded into [-pi, pi): the direction a pair points to, which is what the rotation does."""
    angles = np.asarray(angles, dtype=np.float64)
    return (angles + np.pi) % (2 * np.pi) - np.pi

