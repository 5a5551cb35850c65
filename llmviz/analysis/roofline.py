"""The roofline of this device and where each step of a run sits on it (C7; issue 11).

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


def step_bytes(setup: Setup, new: int, cached_before: int, rows: int = 1) -> int:
    """Bytes one step moves at least: every weight it multiplies by, read once, and per row the cached K/V it
    attends to plus the K/V it writes for its new tokens (activations, small beside them, left out)."""
    kv = kv_read_bytes(setup, cached_before + new) + new * kv_bytes_per_token(setup)
    return weight_read_bytes(setup) + rows * kv


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
    """Each step of a recorded run with its FLOPs and bytes from its real shapes: tokens fed (pads left out),
    the cache's length before it, the rows of the batch, and its measured time."""
    points = []
    for step in trace_steps:
        kv = step.kv
        setup = Setup.of(Shape.from_config(model_config), engine_config, kv.get("max_seq", 2048))
        fed = [int((row >= 0).sum()) for row in step.input_ids]
        rows = max(1, sum(1 for n in fed if n))
        new = max(fed)
        before = max(0, int(kv.get("seq_len", new)) - new)
        points.append(StepPoint(step.index, step.phase, new, rows, step_flops(setup, new, before, rows),
                                step_bytes(setup, new, before, rows), float(step.timings["total_ms"])))
    return points
