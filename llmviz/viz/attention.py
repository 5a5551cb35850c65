"""Attention figures for prefill (C3): one head's scores or probabilities, and the layer x head grid.

Masked entries (the -inf of the recorded scores: future tokens, keys outside a window) are drawn as
NaN, so the grey plot background shows through them and the colour scale covers only real values.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.viz.style import HOVER_CELLS, MASKED_COLOR, at_gloss, finish, plain, text_px, token_ticks

PLAIN = {"showgrid": False, "zeroline": False}


AROUND_PLOT = 240  # px of a map's figure outside its plot: the title, the keys' slanted labels, the x axis's title


def attention_heatmap(z: np.ndarray, q_labels: list[str], k_labels: list[str], title: str, x_title: str,
                      y_title: str, value_title: str, probabilities: bool = False,
                      hidden: np.ndarray | None = None, notes: list[str] | None = None) -> go.Figure:
    """One head's map [n, n_k]: queries down, keys across; masked entries shown grey: the -inf ones, and those
    of `hidden` ([n, n_k] bool: for probabilities, where the scores were masked; they are 0 after softmax).
    notes: each position's hover text (a token's character and bytes), for a map of at most HOVER_CELLS cells."""
    z = np.asarray(z, dtype=np.float32)
    gone = np.isneginf(z) if hidden is None else (np.isneginf(z) | hidden)
    shown = np.where(gone, np.nan, z)  # [n, n_k]
    n, n_k = z.shape
    scale = {"colorscale": "Blues", "zmin": 0.0, "zmax": 1.0} if probabilities else \
        {"colorscale": "RdBu", "reversescale": True, "zmid": 0.0}
    hover = notes is not None and z.size <= HOVER_CELLS and len(notes) >= max(n, n_k)
    pairs = None
    if hover:  # [n, n_k, 2]: the query's note and the key's
        names = np.asarray([plain(x) for x in notes], dtype=object)  # a token's text may hold markup
        pairs = np.stack(np.broadcast_arrays(names[:n, None], names[None, :n_k]), axis=-1)
    fig = go.Figure(go.Heatmap(z=shown, **scale, colorbar={"title": {"text": value_title}}, xgap=0, ygap=0,
                               customdata=pairs, hovertemplate=("%{customdata[0]} → %{customdata[1]}" if hover else
                                                                "%{y} → %{x}") + ": %{z:.3f}<extra></extra>"))
    # tall enough for the rows and for the y axis's title, which runs along the plot (else it runs into the title);
    # that title on two lines at its gloss, "query (attending token)", for a page that caps the height (the lesson)
    side = min(560, max(180 + 22 * n, AROUND_PLOT + text_px(y_title)))
    y_title = at_gloss(y_title)
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
    # Heatmaps cannot be selected by a click; invisible square markers can: one on every cell of every tile,
    # so a click anywhere on a tile selects it.
    every = 3  # a marker every 3 cells, each as wide as 3 cells on a ~900 px wide grid
    cell_px = 900 / max(1, heads * (s_k + gap))
    cells = [(j * (s_k + gap) + c, i * (s + gap) + r) for i in range(layers) for j in range(heads)
             for r in range(1, s, every) for c in range(1, s_k, every)]
    targets = go.Scatter(x=[x for x, _ in cells], y=[y for _, y in cells], mode="markers",
                         marker={"symbol": "square", "size": min(300, max(8, round(cell_px * every * 1.2))),
                                 "opacity": 0.01, "color": "#000000"}, hoverinfo="none", showlegend=False)
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
