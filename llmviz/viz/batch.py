"""Figures of a padded batch (C13): the slot grid with its wasted slots, and throughput against batch size."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.analysis.batch_grid import CATEGORIES, BatchGrid
from llmviz.viz.style import finish, legend_below

COLORS = {"prompt": "#4c78a8", "generated": "#f58518", "pad": "#d9d9d9", "idle": "#e45756"}
MAX_TEXT_COLUMNS = 40  # above this many columns the token texts are left to hover


def batch_grid_figure(grid: BatchGrid, pieces: list[list[str]], names: dict, title: str, x_title: str,
                      y_title: str, row_labels: list[str]) -> go.Figure:
    """One row per sequence, one cell per computed slot, coloured by kind; `pieces` [b][columns] are the
    tokens' texts ("" for a pad). The prefill's columns come first, then one column per decode step."""
    b, n = grid.kinds.shape
    k = len(CATEGORIES)
    # a discrete colour scale: kind i fills [i/k, (i+1)/k)
    scale = []
    for i, kind in enumerate(CATEGORIES):
        scale += [[i / k, COLORS[kind]], [(i + 1) / k, COLORS[kind]]]
    text = np.array(pieces, dtype=object) if n <= MAX_TEXT_COLUMNS else None
    hover = np.array([[f"{names[CATEGORIES[grid.kinds[r, c]]]}: {pieces[r][c]!r}" for c in range(n)] for r in range(b)])
    fig = go.Figure(go.Heatmap(z=grid.kinds + 0.5, zmin=0, zmax=k, colorscale=scale, showscale=False, xgap=2, ygap=2,
                               text=text, texttemplate="%{text}" if text is not None else None,
                               textfont={"size": 10}, customdata=hover, hovertemplate="%{customdata}<extra></extra>"))
    for kind in CATEGORIES:  # a legend entry per kind
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=names[kind],
                                 marker={"size": 12, "symbol": "square", "color": COLORS[kind]}))
    prefill_end = int((grid.step_of_column == 0).sum()) - 0.5
    finish(fig, title, height=190 + 36 * b,  # the legend under it wraps to two rows in a narrow column
                  shapes=[{"type": "line", "x0": prefill_end, "x1": prefill_end, "y0": -0.5, "y1": b - 0.5,
                           "line": {"color": "#333333", "width": 2, "dash": "dot"}}],
                  xaxis={"title": {"text": x_title}, "showgrid": False, "zeroline": False},
                  yaxis={"title": {"text": y_title}, "autorange": "reversed", "showgrid": False, "zeroline": False,
                         "tickmode": "array", "tickvals": list(range(b)), "ticktext": row_labels},
                  legend=legend_below(),
                  plot_bgcolor="#ffffff")
    return fig


def throughput_figure(rows: list[dict], title: str, x_title: str, y_title: str, decode_name: str,
                      prefill_name: str) -> go.Figure:
    """Decode and prefill tokens/s at each batch size, labelled with the speed-up over batch 1."""
    batches = [r["batch"] for r in rows]
    fig = go.Figure()
    fig.add_bar(x=[str(b) for b in batches], y=[r["decode_tokens_per_s"] for r in rows], name=decode_name,
                marker_color="#f58518", text=[f"{r['decode_speedup']:.2f}×" for r in rows], textposition="outside")
    fig.add_bar(x=[str(b) for b in batches], y=[r["prefill_tokens_per_s"] for r in rows], name=prefill_name,
                marker_color="#4c78a8", text=[f"{r['prefill_speedup']:.2f}×" for r in rows], textposition="outside")
    return finish(fig, title, height=360, barmode="group",
                  xaxis={"title": {"text": x_title}, "type": "category"},
                  yaxis={"title": {"text": y_title}, "rangemode": "tozero"}, legend=legend_below())
