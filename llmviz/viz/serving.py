"""Figures of the serving lab (C15, C16, C22): requests over steps (a Gantt), per-step series, speculative
rounds with their accepted and rejected drafts, and block tables with shared blocks highlighted."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.analysis.serving import STATES
from llmviz.analysis.serving_timeline import Timeline
from llmviz.viz.style import finish, legend_below, plain

STATE_COLORS = {"not_arrived": "#ffffff", "waiting": "#d9d9d9", "prefill": "#4c78a8", "decode": "#f58518",
                "idle": "#e45756", "done": "#f2f2f2"}


def _legend(fig: go.Figure, names: dict, colors: dict) -> None:
    for key, name in names.items():
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name,
                                 marker={"size": 12, "symbol": "square", "color": colors[key],
                                         "line": {"color": "#999999", "width": 1}}))


GANTT_FRAME = 300  # px of a Gantt besides its rows: title, axis, and the legend's three rows under it


def gantt(view: Timeline, names: dict, title: str, x_title: str, y_title: str, marked_step: int | None = None,
          note: str | None = None, row_labels: dict | None = None, row_px: int = 16) -> go.Figure:
    """A Timeline (analysis.serving_timeline) as coloured cells: a request per row and a step per column, or, for a
    binned one, its rows of requests and columns of steps, each cell in its shown state with its share in the
    hover and `note` (what was binned) under the title. row_labels: {request id: its name} for a row a request (a
    class's students; text, never markup); row_px: a row's height (a projector's names are read from the back).

    One heatmap a state, its cells where the state is shown and gaps elsewhere, named in its own hover template:
    each cell costs 4 bytes (float32, sent as base64) a state present, whatever the states' names and the language
    (a name per cell was up to 76 bytes in Chinese, JSON escaping each character), so that the figure stays under
    2 MB for any trace (a cell per request-step was a 225 MB figure)."""
    rows = len(view.row_ids())
    if view.aggregated:  # rows named by their ids' range on a category axis (plotly thins its ticks)
        where = {"x": view.centers(), "y": view.row_names(), "xgap": 0, "ygap": 0}
        hover = f"{plain(y_title)} %{{y}} · {plain(x_title)} %{{x}} ± {view.per_column // 2}: {{name}} %{{z:.1~%}}"
        value, yaxis = view.share.astype(np.float32), {"type": "category"}
    else:
        where, hover = {"xgap": 0, "ygap": 1}, "%{y} · %{x}: {name}"
        value = np.ones(view.shown.shape, dtype=np.float32)
        ticks = [plain(str((row_labels or {}).get(i, i))) for i in view.ids]
        yaxis = {"tickmode": "array", "tickvals": list(range(rows)), "ticktext": ticks, "automargin": True}
    fig = go.Figure()
    for code, state in enumerate(STATES):
        mask = view.shown == code
        if mask.any():
            color = STATE_COLORS[state]
            fig.add_heatmap(z=np.where(mask, value, np.float32(np.nan)), zmin=0, zmax=1, showscale=False,
                            colorscale=[[0, color], [1, color]], hoverongaps=False, name=names[state],
                            hovertemplate=hover.replace("{name}", plain(names[state])) + "<extra></extra>", **where)
    _legend(fig, {s: names[s] for s in STATES if s != "not_arrived"}, STATE_COLORS)
    shapes = []
    if marked_step is not None:
        shapes.append({"type": "rect", "x0": marked_step - 0.5, "x1": marked_step + 0.5, "y0": -0.5,
                       "y1": rows - 0.5, "line": {"color": "#222222", "width": 2}})
    # the legend below wraps its five states two a row (a long state name is whole): the height keeps room for
    # them under the axis (GANTT_FRAME), so that a few rows are never squeezed to a line
    fig = finish(fig, title, height=min(900, GANTT_FRAME + row_px * rows), shapes=shapes, plot_bgcolor="#ffffff",
                 xaxis={"title": {"text": x_title}, "showgrid": False, "zeroline": False},
                 yaxis={"title": {"text": y_title}, "autorange": "reversed", "showgrid": False, "zeroline": False,
                        **yaxis}, legend={**legend_below(), "entrywidth": 0.5, "entrywidthmode": "fraction"})
    return noted(fig, note)


def noted(fig: go.Figure, note: str | None) -> go.Figure:
    """`note` as the figure's subtitle (what a binned chart aggregated), the top margin widened to hold it."""
    if note:
        fig.update_layout(title={"subtitle": {"text": plain(note)}}, margin={"t": 72})
    return fig


def series(lines: dict[str, tuple[list, list]], title: str, x_title: str, y_title: str, percent: bool = False,
           note: str | None = None) -> go.Figure:
    """Step-indexed lines, {name: (steps, values)} (one per scheduler or quantity; analysis.serving_timeline.
    step_series bounds their points), with `note` under the title where they were averaged."""
    fig = go.Figure()
    for name, (steps, values) in lines.items():
        fig.add_scatter(x=steps, y=values, mode="lines", name=name, line={"shape": "hv"})
    yaxis = {"title": {"text": y_title}, "rangemode": "tozero"}
    if percent:
        yaxis.update(tickformat=".0%", range=[0, 1.05])
    return noted(finish(fig, title, height=300, xaxis={"title": {"text": x_title}}, yaxis=yaxis,
                        legend=legend_below()), note)


def rounds_figure(rounds: list[dict], names: dict, title: str, x_title: str, y_title: str) -> go.Figure:
    """One row per speculative round: its proposed tokens (accepted or rejected), then in the last column the
    target's own token (the correction after a rejection, or the bonus when all were kept)."""
    colors = {"accepted": "#54a24b", "rejected": "#e45756", "target": "#4c78a8", "unused": "#f2f2f2"}
    width = max(len(r["proposed"]) for r in rounds) + 1
    codes = {"accepted": 0, "rejected": 1, "target": 2, "unused": 3}
    z = np.full((len(rounds), width), codes["unused"], dtype=float)
    text = np.full((len(rounds), width), "", dtype=object)
    for i, r in enumerate(rounds):
        for j, piece in enumerate(r["pieces"]):
            z[i, j] = codes["accepted"] if j < r["accepted"] else codes["rejected"]
            text[i, j] = piece
        z[i, width - 1] = codes["target"]
        text[i, width - 1] = r["token_piece"]
    scale = []
    for key, code in codes.items():
        scale += [[code / 4, colors[key]], [(code + 1) / 4, colors[key]]]
    fig = go.Figure(go.Heatmap(z=z + 0.5, zmin=0, zmax=4, colorscale=scale, showscale=False, text=text,
                               texttemplate="%{text}", textfont={"size": 11}, xgap=2, ygap=2, hoverinfo="skip"))
    _legend(fig, names, colors)
    return finish(fig, title, height=min(900, 140 + 26 * len(rounds)), plot_bgcolor="#ffffff",
                  xaxis={"title": {"text": x_title}, "showgrid": False, "zeroline": False, "dtick": 1},
                  yaxis={"title": {"text": y_title}, "autorange": "reversed", "showgrid": False, "zeroline": False},
                  legend=legend_below())


def block_tables(tables: list[tuple[int, tuple]], title: str, x_title: str, y_title: str, shared_name: str,
                 own_name: str) -> go.Figure:
    """Each request's block table at one step: a cell per block (its id written in it), shared blocks (held
    by more than one request) highlighted."""
    counts: dict[int, int] = {}
    for _, table in tables:
        for block in table:
            counts[block] = counts.get(block, 0) + 1
    width = max((len(t) for _, t in tables), default=1)
    z = np.full((len(tables), width), np.nan)
    text = np.full((len(tables), width), "", dtype=object)
    for i, (_, table) in enumerate(tables):
        for j, block in enumerate(table):
            z[i, j] = 1.0 if counts[block] > 1 else 0.0
            text[i, j] = str(block)
    fig = go.Figure(go.Heatmap(z=z, zmin=0, zmax=1, colorscale=[[0, "#9ecae9"], [1, "#f58518"]], showscale=False,
                               text=text, texttemplate="%{text}", textfont={"size": 10}, xgap=2, ygap=2,
                               hoverinfo="skip"))
    _legend(fig, {"own": own_name, "shared": shared_name}, {"own": "#9ecae9", "shared": "#f58518"})
    return finish(fig, title, height=min(700, 140 + 26 * len(tables)), plot_bgcolor="#ffffff",
                  xaxis={"title": {"text": x_title}, "showgrid": False, "zeroline": False},
                  yaxis={"title": {"text": y_title}, "autorange": "reversed", "showgrid": False, "zeroline": False,
                         "tickmode": "array", "tickvals": list(range(len(tables))),
                         "ticktext": [str(rid) for rid, _ in tables]},
                  legend=legend_below())
