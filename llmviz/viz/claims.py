"""Figures of the claims page: K1's prefill sweep with its a + b*n + c*n^2 fit and each term."""

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


def rounds_figure(rounds: list[float], low: float | None, high: float | None, article: float, names: dict,
                  title: str, y_title: str, control: list[float] | None = None) -> go.Figure:
    """A timed effect's rounds (the numbers behind the box): a dot per round, the median of those (the
    box's figure) as a line, the interval as a shaded band (none where too few rounds leave none), the article's
    figure as a dashed line, and the A-vs-A control's rounds beside them (same unit: a ratio). Values as shown
    (x1.8 as 1.8, 60% as 60). names: rounds, median, interval, article, control."""
    x = list(range(1, len(rounds) + 1))
    fig = go.Figure(go.Scatter(x=x, y=rounds, mode="markers", name=names["rounds"], marker={"size": 10,
                                                                                             "color": "#4c78a8"}))
    if control:
        fig.add_trace(go.Scatter(x=[i + 0.25 for i in range(1, len(control) + 1)], y=control, mode="markers",
                                 name=names["control"], marker={"size": 8, "color": "#bab0ac", "symbol": "diamond"}))
    if low is not None and high is not None:
        fig.add_hrect(y0=low, y1=high, fillcolor="#4c78a8", opacity=0.15, line_width=0)
        fig.add_trace(go.Scatter(x=[x[0], x[-1]], y=[low, low], mode="lines", name=names["interval"],
                                 line={"color": "#4c78a8", "width": 1}))
        fig.add_trace(go.Scatter(x=[x[0], x[-1]], y=[high, high], mode="lines", showlegend=False,
                                 line={"color": "#4c78a8", "width": 1}))
    fig.add_trace(go.Scatter(x=[x[0], x[-1]], y=[float(np.median(rounds))] * 2, mode="lines", name=names["median"],
                             line={"color": "#333333", "width": 2}))
    fig.add_trace(go.Scatter(x=[x[0], x[-1]], y=[article, article], mode="lines", name=names["article"],
                             line={"color": "#e45756", "dash": "dash"}))
    return finish(fig, title, height=320, xaxis={"title": {"text": names["x"]}, "dtick": 1},
                  yaxis={"title": {"text": y_title}}, legend=legend_below())
