"""C2: embedding and position figures (llmviz.viz.embeddings) keep the tensor's shape and values."""

import numpy as np

from llmviz.analysis.positions import wrap_angles
from llmviz.viz.embeddings import angle_heatmap, matrix_heatmap, projection_scatter


def test_matrix_heatmap_is_the_tensor():
    embed = np.random.default_rng(0).normal(size=(7, 64)).astype(np.float32)  # [n, d]
    fig = matrix_heatmap(embed, [f"{i}:t" for i in range(7)], "E [7, 64]", "dimension", "token", "value")
    assert np.asarray(fig.data[0].z).shape == (7, 64) and np.array_equal(fig.data[0].z, embed)
    assert fig.data[0].zmid == 0 and fig.layout.yaxis.autorange == "reversed"
    assert list(fig.layout.yaxis.ticktext) == [f"{i}:t" for i in range(7)]
    assert fig.layout.title.text == "E [7, 64]"


def test_many_rows_leave_labels_to_hover():
    fig = matrix_heatmap(np.zeros((100, 8)), [str(i) for i in range(100)], "t", "x", "y", "v")
    assert fig.layout.yaxis.ticktext is None


def test_angle_heatmap_wraps_the_colour_and_keeps_radians_for_hover():
    positions = np.arange(6)[:, None]
    raw = positions * 10000.0 ** (-np.arange(4) / 4)  # [n, pairs]
    fig = angle_heatmap(wrap_angles(raw), raw, [str(i) for i in range(6)], "t", "pair", "position", "angle")
    trace = fig.data[0]
    assert np.asarray(trace.z).shape == (6, 4) and np.allclose(trace.customdata, raw)
    assert (trace.zmin, trace.zmax) == (-np.pi, np.pi) and np.all(np.abs(trace.z) <= np.pi)


def test_projection_scatter_one_point_per_token():
    coords = np.arange(10.0).reshape(5, 2)
    fig = projection_scatter(coords, list("abcde"), "t", "pc1", "pc2", "position")
    assert np.array_equal(fig.data[0].x, coords[:, 0]) and list(fig.data[0].text) == list("abcde")
    assert fig.data[0].mode == "markers+text"


def test_token_labels_are_shown_as_text_not_html():
    """Issue 19: a piece from an uploaded trace such as `<a href=...>` must not become a live link in a tick label."""
    from llmviz.viz.style import token_ticks

    ticks = token_ticks(['<a href="https://evil.example">x</a>', "a&b", "plain"], 3)
    assert ticks["ticktext"] == ['&lt;a href="https://evil.example"&gt;x&lt;/a&gt;', "a&amp;b", "plain"]


def test_a_heat_maps_hover_names_each_rows_character_and_bytes():
    """Issue 38: the row labels read as text and the hover carries the bytes, escaped (a token's text may hold
    markup); a matrix past HOVER_CELLS sends no notes (its JSON stays small)."""
    import numpy as np
    import plotly.io as pio

    from llmviz.viz.attention import attention_heatmap
    from llmviz.viz.embeddings import matrix_heatmap
    from llmviz.viz.style import HOVER_CELLS

    notes = ["济·1/3 (e6)", "<a href=x>", "南 (e5 8d 97)"]
    fig = matrix_heatmap(np.ones((3, 4)), ["0:济·1/3", "1:x", "2:南"], "t", "x", "y", "v", notes)
    assert fig.data[0].customdata[1][0] == "&lt;a href=x&gt;" and fig.data[0].customdata[2][3] == notes[2]
    assert "%{customdata}" in fig.data[0].hovertemplate and "&lt;a" in pio.to_json(fig)
    big = matrix_heatmap(np.ones((3, HOVER_CELLS)), ["a", "b", "c"], "t", "x", "y", "v", notes)
    assert big.data[0].customdata is None and "%{y}" in big.data[0].hovertemplate
    att = attention_heatmap(np.zeros((3, 3)), ["a", "b", "c"], ["a", "b", "c"], "t", "k", "q", "s", notes=notes)
    assert np.asarray(att.data[0].customdata).shape == (3, 3, 2)
    assert list(np.asarray(att.data[0].customdata)[2, 0]) == [notes[2], notes[0]]  # query 南 looks at key 济
