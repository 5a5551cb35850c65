"""Decode slowing down, measured (C18, §4.2): decode ms/token at `points` cached lengths from 16 tokens to
the model's whole context (2,040 on the GPT-2-124M shape), by the layout sweep's one timing rule (its cache filled
with seeded random K and V, no prefill: llmviz/labs/layout_sweep.py) on one layout (contiguous unless asked), and
the memory bandwidth probe in the same run, for the slope the bytes predict (analysis/decode_slope.py reads both).
"""

from __future__ import annotations

from llmviz.analysis.decode_slope import spread_lengths
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.platform.devices import dtype_name
from llmviz.labs.layout_sweep import layout_sweep, sweep_max_seq
from llmviz.labs.probes import memory_bandwidth
from llmviz.trace.progress import Progress, silent, within

POINTS, STEPS, REPEATS = 10, 4, 6  # 6 rounds: the fewest whose median slope has a 95% interval
PROBE_BYTES = 256 * 2**20  # past every CPU cache, as the claims' compares probe


def decode_slope(lm: LoadedModel, points: int = POINTS, steps: int = STEPS, repeats: int = REPEATS,
                 progress: Progress | None = None, seed: int = 0, layout: str = "contiguous",
                 backend: str = "sdpa") -> dict:
    """The sweep's result (lengths, ms_per_token with every round, what was timed) with "element" (the weights'
    and cache's dtype, as the arithmetic names it) and "bandwidth" (the probe, measured after the sweep)."""
    progress = progress or silent
    lengths = spread_lengths(sweep_max_seq(lm), points, steps)
    result = layout_sweep(lm, lengths, (layout,), steps, repeats, within(progress, 0.0, 0.9, "sweep"),
                          seed=seed, backend=backend, control=False)  # a slope's interval: its rounds' own slopes
    progress(0.92, "probe", {"what": "bandwidth"})
    bandwidth = memory_bandwidth(lm.device, PROBE_BYTES, repeats=3)
    progress(1.0, "done", {"what": "✓"})
    return result | {"element": dtype_name(lm.dtype), "bandwidth": bandwidth, "model_config": lm.cfg.to_dict()}
