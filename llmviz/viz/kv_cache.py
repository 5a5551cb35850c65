"""KV cache bytes after prefill (C4): the formula next to what the engine's tensors hold."""

from __future__ import annotations

import plotly.graph_objects as go

from llmviz.analysis.kv_memory import human
from llmviz.viz.style import finish

COLORS = ("#4c78a8", "#72b7b2", "#54a24b", "#f58518")


def kv_bytes_bars(labels: list[str], values: list[int], title: str, x_title: str) -> go.Figure:
    """Horizontal bars, one per way of counting the cache's bytes (first label on top)."""
    fig = go.Figure(go.Bar(
        x=list(values), y=list(labels), orientation="h", text=[human(v) for v in values],
        textposition="auto", marker={"color": [COLORS[i % len(COLORS)] for i in range(len(values))]},
        hovertemplate="%{y}: %{x:,} B<extra></extra>"))
    return finish(fig, title, height=90 + 42 * len(values), xaxis={"title": {"text": x_title}},
                  yaxis={"autorange": "reversed"}, plot_bgcolor="#fafbfd")
