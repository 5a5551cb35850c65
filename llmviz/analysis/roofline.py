"""The roofline of this device and where each step of a run sits on it (C7).

A step does F FLOPs and moves B bytes; its arithmetic intensity is I = F / B. A device computes at most P FLOP/s
and moves at most W bytes/s, so the step runs at most at min(P, W x I) FLOP/s: below the ridge I = P / W it is
memory-bound (a decode step at batch 1, I ~ 1 FLOP/byte), above it compute-bound (a long prefill). On a CPU W
depends on where the bytes are: a working set that fits in the caches (one layer's weights of a small model)
streams several times faster than one far beyond them, so the probes measure both.

Pure arithmetic: FLOPs and bytes from predict's rules and the run's real shapes, times from the run's trace.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.analysis.predict import Setup, Shape, kv_bytes_per_token, kv_read_bytes, step_flops, weight_read_bytes


@dataclass(frozen=True)
class DeviceLimits:
    """What the probes measured on this device, in the same run."""

    peak_gflop_per_s: float  # a large matmul, best pass
    dram_gb_per_s: float  # reading a buffer far beyond the caches
    cache_gb_per_s: float | None = None  # reading one layer's weights again and again (None on a GPU)

    @property
    def ridge(self) -> float:
        """FLOPs per byte above which a step is compute-bound (from memory beyond the caches)."""
        return self.peak_gflop_per_s / self.dram_gb_per_s

    def ceiling(self, intensity: float, cached: bool = False) -> float:
        """GFLOP/s a step of this intensity can reach at most."""
        bandwidth = self.cache_gb_per_s if cached and self.cache_gb_per_s else self.dram_gb_per_s
        return min(self.peak_gflop_per_s, bandwidth * intensity)


def row_kv_bytes(setup: Setup, new: int, cached_before: int) -> int:
    """One row's K/V traffic in a step: the cached K/V its tokens attend to, and the K/V it writes."""
    return kv_read_bytes(setup, cached_before + new) + new * kv_bytes_per_token(setup)


def step_bytes(setup: Setup, new: int, cached_before: int, rows: int = 1) -> int:
    """Bytes one step moves at least: every weight it multiplies by, read once, and each row's K/V traffic
    (activations, small beside them, left out)."""
    return weight_read_bytes(setup) + rows * row_kv_bytes(setup, new, cached_before)


@dataclass(frozen=True)
class StepPoint:
    index: int
    phase: str
    new: int  # tokens fed per row
    rows: int
    flops: int
    bytes: int
    ms: float  # measured

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def achieved_gflop_per_s(self) -> float:
        return self.flops / (self.ms * 1e6)

    def bound_ms(self, limits: DeviceLimits) -> float:
        """The step's time if it ran at the roofline: the larger of its compute time and its memory time."""
        return max(self.flops / (limits.peak_gflop_per_s * 1e6), self.bytes / (limits.dram_gb_per_s * 1e6))


def run_points(trace_steps, model_config: dict, engine_config: dict) -> list[StepPoint]:
    """Each step of a recorded run with its FLOPs and bytes from its real shapes, row by row: the tokens each row
    fed (pads left out), the cache's length before the step (a batch's rows start together: the longest row
    sets it), and the step's measured time."""
    points = []
    for step in trace_steps:
        kv = step.kv
        setup = Setup.of(Shape.from_config(model_config), engine_config, kv.get("max_seq", 2048))
        fed = [n for n in (int((row >= 0).sum()) for row in step.input_ids) if n]  # rows that fed any token
        new = max(fed, default=0)
        before = max(0, int(kv.get("seq_len", new)) - new)
        flops = sum(step_flops(setup, n, before) for n in fed)
        moved = weight_read_bytes(setup) + sum(row_kv_bytes(setup, n, before) for n in fed)
        points.append(StepPoint(step.index, step.phase, new, max(1, len(fed)), flops, moved,
                                float(step.timings["total_ms"])))
    return points
