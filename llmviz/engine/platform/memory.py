"""Device memory: what is free before we allocate, and what the process holds now (C17)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from functools import lru_cache

import psutil
import torch

from llmviz.errors import KVCacheTooLargeError, LlmvizError, OutOfMemoryError

# Leave this share of the free memory to everything else (activations, the OS, the browser).
HEADROOM = 0.8


def free_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    return int(psutil.virtual_memory().available)  # CPU, and MPS (unified memory)


def check_fits(nbytes: int, device: torch.device, what: str, fixes: str,
               error: type[LlmvizError] = KVCacheTooLargeError, budget: int | None = None) -> None:
    """Refuse, with the figures and the fix, an allocation that would not fit in free memory, or past `budget`
    bytes (a KV budget the user set: EngineConfig.kv_budget_bytes, C17), before anything is allocated."""
    if budget is not None and nbytes > budget:
        raise error(f"{what} needs {nbytes:,} B but the KV budget is {budget:,} B (kv_budget_bytes); {fixes}")
    free = free_bytes(device)
    if nbytes > HEADROOM * free:
        raise error(
            f"{what} needs {nbytes / 2**20:,.1f} MiB but {device.type} has {free / 2**20:,.1f} MiB free "
            f"(we use at most {HEADROOM:.0%} of it); {fixes}")


@lru_cache(maxsize=4)
def _process(pid: int) -> psutil.Process:
    """This process's handle, made once per pid (psutil.Process() reads /proc twice: 0.15 ms of every step)."""
    return psutil.Process(pid)


def process_memory(device: torch.device) -> dict:
    """Resident memory of this process, plus CUDA allocator figures on a GPU."""
    info = {"rss_bytes": int(_process(os.getpid()).memory_info().rss)}
    if device.type == "cuda":
        info.update(
            cuda_allocated_bytes=int(torch.cuda.memory_allocated(device)),
            cuda_reserved_bytes=int(torch.cuda.memory_reserved(device)),
            cuda_peak_allocated_bytes=int(torch.cuda.max_memory_allocated(device)),
        )
    return info


_OOM_MARKERS = ("out of memory", "can't allocate memory", "not enough memory")


@contextmanager
def typed_out_of_memory(what: str, fixes: str):
    """Turn torch's out-of-memory errors (CUDA, MPS or the CPU allocator) into OutOfMemoryError."""
    try:
        yield
    except LlmvizError:
        raise  # already typed (e.g. KVCacheTooLargeError from the check before allocating)
    except (torch.OutOfMemoryError, MemoryError) as exc:
        raise OutOfMemoryError(f"{what} ran out of memory ({exc}); {fixes}") from exc
    except RuntimeError as exc:
        if any(marker in str(exc).lower() for marker in _OOM_MARKERS):
            raise OutOfMemoryError(f"{what} ran out of memory ({str(exc)[:200]}); {fixes}") from exc
        raise
