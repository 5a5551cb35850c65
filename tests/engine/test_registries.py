"""One registry per kind of switch: every declared name has one implementation, and an unknown name is a typed
error that lists the choices wherever it is checked, built or priced (never a silent fallback)."""

import pytest

from llmviz.analysis.predict import Setup, Shape, kv_allocated_bytes, layer_slots, predict
from llmviz.engine.kv import KV_CODECS, KV_LAYOUT_CLASSES, make_kv_cache, register_kv_layout
from llmviz.engine.kv.contiguous import ContiguousKVCache
from llmviz.engine.models.attention import ATTENTION_BACKENDS, register_attention_backend
from llmviz.errors import ConfigError, UnknownNameError
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, EngineConfig, Names
from llmviz.trace.model_config import ModelConfig
from llmviz.trace.switches import parse_spec

CFG = ModelConfig(family="llama", vocab_size=32, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=2,
                  head_dim=8, intermediate_size=32, max_position_embeddings=64)
SHAPE = Shape(vocab_size=32, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=2, head_dim=8,
              intermediate_size=32, max_position_embeddings=64)


@pytest.mark.parametrize("registry", [KV_LAYOUT_CLASSES, KV_CODECS, ATTENTION_BACKENDS])
def test_every_declared_name_is_implemented(registry):
    assert registry.missing() == []
    with pytest.raises(UnknownNameError, match="is not one of"):
        registry.get("nope")


def test_registries_list_the_config_names():
    assert tuple(KV_LAYOUTS) == ("contiguous", "dynamic", "paged")  # what a run may choose, in the pages' order
    assert tuple(KV_LAYOUT_CLASSES) == KV_LAYOUTS.recorded == ("contiguous", "dynamic", "paged", "ring")
    assert tuple(ATTENTION_BACKENDS) == tuple(ATTN_BACKENDS) == ("eager", "sdpa", "flash")
    assert {name: KV_LAYOUT_CLASSES.get(name).layout for name in KV_LAYOUTS.recorded} == {
        n: n for n in KV_LAYOUTS.recorded}  # each class records its own name in its snapshots


@pytest.mark.parametrize("field,value", [("kv_layout", "ring"), ("kv_layout", "nope"), ("kv_layout", ["paged"]),
                                         ("kv_dtype", "int4"), ("attn_backend", "xformers"),
                                         ("padding", "middle"), ("dtype", "fp64"), ("kv_block_size", 0),
                                         ("kv_pool_blocks", 0), ("quant", "int3"), ("fused_qkv", "yes")])
def test_unknown_names_are_config_errors(field, value):
    with pytest.raises(ConfigError, match=field):
        EngineConfig(**{field: value})


def test_the_ring_is_recorded_but_never_chosen_by_name():
    """kv_layout=ring is refused with the way to get one, in the config, a switch spec and the builder."""
    for attempt in (lambda: EngineConfig(kv_layout="ring"), lambda: parse_spec("kv-layout=ring"),
                    lambda: make_kv_cache("ring", CFG, 8, window=4)):
        with pytest.raises(UnknownNameError, match="ring is what contiguous becomes with a sliding_window"):
            attempt()
    assert type(make_kv_cache("contiguous", CFG, 8, window=4)).layout == "ring"
    assert type(make_kv_cache("contiguous", CFG, 8, window=4, rollback=4)).layout == "contiguous"  # 8 slots: all


def test_make_kv_cache_refuses_unknown_names():
    with pytest.raises(UnknownNameError, match="kv_layout='nope'"):
        make_kv_cache("nope", CFG, 8)
    with pytest.raises(ConfigError, match="kv_dtype='int3'"):
        make_kv_cache("paged", CFG, 8, kv_dtype="int3")


def test_pricing_an_unknown_layout_is_a_typed_error_not_the_dynamic_price():
    """predict.layer_slots once priced any name it did not know as dynamic."""
    assert layer_slots("dynamic", 5, 64) == 5 and layer_slots("ring", 50, 64, 8) == 8
    with pytest.raises(UnknownNameError, match="kv_layout 'nope' is not declared"):
        layer_slots("nope", 5, 64)
    for layout in ("nope", "ring"):  # a setting names a choice; the ring is what contiguous is built as
        with pytest.raises(UnknownNameError, match=f"kv_layout='{layout}'"):
            kv_allocated_bytes(Setup(SHAPE, kv_layout=layout), 5)
        with pytest.raises(UnknownNameError):
            predict(Setup(SHAPE, kv_layout=layout), 5, 2, None)
    per_token = 2 * 2 * 8 * 4  # K and V x 2 heads x 8 dims x fp32, one layer
    assert kv_allocated_bytes(Setup(SHAPE, sliding_window=4, kv_rollback=2, max_seq=64), 30) == 6 * per_token


def test_a_stock_name_cannot_be_removed_and_a_name_must_fit_a_spec():
    with pytest.raises(ConfigError, match="cannot be removed"):
        KV_LAYOUT_CLASSES.remove("paged")
    with pytest.raises(ConfigError, match="cannot be removed"):
        ATTENTION_BACKENDS.remove("eager")
    for bad in ("Paged", "a,b", "x=y", "", "a" * 41, 3):
        with pytest.raises(ConfigError, match="1-40 of"):
            Names("kind").add(bad)
    with pytest.raises(ConfigError, match="declared twice"):
        KV_LAYOUTS.add("ring")
    assert tuple(KV_LAYOUTS) == ("contiguous", "dynamic", "paged")


def test_a_registration_that_fails_declares_nothing():
    class Wrong(ContiguousKVCache):
        layout = "contiguous"  # would record another layout's name

    with pytest.raises(ConfigError, match="whose `layout` is its name"):
        register_kv_layout("wrong", Wrong)
    with pytest.raises(ConfigError, match="is declared twice"):
        register_attention_backend("sdpa", lambda *a: None)
    with pytest.raises(ConfigError, match="is a function"):
        register_attention_backend("not-a-function", 3)
    assert "wrong" not in KV_LAYOUTS.recorded and "not-a-function" not in ATTN_BACKENDS
    assert tuple(ATTN_BACKENDS) == ("eager", "sdpa", "flash")


def test_retired_fields_of_schema_1_are_dropped():
    old = {**EngineConfig().to_dict(), "batch_size": 1, "threads": 2}
    assert EngineConfig.from_dict(old) == EngineConfig()
