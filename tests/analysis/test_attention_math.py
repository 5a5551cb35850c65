"""C3: attention numbers read from recorded tensors (llmviz.analysis.attention), checked on engine runs."""

import numpy as np
import pytest

from llmviz.analysis.attention import head_shapes, masked, matmul_text, max_abs_gap, pool_map, scores_from_qk, tile_maps


@pytest.mark.parametrize("kind,backend", [("llama_gqa_rope3", "sdpa"), ("llama_gqa_rope3", "eager"),
                                          ("gpt2", "sdpa"), ("mistral", "eager")])
def test_scores_recomputed_from_q_and_k_match_the_record(model_dirs, kind, backend):
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig

    lm = load_model(str(model_dirs[kind]))
    prompt = "The quick brown fox jumps over the lazy dog"
    step = Session(lm, prompt, EngineConfig(capture="full", attn_backend=backend)).step()
    c = lm.cfg
    for layer in range(c.num_layers):
        sh = head_shapes(*(step.hook(f"layers.{layer}.{p}").shape for p in ("attn_in", "q", "k", "scores")))
        assert (sh.d, sh.heads, sh.kv_heads, sh.head_dim) == (c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim)
        assert sh.n == sh.n_k == step.input_ids.shape[1] and np.isclose(sh.scale, c.head_dim ** -0.5)
        scores = step.hook(f"layers.{layer}.scores").array[0]  # [h, n, n_k]
        for head in range(sh.heads):
            q = step.hook(f"layers.{layer}.q").array[0, head]
            k = step.hook(f"layers.{layer}.k").array[0, sh.kv_head(head)]
            assert max_abs_gap(scores[head], scores_from_qk(q, k, sh.scale)) < 1e-4
        hidden = masked(scores[0])
        assert hidden[np.triu_indices(sh.n, 1)].all()  # the future is always masked
        if kind != "mistral":
            assert hidden.sum() == sh.n * (sh.n - 1) // 2
        else:  # sliding window of 8: keys 8 or more positions back are masked too
            assert hidden.sum() == sh.n * (sh.n - 1) // 2 + (sh.n - 8) * (sh.n - 7) // 2
    note = step.hook("layers.0.scores").note
    assert ("recomputed" in note) == (backend == "sdpa")


def test_gqa_head_mapping():
    sh = head_shapes([1, 5, 64], [1, 8, 5, 16], [1, 2, 5, 16], [1, 8, 5, 5])
    assert sh.group == 4 and [sh.kv_head(h) for h in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_matmul_text():
    assert matmul_text("X", (20, 64), "W_Q", (64, 16), "Q") == "X [20, 64] × W_Q [64, 16] → Q [20, 16]"
    with pytest.raises(ValueError):
        matmul_text("X", (20, 64), "W_Q", (32, 16), "Q")


def test_pool_map_averages_queries_and_sums_keys():
    m = np.arange(16.0).reshape(4, 4)
    assert pool_map(m, 4) is m
    assert np.allclose(pool_map(m, 2), [[5, 9], [21, 25]])  # e.g. rows 0-1, cols 0-1: mean(0+1, 4+5)
    probs = np.tril(np.ones((50, 50)))
    probs /= probs.sum(axis=1, keepdims=True)  # a causal uniform attention map [50, 50]
    pooled = pool_map(probs, 24)
    assert pooled.shape == (24, 24) and np.allclose(pooled.sum(axis=1), 1.0)  # rows stay distributions


def test_tile_maps_places_every_map_with_nan_gaps():
    maps = np.arange(2 * 3 * 4 * 4, dtype=float).reshape(2, 3, 4, 4)  # [L, H, n, n]
    tiled = tile_maps(maps, size=24, gap=1)
    assert tiled.shape == (2 * 5 - 1, 3 * 5 - 1)
    assert np.array_equal(tiled[5:9, 10:14], maps[1, 2]) and np.isnan(tiled[4]).all() and np.isnan(tiled[:, 4]).all()


def test_a_click_on_the_grid_names_its_layer_and_head():
    from llmviz.analysis.attention import grid_cell, tile_maps

    maps = [np.random.default_rng(i).random((3, 5, 5)) for i in range(2)]  # 2 layers x 3 heads of [5, 5]
    tiled = tile_maps(maps, size=32, gap=1)
    for layer in range(2):
        for head in range(3):
            y, x = layer * 6 + 2, head * 6 + 4  # a cell inside tile (layer, head)
            assert tiled[y, x] == maps[layer][head][2, 4]
            assert grid_cell(x, y, (5, 5)) == (layer, head)


def test_mask_counts_split_the_causal_mask_from_a_sliding_window():
    """By hand: 5 tokens, a window of 2 (a query sees itself and the one before): the upper triangle (10)
    is the causal mask, the 6 entries two or more back are the window's (1 + 2 + 3)."""
    from llmviz.analysis.attention import mask_counts

    i, j = np.indices((5, 5))
    scores = np.where((j > i) | (i - j >= 2), -np.inf, 1.0)
    assert mask_counts(scores) == (10, 6)
    assert mask_counts(np.where(j > i, -np.inf, 0.5)) == (10, 0)
    # a decode step: 1 query at position 5 over 6 keys, the window hiding positions 0-3
    assert mask_counts(np.array([[-np.inf] * 4 + [0.1, 0.2]])) == (0, 4)
