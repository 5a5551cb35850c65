"""A class's predictions as a figure: how many students predicted each value, in the prediction slider's
units, with this machine's measurement and the article's figure marked on the same axis."""

from __future__ import annotations

import plotly.graph_objects as go

from llmviz.viz.style import finish, plain

ROUND_COLOURS = ("#7a9cc6", "#e08a3c")  # the first vote, the second


def prediction_histogram(rounds: list[tuple[str, list[int]]], centres: list[float], width: float,
                         span: tuple[float, float], marks: list[tuple[str, float | None, str]], title: str,
                         x_title: str, y_title: str) -> go.Figure:
    """rounds: (label, students per bin) per vote, side by side in each bin; centres, width: the bins' (the middle of
    the slider positions each holds); span: the slider's range; marks: (label, value, colour) drawn as vertical
    lines (a value None is left out)."""
    bins = len(centres)
    low, high = span
    fig = go.Figure([go.Bar(x=centres, y=counts, name=plain(label), width=[0.9 * width / len(rounds)] * bins,
                            offset=(-0.45 + 0.9 * i / len(rounds)) * width, marker={"color": ROUND_COLOURS[i % 2]},
                            hovertemplate="%{x:.2f}: %{y}<extra></extra>") for i, (label, counts) in enumerate(rounds)])
    shapes, notes = [], []
    for label, value, colour in marks:
        if value is None:
            continue
        shapes.append({"type": "line", "x0": value, "x1": value, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": colour, "width": 3}})
        notes.append({"x": value, "yref": "paper", "y": 1.02, "text": plain(label), "showarrow": False,
                      "font": {"color": colour}, "yanchor": "bottom"})
    return finish(fig, title, height=300, shapes=shapes, annotations=notes, bargap=0.05, showlegend=len(rounds) > 1,
                  xaxis={"title": {"text": x_title}, "range": [low, high]},
                  yaxis={"title": {"text": y_title}, "rangemode": "tozero", "dtick": 1})
