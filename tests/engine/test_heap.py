"""The C heap's settings for a long-running server: one arena for every thread, counted by glibc's own
report (malloc_info), in a fresh process so that nothing else has set it."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from llmviz.engine.platform import heap

ROOT = Path(__file__).resolve().parents[2]
glibc_only = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="mallopt and malloc_info are glibc's")

HEAPS = """
import ctypes, sys, tempfile, threading
sys.path.insert(0, {root!r})
from llmviz.engine.platform import heap
if {limit}:
    assert heap.limit_arenas(1)
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
together = threading.Barrier(7)
def work():
    held = [libc.malloc(1000) for _ in range(200)]  # small blocks: from the thread's arena, not mmap
    together.wait()  # all six alive at once: glibc would give each its own arena
    together.wait()
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads:
    t.start()
together.wait()
path = tempfile.mktemp()
f = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(f))
libc.fclose(ctypes.c_void_p(f))
together.wait()
for t in threads:
    t.join()
print(open(path).read().count("<heap nr="))
"""


def heaps(limit: bool) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", HEAPS.format(root=str(ROOT), limit=limit)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


@glibc_only
def test_one_arena_for_every_thread():
    assert heaps(limit=False) > 1  # glibc's default: a heap per thread that allocates while others do
    assert heaps(limit=True) == 1


def test_the_environment_decides_where_it_says(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert heap.limit_arenas(1) is False  # the operator's MALLOC_ARENA_MAX stands
