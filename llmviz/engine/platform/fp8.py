"""What this machine does with FP8, read at run time (C21; the article's slip: FP8 on an A100, which has no FP8 tensor
cores). NVIDIA's architecture whitepapers list FP8 tensor-core math from Ada (compute capability 8.9) and Hopper (9.0)
on; an A100 (Ampere, 8.0) stores FP8 but computes in 16 bits. torch stores the format on any device; a CPU multiplies
it in software.
"""

from __future__ import annotations

import torch

FP8_TENSOR_CORES_FROM = (8, 9)  # Ada; Hopper is 9.0; Ampere's A100 is 8.0, its A10/A40 8.6


def has_fp8_tensor_cores(capability: tuple[int, int]) -> bool:
    """A CUDA device's compute capability -> whether its tensor cores do FP8 math."""
    return tuple(capability) >= FP8_TENSOR_CORES_FROM


def fp8_facts(device: torch.device) -> dict:
    """On `device`, now: the FP8 format's largest value (torch.finfo), whether a tensor of it is stored, whether
    torch._scaled_mm multiplies two of them here, and on CUDA the card, its capability and its FP8 tensor cores
    (None on a CPU or MPS: no tensor cores to ask about)."""
    fmt = torch.float8_e4m3fn
    facts = {"device": device.type, "max": float(torch.finfo(fmt).max), "stores": False, "multiplies": False,
             "name": None, "capability": None, "tensor_cores": None}
    try:
        x = torch.ones((16, 16), device=device).to(fmt)
        facts["stores"] = x.dtype == fmt
        one = torch.ones((), device=device)
        out = torch._scaled_mm(x, x.t(), scale_a=one, scale_b=one, out_dtype=torch.float32)
        facts["multiplies"] = bool(out[0, 0].item() == 16.0)  # sixteen ones summed: exact in any format
    except (RuntimeError, NotImplementedError, TypeError):  # a device or build without them
        pass
    if device.type == "cuda":
        cap = torch.cuda.get_device_capability(device)
        facts.update(name=torch.cuda.get_device_name(device), capability=list(cap),
                     tensor_cores=has_fp8_tensor_cores(cap))
    return facts
