"""Decode ms/token of the three KV layouts over a sweep of cached lengths (C8, C9; claim K3).

    fill      for each length L and layout, a fresh cache of one sequence is filled with L tokens: seeded
              random keys and values written through the layout's own write path, as a prefill writes
              them (one tensor per layer for the dynamic layout, blocks taken in order for the paged one),
              without the prefill's forward pass. A decode step's cost depends on how many keys it reads
              and where they lie, not on their values; the prefill of 2,000 tokens of GPT-2-124M takes
              seconds on a CPU, which would make the sweep minutes long.
    timed     `steps` greedy decode steps from there (the first fed token is the seeded random prompt's
              last id), each the engine's timed region of a step: plan (positions, cache addressing),
              forward pass, greedy pick, device synchronized; ms/token of a run is their mean
    rounds    per length, one warm-up run of `warmup_steps` steps per layout (untimed), then `repeats`
              rounds over the layouts interleaved (the order rotates each round), a fresh cache each run;
              per layout and length the median over the rounds, with min and max
    control   in each round the first layout runs once more: its time against its first run's is the
              sweep's noise floor at each length
Lengths stay below the model's context (capped at DEFAULT_MAX_SEQ, as a session's max_seq_len): L + steps
tokens must fit.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.kv import make_kv_cache
from llmviz.engine.kv.base import KVCache
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.phases import decode, plan_step
from llmviz.engine.platform.memory import typed_out_of_memory
from llmviz.engine.random_fill import fill_random
from llmviz.engine.step_batch import layer_windows
from llmviz.engine.timing import StepTimer, spread
from llmviz.errors import ConfigError
from llmviz.i18n.translator import timed
from llmviz.labs.rounds import CONTROL, interleaved
from llmviz.trace.config import KV_LAYOUTS, default_max_seq
from llmviz.trace.progress import Progress, silent

MAX_LENGTHS, MAX_STEPS, MAX_REPEATS = 24, 64, 10
SHORT, LONG = 512, 1024  # the article's boundaries (K3): contiguous faster up to 512, paged faster past 1024
SWEEP_POINTS = (64, 256, 512, 1024, 1536)  # below the context; the longest length that fits is added


def sweep_max_seq(lm: LoadedModel) -> int:
    """The tokens per sequence a sweep's caches hold: the model's context, capped as a session caps it."""
    return default_max_seq(lm.cfg.max_position_embeddings)


def default_lengths(max_seq: int, steps: int = 8) -> list[int]:
    """SWEEP_POINTS that fit, plus the longest length that leaves room for `steps` new tokens."""
    longest = max_seq - steps
    return [n for n in SWEEP_POINTS if n < longest] + [longest] if longest >= 1 else []


def check_lengths(lengths, max_seq: int, steps: int) -> list[int]:
    """Sorted distinct lengths, each >= 1 with room for `steps` decode steps; ConfigError otherwise."""
    try:
        values = sorted({int(n) for n in lengths})
        whole = all(float(n) == int(n) for n in lengths)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"lengths must be whole numbers of tokens, got {lengths!r}") from exc
    if not values or not whole:
        raise ConfigError(f"lengths must be a non-empty list of whole numbers of tokens, got {lengths!r}")
    if len(values) > MAX_LENGTHS:
        raise ConfigError(f"at most {MAX_LENGTHS} lengths per sweep, got {len(values)}")
    limit = max_seq - steps
    bad = [n for n in values if not 1 <= n <= limit]
    if bad:
        raise ConfigError(f"length {bad[0]} does not fit: each length must be 1..{limit} tokens (the model's "
                          f"context of {max_seq} tokens, less the {steps} decode steps timed after it)",
                          code="sweep_length", length=bad[0], limit=limit, max_seq=max_seq, steps=steps)
    return values


def timed_decode(lm: LoadedModel, cache: KVCache, seq_id: int, token: int, steps: int, backend: str) -> list[float]:
    """ms of each of `steps` greedy decode steps: the same timed region as a session's step."""
    windows, out = layer_windows(lm.cfg), []
    for _ in range(steps):
        timer = StepTimer(lm.device)
        ctx = RunContext("off", (), timer)
        timer.start()
        step = plan_step(cache, [[token]], [seq_id], backend=backend, windows=windows, device=lm.device)
        ctx.mark("mask")
        logits = decode(lm.model, cache, step, ctx)  # [1, V]
        picked = logits.argmax(-1)
        ctx.mark("sample")
        out.append(sum(timer.spans_ms().values()))
        token = int(picked[0])
    return out


def _one_run(lm: LoadedModel, layout: str, ids: list[int], steps: int, *, max_seq: int, block_size: int,
             backend: str, seed: int) -> tuple[list[float], dict]:
    """A fresh cache of `layout` filled with len(ids) tokens, then `steps` timed decode steps."""
    cache = make_kv_cache(layout, lm.cfg, max_seq, capacity=1, model_dtype=lm.dtype, device=lm.device,
                          block_size=block_size)
    cache.add(0)
    with torch.inference_mode():
        fill_random(cache, lm.cfg, 0, ids[:-1], torch.Generator().manual_seed(seed), lm.dtype, lm.device)
        filled = cache.snapshot()
        ms = timed_decode(lm, cache, 0, ids[-1], steps, backend)
    return ms, filled


def _ratio_over(lengths: list[int], per_layout: dict, keep) -> dict | None:
    """Geometric mean over the lengths `keep` accepts of paged / contiguous and dynamic / contiguous."""
    picked = [i for i, n in enumerate(lengths) if keep(n)]
    if not picked or "contiguous" not in per_layout:
        return None
    out = {"lengths": [lengths[i] for i in picked]}
    base = per_layout["contiguous"]["median"]
    for layout in ("paged", "dynamic"):
        if layout in per_layout:
            logs = [math.log(per_layout[layout]["median"][i] / base[i]) for i in picked]
            out[f"{layout}_over_contiguous"] = math.exp(statistics.fmean(logs))
    return out


def layout_sweep(lm: LoadedModel, lengths=None, layouts=KV_LAYOUTS, steps: int = 8, repeats: int = 2,
                 progress: Progress | None = None, *, block_size: int = 16, backend: str = "sdpa",
                 warmup_steps: int = 2, seed: int = 0, control: bool = True) -> dict:
    """Decode ms/token at each cached length for each layout (module docstring: what is filled and timed)."""
    progress = progress or silent
    if not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise ConfigError(f"steps must be a whole number in 1..{MAX_STEPS}, got {steps!r}")
    if not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(f"repeats must be a whole number in 1..{MAX_REPEATS}, got {repeats!r}")
    if not isinstance(warmup_steps, int) or not 0 <= warmup_steps <= MAX_STEPS:
        raise ConfigError(f"warmup_steps must be a whole number in 0..{MAX_STEPS}, got {warmup_steps!r}")
    layouts = list(dict.fromkeys(layouts))
    unknown = [x for x in layouts if x not in KV_LAYOUTS]
    if not layouts or unknown:
        raise ConfigError(f"layouts must name some of {', '.join(KV_LAYOUTS)}, got {layouts!r}")
    max_seq = sweep_max_seq(lm)
    lengths = check_lengths(default_lengths(max_seq, steps) if lengths is None else lengths, max_seq, steps)
    began = time.perf_counter()
    gen = torch.Generator().manual_seed(seed)
    runs = {x: [[] for _ in lengths] for x in layouts}
    kv = {x: [] for x in layouts}
    again = [[] for _ in lengths]  # the control: the first layout once more in each round
    total = len(lengths) * ((len(layouts) + control) * repeats + (len(layouts) if warmup_steps else 0))
    done = 0
    for i, n in enumerate(lengths):
        # the prompt: n tokens cached, then the first token fed
        ids = torch.randint(0, lm.cfg.vocab_size, (n + 1,), generator=gen).tolist()
        common = {"max_seq": max_seq, "block_size": block_size, "backend": backend, "seed": seed + i}
        with typed_out_of_memory(f"the layout sweep at {n} tokens", "use shorter lengths"):
            if warmup_steps:
                for layout in layouts:
                    progress(done / total, "warm-up", {"what": f"{n} · {layout}", "tokens": n, "layout": layout})
                    _one_run(lm, layout, ids, warmup_steps, **common)
                    done += 1
            for r in range(repeats):
                for key, layout in interleaved(layouts, r, control):
                    progress(done / total, "round", {"what": f"{n} · {layout}", "tokens": n, "layout": layout})
                    ms, filled = _one_run(lm, layout, ids, steps, **common)
                    (again if key == CONTROL else runs[layout])[i].append(statistics.fmean(ms))
                    if r == 0 and key != CONTROL:
                        kv[layout].append({k: filled[k] for k in ("bytes_allocated", "bytes_used", "slots_allocated")})
                    done += 1
    per_layout = {}
    for layout in layouts:
        cells = [spread(v) for v in runs[layout]]
        per_layout[layout] = {key: [c[key] for c in cells] for key in ("median", "min", "max", "all")}
    progress(1.0, "done", {"what": "✓"})
    out = {
        "model": lm.name, "device": str(lm.device), "threads": torch.get_num_threads(),
        "dtype": str(lm.dtype).removeprefix("torch."), "attn_backend": backend, "lengths": lengths,
        "layouts": layouts, "steps": steps, "repeats": repeats, "warmup_steps": warmup_steps, "seed": seed,
        "block_size": block_size, "max_seq": max_seq, "context": lm.cfg.max_position_embeddings,
        "weight_bytes": lm.weight_bytes,
        "ms_per_token": per_layout, "kv": kv, "seconds": time.perf_counter() - began,
        "k3": {"short": _ratio_over(lengths, per_layout, lambda n: n <= SHORT),
               "long": _ratio_over(lengths, per_layout, lambda n: n > LONG)},
        **timed("timed.layout_sweep", steps=steps, warmup_steps=warmup_steps, repeats=repeats),
    }
    if control:
        cells = [spread(v) for v in again]
        out["control"] = {"layout": layouts[0], "ms_per_token": {key: [c[key] for c in cells]
                                                                 for key in ("median", "min", "max", "all")}}
    return out
