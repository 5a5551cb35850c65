"""The roofline's arithmetic (C7) on a small config summed by hand: d 64, 4 heads of 16, 2 KV heads,
gated MLP of 128, 2 layers, vocabulary 320, untied, fp32."""

from types import SimpleNamespace

import numpy as np
import pytest

from llmviz.analysis.predict import Setup, Shape, decode_flops, step_flops
from llmviz.analysis.roofline import DeviceLimits, StepPoint, run_points, step_bytes

CONFIG = {"vocab_size": 320, "hidden_size": 64, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "head_dim": 16,
          "intermediate_size": 128, "max_position_embeddings": 64}
MATRICES = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128  # q, k and v, o, gate/up/down: 36,864 per block


def setup() -> Setup:
    return Setup(Shape.from_config(CONFIG), max_seq=64)


def test_flops_of_a_prefill_and_a_decode_step_by_hand():
    head = 2 * 320 * 64  # the output head, for the last token only
    prefill = 2 * 5 * 2 * MATRICES + head + 4 * 4 * 16 * 2 * (1 + 2 + 3 + 4 + 5)  # token p attends to p + 1
    assert step_flops(setup(), 5, 0) == prefill == 785_920
    decode = 2 * 2 * MATRICES + head + 4 * 4 * 16 * 2 * 6  # the 6th token attends to all 6
    assert step_flops(setup(), 1, 5) == decode_flops(setup(), 6) == decode == 191_488
    assert step_flops(setup(), 1, 5, rows=3) == 3 * decode


def test_bytes_and_bounds_by_hand():
    weights = 2 * (MATRICES + 2 * 64) * 4 + 64 * 4 + 2 * 320 * 64 * 4  # blocks (+ norms), final norm, two tables
    read = weights - 319 * 64 * 4  # a decode step reads one row of the embedding
    kv = 6 * 2 * (2 * 2 * 16 * 4) + 1 * 2 * 2 * 2 * 16 * 4  # 6 cached tokens read in 2 layers, 1 token written
    assert step_bytes(setup(), 1, 5) == read + kv == 381_952
    limits = DeviceLimits(peak_gflop_per_s=100, dram_gb_per_s=20, cache_gb_per_s=80)
    assert limits.ridge == 5 and limits.ceiling(1) == 20 and limits.ceiling(10) == 100
    assert limits.ceiling(1, cached=True) == 80
    point = StepPoint(1, "decode", 1, 1, 191_488, 381_952, ms=2.0)
    assert point.bound_ms(limits) == pytest.approx(381_952 / 20e9 * 1e3)  # memory-bound: bytes / bandwidth
    assert point.achieved_gflop_per_s == pytest.approx(191_488 / 2e-3 / 1e9)


def test_a_recorded_run_placed_by_its_shapes():
    steps = [SimpleNamespace(index=0, phase="prefill", input_ids=np.array([[3, 4, 5, 6, 7]]),
                             kv={"seq_len": 5, "max_seq": 64}, timings={"total_ms": 1.5}),
             SimpleNamespace(index=1, phase="decode", input_ids=np.array([[9]]), kv={"seq_len": 6, "max_seq": 64},
                             timings={"total_ms": 0.5})]
    first, second = run_points(steps, CONFIG, {"dtype": "fp32"})
    assert (first.new, first.flops, second.new, second.flops) == (5, 785_920, 1, 191_488)
    assert second.bytes == 381_952 and first.intensity > second.intensity  # the prefill does more per byte
    padded = SimpleNamespace(index=2, phase="decode", input_ids=np.array([[9], [-1]]),  # a finished row pads
                             kv={"seq_len": 6, "max_seq": 64}, timings={"total_ms": 0.5})
    (point,) = run_points([padded], CONFIG, {"dtype": "fp32"})
    assert (point.rows, point.flops, point.bytes) == (1, 191_488, 381_952)  # the pad costs nothing
