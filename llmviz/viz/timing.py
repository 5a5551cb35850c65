"""Where a step's time went (K1's raw material): one bar per timed span (embed, each layer, head, sample)."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from llmviz.viz.style import lean, legend_below


def span_bars(labels: list[str], ms: list[float], title: str, y_title: str) -> go.Figure:
    """Bars of milliseconds per span, in the order the forward pass ran them."""
    return lean([{"type": "bar", "x": list(labels), "y": list(ms), "text": [f"{v:.2f}" for v in ms],
                  "textposition": "outside", "marker": {"color": "#4c78a8"}, "cliponaxis": False,
                  "hovertemplate": "%{x}: %{y:.3f} ms<extra></extra>"}],
                title, 340, yaxis={"title": {"text": y_title}}, xaxis={"type": "category"}, plot_bgcolor="#fafbfd")


GROWTH_COLORS = ("#e45756", "#4c78a8")  # attention (the n² term), the projection (a linear term)


def growth_lines(lengths: list[int], parts: dict[str, dict], names: dict[str, str], guides: dict[str, str],
                 title: str, axes: tuple[str, str]) -> go.Figure:
    """Milliseconds against prompt length on log-log axes, one line per part ({part: {"median", "min", "max"}: one
    list each}), its min-max as error bars; beside each, a dotted guide through its first median growing as n²
    (attention) or n (the projection), so a slope reads against them. `guides`: {part: the guide's label}."""
    traces, power = [], {"attention": 2, "projection": 1}
    for color, (part, ms) in zip(GROWTH_COLORS, parts.items(), strict=False):
        med = ms["median"]
        bars = {"type": "data", "symmetric": False, "array": [hi - m for hi, m in zip(ms["max"], med, strict=True)],
                "arrayminus": [m - lo for lo, m in zip(ms["min"], med, strict=True)]}
        traces.append({"type": "scatter", "x": list(lengths), "y": list(med), "name": names[part],
                       "mode": "lines+markers", "line": {"color": color}, "error_y": bars,
                       "hovertemplate": "n = %{x}: %{y:.3f} ms<extra></extra>"})
        guide = [med[0] * (n / lengths[0]) ** power[part] for n in lengths]
        traces.append({"type": "scatter", "x": list(lengths), "y": guide, "name": guides[part], "mode": "lines",
                       "line": {"color": color, "dash": "dot", "width": 1}, "hoverinfo": "skip"})
    return lean(traces, title, 360, legend=legend_below(),
                xaxis={"type": "log", "title": {"text": axes[0]}, "tickvals": list(lengths)},
                yaxis={"type": "log", "title": {"text": axes[1]}, "tickvals": one_two_five(traces)},
                plot_bgcolor="#fafbfd")


def one_two_five(traces: list[dict]) -> list[float]:
    """A log axis's ticks at 1, 2, 5 x 10^k over the traces' values (plotly's own repeat 2 and 5 in every decade)."""
    ys = [y for tr in traces for y in tr["y"] if y > 0]
    if not ys:
        return []
    low, high = min(ys) / 1.5, max(ys) * 1.5
    start = math.floor(math.log10(low))
    ticks = [m * 10.0**k for k in range(start, math.ceil(math.log10(high)) + 1) for m in (1, 2, 5)]
    return [round(v, 6) for v in ticks if low <= v <= high]
