"""A paged cache's block tables as vLLM's paper draws them (C9): each request's logical blocks in a column, the
physical blocks of the pool in a column beside them, an arrow from each logical block to the physical block its
table names (two requests: one each side of the pool, as the paper has them). A block's cell holds its number and
text; a physical block is coloured by the request that owns it.
Columns, not rows: the drawing stays readable in the lesson's narrow slip column and on a phone."""

from __future__ import annotations

import plotly.graph_objects as go

from llmviz.viz.kv_layouts import FREE, seq_color
from llmviz.viz.style import finish

CELL_W, CELL_H = 0.8, 0.8
ROW_PX = 34


def block_table_figure(tables: list[list[int]], texts: list[list[str]], labels: list[str], pool_label: str,
                       free_name: str, title: str) -> go.Figure:
    """tables[i]: request i's physical block per logical block; texts[i][j]: that block's text; the pool drawn from
    block 0 to one past the last in use (its free blocks grey)."""
    shown = max(b for t in tables for b in t) + 2  # the blocks in use and one free after them
    owner = {b: i for i, t in enumerate(tables) for b in t}
    # the paper's arrangement for two: one request left of the pool, the other right; more: all on the left
    pool_x = 1.5 if len(tables) == 2 else len(tables) + 0.7
    xs = [0.0, 3.0] if len(tables) == 2 else [float(i) for i in range(len(tables))]
    shapes, notes = [], []

    def cell(x: float, y: float, color: str, text: str) -> None:
        shapes.append({"type": "rect", "x0": x - CELL_W / 2, "x1": x + CELL_W / 2, "y0": y - CELL_H / 2,
                       "y1": y + CELL_H / 2, "fillcolor": color, "line": {"color": "#555555", "width": 1}})
        notes.append({"x": x, "y": y, "text": text, "showarrow": False,
                      "font": {"size": 11, "color": "#333333" if color == FREE else "#ffffff"}})

    for i, (table, words) in enumerate(zip(tables, texts, strict=True)):
        side = 1 if xs[i] < pool_x else -1  # the edge facing the pool
        for j, (block, text) in enumerate(zip(table, words, strict=True)):
            cell(xs[i], j, seq_color(i), f"{j} · {text}")
            notes.append({"x": pool_x - side * CELL_W / 2, "y": block, "ax": xs[i] + side * CELL_W / 2, "ay": j,
                          "xref": "x", "yref": "y", "axref": "x", "ayref": "y", "showarrow": True, "arrowhead": 2,
                          "arrowwidth": 1.5, "arrowcolor": seq_color(i), "opacity": 0.8, "text": ""})
    for b in range(shown):
        i = owner.get(b)
        cell(pool_x, b, seq_color(i) if i is not None else FREE,
             f"{b} · {texts[i][tables[i].index(b)] if i is not None else free_name}")
    for x, label in [*zip(xs, labels, strict=True), (pool_x, pool_label)]:
        notes.append({"x": x, "y": -0.75, "text": label, "showarrow": False, "font": {"size": 11},
                      "yanchor": "bottom"})
    fig = go.Figure(go.Scatter(x=[None], y=[None], showlegend=False))
    return finish(fig, title, height=120 + ROW_PX * (shown + 1), shapes=shapes, annotations=notes,
                  plot_bgcolor="rgba(0,0,0,0)", xaxis={"range": [-0.5, max(*xs, pool_x) + 0.5], "visible": False},
                  yaxis={"range": [shown - 0.4, -1.3], "visible": False})
