"""One registry per kind of switch: every declared name has one implementation, and an unknown name is a
ConfigError that lists the choices (never a silent fallback)."""

import pytest

from llmviz.engine.kv import KV_CODECS, KV_LAYOUT_CLASSES, make_kv_cache
from llmviz.engine.models.attention import ATTENTION_BACKENDS
from llmviz.errors import ConfigError
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, EngineConfig
from llmviz.trace.model_config import ModelConfig

CFG = ModelConfig(family="llama", vocab_size=32, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=2,
                  head_dim=8, intermediate_size=32, max_position_embeddings=64)


@pytest.mark.parametrize("registry", [KV_LAYOUT_CLASSES, KV_CODECS, ATTENTION_BACKENDS])
def test_every_declared_name_is_implemented(registry):
    assert registry.missing() == []
    with pytest.raises(ConfigError, match="is not one of"):
        registry.get("nope")


def test_registries_list_the_config_names():
    assert tuple(KV_LAYOUT_CLASSES) == KV_LAYOUTS and tuple(ATTENTION_BACKENDS) == ATTN_BACKENDS


@pytest.mark.parametrize("field,value", [("kv_layout", "ring"), ("kv_dtype", "int4"), ("attn_backend", "xformers"),
                                         ("padding", "middle"), ("dtype", "fp64"), ("kv_block_size", 0),
                                         ("kv_pool_blocks", 0), ("quant", "int3"), ("fused_qkv", "yes")])
def test_unknown_names_are_config_errors(field, value):
    with pytest.raises(ConfigError, match=field):
        EngineConfig(**{field: value})


def test_make_kv_cache_refuses_unknown_names():
    with pytest.raises(ConfigError, match="kv_layout='ring'"):
        make_kv_cache("ring", CFG, 8)
    with pytest.raises(ConfigError, match="kv_dtype='int3'"):
        make_kv_cache("paged", CFG, 8, kv_dtype="int3")


def test_retired_fields_of_schema_1_are_dropped():
    old = {**EngineConfig().to_dict(), "batch_size": 1, "threads": 2}
    assert EngineConfig.from_dict(old) == EngineConfig()
