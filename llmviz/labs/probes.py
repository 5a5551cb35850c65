"""Probes of the machine itself, measured in the same run as what they are compared with (C7).

memory_bandwidth: read a buffer much larger than the CPU's caches (or the GPU's L2) and take the best
of several passes: the rate at which a memory-bound decode step can at best stream its weights and KV
cache. One implementation, for the benchmarks, the optimization lab and the claims page.
"""

from __future__ import annotations

import time

import torch

from llmviz.engine.platform.devices import synchronize

GIB = 2**30
# The cache probe's buffer at most: the DRAM probe's own size (device_limits' beyond_bytes), already past every
# CPU cache. Its size comes from a model card's layer, which a replayed trace supplies: a card claiming
# a 700,000-wide MLP asked for 2 GB here.
CACHE_PROBE_MAX_BYTES = 256 * 2**20


def memory_bandwidth(device: torch.device | str = "cpu", nbytes: int = GIB, repeats: int = 5) -> dict:
    """Best-of-`repeats` read bandwidth over an fp32 buffer of `nbytes` (a sum reads every byte once)."""
    device = torch.device(device)
    buf = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    buf.sum()  # touch every page before timing
    synchronize(device)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        buf.sum()
        synchronize(device)
        seconds.append(time.perf_counter() - start)
    del buf
    best = min(seconds)
    return {"bytes": nbytes, "best_s": best, "gb_per_s": nbytes / best / 1e9, "repeats": repeats,
            "all_gb_per_s": [round(nbytes / s / 1e9, 2) for s in seconds], "device": str(device),
            "threads": torch.get_num_threads(), "what": "fp32 sum over the buffer (reads only), best pass"}


def matmul_flops(device: torch.device | str = "cpu", m: int = 8, k: int = 768, n: int = 50257,
                 dtype: torch.dtype = torch.float32, repeats: int = 5) -> dict:
    """Best-of-`repeats` FLOP/s of one [m, k] x [k, n] matmul: with m the rows of a decode step, the rate
    a batched decode step can at best compute at on this device (2mkn FLOPs per product)."""
    device = torch.device(device)
    x = torch.randn(m, k, device=device, dtype=dtype)
    w = torch.randn(k, n, device=device, dtype=dtype)
    x @ w
    synchronize(device)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        x @ w
        synchronize(device)
        seconds.append(time.perf_counter() - start)
    flops = 2 * m * k * n
    return {"shape": [m, k, n], "dtype": str(dtype).removeprefix("torch."), "flops": flops,
            "gflop_per_s": flops / min(seconds) / 1e9, "device": str(device), "threads": torch.get_num_threads()}


def device_limits(device: torch.device | str = "cpu", layer_bytes: int = 4 * 2**20, beyond_bytes: int = 256 * 2**20,
                  repeats: int = 5) -> dict:
    """The roofline's ceilings for this device, measured now (C7): a large matmul's FLOP/s (near the peak), the
    read bandwidth far beyond the caches, and on a CPU again over one layer's weights (`layer_bytes`, which a
    small model's layer keeps in the caches), read repeatedly; at least 4 MiB: torch's sum over a smaller buffer
    takes a slower path (200k floats: ~2.6 ms here, 1M floats: 40 us) that would hide the caches' rate; at most
    CACHE_PROBE_MAX_BYTES, whatever the layer claims."""
    device = torch.device(device)
    peak = matmul_flops(device, 1024, 1024, 1024, repeats=repeats)
    dram = memory_bandwidth(device, beyond_bytes, repeats)
    out = {"peak": peak, "dram": dram, "device": str(device), "threads": torch.get_num_threads()}
    if device.type == "cpu":
        out["cache"] = memory_bandwidth(device, min(max(int(layer_bytes), 4 * 2**20), CACHE_PROBE_MAX_BYTES),
                                        repeats * 20)
    return out
