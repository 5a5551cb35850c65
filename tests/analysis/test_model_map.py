"""The model map's shapes, by hand from the configs: a prefill of the prompt and a decode step after it
have the same weights and different shapes."""

import pytest

from llmviz import service
from llmviz.analysis.memory_calc import bundled_text
from llmviz.analysis.model_map import step_parts


def shapes(config: dict, new: int, cached: int = 0) -> dict:
    return {p.name: p.shape for p in step_parts(config, new, cached)}


def test_the_articles_shapes_in_prefill_and_decode():
    """GPT-2-124M is the article's 768 x 12 x 64 x 12: its four tokens, then the fifth with four cached."""
    gpt2 = service.models.config_from_text(bundled_text("gpt2"))
    prefill, decode = shapes(gpt2, 4), shapes(gpt2, 1, cached=4)
    assert prefill["embed"] == (4, 768) and decode["embed"] == (1, 768)  # the article's [4,768] -> [1,768]
    assert prefill["q"] == (4, 12, 64) and decode["q"] == (1, 12, 64)
    assert decode["k"] == decode["v"] == (1, 12, 64)  # the new token's K and V are computed too (C5)
    assert prefill["scores"] == (12, 4, 4) and decode["scores"] == (12, 1, 5)  # the article's [4,4] per head
    assert prefill["cache"] == (4, 12, 64) and decode["cache"] == (5, 12, 64)  # [4,12,64] -> [5,12,64]
    assert prefill["mlp"] == (4, 3072) and prefill["head"] == decode["head"] == (1, 50257)


def test_gqa_keeps_fewer_kv_heads_than_query_heads():
    llama3 = service.models.config_from_text(bundled_text("llama-3-8b"))
    step = shapes(llama3, 1, cached=2047)
    assert step["q"] == (1, 32, 128) and step["k"] == (1, 8, 128) and step["cache"] == (2048, 8, 128)


def test_a_step_feeds_at_least_one_token():
    with pytest.raises(ValueError):
        step_parts({"hidden_size": 8, "num_heads": 2, "num_kv_heads": 2, "head_dim": 4, "intermediate_size": 8,
                    "vocab_size": 10}, 0)
