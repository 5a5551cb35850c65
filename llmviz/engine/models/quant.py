"""Weight-only quantization of the blocks' projections: int8 per output channel, int4 per group (C21); LLM.int8()
and GPTQ (quant_methods.py) beside them.

Each nn.Linear of every block (attention and MLP projections; not the embedding or the output head)
becomes a QuantLinear that stores integer weights and their scales and multiplies with PyTorch's own
kernels where the device has them:
  int8: aten._weight_int8pack_mm (CPU and others), w ~ q * scale[out]; where the reference below is measured
        faster at load, it runs instead (on one AMD EPYC thread: 0.43 against 2.2 ms for a 768x3072 decode row)
  int4: aten._weight_int4pack_mm_for_cpu / _weight_int4pack_mm (CUDA, bf16), w ~ (q - 8) * scale + zero
        per group of `group` input columns (asymmetric, as gpt-fast and torchao pack it)
Beside them, `dequantized()` is the readable reference: the weight rebuilt from q and the scales, then a
plain matmul; where a kernel is missing the layer runs that and says so (`kernel`).
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

from llmviz.engine.models.quant_methods import Int8Outliers, gptq_block, int4_grid, int8_rows
from llmviz.errors import ConfigError
from llmviz.trace.config import CALIBRATED_QUANT, QUANT_MODES

INT4_INNER_K_TILES = 8  # the packing's tile width over the input dimension (gpt-fast's default)
# The CPU int8 kernel is built for decode (one row per sequence): on a 64-token prefill of the embedded
# model it took 197 ms against 10 ms in fp32 here. Above this many rows, int8 layers dequantize and run one
# plain matmul instead (the int4 kernel's packing cannot be read back, so int4 always uses its kernel).
INT8_KERNEL_MAX_ROWS = 8


class QuantLinear(nn.Module):
    def __init__(self, linear: nn.Linear, mode: str, group: int, kernel: str = "auto", grid: tuple | None = None):
        """kernel: "torch" (PyTorch's, where it runs), "reference", or "auto": PyTorch's unless the reference
        is measured faster here on a one-row (decode) input, as the int8 one was on a 2-core AMD EPYC. grid: int4's
        (q [out, in] in 0..15, scale and low [out, in/G]) chosen elsewhere (GPTQ), stored as round-to-nearest's."""
        super().__init__()
        w = linear.weight.detach().float().contiguous()  # [out, in] (the CPU fast path stores it column-major)
        self.mode, self.group, self.dtype = mode, group, linear.weight.dtype
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach(), requires_grad=False)
        if mode == "int8":
            q, scale = int8_rows(w)  # [out, in] int8, [out]
            self.register_buffer("q", q)
            self.register_buffer("scale", scale.to(self.dtype))
        else:
            if self.in_features % group:
                raise ConfigError(f"int4 groups of {group} columns do not divide the input width {self.in_features}: "
                                  "choose a quant_group that divides every projection's width (e.g. 32)")
            if grid is None:  # round to nearest on each group's own min-max grid
                g = w.reshape(self.out_features, -1, group)  # [out, in/G, G]
                scale, low = int4_grid(g)  # [out, in/G] each
                q = ((g - low[..., None]) / scale[..., None]).round().clamp(0, 15).to(torch.int32)
            else:
                q, scale, low = (t.to(w.device) for t in grid)
                q, scale, low = q.to(torch.int32), scale.float(), low.float()
            q = q.reshape(self.out_features, self.in_features)  # 0..15
            self.register_buffer("q", (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8))  # [out, in/2]: 2 per byte
            self.register_buffer("scale", scale.to(self.dtype))
            self.register_buffer("zero", (low + 8 * scale).to(self.dtype))  # so that w ~ (q - 8) * scale + zero
        self.kernel = "reference"
        self.register_buffer("packed", None)  # int4: the kernel's own packing of q, when the kernel runs
        if kernel != "reference":
            self._pick_kernel(linear.weight.device, measure=kernel == "auto")

    def _pick_kernel(self, device: torch.device, measure: bool) -> None:
        """PyTorch's kernel if it runs here, agrees with the reference and (when measuring) is not slower."""
        x = torch.randn(1, self.in_features, device=device, dtype=self._act_dtype(device))
        try:
            if self.mode == "int4":
                self.packed = self._pack_int4(device)
            fast = self._kernel_matmul(x)
        except (RuntimeError, NotImplementedError):
            self.packed = None
            return
        if not torch.allclose(fast.float(), self._reference_matmul(x).float(), rtol=2e-2, atol=2e-2):
            self.packed = None
            return
        if measure and _best_ms(self._reference_matmul, x) < 0.8 * _best_ms(self._kernel_matmul, x):
            self.packed = None
            return
        self.kernel = "torch"
        if self.packed is not None:
            self.q = None  # the kernel reads its own packing: keep one copy of the weights

    def _act_dtype(self, device: torch.device) -> torch.dtype:
        if self.mode == "int4" and device.type == "cuda":
            return torch.bfloat16  # CUDA's int4 kernel takes bf16 activations
        return self.dtype

    def _int4_values(self) -> torch.Tensor:
        """[out, in] int32 in 0..15, unpacked from two values per byte."""
        pairs = self.q.to(torch.int32)
        return torch.stack([pairs >> 4, pairs & 15], dim=-1).reshape(self.out_features, self.in_features)

    def _pack_int4(self, device: torch.device) -> torch.Tensor:
        if device.type == "cpu":
            return torch.ops.aten._convert_weight_to_int4pack_for_cpu(self._int4_values(), INT4_INNER_K_TILES)
        return torch.ops.aten._convert_weight_to_int4pack(self.q, INT4_INNER_K_TILES)

    def _scales_and_zeros(self, dtype: torch.dtype) -> torch.Tensor:
        return torch.stack([self.scale, self.zero], dim=-1).transpose(0, 1).contiguous().to(dtype)  # [in/G, out, 2]

    def _kernel_matmul(self, x2: torch.Tensor) -> torch.Tensor:
        if self.mode == "int8":
            return torch.ops.aten._weight_int8pack_mm(x2, self.q, self.scale.to(x2.dtype))
        if x2.device.type == "cpu":
            return torch.ops.aten._weight_int4pack_mm_for_cpu(x2, self.packed, self.group,
                                                              self._scales_and_zeros(x2.dtype))
        return torch.ops.aten._weight_int4pack_mm(x2, self.packed, self.group, self._scales_and_zeros(x2.dtype))

    def dequantized(self) -> torch.Tensor:
        """The reference: the [out, in] weight rebuilt from the integers and their scales (int4 layers
        that run PyTorch's kernel keep only its packing: build them with kernel="reference" to read this)."""
        if self.mode == "int8":
            return self.q.float() * self.scale.float()[:, None]
        q = self._int4_values().float().reshape(self.out_features, -1, self.group)  # [out, in/G, G]
        w = (q - 8) * self.scale.float()[..., None] + self.zero.float()[..., None]
        return w.reshape(self.out_features, self.in_features)

    def _reference_matmul(self, x2: torch.Tensor) -> torch.Tensor:
        if self.mode == "int8":  # x (q s)^T = (x q^T) s: scale the [rows, out] result, not the weights
            acc = torch.float32 if x2.dtype == torch.float16 else x2.dtype  # x q^T is ~127/amax times y: fp16 overflows
            return (F.linear(x2.to(acc), self.q.to(acc)) * self.scale.to(acc)).to(x2.dtype)
        return F.linear(x2, self.dequantized().to(x2.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., in] -> [..., out]
        x2 = x.reshape(-1, self.in_features)
        if self.kernel == "torch" and (self.mode == "int4" or x2.shape[0] <= INT8_KERNEL_MAX_ROWS):
            y = self._kernel_matmul(x2.to(self._act_dtype(x.device))).to(x.dtype)
        else:
            y = self._reference_matmul(x2)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


def _best_ms(fn, x: torch.Tensor, repeats: int = 5) -> float:
    fn(x)
    best = float("inf")
    for _ in range(repeats):
        if x.device.type == "cuda":
            torch.cuda.synchronize(x.device)
        start = time.perf_counter()
        fn(x)
        if x.device.type == "cuda":
            torch.cuda.synchronize(x.device)
        best = min(best, time.perf_counter() - start)
    return best * 1000


def quantize(model: nn.Module, mode: str, group: int, calibration: torch.Tensor | None = None) -> dict:
    """Replace every block's nn.Linear in place; returns {"kernels": {kernel: count}} (and GPTQ's calibration
    tokens). calibration [windows, n] token ids: the text GPTQ reads (quant_methods.py), block by block."""
    if mode not in QUANT_MODES:
        raise ConfigError(f"quant={mode!r} is not one of {', '.join(QUANT_MODES)}")
    if mode == "none":
        return {}
    if mode in CALIBRATED_QUANT and (calibration is None or calibration.numel() == 0):
        raise ConfigError(f"quant={mode} reads calibration text at load: none was given")
    kernels: dict[str, int] = {}
    for i, block in enumerate(model.layers):
        linears = {name: child for name, child in block.named_modules() if isinstance(child, nn.Linear)}
        grids = gptq_block(model, i, linears, group, calibration) if mode == "gptq-int4" else {}
        for name, child in linears.items():
            parent = block.get_submodule(name.rpartition(".")[0]) if "." in name else block
            if mode == "llm-int8":
                layer = Int8Outliers(child, f"layers.{i}.{name}")
            else:
                layer = QuantLinear(child, "int4" if mode == "gptq-int4" else mode, group, grid=grids.get(name))
            setattr(parent, name.rpartition(".")[2], layer)
            kernels[layer.kernel] = kernels.get(layer.kernel, 0) + 1
    info = {"kernels": kernels}
    return info | ({"calibration_tokens": int(calibration.numel())} if mode in CALIBRATED_QUANT else {})
