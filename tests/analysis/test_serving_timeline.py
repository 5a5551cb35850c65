"""The Serving Gantt's cells, bounded: one cell per request-step while a trace is small, binned rows of
requests and columns of steps beyond that, each cell's state counts and shown state; series cut to a bounded
number of points. Hand-computed cases, and the old grid (analysis.serving.timeline) as the reference."""

import numpy as np
import pytest

from llmviz.analysis.serving import DECODE, DONE, NOT_ARRIVED, PREFILL, WAITING, timeline
from llmviz.analysis.serving_timeline import MAX_CELLS, MAX_ROWS, binned_timeline, bins, step_series
from llmviz.trace.schedule import StepRecord


def one_slot() -> dict:
    """Three requests through one slot, by hand: 0 arrives at 0 (prompt 4, 3 tokens), 1 at 1 (prompt 2, 2 tokens),
    2 at 3 (prompt 3, 1 token); each waits for the one before it.

        step     0  1  2  3  4  5
        req 0    P  D  D  .  .  .      (. done, - not arrived, W waiting)
        req 1    -  W  W  P  D  .
        req 2    -  -  -  W  W  P
    """
    rows = [[(0, 0, 4, "prefill")], [(0, 0, 1, "decode")], [(0, 0, 1, "decode")], [(1, 0, 2, "prefill")],
            [(1, 0, 1, "decode")], [(2, 0, 3, "prefill")]]
    return {"records": [StepRecord(i, 1.0, r, 0, 0, 0) for i, r in enumerate(rows)],
            "token_steps": {0: [0, 1, 2], 1: [3, 4], 2: [5]}, "arrival_steps": {0: 0, 1: 1, 2: 3}}


BY_HAND = np.array([[PREFILL, DECODE, DECODE, DONE, DONE, DONE],
                    [NOT_ARRIVED, WAITING, WAITING, PREFILL, DECODE, DONE],
                    [NOT_ARRIVED, NOT_ARRIVED, NOT_ARRIVED, WAITING, WAITING, PREFILL]])


def test_a_small_trace_keeps_a_cell_per_request_step():
    view = binned_timeline(one_slot())
    assert not view.aggregated and (view.per_row, view.per_column) == (1, 1)
    assert (view.shown == BY_HAND).all() and (view.share == 1).all()
    assert (timeline(one_slot())[1] == BY_HAND).all()  # the old grid agrees with the hand-drawn one
    assert view.row_names() == ["0", "1", "2"] and view.centers().tolist() == [0, 1, 2, 3, 4, 5]


def test_binned_cells_count_each_state_and_show_the_most_common_busy_one():
    # 2 rows at most: 2 requests a row; 4 cells at most: 2 columns of 3 steps
    view = binned_timeline(one_slot(), max_rows=2, max_cells=4)
    assert view.aggregated and (view.per_row, view.per_column) == (2, 3)
    # row 0 = requests 0 and 1; steps 0-2: P D D and - W W; steps 3-5: . . . and P D .
    assert view.counts[0, 0].tolist() == [1, 2, 1, 2, 0, 0]  # not arrived, waiting, prefill, decode, idle, done
    assert view.counts[0, 1].tolist() == [0, 0, 1, 1, 0, 4]
    # row 1 = request 2: steps 0-2 not arrived; steps 3-5: W W P
    assert view.counts[1, 0].tolist() == [3, 0, 0, 0, 0, 0] and view.counts[1, 1].tolist() == [0, 2, 1, 0, 0, 0]
    # waiting 2 ties decode 2: the first busy state wins; prefill 1 ties decode 1 the same way; a cell with
    # nothing busy shows what it holds
    assert view.shown.tolist() == [[WAITING, PREFILL], [NOT_ARRIVED, WAITING]]
    assert view.share.ravel().tolist() == pytest.approx([2 / 6, 1 / 6, 1.0, 2 / 3])
    assert view.row_names() == ["0–1", "2"] and view.centers().tolist() == [1, 4]


def test_binned_counts_are_the_grid_summed_over_each_cell():
    """Against the old [requests, steps] grid: every cell's counts are its request-steps in each state."""
    result = one_slot()
    _, grid = timeline(result)
    for max_rows, max_cells in ((1, 1), (2, 2), (3, 6), (2, 5), (1, 3)):
        view = binned_timeline(result, max_rows=max_rows, max_cells=max_cells)
        g, w = view.per_row, view.per_column
        for r in range(view.counts.shape[0]):
            for c in range(view.counts.shape[1]):
                cell = grid[r * g:(r + 1) * g, c * w:(c + 1) * w]
                assert view.counts[r, c].tolist() == np.bincount(cell.ravel(), minlength=6).tolist()


def test_the_bins_stay_within_the_bounds_whatever_the_trace():
    # the hostile trace: 1,024 requests over 10,001 steps -> 8 a row (1,024 / 128), 312 columns at most
    # (40,000 // 128), so ceil(10,001 / 312) = 33 steps a column (odd: its middle is a step)
    assert bins(1024, 10_001) == (8, 33)
    assert bins(32, 954) == (1, 1)  # the built-in mixed in one slot: 954 steps, a cell each
    assert bins(32, 1250) == (1, 1) and bins(32, 1251) == (1, 3)  # 1,250 = 40,000 // 32 columns; 2 is made 3
    for requests, steps in ((1, 1), (1, 10**6), (1024, 1), (1024, 10**6), (129, 7), (1000, 40_000)):
        per_row, per_column = bins(requests, steps)
        rows, columns = -(-requests // per_row), -(-steps // per_column)
        assert rows <= MAX_ROWS and rows * columns <= MAX_CELLS, (requests, steps)
        assert per_column == 1 or per_column % 2 == 1


def test_a_long_series_is_averaged_over_runs_of_steps():
    assert step_series([0.5, 1.0], max_points=4) == ([0, 1], [0.5, 1.0], 1)
    # 7 values, 3 points at most: runs of 3 steps (0-2, 3-5, 6), each at its middle step
    steps, values, per = step_series([0, 1, 2, 3, 4, 5, 6], max_points=3)
    assert per == 3 and steps == [1, 4, 6] and values == [1, 4, 6]
    steps, values, per = step_series([1.0] * 10_001)
    assert len(values) <= 1000 and per == 11 and values == [1.0] * len(values)
