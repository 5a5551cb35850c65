"""KV storage dtypes: how a K or V row is stored and read back (C11, C21).

A codec turns rows [..., hd] of the compute dtype into one or more *planes* that the layout stores
side by side with the same indexing (data [..., hd], and for the quantized kinds a scale [..., 1]),
and turns planes back into compute-dtype rows on read. The layouts never look inside.

  fp32 / fp16 / bf16  a cast; fp16 can overflow (|x| > 65504): the cache raises a flag, never stores inf
  fp8                 float8_e4m3fn with one fp32 scale per token and head (amax / 448)
  int8                int8 with one fp32 scale per token and head (amax / 127), rounded to nearest
The scales are stored, so they count in the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from llmviz.engine.registry import Registry
from llmviz.trace.config import KV_DTYPES

SCALE_DTYPE = torch.float32


@dataclass(frozen=True)
class PlaneSpec:
    name: str
    width: int  # last dimension: head_dim for data, 1 for a scale
    dtype: torch.dtype


class CastCodec:
    """Store in a float dtype; read back by a cast (a no-op when it is the compute dtype)."""

    def __init__(self, name: str, dtype: torch.dtype):
        self.name, self.dtype = name, dtype
        self.may_overflow = dtype == torch.float16  # fp32 and bf16 sources reach far beyond 65504

    def planes(self, head_dim: int) -> tuple[PlaneSpec, ...]:
        return (PlaneSpec("data", head_dim, self.dtype),)

    def encode(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [x if x.dtype == self.dtype else x.to(self.dtype)]

    def decode(self, planes: list[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
        data = planes[0]
        return data if data.dtype == dtype else data.to(dtype)


class ScaledCodec:
    """Symmetric quantization with one scale per (token, head): x ~ q * scale, q = x / scale."""

    may_overflow = False

    def __init__(self, name: str, dtype: torch.dtype, qmax: float, rounds: bool):
        self.name, self.dtype, self.qmax, self.rounds = name, dtype, qmax, rounds

    def planes(self, head_dim: int) -> tuple[PlaneSpec, ...]:
        return PlaneSpec("data", head_dim, self.dtype), PlaneSpec("scale", 1, SCALE_DTYPE)

    def encode(self, x: torch.Tensor) -> list[torch.Tensor]:
        x32 = x.float()
        scale = (x32.abs().amax(dim=-1, keepdim=True) / self.qmax).clamp(min=1e-12)  # [..., 1]
        q = x32 / scale
        if self.rounds:
            q = q.round().clamp(-self.qmax, self.qmax)
        return [q.to(self.dtype), scale]

    def decode(self, planes: list[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
        data, scale = planes
        return (data.float() * scale).to(dtype)


KV_CODECS: Registry = Registry("kv_dtype", [n for n in KV_DTYPES if n != "auto"])
KV_CODECS.add("fp32", CastCodec("fp32", torch.float32))
KV_CODECS.add("fp16", CastCodec("fp16", torch.float16))
KV_CODECS.add("bf16", CastCodec("bf16", torch.bfloat16))
KV_CODECS.add("fp8", ScaledCodec("fp8", torch.float8_e4m3fn, 448.0, rounds=False))
KV_CODECS.add("int8", ScaledCodec("int8", torch.int8, 127.0, rounds=True))


def codec_for(kv_dtype: str, model_dtype: torch.dtype):
    """The codec of a kv_dtype name; auto stores in the model's own dtype."""
    if kv_dtype == "auto":
        return KV_CODECS.get({torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}[model_dtype])
    return KV_CODECS.get(kv_dtype)
