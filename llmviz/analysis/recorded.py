"""Which tensors a step recorded (C1-C4 pages draw only what is there).

A live run in the app records every tensor (capture level "full"); a trace saved elsewhere may hold only
shapes ("meta"), nothing ("off"), or a filtered subset. Pages ask here before drawing, and say what is missing.
"""

from __future__ import annotations


def missing_tensors(step, names: list[str]) -> list[str]:
    """The names among `names` whose tensor the step did not keep (no record, or a record without array)."""
    return _missing(step, names, lambda record: record.array is not None)


def missing_row_norms(step, names: list[str]) -> list[str]:
    """The names among `names` whose rows' norms the step cannot give: no tensor, and no norms kept when its
    tensor was dropped (llmviz/trace/budget.py). The cache grid needs only these norms."""
    return _missing(step, names, lambda record: record.array is not None or record.row_norms is not None)


def _missing(step, names: list[str], held) -> list[str]:
    present = {record.name for record in step.hooks if held(record)}
    return [name for name in names if name not in present]
