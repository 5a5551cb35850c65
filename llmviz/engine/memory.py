"""Device memory: what is free before we allocate, and what the process holds now (C17)."""

from __future__ import annotations

import functools
from contextlib import contextmanager

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
               error: type[LlmvizError] = KVCacheTooLargeError) -> None:
    """Refuse, with the figures and the fix, an allocation that would not fit in free memory."""
    free = free_bytes(device)
    if nbytes > HEADROOM * free:
        raise error(
            f"{what} needs {nbytes / 2**20:,.1f} MiB but {device.type} has {free / 2**20:,.1f} MiB free "
            f"(we use at most {HEADROOM:.0%} of it); {fixes}")


def process_memory(device: torch.device) -> dict:
    """Resident memory of this process, plus CUDA allocator figures on a GPU."""
    info = {"rss_bytes": int(psutil.Process().memory_info().rss)}
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


def release_freed_memory() -> bool:
    """Hand the heap's freed pages back to the OS (glibc's malloc_trim; False where there is none). Each decode
    step frees arrays a little larger than the last, and glibc's growing mmap threshold keeps them in the heap:
    a long run's RSS then grows by hundreds of MB though the live arrays stay within budget (issue 9)."""
    libc = _glibc()
    if libc is None:
        return False
    libc.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)  # fixed: large arrays get their own pages, freed at once
    return bool(libc.malloc_trim(0))  # every arena: each Streamlit session's thread may have its own


@functools.cache
def _glibc():
    """glibc, looked up once (find_library runs ldconfig); None on macOS, musl or Windows."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return libc if libc is not None and hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:
        return None


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter; setting it turns the dynamic threshold off
