"""Figures of the Layer view (C3): per-token lines and bars, and the MLP activation's histogram.

Labels arrive translated; numpy in, plotly out.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.viz.style import MAX_TICKS, finish, legend_below, token_ticks

DASHED = {"dash": "dash"}


def per_token_lines(series: list[tuple[str, np.ndarray, bool]], labels: list[str], title: str, y_title: str,
                    x_title: str) -> go.Figure:
    """One line per (name, values [n], dashed) across the step's tokens (markers alone for a single token)."""
    n = len(series[0][1])
    mode = "markers" if n == 1 else "lines+markers"
    fig = go.Figure([go.Scatter(x=list(range(n)), y=np.asarray(values), name=name, mode=mode,
                                line=DASHED if dashed else None, customdata=labels,
                                hovertemplate="%{x}:%{customdata}: %{y:.2f}<extra>" + name + "</extra>")
                     for name, values, dashed in series])
    fig.update_xaxes(title_text=x_title, **(token_ticks(labels, n) if n <= MAX_TICKS else {"tickformat": "d"}))
    fig.update_yaxes(title_text=y_title, rangemode="tozero")
    fig.update_layout(legend=legend_below())
    return finish(fig, title, 340)


def contribution_bars(names: tuple[str, str], attn: np.ndarray, mlp: np.ndarray, labels: list[str], title: str,
                      y_title: str, x_title: str) -> go.Figure:
    """‖attn_out‖ and ‖mlp_out‖ per token, side by side: what each half of the block adds to the stream."""
    x = list(range(len(attn)))
    fig = go.Figure([go.Bar(x=x, y=attn, name=names[0], customdata=labels,
                            hovertemplate="%{x}:%{customdata}: %{y:.2f}<extra></extra>"),
                     go.Bar(x=x, y=mlp, name=names[1], customdata=labels,
                            hovertemplate="%{x}:%{customdata}: %{y:.2f}<extra></extra>")])
    fig.update_layout(barmode="group", legend=legend_below())
    fig.update_xaxes(title_text=x_title, **(token_ticks(labels, len(x)) if len(x) <= MAX_TICKS else {}))
    fig.update_yaxes(title_text=y_title)
    return finish(fig, title, 340)


def activation_histogram(act: np.ndarray, title: str, x_title: str, y_title: str) -> go.Figure:
    """The MLP's hidden activation values of every token of the step, as a histogram."""
    fig = go.Figure(go.Histogram(x=np.asarray(act, dtype=np.float32).ravel(), nbinsx=80, marker_color="#3a7ca5"))
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title)
    return finish(fig, title, 320)
