"""Two named weight-quantization methods beside round-to-nearest (C21; the article's slip on "8-bit" and "4-bit"):

LLM.int8() (Dettmers et al., 2022, "LLM.int8(): 8-bit Matrix Multiplication for Transformers at Scale")
    vector-wise int8: each weight row (an output channel) has its own absmax scale, and each activation row (a
    token) its own, so x W^T ~ (qx qw^T) * sx * sw; a mixed-precision decomposition keeps the outlier features
    apart: an input column where any activation reaches the threshold (6.0, the paper's) is multiplied in 16/32-bit
    (its weights read back from int8), the rest in int8. Outliers of that size are what the method exists for, and
    the paper finds them emerging at about 6.7B parameters; a small model may have none, and `count_outliers` says
    how many columns crossed here.
GPTQ (Frantar et al., 2022, "GPTQ: Accurate Post-Training Quantization for Generative Pre-trained Transformers")
    column by column, each weight column rounded to the int4 grid of its group and the error it leaves spread over
    the columns not yet rounded through the inverse Hessian H^-1 of the layer's inputs (H = 2 X^T X over a
    calibration set, dampened by 1% of its mean diagonal); the columns in blocks of 128 with lazy updates, H^-1's
    upper Cholesky factor read row by row, as the paper's Algorithm 1. Its result is stored as round-to-nearest
    int4 is (per group of `group` columns: w ~ q * scale + low, q in 0..15), so it runs through the same kernels.
"""

from __future__ import annotations

import contextlib
import contextvars

import torch
import torch.nn.functional as F
from torch import nn

from llmviz.errors import ConfigError

LLM_INT8_THRESHOLD = 6.0  # the paper's: an input feature with any |x| >= 6 is kept out of the int8 product
GPTQ_DAMP = 0.01  # lambda: the share of H's mean diagonal added to its diagonal
GPTQ_BLOCK = 128  # columns rounded between two lazy updates of the rest
_OUTLIERS: contextvars.ContextVar[list | None] = contextvars.ContextVar("llmviz_outliers", default=None)


@contextlib.contextmanager
def count_outliers():
    """While open, every LLM.int8() layer called in this thread (this context) appends (its name, outlier columns,
    input columns); the shared model itself is never written to."""
    token = _OUTLIERS.set([])
    try:
        yield _OUTLIERS.get()
    finally:
        _OUTLIERS.reset(token)


class Int8Outliers(nn.Module):
    """LLM.int8(): int8 weights with one absmax scale per output row; at run time, int8 activations with one scale
    per token row, and the outlier columns (|x| >= threshold anywhere in the step) multiplied apart in float. As in
    bitsandbytes, which columns are outliers is decided over every row of the step (padding included), so a row's
    output can depend on the rows beside it: batched LLM.int8() runs are not held to the same-tokens rule."""

    def __init__(self, linear: nn.Linear, name: str = "", threshold: float = LLM_INT8_THRESHOLD):
        super().__init__()
        w = linear.weight.detach().float()  # [out, in]
        self.name, self.threshold, self.dtype = name, threshold, linear.weight.dtype
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach(), requires_grad=False)
        q, scale = int8_rows(w)  # [out, in], [out]
        self.register_buffer("q", q)
        self.register_buffer("scale", scale.to(self.dtype))
        self.mode, self.kernel = "llm-int8", "reference"

    def dequantized(self) -> torch.Tensor:
        """[out, in] the weights the int8 ones stand for (what the outlier columns are multiplied by)."""
        return self.q.float() * self.scale.float()[:, None]

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., in] -> [..., out]
        x2 = x.reshape(-1, self.in_features).float()  # [m, in]
        outlier = (x2.abs() >= self.threshold).any(dim=0)  # [in]: the columns kept in float
        normal = x2.masked_fill(outlier[None, :], 0.0)
        sx = (normal.abs().amax(dim=1, keepdim=True) / 127).clamp(min=1e-12)  # [m, 1]: one scale per token
        qx = (normal / sx).round().clamp(-127, 127)  # int8 values, held in float for the CPU's matmul
        y = F.linear(qx, self.q.float()) * sx * self.scale.float()[None, :]  # [m, out]
        if outlier.any():  # those columns' weights read back from int8, multiplied in float
            y = y + F.linear(x2[:, outlier], self.q[:, outlier].float() * self.scale.float()[:, None])
        if (counts := _OUTLIERS.get()) is not None:
            counts.append((self.name, int(outlier.sum()), self.in_features))
        if self.bias is not None:
            y = y + self.bias.float()
        return y.to(x.dtype).reshape(*x.shape[:-1], self.out_features)


def hessian(inputs: torch.Tensor) -> torch.Tensor:
    """H = 2 X^T X / n over the calibration rows X [n, in] a layer was fed (its squared-error objective's Hessian)."""
    x = inputs.reshape(-1, inputs.shape[-1]).double()
    return 2 * x.T @ x / x.shape[0]


def layer_error(weight: torch.Tensor, approx: torch.Tensor, inputs: torch.Tensor) -> float:
    """||X W^T - X Ŵ^T||^2 / n: what a layer's rounding costs on these inputs (the objective GPTQ lowers)."""
    x = inputs.reshape(-1, inputs.shape[-1]).double()
    return float(((x @ (weight.double() - approx.double()).T) ** 2).sum() / x.shape[0])


def int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Absmax int8 per row of w [out, in]: (q [out, in] int8, scale [out]), w ~ q * scale (round-to-nearest int8's
    weights and LLM.int8()'s alike)."""
    scale = (w.abs().amax(dim=1) / 127).clamp(min=1e-12)
    return (w / scale[:, None]).round().clamp(-127, 127).to(torch.int8), scale


def int4_grid(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The min-max int4 grid of groups w [..., G]: (scale, low) per group, w ~ q * scale + low with q in 0..15
    (round-to-nearest int4 sets it from each group's own columns; GPTQ from its columns as they stand)."""
    low, high = w.amin(dim=-1), w.amax(dim=-1)
    return ((high - low) / 15).clamp(min=1e-6), low


def gptq(weight: torch.Tensor, h: torch.Tensor, group: int, block: int = GPTQ_BLOCK,
         damp: float = GPTQ_DAMP) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GPTQ of one layer: weight [out, in], h [in, in] -> (q [out, in] int in 0..15, scale [out, in/G], low
    [out, in/G]); as the paper's reference code, a group's grid is set from its columns as they stood when their
    block began (the block holds whole groups)."""
    out, cols = weight.shape
    if cols % group:
        raise ConfigError(f"GPTQ groups of {group} columns do not divide the input width {cols}")
    block = max(group, block // group * group)
    w = weight.detach().double().clone()
    h = h.double().clone()
    dead = torch.diag(h) == 0  # an input never seen: its weights do not matter, keep them from the inverse
    h[dead, dead] = 1
    w[:, dead] = 0
    h += damp * torch.mean(torch.diag(h)) * torch.eye(cols, dtype=h.dtype, device=h.device)
    hinv = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(h)), upper=True)  # [in, in]
    q = torch.zeros(out, cols, dtype=torch.int32, device=w.device)
    scale = torch.zeros(out, cols // group, dtype=w.dtype, device=w.device)
    low = torch.zeros_like(scale)
    for start in range(0, cols, block):
        end = min(start + block, cols)
        w1, err = w[:, start:end].clone(), torch.zeros(out, end - start, dtype=w.dtype, device=w.device)
        hb = hinv[start:end, start:end]
        for j in range(end - start):
            c = start + j
            if c % group == 0:  # the group's grid, from its columns as the earlier blocks' errors left them
                scale[:, c // group], low[:, c // group] = int4_grid(w[:, c:c + group])
            s, lo = scale[:, c // group], low[:, c // group]
            qc = ((w1[:, j] - lo) / s).round().clamp(0, 15)
            q[:, c] = qc.to(torch.int32)
            e = (w1[:, j] - (qc * s + lo)) / hb[j, j]
            w1[:, j:] -= e[:, None] * hb[j, j:][None, :]
            err[:, j] = e
        w[:, end:] -= err @ hinv[start:end, end:]  # the block's errors onto every column after it
    return q, scale, low


class _Reached(Exception):
    """Raised by a hook once the block being quantized has seen its inputs: the rest of the pass is not needed."""


def gptq_block(model: nn.Module, index: int, linears: dict[str, nn.Linear], group: int,
               calibration: torch.Tensor) -> dict[str, tuple]:
    """GPTQ's grids for block `index`'s projections ({name: (q, scale, low)}), from the inputs each one is fed when
    the calibration windows [w, n] run through the model as quantized so far (the earlier blocks already are, so
    each block corrects for the errors before it, as the paper's sequential pass does)."""
    seen: dict[str, list] = {name: [] for name in linears}

    def keep(name):
        return lambda module, args: seen[name].append(args[0].detach().reshape(-1, args[0].shape[-1]).double())

    def stop(module, args, output):
        raise _Reached

    handles = [child.register_forward_pre_hook(keep(name)) for name, child in linears.items()]
    handles.append(model.layers[index].register_forward_hook(stop))
    try:
        with torch.inference_mode():
            for window in calibration:
                with contextlib.suppress(_Reached):
                    model(window[None].to(model.embed.weight.device))
    finally:
        for handle in handles:
            handle.remove()
    grids = {}
    for name, child in linears.items():
        h = sum(hessian(x) * x.shape[0] for x in seen[name]) / sum(x.shape[0] for x in seen[name])
        grids[name] = gptq(child.weight, h, group)
    return grids
