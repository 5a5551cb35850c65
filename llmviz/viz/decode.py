"""Figures of the Decode page (C5, C6, C18): plain plotly specs built from numpy arrays (style.lean).

Labels arrive translated; nothing here knows about Streamlit or torch.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.viz.style import MAX_TICKS, SCALES, lean, legend_below, plain

HIGHLIGHT = "#e4572e"
MIN_HEIGHT = 200  # a one-row map (a 1-token prompt, one head) keeps room for its title and axis


def colorbar(title: str) -> dict:
    """A slim colour scale beside a heatmap, titled with what the colours measure."""
    return {"title": {"text": title, "side": "right"}, "thickness": 12, "len": 0.9}


def vector_heatmap(values: np.ndarray, row_label: str, col_label: str, title: str, scale_title: str) -> go.Figure:
    """A [rows, cols] matrix (e.g. the new token's Q: [heads, head_dim]), with its colour scale."""
    rows = values.shape[0]
    return lean([{"type": "heatmap", "z": values, "colorscale": SCALES["RdBu"], "zmid": 0,
                  "colorbar": colorbar(scale_title), "y": [f"{row_label} {i}" for i in range(rows)],
                  "hovertemplate": f"{row_label} %{{y}}, {col_label} %{{x}}: %{{z:.3f}}<extra></extra>"}],
                title, max(MIN_HEIGHT, 80 + 22 * rows),
                xaxis={"title": {"text": col_label}}, yaxis={"autorange": "reversed"})


def attention_row(probs: np.ndarray, labels: list[str], start: int, head_label: str, title: str,
                  scale_title: str) -> go.Figure:
    """The new token's attention [heads, n_k] over the cached positions start..start+n_k-1; each column is
    labelled with its token while they fit (MAX_TICKS), by position number past that."""
    heads, n_k = probs.shape
    x = list(range(start, start + n_k))
    xaxis = ({"tickmode": "array", "tickvals": x, "ticktext": [f"{p}:{labels[p]}" for p in x], "tickangle": -45,
              "tickfont": {"size": 12}} if n_k <= MAX_TICKS else {"tickformat": "d"})
    return lean([{"type": "heatmap", "z": probs, "x": x, "y": [f"{head_label} {h}" for h in range(heads)],
                  "colorscale": SCALES["Blues"], "zmin": 0, "zmax": 1, "colorbar": colorbar(scale_title),
                  "customdata": [labels[start:start + n_k]] * heads,
                  "hovertemplate": "%{y} → %{x}:%{customdata}: %{z:.3f}<extra></extra>"}],
                title, max(MIN_HEIGHT, 140 + 22 * heads), xaxis=xaxis, yaxis={"autorange": "reversed"})


def kv_grid(norms: np.ndarray, new_cols: int, labels: list[str], row_label: str, title: str) -> go.Figure:
    """The cache of one layer as a grid: rows = KV heads, one column per cached position.

    The columns this step wrote are outlined; the preallocated, still-empty slots are summarized in the
    title (drawing thousands of empty columns would hide the point).
    """
    heads, used = norms.shape
    outline = {"type": "rect", "x0": used - new_cols - 0.5, "x1": used - 0.5, "y0": -0.5, "y1": heads - 0.5,
               "line": {"color": HIGHLIGHT, "width": 3}}
    named = [plain(x) for x in labels[:used]]  # a token's text may hold markup
    return lean([{"type": "heatmap", "z": norms, "x": list(range(used)),
                  "y": [f"{row_label} {h}" for h in range(heads)], "colorscale": SCALES["Viridis"],
                  "colorbar": colorbar("‖k‖"), "xgap": 1, "ygap": 1, "customdata": np.array([named] * heads),
                  "hovertemplate": "%{y}, pos %{x} (%{customdata}): ‖k‖=%{z:.2f}<extra></extra>"}],
                title, max(MIN_HEIGHT, 90 + 26 * heads), shapes=[outline], yaxis={"autorange": "reversed"},
                xaxis={"range": [-0.5, max(used, 16) - 0.5], "dtick": max(1, used // 16)})


KEPT, EXCLUDED, RAW = "#3a7ca5", "#c8c8c8", "#d9e4ef"


def next_token_bars(pieces: list[str], probs: np.ndarray, raw: np.ndarray, kept: np.ndarray, chosen: int | None,
                    names: tuple[str, str, str], title: str) -> go.Figure:
    """Top tokens: probability under the sampling settings vs plain softmax; excluded ones greyed, the drawn
    token in the highlight colour. The legend has its own swatches (a bar trace's swatch takes its first bar's
    colour, which is the drawn one's whenever the top token was drawn)."""
    colors = [HIGHLIGHT if i == chosen else (KEPT if k else EXCLUDED) for i, k in enumerate(kept)]
    return lean([
        {"type": "bar", "x": pieces, "y": raw, "name": names[0], "marker": {"color": RAW}},
        {"type": "bar", "x": pieces, "y": probs, "name": names[1], "marker": {"color": colors}, "showlegend": False,
         "text": [f"{p:.2f}" for p in probs], "textposition": "outside"},
        *({"type": "scatter", "x": [None], "y": [None], "name": name, "mode": "markers",  # legend entries only
           "marker": {"color": color, "symbol": "square", "size": 12}}
          for name, color in ((names[1], KEPT), (names[2], HIGHLIGHT))),
    ], title, 300, barmode="group", legend={"orientation": "h", "y": 1.12, "x": 0}, yaxis={"range": [0, 1.1]})


def logit_lens(pieces: list[list[str]], probs: np.ndarray, layer_label: str, title: str) -> go.Figure:
    """Each layer's top-k guesses [L, k] with their probabilities, first layer at the top."""
    layers, k = probs.shape
    return lean([{"type": "heatmap", "z": probs, "text": pieces, "texttemplate": "%{text}",
                  "colorscale": SCALES["Greens"], "zmin": 0, "zmax": 1, "showscale": False,
                  "x": [f"#{j + 1}" for j in range(k)], "y": [f"{layer_label} {i}" for i in range(layers)],
                  "hovertemplate": "%{y} %{x}: %{text} (%{z:.3f})<extra></extra>"}],
                title, 70 + 30 * layers, yaxis={"autorange": "reversed"})


def fit_line(xs: np.ndarray, line: tuple[float, float], name: str) -> dict:
    """The dashed trend line ms = slope x + intercept over xs (its two ends)."""
    return {"type": "scatter", "x": xs, "y": line[0] * xs + line[1], "mode": "lines", "line": {"dash": "dash"},
            "name": name}




def latency(positions: np.ndarray, ms: np.ndarray, current: int | None, line: tuple[float, float] | None,
            left_out: int, names: tuple[str, str, str], axis: tuple[str, str], title: str) -> go.Figure:
    """Per-token decode latency against position (C18). The first `left_out` points (warm-up) are grey and
    named as left out of the fit; `line` (slope, intercept in ms) is drawn only when the caller found it
    meaningful. names: (timings, warm-up, fit)."""
    hover = "pos %{x}: %{y:.2f} ms<extra></extra>"
    traces = [{"type": "scatter", "x": positions[:left_out], "y": ms[:left_out], "mode": "markers", "name": names[1],
               "marker": {"color": EXCLUDED, "size": 9}, "hovertemplate": hover}] if left_out else []
    traces.append({"type": "scatter", "x": positions[left_out:], "y": ms[left_out:], "mode": "lines+markers",
                   "name": names[0], "hovertemplate": hover})
    if line is not None:
        traces.append(fit_line(np.array([positions[left_out:].min(), positions.max()]), line, names[2]))
    marker = {} if current is None else {"shapes": [{"type": "line", "x0": current, "x1": current, "xref": "x",
                                                     "y0": 0, "y1": 1, "yref": "y domain",
                                                     "line": {"color": HIGHLIGHT}}]}
    return lean(traces, title, 320, **marker, legend=legend_below(),
                xaxis={"title": {"text": axis[0]}, "tickformat": "d",
                       "dtick": max(1, int(np.ptp(positions)) // 10 or 1)},
                yaxis={"title": {"text": axis[1]}, "rangemode": "tozero"})


def latency_sweep(lengths: list[int], median: list[float], low: list[float], high: list[float],
                  line: tuple[float, float] | None, names: tuple[str, str], axis: tuple[str, str],
                  title: str) -> go.Figure:
    """Decode ms/token at each cached length: the median of the rounds, a bar from the fastest to the slowest
    round, and the fit when it is meaningful. names: (medians, fit)."""
    med = np.asarray(median)
    traces = [{"type": "scatter", "x": lengths, "y": med, "mode": "lines+markers", "name": names[0],
               "error_y": {"type": "data", "symmetric": False, "array": np.asarray(high) - med,
                           "arrayminus": med - np.asarray(low)},
               "hovertemplate": "%{x} tokens: %{y:.2f} ms<extra></extra>"}]
    if line is not None:
        traces.append(fit_line(np.array([min(lengths), max(lengths)]), line, names[1]))
    return lean(traces, title, 320, legend=legend_below(), xaxis={"title": {"text": axis[0]}, "tickformat": "d"},
                yaxis={"title": {"text": axis[1]}, "rangemode": "tozero"})
