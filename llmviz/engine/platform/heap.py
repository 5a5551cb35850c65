"""The C heap under Python, numpy and torch on glibc (a server left running for a day).

A decode step frees arrays a little larger than the last, and Streamlit runs every script run in a new thread:
left to itself glibc keeps freed memory in the heap (a growing mmap threshold) and spreads the threads over
several heaps ("arenas"), where one thread's freed blocks are not reused by the next. A long-running app's RSS
then grows though the arrays it holds stay within budget. Torch-free; every function is a no-op returning False
where there is no glibc (macOS, musl, Windows).
"""

from __future__ import annotations

import functools
import os

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameters; setting the threshold turns its dynamic growth off
_M_ARENA_MAX = -8
MMAP_THRESHOLD = 128 * 1024  # bytes: a block this large gets its own pages, handed back to the OS when freed
SERVER_ARENAS = 1  # the app's server: every thread allocates from one heap, so a script run reuses the last's frees


def release_freed_memory() -> bool:
    """Hand the heap's freed pages back to the OS (malloc_trim over every arena), large arrays from now on in
    their own pages (a fixed 128 KiB mmap threshold), freed at once."""
    libc = _glibc()
    if libc is None:
        return False
    libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    return bool(libc.malloc_trim(0))


def limit_arenas(count: int = SERVER_ARENAS) -> bool:
    """Cap the heaps glibc hands to new threads at `count` (mallopt M_ARENA_MAX), unless MALLOC_ARENA_MAX in the
    environment already says how many. Call it early: glibc fixes its limit when the ninth heap is made."""
    libc = _glibc()
    if libc is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, count))


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
