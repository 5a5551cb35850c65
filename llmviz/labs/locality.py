"""What locality buys (C12): decode ms/token with the same KV bytes read from paged blocks that lie in
order in the pool, against the same number of blocks scattered through a pool four times larger.

The article's prefetch loop (`_mm_prefetch`) is an x86 CPU intrinsic, and a prefetcher cannot be switched off
from here; what can be measured honestly is the cost of reading a cache whose blocks are not next to each other:
the indirection behind K3's paged layout. Both runs of a length fill one sequence with the same seeded random K/V
(layout_sweep.fill) and time the same greedy decode steps (layout_sweep.timed_decode); only the block table
differs: blocks 0, 1, 2, ... against a seeded random choice from the pool's free list (BlockPool.scatter).
Interleaved rounds, a fresh cache each run; per length the median with min and max.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.platform.memory import typed_out_of_memory
from llmviz.engine.random_fill import fill_random
from llmviz.engine.timing import spread
from llmviz.errors import ConfigError
from llmviz.i18n.translator import timed
from llmviz.labs.layout_sweep import MAX_REPEATS, MAX_STEPS, check_lengths, sweep_max_seq, timed_decode
from llmviz.trace.progress import Progress, silent

ORDERS = ("in_order", "scattered")
POOL_FACTOR = 4  # the scattered run's pool holds this many times the blocks one sequence needs
DEFAULT_LENGTHS = (128, 512, 1024)


def _one_run(lm: LoadedModel, order: str, ids: list[int], steps: int, *, max_seq: int, block_size: int,
             backend: str, seed: int) -> tuple[list[float], list[int]]:
    blocks = math.ceil(max_seq / block_size)
    cache = make_kv_cache("paged", lm.cfg, max_seq, capacity=1, model_dtype=lm.dtype, device=lm.device,
                          block_size=block_size, pool_blocks=blocks * (POOL_FACTOR if order == "scattered" else 1))
    if order == "scattered":
        cache.pool.scatter(seed)
    cache.add(0)
    with torch.inference_mode():
        fill_random(cache, lm.cfg, 0, ids[:-1], torch.Generator().manual_seed(seed), lm.dtype, lm.device)
        table = list(cache.tables[0])
        return timed_decode(lm, cache, 0, ids[-1], steps, backend), table


def locality_sweep(lm: LoadedModel, lengths=None, steps: int = 8, repeats: int = 3, progress: Progress | None = None,
                   *, block_size: int = 16, backend: str = "sdpa", seed: int = 0) -> dict:
    """Decode ms/token per length, blocks in order against scattered (the module docstring says how)."""
    progress = progress or silent
    if not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise ConfigError(f"steps must be a whole number in 1..{MAX_STEPS}, got {steps!r}")
    if not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(f"repeats must be a whole number in 1..{MAX_REPEATS}, got {repeats!r}")
    max_seq = sweep_max_seq(lm)
    if lengths is None:
        lengths = [n for n in DEFAULT_LENGTHS if n + steps <= max_seq] or [max_seq - steps]
    lengths = check_lengths(lengths, max_seq, steps)
    began, gen = time.perf_counter(), torch.Generator().manual_seed(seed)
    runs = {o: [[] for _ in lengths] for o in ORDERS}
    tables = {o: [] for o in ORDERS}
    total, done = len(lengths) * (repeats + 1) * len(ORDERS), 0
    for i, n in enumerate(lengths):
        ids = torch.randint(0, lm.cfg.vocab_size, (n + 1,), generator=gen).tolist()
        common = {"max_seq": max_seq, "block_size": block_size, "backend": backend, "seed": seed + i}
        with typed_out_of_memory(f"the locality sweep at {n} tokens", "use shorter lengths"):
            for r in range(repeats + 1):  # round 0 warms up, untimed
                for order in ORDERS if r % 2 == 0 else ORDERS[::-1]:
                    progress(done / total, "round", {"what": f"{n} · {order}", "tokens": n, "layout": order})
                    ms, table = _one_run(lm, order, ids, steps, **common)
                    if r:
                        runs[order][i].append(statistics.fmean(ms))
                    else:
                        tables[order].append({"tokens": n, "blocks": table})
                    done += 1
    per_order = {}
    for order in ORDERS:
        cells = [spread(v) for v in runs[order]]
        per_order[order] = {key: [c[key] for c in cells] for key in ("median", "min", "max", "all")}
    ratio = [s / o for s, o in zip(per_order["scattered"]["median"], per_order["in_order"]["median"], strict=True)]
    progress(1.0, "done", {"what": "✓"})
    return {"model": lm.name, "device": str(lm.device), "threads": torch.get_num_threads(),
            "lengths": lengths, "max_seq": max_seq, "block_size": block_size, "pool_factor": POOL_FACTOR,
            "steps": steps, "repeats": repeats, "seed": seed,
            "ms_per_token": per_order, "scattered_over_in_order": ratio, "tables": tables,
            "seconds": time.perf_counter() - began,
            **timed("timed.locality", steps=steps, repeats=repeats, factor=POOL_FACTOR)}
