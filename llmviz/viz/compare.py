"""Figures of an A/B comparison (C8-C11, C14, C19-C21): timings with their spread, drift per step, and the
two settings' attention maps side by side (see llmviz/labs/compare.py for what each number is)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from llmviz.viz.style import MASKED_COLOR, finish, legend_below, token_ticks

COLORS = {"a": "#4c78a8", "b": "#f58518"}


def timing_bars(result: dict, labels: dict, title: str, y_title: str) -> go.Figure:
    """Median prefill and decode ms of A and B, with min-max whiskers over the timed rounds."""
    fig = go.Figure()
    keys = ("prefill_ms", "decode_ms_per_token")
    for side in "ab":
        s = result[side]
        med = [s[k]["median"] for k in keys]
        above = [s[k]["max"] - s[k]["median"] for k in keys]
        below = [s[k]["median"] - s[k]["min"] for k in keys]
        fig.add_bar(name=labels[side], x=[labels[k] for k in keys], y=med, marker_color=COLORS[side],
                    error_y={"type": "data", "symmetric": False, "array": above, "arrayminus": below},
                    hovertemplate="%{x}: %{y:.3f} ms<extra>" + labels[side] + "</extra>")
    return finish(fig, title, height=320, barmode="group", yaxis={"title": {"text": y_title}, "rangemode": "tozero"},
                  legend=legend_below())


def drift_bars(gaps: list[float], agree: list[bool], title: str, x_title: str, y_title: str,
               agree_name: str, differ_name: str) -> go.Figure:
    """max |logit_A - logit_B| per step (B teacher-forced on A's tokens), coloured by whether the greedy
    pick agrees; a log axis, since lossless switches sit near 1e-6 and lossy ones near 1."""
    steps = np.arange(len(gaps))
    shown = np.maximum(np.asarray(gaps, dtype=float), 1e-9)  # 0 (bit-identical) drawn at the axis floor
    fig = go.Figure()
    for flag, name, color in ((True, agree_name, "#54a24b"), (False, differ_name, "#e45756")):
        pick = np.asarray(agree) == flag
        if pick.any():
            fig.add_bar(x=steps[pick], y=shown[pick], name=name, marker_color=color,
                        customdata=np.asarray(gaps)[pick], hovertemplate="%{x}: %{customdata:.3g}<extra></extra>")
    return finish(fig, title, height=300, yaxis={"title": {"text": y_title}, "type": "log"},
                  xaxis={"title": {"text": x_title}, "dtick": 1 if len(gaps) <= 32 else None},
                  legend=legend_below())


def attention_pair(maps: list[np.ndarray], titles: list[str], labels: list[str], title: str,
                   value_title: str) -> go.Figure:
    """Two [n, n] probability maps (one layer and head) side by side on one colour scale; masked cells grey."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.08)
    n = maps[0].shape[0]
    for i, z in enumerate(maps):
        z = np.asarray(z, dtype=np.float32)
        masked = np.triu(np.ones_like(z, dtype=bool), k=1) & (z == 0)  # the causal mask's cells
        fig.add_trace(go.Heatmap(z=np.where(masked, np.nan, z), colorscale="Blues", zmin=0.0, zmax=1.0,
                                 showscale=i == 1, colorbar={"title": {"text": value_title}},
                                 hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"), row=1, col=i + 1)
        axis = {"showgrid": False, "zeroline": False, **token_ticks(labels, n)}
        fig.update_xaxes(axis, row=1, col=i + 1)
        fig.update_yaxes({**axis, "autorange": "reversed"}, row=1, col=i + 1)
    return finish(fig, title, height=min(520, 200 + 18 * n), plot_bgcolor=MASKED_COLOR)
