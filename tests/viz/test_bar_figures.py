"""C4 and timings: the KV bytes bars (llmviz.viz.kv_cache) and the per-span time bars (llmviz.viz.timing)."""

from llmviz.viz.kv_cache import kv_bytes_bars
from llmviz.viz.timing import span_bars


def test_kv_bars_show_each_count_with_its_unit():
    fig = kv_bytes_bars(["formula", "tensors", "used", "allocated"], [10240, 10240, 10240, 524288], "t", "bytes")
    bar = fig.data[0]
    assert list(bar.x) == [10240, 10240, 10240, 524288] and list(bar.y) == ["formula", "tensors", "used", "allocated"]
    assert list(bar.text) == ["10.0 KiB"] * 3 + ["512.0 KiB"]


def test_span_bars_keep_the_order_of_the_forward_pass():
    fig = span_bars(["embed", "layer 0", "layer 1", "head", "sample"], [0.1, 2.0, 1.5, 0.3, 0.2], "t", "ms")
    assert list(fig.data[0].x) == ["embed", "layer 0", "layer 1", "head", "sample"]
    assert list(fig.data[0].text) == ["0.10", "2.00", "1.50", "0.30", "0.20"]
