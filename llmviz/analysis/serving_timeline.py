"""A serving run's requests over steps, bounded for drawing (C15): what each request was doing at each
step, counted into at most MAX_ROWS rows of requests and MAX_CELLS cells in all, and step-indexed series cut to
at most MAX_POINTS points.

A Gantt of every request at every step grew with requests x steps: 1,024 requests over 10,000 steps were 10
million cells, a 225 MB figure Streamlit refused and 15 s of CPU on every rerun. Here a trace small enough
(the built-in ones at the page's slot counts) keeps one cell per request and step, as analysis.serving.timeline
draws it; a larger one is binned: consecutive requests share a row, consecutive steps a column, and each cell
counts the request-steps of each state in it. A cell shows the state most of its busy request-steps (waiting,
prefill, decode, idle) were in, so that the requests being served stay visible among many that have not
arrived or are done; a cell with none busy shows whichever of those two it holds more of.

The counts come from each request's intervals (not arrived until its arrival, done after its last token) and
the rows the records list, never from the [requests, steps] grid: the cost is the records' rows plus requests
x columns, whatever the span.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmviz.analysis.serving import DECODE, DONE, IDLE, NOT_ARRIVED, PREFILL, STATES, WAITING
from llmviz.trace.schedule import step_record

MAX_ROWS = 128  # rows of requests drawn (900 px of chart: 7 px a row)
MAX_CELLS = 40_000  # cells drawn in all: ~1 MB of figure JSON with each cell's hover text
MAX_POINTS = 1_000  # points of a step-indexed series
BUSY = (WAITING, PREFILL, DECODE, IDLE)  # what a binned cell shows first
FED = {"prefill": PREFILL, "decode": DECODE, "idle": IDLE}


@dataclass(frozen=True)
class Timeline:
    """Requests over steps in cells: `counts[row, column, state]` request-steps, `shown[row, column]` the state a
    cell shows and `share` its part of the cell's request-steps. Row r holds requests ids[r * per_row:(r + 1) *
    per_row] (sorted ids), column c the steps c * per_column .. (c + 1) * per_column - 1 (fewer in the last)."""

    ids: tuple
    steps: int
    per_row: int
    per_column: int
    counts: np.ndarray
    shown: np.ndarray
    share: np.ndarray

    @property
    def aggregated(self) -> bool:
        """Whether a cell holds more than one request-step (else it is analysis.serving.timeline's grid)."""
        return self.per_row > 1 or self.per_column > 1

    def row_ids(self) -> list[tuple[int, int]]:
        """(first id, last id) of each row's requests."""
        n, g = len(self.ids), self.per_row
        return [(self.ids[i], self.ids[min(n, i + g) - 1]) for i in range(0, n, g)]

    def row_names(self) -> list[str]:
        """Each row as its ids read: "8–15", or "16" for a row of one request."""
        return [str(a) if a == b else f"{a}–{b}" for a, b in self.row_ids()]

    def centers(self) -> np.ndarray:
        """The step at the middle of each column (a whole step: a binned column spans an odd number of steps)."""
        return np.arange(self.shown.shape[1]) * self.per_column + (self.per_column - 1) // 2


def bins(requests: int, steps: int, max_rows: int = MAX_ROWS, max_cells: int = MAX_CELLS) -> tuple[int, int]:
    """(requests a row, steps a column) that keep the cells within the bounds; a column of more than one step
    spans an odd number, so that its middle is a step."""
    per_row = max(1, math.ceil(requests / max_rows))
    columns = max(1, max_cells // math.ceil(requests / per_row))
    per_column = max(1, math.ceil(steps / columns))
    if per_column > 1 and per_column % 2 == 0:
        per_column += 1
    return per_row, per_column


def _overlap(start: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """[requests, columns] steps of each request's interval [start, end) inside each column [lo, hi)."""
    return np.clip(np.minimum(end[:, None], hi[None, :]) - np.maximum(start[:, None], lo[None, :]), 0, None)


def _fed(result: dict, row_of: dict, per_row: int, per_column: int, shape: tuple) -> np.ndarray:
    """[rows, columns, states] of the request-steps the records list as fed (prefill, decode) or idle."""
    rows, cols, states = [], [], []
    for step, rec in enumerate(map(step_record, result["records"])):
        for rid, _slot, take, kind in rec.rows:
            if take > 0 or kind == "idle":
                rows.append(row_of[rid] // per_row)
                cols.append(step // per_column)
                states.append(FED[kind])
    fed = np.zeros(shape, dtype=np.int64)
    np.add.at(fed, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
                    np.asarray(states, dtype=np.int64)), 1)
    return fed


def binned_timeline(result: dict, max_rows: int = MAX_ROWS, max_cells: int = MAX_CELLS) -> Timeline:
    """A scheduler's result (records, token_steps, arrival_steps) as a Timeline within the bounds; with a cell per
    request-step its `shown` is analysis.serving.timeline's grid."""
    ids = sorted(result["token_steps"])
    steps = len(result["records"])
    per_row, per_column = bins(len(ids), steps, max_rows, max_cells)
    n_rows, n_cols = math.ceil(len(ids) / per_row), math.ceil(steps / per_column)
    arrival = np.array([result["arrival_steps"][rid] for rid in ids], dtype=np.int64)
    done = np.array([result["token_steps"][rid][-1] + 1 for rid in ids], dtype=np.int64)
    lo = np.arange(n_cols, dtype=np.int64) * per_column
    hi = np.minimum(lo + per_column, steps)
    starts = np.arange(0, len(ids), per_row)

    def grouped(spans: np.ndarray) -> np.ndarray:
        return np.add.reduceat(spans, starts, axis=0)

    counts = _fed(result, {rid: i for i, rid in enumerate(ids)}, per_row, per_column, (n_rows, n_cols, len(STATES)))
    counts[..., NOT_ARRIVED] = grouped(_overlap(np.zeros_like(arrival), arrival, lo, hi))
    counts[..., WAITING] = grouped(_overlap(arrival, done, lo, hi)) - counts[..., PREFILL] - counts[..., DECODE]
    counts[..., DONE] = grouped(_overlap(done, np.full_like(done, steps), lo, hi)) - counts[..., IDLE]
    return Timeline(tuple(ids), steps, per_row, per_column, counts, *_shown(counts))


def _shown(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's state (its most common busy one, else the more common of not arrived and done) and its share."""
    busy = counts[..., list(BUSY)]
    quiet = counts[..., [NOT_ARRIVED, DONE]]
    shown = np.where(busy.sum(axis=-1) > 0, np.array(BUSY)[busy.argmax(axis=-1)],
                     np.array([NOT_ARRIVED, DONE])[quiet.argmax(axis=-1)])
    total = counts.sum(axis=-1)
    share = np.take_along_axis(counts, shown[..., None], axis=-1)[..., 0] / np.maximum(total, 1)
    return shown, share


def step_series(values: list[float], max_points: int = MAX_POINTS) -> tuple[list[float], list[float], int]:
    """(steps, values, steps a point) of a step-indexed series: itself when it has at most `max_points` values,
    else the mean of each run of `per` consecutive steps, at the run's middle step."""
    per = max(1, math.ceil(len(values) / max_points))
    if per == 1:
        return list(range(len(values))), list(values), 1
    arr = np.asarray(values, dtype=np.float64)
    starts = np.arange(0, len(arr), per)
    sums = np.add.reduceat(arr, starts)
    widths = np.minimum(starts + per, len(arr)) - starts
    return (starts + (widths - 1) / 2).tolist(), (sums / widths).tolist(), per
