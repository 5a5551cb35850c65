"""Where a step's time went (K1's raw material): one bar per timed span (embed, each layer, head, sample)."""

from __future__ import annotations

import plotly.graph_objects as go

from llmviz.viz.style import finish


def span_bars(labels: list[str], ms: list[float], title: str, y_title: str) -> go.Figure:
    """Bars of milliseconds per span, in the order the forward pass ran them."""
    fig = go.Figure(go.Bar(x=list(labels), y=list(ms), text=[f"{v:.2f}" for v in ms], textposition="outside",
                           marker={"color": "#4c78a8"}, cliponaxis=False,
                           hovertemplate="%{x}: %{y:.3f} ms<extra></extra>"))
    return finish(fig, title, height=340, yaxis={"title": {"text": y_title}}, xaxis={"type": "category"},
                  plot_bgcolor="#fafbfd")
