"""One layer at one step, from the hooks the engine recorded (C3): the residual stream through
the block, what each norm does, the MLP's shapes and activation, and how much attention and the MLP each add.

A pre-norm block computes, per token,
    x_in -> h = norm1(x_in) -> attention -> x_mid = x_in + attn_out
         -> m = norm2(x_mid) -> MLP -> x_out = x_mid + mlp_out
The recorded hooks are `attn_in` (h), `attn_out`, `mlp_in` (m), `mlp_act` (the MLP's hidden activation),
`mlp_out` and `resid` (x_out); x_in is the previous layer's `resid` (the embeddings, plus learned positions,
for layer 0). Torch-free: numpy over a StepTrace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmviz.trace import hooks

NEEDED = ("attn_in", "attn_out", "mlp_in", "mlp_act", "mlp_out", "resid")


@dataclass(frozen=True)
class LayerView:
    """Per token of the step (batch row 0), [n] each; `act` is the MLP's hidden activation [n, f]."""

    norm_in: np.ndarray  # ‖x_in‖
    norm_mid: np.ndarray  # ‖x_in + attn_out‖
    norm_out: np.ndarray  # ‖x_out‖
    norm_h: np.ndarray  # ‖norm1(x_in)‖: what attention reads
    norm_m: np.ndarray  # ‖norm2(x_mid)‖: what the MLP reads
    norm_attn: np.ndarray  # ‖attn_out‖: attention's contribution
    norm_mlp: np.ndarray  # ‖mlp_out‖: the MLP's contribution
    act: np.ndarray  # [n, f]
    residual_gap: float  # max |x_in + attn_out + mlp_out - x_out|: the bookkeeping checks out


def needed(layer: int) -> list[str]:
    """The hook names a layer view reads, besides its input's."""
    return [hooks.layer_hook_name(layer, p) for p in NEEDED]


def layer_input(step, layer: int, learned_positions: bool) -> np.ndarray:
    """x_in [b, n, d]: the previous layer's output, or the embeddings (with learned positions added) for layer 0."""
    if layer > 0:
        return step.hook(hooks.resid(layer - 1)).array
    x = step.hook("embed").array
    return x + step.hook("pos").array if learned_positions else x


def layer_view(step, layer: int, learned_positions: bool) -> LayerView:
    def row(name: str) -> np.ndarray:
        return np.asarray(step.hook(hooks.layer_hook_name(layer, name)).array[0], dtype=np.float64)  # [n, ...]

    x_in = np.asarray(layer_input(step, layer, learned_positions)[0], dtype=np.float64)  # [n, d]
    attn, mlp, out = row("attn_out"), row("mlp_out"), row("resid")
    mid = x_in + attn
    norm = np.linalg.norm
    return LayerView(norm(x_in, axis=-1), norm(mid, axis=-1), norm(out, axis=-1), norm(row("attn_in"), axis=-1),
                     norm(row("mlp_in"), axis=-1), norm(attn, axis=-1), norm(mlp, axis=-1), row("mlp_act"),
                     float(np.abs(mid + mlp - out).max()))


def activation_shares(act: np.ndarray, near: float = 0.05) -> dict[str, float]:
    """Shares of the hidden activation's values that are negative, near zero (|a| < near) and positive."""
    a = np.asarray(act).ravel()
    return {"negative": float(np.mean(a <= -near)), "near_zero": float(np.mean(np.abs(a) < near)),
            "positive": float(np.mean(a >= near))}
