"""C3: attention heatmaps (llmviz.viz.attention): masked entries drawn as masked, the grid outlines a choice."""

import numpy as np

from llmviz.analysis.attention import tile_maps
from llmviz.viz.attention import attention_grid, attention_heatmap
from llmviz.viz.style import MASKED_COLOR


def causal_scores(n: int) -> np.ndarray:
    s = np.random.default_rng(0).normal(size=(n, n)).astype(np.float32)
    s[np.triu_indices(n, 1)] = -np.inf  # [n, n] as the scores hook records them
    return s


def test_masked_scores_become_nan_on_a_grey_background():
    s = causal_scores(6)
    fig = attention_heatmap(s, list("abcdef"), list("abcdef"), "t", "key", "query", "score")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (6, 6) and np.isnan(z).sum() == 15 == np.isneginf(s).sum()
    assert np.array_equal(z[~np.isnan(z)], s[np.isfinite(s)])
    assert fig.layout.plot_bgcolor == MASKED_COLOR and fig.data[0].zmid == 0


def test_probabilities_use_a_zero_to_one_scale():
    p = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    fig = attention_heatmap(p, None, None, "t", "k", "q", "w", probabilities=True)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0) and not np.isnan(np.asarray(fig.data[0].z)).any()


def test_grid_outlines_the_selected_layer_and_head():
    maps = np.random.default_rng(1).random((3, 4, 5, 5))  # [L, H, n, n]
    tiled = tile_maps(maps, 24, 1)
    fig = attention_grid(tiled, 3, 4, (5, 5), 1, (2, 1), "t", "head", "layer")
    assert np.asarray(fig.data[0].z).shape == tiled.shape == (3 * 6 - 1, 4 * 6 - 1)
    (box,) = fig.layout.shapes
    # layer 2 occupies rows 12..16 and head 1 columns 6..10: the outline surrounds them
    assert box.x0 < 6 - 0.5 and box.x1 > 10 + 0.5 and box.y0 < 12 - 0.5 and box.y1 > 16 + 0.5
    assert box.x0 > 4 - 1 and box.y0 > 10 - 1  # and stays inside the gap before the tile
    assert list(fig.layout.xaxis.ticktext) == ["0", "1", "2", "3"]
    assert list(fig.layout.yaxis.ticktext) == ["0", "1", "2"]
