"""Figures of the claims page (issue 11): K1's prefill sweep with its a + b*n + c*n^2 fit and each term."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.analysis.prefill_fit import PrefillFit
from llmviz.viz.style import finish

TERM_COLORS = {"fixed": "#bab0ac", "linear": "#4c78a8", "quadratic": "#e45756"}


def prefill_fit_figure(lengths: list[int], spreads: list[dict], fit: PrefillFit, names: dict, title: str,
                       x_title: str, y_title: str) -> go.Figure:
    """Measured medians with their min-max bars, the fitted curve and its three terms (names: measured, fitted,
    and one per term)."""
    med = np.array([s["median"] for s in spreads])
    low, high = med - np.array([s["min"] for s in spreads]), np.array([s["max"] for s in spreads]) - med
    n = np.linspace(0, max(lengths), 200)
    fig = go.Figure(go.Scatter(x=lengths, y=med, mode="markers", name=names["measured"], marker={"size": 9},
                               error_y={"type": "data", "symmetric": False, "array": high, "arrayminus": low}))
    fig.add_trace(go.Scatter(x=n, y=fit.a + fit.b * n + fit.c * n * n, mode="lines", name=names["fitted"],
                             line={"color": "#333333"}))
    for term, y in (("fixed", np.full_like(n, fit.a)), ("linear", fit.b * n), ("quadratic", fit.c * n * n)):
        fig.add_trace(go.Scatter(x=n, y=y, mode="lines", name=names[term],
                                 line={"color": TERM_COLORS[term], "dash": "dot"}))
    return finish(fig, title, height=380, xaxis={"title": {"text": x_title}}, yaxis={"title": {"text": y_title}},
                  legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"})
