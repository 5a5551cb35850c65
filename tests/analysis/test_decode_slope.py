"""Decode slowing down (C18): the slope of a sweep read by analysis/decode_slope.py, on hand-made sweeps
of the GPT-2-124M shape, the predicted slope counted by hand."""

import pytest

from llmviz import service
from llmviz.analysis.decode_slope import slowdown

GPT2 = service.models.model_config_dict("gpt2-124m-random")


def sweep(ms_by_length: dict[int, list[float]], gbps: float | None = 10.0) -> dict:
    lengths = sorted(ms_by_length)
    rounds = [ms_by_length[n] for n in lengths]
    return {"lengths": lengths, "element": "fp32", "bandwidth": {"gb_per_s": gbps} if gbps else None,
            "ms_per_token": {"contiguous": {"median": [sorted(r)[len(r) // 2] for r in rounds],
                                            "min": [min(r) for r in rounds], "max": [max(r) for r in rounds],
                                            "all": rounds}}}


def test_the_predicted_slope_by_hand():
    """GPT-2-124M in fp32: K and V of 12 layers x 768 = 18,432 elements, 73,728 B a cached token; read at 10 GB/s,
    7.3728 us more per cached token."""
    short = [50.0, 50.2, 49.8, 50.1, 49.9, 50.0]
    s = slowdown(sweep({16: short, 2040: [65.0, 64.8, 65.2, 64.9, 65.1, 65.0]}), GPT2)
    assert s.predicted == pytest.approx(73_728 / 10e9 * 1000)
    # each round's slope (C18 by rounds): 15, 14.6, 15.4, 14.8, 15.2, 15.0 ms over 2,024 tokens; their
    # median 15.0 / 2024 ms per cached token, and six rounds' interval their [min, max] at 96.9%
    assert s.measured.value == pytest.approx(15.0 / 2024) and s.measured.rounds == 6
    assert (s.measured.low, s.measured.high) == (pytest.approx(14.6 / 2024), pytest.approx(15.4 / 2024))
    assert s.measured.level == pytest.approx(1 - 2 / 64)
    # 7.41 us measured, its interval (7.21 to 7.61 us) holds the 7.37 predicted
    assert s.verdict == "grows" and s.as_predicted is True
    assert 0 < s.kv_share_first < 0.005 < 0.2 < s.kv_share_last < 0.3
    steep = [80.0, 79.8, 80.2, 79.9, 80.1, 80.0]
    assert not slowdown(sweep({16: short, 2040: steep}), GPT2).as_predicted  # 14.8 us
    assert s.intercept == pytest.approx(50.0 - 16 * 15.0 / 2024)
    few = slowdown(sweep({16: [50.0, 50.2, 49.8], 2040: [65.0, 65.2, 64.8]}), GPT2)
    assert few.verdict == "few" and few.measured.low == -float("inf")  # three rounds: no interval, cannot tell


def test_flat_and_shrinking_sweeps():
    flat = slowdown(sweep({16: [50.0, 52.0, 48.0] * 2, 1000: [51.0, 49.0, 50.5] * 2, 2040: [49.5, 51.5, 50.0] * 2}),
                    GPT2)
    assert flat.verdict == "flat" and flat.measured.low < 0 < flat.measured.high
    shrinks = slowdown(sweep({16: [60.0, 60.1, 59.9] * 2, 1000: [55.0, 55.1, 54.9] * 2, 2040: [50.0, 50.1, 49.9] * 2}),
                       GPT2)
    assert shrinks.verdict == "shrinks"
    assert slowdown(sweep({16: [1.0, 1.1], 2040: [2.0, 2.1]}, gbps=None), GPT2).predicted is None
