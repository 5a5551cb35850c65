"""Attention figures for prefill (C3): one head's scores or probabilities, and the layer x head grid.

Masked entries (the -inf of the recorded scores: future tokens, keys outside a window) are drawn as
NaN, so the grey plot background shows through them and the colour scale covers only real values.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.viz.style import MASKED_COLOR, finish, token_ticks

PLAIN = {"showgrid": False, "zeroline": False}


def attention_heatmap(z: np.ndarray, q_labels: list[str], k_labels: list[str], title: str, x_title: str,
                      y_title: str, value_title: str, probabilities: bool = False) -> go.Figure:
    """One head's map [n, n_k]: queries down, keys across; -inf (masked) entries shown grey."""
    z = np.asarray(z, dtype=np.float32)
    shown = np.where(np.isneginf(z), np.nan, z)  # [n, n_k]
    n, n_k = z.shape
    scale = {"colorscale": "Blues", "zmin": 0.0, "zmax": 1.0} if probabilities else \
        {"colorscale": "RdBu", "reversescale": True, "zmid": 0.0}
    fig = go.Figure(go.Heatmap(z=shown, **scale, colorbar={"title": {"text": value_title}}, xgap=0, ygap=0,
                               hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"))
    side = min(560, 180 + 22 * n)
    return finish(fig, title, height=side, plot_bgcolor=MASKED_COLOR,
                  xaxis={"title": {"text": x_title}, **PLAIN, **token_ticks(k_labels, n_k)},
                  yaxis={"title": {"text": y_title}, "autorange": "reversed", **PLAIN, **token_ticks(q_labels, n)})


def attention_grid(tiled: np.ndarray, layers: int, heads: int, tile: tuple[int, int], gap: int,
                   selected: tuple[int, int], title: str, x_title: str, y_title: str) -> go.Figure:
    """Every layer's and head's attention map tiled into one heatmap (see analysis.attention.tile_maps).

    tile = (rows, cols) of one pooled map; the selected (layer, head) is outlined.
    """
    s, s_k = tile
    layer, head = selected
    x0, y0 = head * (s_k + gap) - 0.5, layer * (s + gap) - 0.5
    outline = {"type": "rect", "x0": x0 - 0.5, "x1": x0 + s_k + 0.5, "y0": y0 - 0.5, "y1": y0 + s + 0.5,
               "line": {"color": "#e4572e", "width": 3}}
    centers_x = [j * (s_k + gap) + (s_k - 1) / 2 for j in range(heads)]
    centers_y = [i * (s + gap) + (s - 1) / 2 for i in range(layers)]
    # Heatmaps cannot be selected by a click; an invisible square marker on each tile's centre can.
    targets = go.Scatter(x=centers_x * layers, y=[y for y in centers_y for _ in range(heads)], mode="markers",
                         marker={"symbol": "square", "size": 26, "opacity": 0.01, "color": "#000000"},
                         hoverinfo="none", showlegend=False)
    fig = go.Figure([go.Heatmap(z=np.asarray(tiled, dtype=np.float32), colorscale="Blues", zmin=0.0, zmax=1.0,
                                showscale=False, hoverinfo="skip"), targets])
    # The grid fills the page width (~900 px); the height keeps the tiles roughly square.
    height = int(min(900, max(220, 80 + layers * (s + gap) * min(12.0, 900 / max(1, heads * (s_k + gap))))))
    return finish(fig, title, height=height, shapes=[outline], plot_bgcolor="#ffffff",
                  xaxis={"title": {"text": x_title}, "side": "top", "tickmode": "array", "tickvals": centers_x,
                         "ticktext": [str(j) for j in range(heads)], "showgrid": False, "zeroline": False},
                  yaxis={"title": {"text": y_title}, "autorange": "reversed", "tickmode": "array",
                         "tickvals": centers_y, "ticktext": [str(i) for i in range(layers)], "showgrid": False,
                         "zeroline": False})
