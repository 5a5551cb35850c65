"""C4: KV cache bytes by the formula, from the recorded tensors, and the article's 24 KB example."""

import pytest

from llmviz.analysis.kv_memory import ARTICLE_EXAMPLE, KVExample, comparison, human, kv_bytes, layer_kv


def test_the_article_example_is_24_kb_per_layer():
    assert ARTICLE_EXAMPLE.per_layer == 4 * 12 * 64 * 2 * 4 == 24 * 1024
    assert human(ARTICLE_EXAMPLE.per_layer) == "24.0 KiB"
    assert ARTICLE_EXAMPLE.formula() == "4 × 12 × 64 × 2 × 4 B = 24,576 B"
    assert ARTICLE_EXAMPLE.total == 12 * 24 * 1024  # BERT-base has 12 layers


def test_human_units():
    assert human(1023) == "1,023 B" and human(1536) == "1.5 KiB" and human(3 * 2**20) == "3.0 MiB"
    assert human(2**40) == "1,024.0 GiB"


def test_comparison_rows():
    rows = dict((what, (a, b)) for what, a, b in comparison(ARTICLE_EXAMPLE, KVExample(15, 2, 16, 2, 3)))
    assert rows["tokens"] == ("4", "15") and rows["kv_heads"] == ("12", "2")
    assert rows["per_layer"][1] == "1,920 B (1.9 KiB)" and rows["total"][1] == "5,760 B (5.6 KiB)"


def test_layer_rows_use_the_articles_layout():
    rows = layer_kv([[1, 2, 7, 16]] * 3, [[1, 2, 7, 16]] * 3, element_bytes=2)
    assert [r.k_shape for r in rows] == [(7, 2, 16)] * 3  # [b, kv, n, hd] -> [n, kv, hd]
    assert rows[0].bytes == 2 * 7 * 2 * 16 * 2


@pytest.mark.parametrize("kind,kv_dtype", [("llama_gqa_rope3", "auto"), ("gpt2", "auto"), ("qwen2", "bf16")])
def test_formula_and_recorded_tensors_equal_the_engine(model_dirs, kind, kv_dtype):
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig

    lm = load_model(str(model_dirs[kind]))
    session = Session(lm, "The quick brown fox jumps", EngineConfig(capture="full", kv_dtype=kv_dtype))
    step = session.step()
    kv, c = step.kv, lm.cfg
    n = step.input_ids.shape[1]
    assert kv_bytes(n, c.num_kv_heads, c.head_dim, kv["element_bytes"], c.num_layers) == kv["bytes_used"]
    rows = layer_kv([step.hook(f"layers.{i}.k").shape for i in range(c.num_layers)],
                    [step.hook(f"layers.{i}.v").shape for i in range(c.num_layers)], kv["element_bytes"])
    assert sum(r.bytes for r in rows) == kv["bytes_used"]
    full = kv_bytes(kv["max_seq"], c.num_kv_heads, c.head_dim, kv["element_bytes"], c.num_layers)
    assert full == kv["bytes_allocated"] == session.cache.storage[0].untyped_storage().nbytes()
