"""The article's "6 MB at 1,024 tokens" read from a real cache (C4; §1.2): a KV cache of the article's shapes (GPT-2's
12 heads of 64, fp32) allocated by the engine for one layer, and what the allocator holds for it.

No weights: only the cache is built (engine/kv.make_kv_cache, the contiguous layout, one sequence of `tokens` slots),
and its bytes are read from the tensors torch allocated (untyped storage), not computed from the shapes. The byte
formula (analysis/kv_memory.kv_bytes) is checked against it by the lesson's test, not here.
"""

from __future__ import annotations

from llmviz.analysis.article import ARTICLE_DECODE
from llmviz.errors import ConfigError
from llmviz.trace.model_config import ModelConfig

MOST_TOKENS = 1 << 16  # a one-layer cache of the article's shape: 64 Ki tokens is 384 MiB, the most allocated here


def article_config(layers: int = 1) -> ModelConfig:
    """A model of the article's attention shapes (12 heads of 64 = 768 wide), `layers` deep: only its cache is built."""
    ex = ARTICLE_DECODE
    return ModelConfig(family="gpt2", vocab_size=50257, hidden_size=ex.kv_heads * ex.head_dim, num_layers=layers,
                       num_heads=ex.kv_heads, num_kv_heads=ex.kv_heads, head_dim=ex.head_dim,
                       intermediate_size=4 * ex.kv_heads * ex.head_dim, max_position_embeddings=MOST_TOKENS,
                       norm="layer", position="learned", mlp="plain", activation="gelu")


def article_cache_bytes(tokens: int) -> dict:
    """Allocate one layer's fp32 cache of the article's shapes for `tokens` tokens; the bytes torch holds for it,
    and its planes' shapes (K and V of one layer: [2, batch, heads, tokens, head_dim])."""
    import torch

    from llmviz.engine.kv import make_kv_cache

    if not isinstance(tokens, int) or not 1 <= tokens <= MOST_TOKENS:
        raise ConfigError(f"tokens must be a whole number from 1 to {MOST_TOKENS:,}, got {tokens!r}")
    cache = make_kv_cache("contiguous", article_config(), tokens, capacity=1, model_dtype=torch.float32, device="cpu")
    planes = cache.storage  # one plane per stored tensor: [layers, 2, batch, heads, max_seq, head_dim]
    held = sum(p.untyped_storage().nbytes() for p in planes)
    return {"tokens": tokens, "bytes": held, "bytes_allocated": cache.bytes_allocated(),
            "shape": [list(p.shape[1:]) for p in planes], "dtype": str(planes[0].dtype).removeprefix("torch.")}
