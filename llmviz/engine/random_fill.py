"""A cache filled without a prefill: seeded random keys and values written through the layout's own write path
(C8, C18; claims K2-K4, K10, K11).

A decode step's cost depends on how many keys it reads, where they lie and in what dtype, not on their values;
the prefill of 1,000 tokens of GPT-2-124M takes more than a second on a CPU and would be most of a timing
workload at a long context. Writing random K and V (the same values in every layer) puts the cache where a long
prompt's prefill would have left it, in milliseconds: the layout sweep (labs/layout_sweep.py), the C18 slope and
the decode claims (labs/decode_pair.py, through Session.fill_random) time decode steps from there. The tokens a
run then draws mean nothing: such a run is timed, never read.
"""

from __future__ import annotations

import torch

from llmviz.engine.kv.base import KVCache
from llmviz.engine.phases import plan_step
from llmviz.engine.step_batch import layer_windows
from llmviz.trace.model_config import ModelConfig


def fill_random(cache: KVCache, cfg: ModelConfig, seq_id: int, ids: list[int], gen: torch.Generator,
                dtype: torch.dtype, device: torch.device) -> None:
    """Store len(ids) tokens of seeded random K and V for sequence `seq_id` (its cache rows empty or holding
    earlier tokens: the new ones follow them), through the layout's own write (a quantized cache quantizes
    them as a prefill's would be)."""
    step = plan_step(cache, [ids], [seq_id], backend="eager", windows=layer_windows(cfg), device=device)
    shape = (1, cfg.num_kv_heads, len(ids), cfg.head_dim)  # [b, kv, n, hd]
    k = torch.randn(shape, generator=gen).to(device, dtype)
    v = torch.randn(shape, generator=gen).to(device, dtype)
    for layer in range(cfg.num_layers):
        cache.write(layer, step, k, v)
