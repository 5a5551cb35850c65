"""The one shape of a progress report: `progress(fraction, stage, values)`.

Every measurement in labs/ and every serving scheduler reports this way: `fraction` done (0..1), `stage` a key
naming what runs now ("round", "length", "K3", "step"...), `values` the numbers a message about it shows
({"round": 2, "rounds": 5}). The UI turns a report into its bar's text (llmviz/ui/measure.py), the CLI into a line.
Torch-free, so the layers above read it without the engine.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[float, str, dict], None]


def silent(fraction: float, stage: str, values: dict) -> None:
    """The report of a run nobody watches."""


def within(progress: Progress, start: float, end: float, stage: str | None = None) -> Progress:
    """A part of a longer run: its fraction 0..1 mapped onto start..end of the whole (clamped), its stage renamed
    when `stage` is given (the claims run names each part by its claim)."""
    def report(fraction: float, inner: str, values: dict) -> None:
        progress(start + (end - start) * min(max(fraction, 0.0), 1.0), stage or inner, values)

    return report
