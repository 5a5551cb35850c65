"""StepTimer: wall time of the phases and layers of one step, honest on every device.

On CUDA the marks are CUDA events (read after one synchronize at the end of the step); elsewhere they
are `time.perf_counter()` readings taken after the device has finished the work before them (CPU ops
are synchronous; MPS is synchronized explicitly). Whatever capture work the forward pass does sits
inside the marks, so its cost shows in the figures (the trace records the capture level beside them).
"""

from __future__ import annotations

import statistics
import time

import torch


class StepTimer:
    def __init__(self, device: torch.device):
        self.device = device
        self._cuda = device.type == "cuda"
        self._marks: list[tuple[str, object]] = []

    def _now(self):
        if self._cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        if self.device.type == "mps":
            torch.mps.synchronize()
        return time.perf_counter()

    def mark(self, label: str) -> None:
        """Close the span that began at the previous mark and name it `label`."""
        self._marks.append((label, self._now()))

    def start(self) -> None:
        self._marks = [("start", self._now())]

    def spans_ms(self) -> dict[str, float]:
        """Milliseconds per labelled span; labels that repeat (none should) are summed."""
        if self._cuda:
            torch.cuda.synchronize(self.device)
        spans: dict[str, float] = {}
        for (_, before), (label, after) in zip(self._marks, self._marks[1:], strict=False):
            ms = before.elapsed_time(after) if self._cuda else (after - before) * 1000.0
            spans[label] = spans.get(label, 0.0) + ms
        return spans


def spread(values: list[float]) -> dict:
    """Repeated timings as the benchmarks and the labs report them: median, min, max, and every value."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "all": [round(v, 4) for v in values]}
