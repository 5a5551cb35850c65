"""Throughput against batch size (C13; claim K5): one prompt run as batches of 1, 2, 4, 8 copies.

A decode step reads every weight once whatever the batch, so while the step stays memory-bound a batch of
b rows costs little more than one row and tokens/s grows almost b-fold; once the matmuls become the cost
(b rows x the weights' FLOPs against the device's FLOP/s) it flattens. Every row is the same prompt, so
only the batch size changes (no padding, the same context length). Timed per step at capture off: the
engine's timed region (planning the step, the forward pass, sampling; device synchronized), greedy, EOS
ignored so every row decodes every step; a warm-up round, then `repeats` rounds with the sizes
interleaved; medians.
"""

from __future__ import annotations

import statistics

import torch

from llmviz.engine.lean_steps import lean_generate
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.session import Session
from llmviz.engine.timing import spread
from llmviz.errors import ConfigError
from llmviz.i18n.translator import timed
from llmviz.labs.rounds import CONTROL, interleaved
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.progress import Progress, silent

MAX_BATCH = 8


def _run(lm: LoadedModel, rows: list[list[int]], steps: int, padding: str, device: str) -> dict:
    config = EngineConfig(device=device, capture="off", logit_lens_top_k=0, stop_at_eos=False, padding=padding,
                          sampling=SamplingConfig(temperature=0),
                          max_seq_len=min(lm.cfg.max_position_embeddings, max(map(len, rows)) + steps + 1))
    # Timings only: no step keeps its whole logits (8 rows x 129 steps of GPT-2's vocab were 200 MB a run)
    trace = lean_generate(Session(lm, config=config, prompt_ids=rows), steps + 1)
    prefill = trace.steps[0]
    return {"prefill_ms": prefill.timings["total_ms"], "prompt_tokens": sum(map(len, rows)),
            "padded_slots": prefill.timings["padded_slots"],
            "decode_ms": statistics.median(s.timings["total_ms"] for s in trace.steps[1:])}


def batch_sweep(lm: LoadedModel, prompt: list[int], sizes: tuple = (1, 2, 4, 8), steps: int = 8,
                repeats: int = 2, padding: str = "right", device: str = "auto",
                progress: Progress | None = None, control: bool = True) -> dict:
    """Batch b runs b copies of `prompt` (token ids); with `control`, the first size once more in each round (its
    A-vs-A noise floor). progress(fraction, stage, values): stages "round", "done"."""
    if not prompt or not all(isinstance(i, int) for i in prompt):
        raise ConfigError("batch_sweep needs a prompt of at least one token id")
    if not sizes or any(not isinstance(b, int) or not 1 <= b <= MAX_BATCH for b in sizes):
        raise ConfigError(f"batch sizes must be whole numbers in 1..{MAX_BATCH}, got {list(sizes)}")
    if not 1 <= steps <= 128 or not 1 <= repeats <= 10:
        raise ConfigError("steps must be in 1..128 and repeats in 1..10")
    progress = progress or silent
    batches = {b: [list(prompt)] * b for b in sizes}
    runs: dict = {b: [] for b in (*sizes, CONTROL)}
    per_round = len(sizes) + control
    total = (repeats + 1) * per_round
    for r in range(repeats + 1):
        for j, (key, b) in enumerate(interleaved(sizes, r, control)):
            progress((r * per_round + j) / total, "round", {"batch": b, "round": r + 1, "rounds": repeats + 1})
            run = _run(lm, batches[b], steps, padding, device)
            if r:  # round 0 warms up
                runs[key].append(run)
    progress(1.0, "done", {})
    out = []
    for b in sizes:
        rs = runs[b]
        decode, prefill = spread([x["decode_ms"] for x in rs]), spread([x["prefill_ms"] for x in rs])
        out.append({"batch": b, "decode_ms_per_step": decode, "prefill_ms": prefill,
                    "decode_tokens_per_s": b * 1000 / decode["median"],
                    "prefill_tokens_per_s": rs[0]["prompt_tokens"] * 1000 / prefill["median"],
                    "prefill_padded_slots": rs[0]["padded_slots"]})
    again = {"batch": sizes[0], "prefill_ms": spread([x["prefill_ms"] for x in runs[CONTROL]]),
             "decode_ms_per_step": spread([x["decode_ms"] for x in runs[CONTROL]])} if control else None
    return {"sizes": out, "model": lm.name, "device": str(lm.device), "threads": torch.get_num_threads(),
            "steps": steps, "repeats": repeats, "padding": padding,
            "prompt_tokens": len(prompt), **({"control": again} if control else {}),
            **timed("timed.batch_sweep", repeats=repeats)}
