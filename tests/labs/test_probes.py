"""The bandwidth probe reports a plausible rate and the figures it was computed from (C7)."""

import time

import numpy as np

from llmviz.labs.probes import matmul_flops, memory_bandwidth


def test_bandwidth_probe_reads_the_buffer():
    out = memory_bandwidth("cpu", nbytes=64 * 2**20, repeats=3)
    assert out["bytes"] == 64 * 2**20 and len(out["all_gb_per_s"]) == 3
    assert max(out["all_gb_per_s"]) == round(out["gb_per_s"], 2)  # the best pass
    # an independent reading: numpy summing a buffer of the same size, timed here (a wide band: both are
    # timings on a shared machine)
    buf = np.ones(out["bytes"] // 4, dtype=np.float32)
    buf.sum()
    best = min(_timed(buf.sum) for _ in range(3))
    assert 0.2 < out["gb_per_s"] / (out["bytes"] / best / 1e9) < 5, (out["gb_per_s"], out["bytes"] / best / 1e9)


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def test_matmul_probe_counts_two_flops_per_multiply_add():
    out = matmul_flops("cpu", m=4, k=64, n=128, repeats=2)
    assert out["flops"] == 2 * 4 * 64 * 128 and out["shape"] == [4, 64, 128]
    assert 0 < out["gflop_per_s"] < 1e5  # a rate, not a speed target (a busy machine may be slow)


def test_the_cache_probe_is_bounded_whatever_the_layer_claims(monkeypatch):
    """A replayed trace's card sizes the layer: a 1 TiB layer must not become a 1 TiB buffer."""
    from llmviz.labs import probes

    asked = []
    monkeypatch.setattr(probes, "memory_bandwidth", lambda device, nbytes, repeats: asked.append(nbytes) or {})
    monkeypatch.setattr(probes, "matmul_flops", lambda *args, **kwargs: {})
    for claimed, probed in ((2**40, probes.CACHE_PROBE_MAX_BYTES), (1, 4 * 2**20), (8 * 2**20, 8 * 2**20)):
        asked.clear()
        probes.device_limits("cpu", claimed)
        assert asked[-1] == probed, (claimed, asked)
    assert probes.CACHE_PROBE_MAX_BYTES <= 256 * 2**20
