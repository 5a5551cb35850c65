"""Figures of the claims page (issue 11): K1's prefill sweep with its a + b*n + c*n^2 fit and each term."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.analysis.prefill_fit import PrefillFit
from llmviz.viz.style import finish, legend_below

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
    return finish(fig, title, height=440, xaxis={"title": {"text": x_title}}, yaxis={"title": {"text": y_title}},
                  legend=legend_below())


def roofline_figure(limits, points: list, names: dict, title: str, x_title: str, y_title: str) -> go.Figure:
    """Log-log: the device's ceilings (compute, memory beyond and within the caches) and each step of a run at its
    arithmetic intensity and the FLOP/s it reached (prefill and decode apart). names: peak, dram, cache, prefill,
    decode."""
    xs = [p.intensity for p in points] or [1.0]
    x = np.logspace(np.log10(min(min(xs) / 4, 0.1)), np.log10(max(max(xs) * 4, limits.ridge * 8)), 120)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=[limits.ceiling(v) for v in x], mode="lines", name=names["dram"],
                             line={"color": "#333333"}))
    if limits.cache_gb_per_s:
        fig.add_trace(go.Scatter(x=x, y=[limits.ceiling(v, cached=True) for v in x], mode="lines",
                                 name=names["cache"], line={"color": "#72b7b2", "dash": "dash"}))
    for phase, color in (("prefill", "#4c78a8"), ("decode", "#f58518")):
        chosen = [p for p in points if p.phase == phase]
        if chosen:
            fig.add_trace(go.Scatter(x=[p.intensity for p in chosen], y=[p.achieved_gflop_per_s for p in chosen],
                                     mode="markers", name=names[phase], marker={"size": 9, "color": color},
                                     text=[f"step {p.index}: {p.new} token(s), {p.ms:.2f} ms" for p in chosen],
                                     hovertemplate="%{text}<br>%{x:.2f} FLOP/B, %{y:.2f} GFLOP/s<extra></extra>"))
    return finish(fig, title, height=480, xaxis={"type": "log", "title": {"text": x_title}},
                  yaxis={"type": "log", "title": {"text": y_title}},
                  legend=legend_below())
