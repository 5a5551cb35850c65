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
