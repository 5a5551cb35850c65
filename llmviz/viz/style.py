"""What every figure shares: fonts that can show Chinese, tight margins, a transparent background."""

from __future__ import annotations

import html
import re
from types import MappingProxyType

import numpy as np
import plotly.graph_objects as go

FONT = "Noto Sans CJK SC, Noto Sans SC, Microsoft YaHei, PingFang SC, sans-serif"
MASKED_COLOR = "#d9d9d9"  # what shows through a NaN (masked) cell of a heatmap
MAX_TICKS = 48  # above this many rows or columns, token labels are left to hover
# Plotly's hover toolbar without the buttons that repeat another (zoom in / out and autoscale: the box zoom, a
# double click and "reset axes" do the same) or that select points no figure here uses: a shorter bar covers
# less of a chart's title in the lesson's narrow column. The PNG download, box zoom, pan and reset stay.
SPARE_BUTTONS = ("zoomin", "zoomout", "autoscale", "lasso", "select")
# The `<` of an `<a ...>` or `</a>` tag: plotly.js draws an `<a href="https://...">` in any text (a title, a tick, a
# label, a hover) as a live link, and no figure of ours has one. Its other tags (<br>, <b>, <span style>,
# <extra>) fetch nothing and stay.
_LINK_TAG = re.compile(r"<(?=\s*/?\s*a(?![\w-]))", re.IGNORECASE)  # <a, </a, <A: not <abbr>


def layout(title: str, height: int) -> dict:
    """The layout every figure shares: its title at the left, tight margins, the CJK fonts, no background."""
    return {"title": {"text": title, "x": 0, "xanchor": "left"}, "height": height,
            "margin": {"l": 10, "r": 10, "t": 50, "b": 10}, "font": {"family": FONT},
            "paper_bgcolor": "rgba(0,0,0,0)", "modebar": {"remove": list(SPARE_BUTTONS)}}


def legend_below() -> dict:
    """A horizontal legend under the whole figure, below the x axis's title, whatever the figure's height (plotly
    widens the bottom margin to fit it). One placement for every figure: a legend at the top right sits under the
    toolbar Plotly shows on hover, and one at a fixed fraction below the plot covers the axis's title on a short
    figure (both seen in the lesson's narrow column)."""
    return {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0, "xanchor": "left"}


def unlinked(value):
    """`value` (a figure's spec or any part of it) with every link tag written as text (`&lt;a href=...>`, which
    plotly shows as typed): a model name, a token or a request's name from a file or a link reaches titles, ticks,
    labels and hovers, and a live link there would lead outside the app."""
    if isinstance(value, str):
        return _LINK_TAG.sub("&lt;", value) if "<" in value else value
    if isinstance(value, dict):
        return {k: unlinked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unlinked(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.kind == "U" and not (np.char.find(value, "<") >= 0).any():
        return value  # the common case, a token's hover text: checked in C, not string by string
    if isinstance(value, np.ndarray) and value.dtype.kind in "UO":
        kind = object if value.dtype.kind == "O" else None  # a text array widens to fit each `&lt;`
        return np.array([unlinked(v) for v in value.ravel().tolist()], dtype=kind).reshape(value.shape)
    return value


def finish(fig: go.Figure, title: str, height: int, **extra) -> go.Figure:
    """Apply the shared layout; `extra` overrides or adds plotly layout properties. Any link tag in the figure's
    text is made text (`unlinked`), in place."""
    fig.update_layout(layout(title, height), **extra)
    spec = fig.to_plotly_json()
    safe = unlinked(spec)
    if _differs(spec, safe):
        fig.update(safe, overwrite=True)
    return fig


def _differs(a, b) -> bool:
    """Whether `unlinked` changed a text anywhere (arrays compared by their text, numbers never change)."""
    if isinstance(a, dict):
        return any(_differs(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return any(_differs(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype.kind in "UO" and not np.array_equal(a, b)
    return isinstance(a, str) and a != b


def lean(traces: list[dict], title: str, height: int, **extra) -> go.Figure:
    """A figure from plain trace dicts (each with its "type") and the shared layout, `extra` replacing its
    top-level keys, built without plotly's property-by-property validation: that path cost 6-17 ms a figure
    and was most of a Decode step's Python under a class's load; this one costs about 1 ms. The specs
    are fixed by our code, and tests/viz/test_lean_figures.py passes each through the validating constructor
    once: it must come back unchanged (so every name exists and every value is in plotly's own form)."""
    return go.Figure(unlinked({"data": traces, "layout": layout(title, height) | extra}), _validate=False)


# The named colour scales our figures use, as plotly.py's validator spells them out ((0.0, "rgb(...)"), ...): a
# bare name would reach the browser as plotly.js's scale of that name, which differs (its RdBu runs blue to red).
# Read once at import (a lookup costs 0.3 ms), kept read-only.
SCALES = MappingProxyType({name: go.Heatmap(colorscale=name).colorscale
                           for name in ("RdBu", "Blues", "Viridis", "Greens")})


HOVER_CELLS = 16_384  # a heat map names each cell's tokens in its hover up to this many cells (its JSON stays small)


def token_ticks(labels: list[str] | None, count: int) -> dict:
    """Axis settings that label every row/column with its token, or nothing when there are too many."""
    if not labels or count > MAX_TICKS:
        return {}
    return {"tickmode": "array", "tickvals": list(range(count)), "ticktext": [plain(x) for x in labels[:count]]}


def text_px(text: str, size: int = 14) -> int:
    """About how long `text` runs in px at the figures' font size: a CJK character a full em, any other half."""
    return sum(size if ord(c) > 0x2E7F else size // 2 for c in text)


def at_gloss(title: str) -> str:
    """An axis title on two lines where its gloss begins ("query<br>(attending token)", "查询<br>（发出关注的 token）"):
    a title along a short plot stays beside it."""
    for mark in (" (", "（"):
        head, sep, tail = title.partition(mark)
        if sep and head:
            return f"{head}<br>{sep.strip()}{tail}"
    return title


def plain(text: str) -> str:
    """A label shown as itself: plotly reads a subset of HTML in any text it draws (an `<a href>` becomes a live
    link), and a token's piece can come from an uploaded trace. Its entities show as the characters."""
    return html.escape(str(text), quote=False)
