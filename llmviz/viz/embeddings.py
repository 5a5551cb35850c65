"""Embedding and position figures (C2): matrices as heatmaps, token vectors as a 2-D map, RoPE angles.

Every function takes numpy arrays read from the trace (the `embed` and `pos` hooks of the prefill
step) and already translated titles; none of them knows about Streamlit.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.viz.style import HOVER_CELLS, finish, plain, token_ticks

# Cyclic (-pi and pi share a colour): white = not turned, red = turned forward, blue = more than half a turn
# (the same direction as turning backward), purple = half a turn.
ANGLE_SCALE = [[0.0, "#5e2a84"], [0.25, "#2f6fb0"], [0.5, "#f7f7f7"], [0.75, "#d6604d"], [1.0, "#5e2a84"]]


def matrix_heatmap(z: np.ndarray, row_labels: list[str], title: str, x_title: str, y_title: str,
                   value_title: str, row_notes: list[str] | None = None) -> go.Figure:
    """A matrix [rows, cols] (e.g. the prompt's embeddings [n, d_model]), rows top to bottom, 0 white; row_notes:
    each row's hover text (a token's character and bytes), for a matrix of at most HOVER_CELLS cells."""
    z = np.asarray(z, dtype=np.float32)
    rows = z.shape[0]
    notes = row_notes is not None and z.size <= HOVER_CELLS
    cells = None
    if notes:  # [rows, cols]: each cell its row's note (a token's text may hold markup)
        cells = np.broadcast_to(np.asarray([plain(x) for x in row_notes[:rows]], dtype=object)[:, None], z.shape)
    fig = go.Figure(go.Heatmap(
        z=z, colorscale="RdBu", reversescale=True, zmid=0, colorbar={"title": {"text": value_title}},
        customdata=cells,
        hovertemplate=("%{customdata}" if notes else "%{y}") + " · %{x}: %{z:.3f}<extra></extra>"))
    return finish(fig, title, height=min(620, 160 + 16 * rows),
                  xaxis={"title": {"text": x_title}},
                  yaxis={"title": {"text": y_title}, "autorange": "reversed", **token_ticks(row_labels, rows)})


def projection_scatter(coords: np.ndarray, labels: list[str], title: str, x_title: str, y_title: str,
                       color_title: str) -> go.Figure:
    """Token vectors projected to 2-D [n, 2]: one labelled point per token, coloured by position."""
    coords = np.asarray(coords, dtype=np.float64)
    n = coords.shape[0]
    fig = go.Figure(go.Scatter(
        x=coords[:, 0], y=coords[:, 1], mode="markers+text" if n <= 64 else "markers",
        text=labels, textposition="top center", hovertext=labels, hoverinfo="text",
        marker={"size": 10, "color": np.arange(n), "colorscale": "Viridis", "showscale": True,
                "colorbar": {"title": {"text": color_title}}, "line": {"width": 0.5, "color": "#333"}}))
    return finish(fig, title, height=440, xaxis={"title": {"text": x_title}, "zeroline": False},
                  yaxis={"title": {"text": y_title}, "zeroline": False}, plot_bgcolor="#fafbfd")


def angle_heatmap(wrapped: np.ndarray, raw: np.ndarray, row_labels: list[str], title: str, x_title: str,
                  y_title: str, value_title: str) -> go.Figure:
    """RoPE angles [n, pairs]: colour = the wrapped angle in [-pi, pi) on a cyclic scale, hover = radians."""
    wrapped = np.asarray(wrapped, dtype=np.float32)
    rows = wrapped.shape[0]
    fig = go.Figure(go.Heatmap(
        z=wrapped, customdata=np.asarray(raw, dtype=np.float32), colorscale=ANGLE_SCALE, zmin=-np.pi, zmax=np.pi,
        colorbar={"title": {"text": value_title}, "tickvals": [-np.pi, 0, np.pi], "ticktext": ["-π", "0", "π"]},
        hovertemplate="%{y} · %{x}: %{customdata:.3f} rad<extra></extra>"))
    return finish(fig, title, height=min(620, 160 + 16 * rows),
                  xaxis={"title": {"text": x_title}},
                  yaxis={"title": {"text": y_title}, "autorange": "reversed", **token_ticks(row_labels, rows)})
