"""Device and dtype names -> torch objects, with clear errors for what this machine lacks."""

from __future__ import annotations

import os

import torch

from llmviz.errors import ConfigError, DeviceUnavailableError

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


AUTO_ENV = "LLMVIZ_AUTO_DEVICE"  # what "auto" means, when set (e.g. cpu on a machine whose GPU is busy)


def resolve_device(name: str) -> torch.device:
    """auto -> cuda, then mps, then cpu (or what LLMVIZ_AUTO_DEVICE names); an explicit device must exist."""
    name = (name or "auto").strip().lower()
    if name == "auto" and os.environ.get(AUTO_ENV, "auto").strip().lower() != "auto":
        return resolve_device(os.environ[AUTO_ENV])
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps") if _mps_available() else torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise ConfigError(f"device={name!r} is not a device name (auto, cpu, cuda, cuda:N, mps)") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailableError("cuda was chosen but this machine has no CUDA GPU (or torch is a CPU "
                                         "build): use device auto or cpu", code="no_cuda")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise DeviceUnavailableError(f"{name} does not exist: {torch.cuda.device_count()} GPU(s) here")
    elif device.type == "mps" and not _mps_available():
        raise DeviceUnavailableError("mps was chosen but this machine has no Apple GPU: use auto or cpu",
                                     code="no_mps")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"device={name!r} is not supported (auto, cpu, cuda, cuda:N, mps)")
    return device


def torch_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ConfigError(f"dtype={name!r} is not one of {', '.join(DTYPES)}")
    return DTYPES[name]


def dtype_name(dtype: torch.dtype) -> str:
    return {v: k for k, v in DTYPES.items()}[dtype]


def max_cpu_threads() -> int:
    """The most CPU threads we let torch start: 4 per core (an absurd count makes OpenMP abort the process)."""
    return 4 * (os.cpu_count() or 1)


def set_cpu_threads(n: int) -> None:
    """Torch's intra-op CPU threads, for the whole process."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= max_cpu_threads():
        raise ConfigError(f"threads must be a whole number in 1..{max_cpu_threads()} (this machine has "
                          f"{os.cpu_count()} CPU cores), got {n!r}")
    torch.set_num_threads(n)


def same_device(a: torch.device, b: torch.device) -> bool:
    """cuda and cuda:0 (the current device) are the same place."""
    def index(d: torch.device) -> int:
        if d.index is not None:
            return d.index
        return torch.cuda.current_device() if d.type == "cuda" else 0

    return a.type == b.type and index(a) == index(b)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on a CPU), so a wall clock read after it is honest."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
