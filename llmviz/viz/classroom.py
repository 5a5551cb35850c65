"""A class's predictions as a figure (issue 39): how many students predicted each value, in the prediction slider's
units, with this machine's measurement and the article's figure marked on the same axis."""

from __future__ import annotations

import plotly.graph_objects as go

from llmviz.viz.style import finish, plain


def prediction_histogram(counts: list[int], low: float, high: float, marks: list[tuple[str, float | None, str]],
                         title: str, x_title: str, y_title: str) -> go.Figure:
    """counts: students per bin over [low, high] (equal bins); marks: (label, value, colour) drawn as vertical
    lines (a value None is left out)."""
    width = (high - low) / len(counts)
    centres = [low + (i + 0.5) * width for i in range(len(counts))]
    fig = go.Figure(go.Bar(x=centres, y=counts, width=[0.9 * width] * len(counts), marker={"color": "#7a9cc6"},
                           hovertemplate="%{x:.2f}: %{y}<extra></extra>"))
    shapes, notes = [], []
    for label, value, colour in marks:
        if value is None:
            continue
        shapes.append({"type": "line", "x0": value, "x1": value, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": colour, "width": 3}})
        notes.append({"x": value, "yref": "paper", "y": 1.02, "text": plain(label), "showarrow": False,
                      "font": {"color": colour}, "yanchor": "bottom"})
    return finish(fig, title, height=300, shapes=shapes, annotations=notes, bargap=0.05,
                  xaxis={"title": {"text": x_title}, "range": [low, high]},
                  yaxis={"title": {"text": y_title}, "rangemode": "tozero", "dtick": 1})
