"""The padded-batch grid (C13) on a hand-made run: which slots are prompt, generated, pad or idle."""

from types import SimpleNamespace

import numpy as np

from llmviz.analysis.batch_grid import GENERATED, IDLE, PAD, PROMPT, batch_grid, row_outputs, throughput_table


def step(input_ids, sampled):
    return SimpleNamespace(input_ids=np.array(input_ids), sampled=np.array(sampled))


def test_grid_of_a_two_row_batch():
    steps = [step([[5, 6, 7], [8, -1, -1]], [9, 10]),  # prefill: row 1 padded by 2 (right padding)
             step([[9], [10]], [11, 2]),  # row 1 draws EOS (2) here ...
             step([[11], [-1]], [12, -1])]  # ... and idles in the next step
    g = batch_grid(steps)
    assert g.kinds.tolist() == [[PROMPT, PROMPT, PROMPT, GENERATED, GENERATED],
                                [PROMPT, PAD, PAD, GENERATED, IDLE]]
    assert g.ids.tolist()[1] == [8, -1, -1, 10, -1]
    assert g.step_of_column.tolist() == [0, 0, 0, 1, 2]
    assert (g.slots, g.wasted) == (10, 3) and g.utilization == 0.7
    assert row_outputs(steps, 0) == [9, 11, 12] and row_outputs(steps, 1) == [10, 2]


def test_throughput_table_speedups():
    rows = [{"batch": 1, "decode_tokens_per_s": 100.0, "prefill_tokens_per_s": 1000.0,
             "decode_ms_per_step": {"median": 10.0}},
            {"batch": 4, "decode_tokens_per_s": 300.0, "prefill_tokens_per_s": 2500.0,
             "decode_ms_per_step": {"median": 13.3}}]
    table = throughput_table({"sizes": rows})
    assert [r["decode_speedup"] for r in table] == [1.0, 3.0]
    assert [r["prefill_speedup"] for r in table] == [1.0, 2.5]


def test_a_speedup_is_the_median_of_its_rounds_ratios():
    """Issue 48 (4): the Batch page printed x1.48 (a ratio of medians) above a verdict on x1.38 (a median of
    per-round ratios). With the rounds kept, the page's figure is the verdict's: batch 8 over batch 1 per round,
    8 x 10/60, 8 x 12/64, 8 x 11/80 -> x1.333, x1.5, x1.1; median x1.333."""
    rows = [{"batch": 1, "decode_tokens_per_s": 100.0, "prefill_tokens_per_s": 6400.0,
             "decode_ms_per_step": {"median": 10.0}, "prefill_ms": {"median": 11.0, "all": [10.0, 12.0, 11.0]}},
            {"batch": 8, "decode_tokens_per_s": 500.0, "prefill_tokens_per_s": 64 * 8 * 1000 / 64,
             "decode_ms_per_step": {"median": 16.0}, "prefill_ms": {"median": 64.0, "all": [60.0, 64.0, 80.0]}}]
    table = throughput_table({"sizes": rows})
    assert table[1]["prefill_speedup"] == np.float64(8 * 10 / 60)
    assert table[1]["prefill_speedup"] != rows[1]["prefill_tokens_per_s"] / rows[0]["prefill_tokens_per_s"]
    assert table[1]["decode_speedup"] == 5.0  # no rounds kept for decode here: the ratio of the rates
