"""Where a step's time went (K1's raw material): one bar per timed span (embed, each layer, head, sample)."""

from __future__ import annotations

import plotly.graph_objects as go

from llmviz.viz.style import lean


def span_bars(labels: list[str], ms: list[float], title: str, y_title: str) -> go.Figure:
    """Bars of milliseconds per span, in the order the forward pass ran them."""
    return lean([{"type": "bar", "x": list(labels), "y": list(ms), "text": [f"{v:.2f}" for v in ms],
                  "textposition": "outside", "marker": {"color": "#4c78a8"}, "cliponaxis": False,
                  "hovertemplate": "%{x}: %{y:.3f} ms<extra></extra>"}],
                title, 340, yaxis={"title": {"text": y_title}}, xaxis={"type": "category"}, plot_bgcolor="#fafbfd")
