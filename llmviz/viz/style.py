"""What every figure shares: fonts that can show Chinese, tight margins, a transparent background."""

from __future__ import annotations

import html

import plotly.graph_objects as go

FONT = "Noto Sans CJK SC, Noto Sans SC, Microsoft YaHei, PingFang SC, sans-serif"
MASKED_COLOR = "#d9d9d9"  # what shows through a NaN (masked) cell of a heatmap
MAX_TICKS = 48  # above this many rows or columns, token labels are left to hover


def finish(fig: go.Figure, title: str, height: int, **layout) -> go.Figure:
    """Apply the shared layout; `layout` overrides or adds plotly layout properties."""
    fig.update_layout(title={"text": title, "x": 0, "xanchor": "left"}, height=height,
                      margin={"l": 10, "r": 10, "t": 50, "b": 10}, font={"family": FONT},
                      paper_bgcolor="rgba(0,0,0,0)", **layout)
    return fig


def token_ticks(labels: list[str] | None, count: int) -> dict:
    """Axis settings that label every row/column with its token, or nothing when there are too many."""
    if not labels or count > MAX_TICKS:
        return {}
    return {"tickmode": "array", "tickvals": list(range(count)), "ticktext": [plain(x) for x in labels[:count]]}


def plain(text: str) -> str:
    """A label shown as itself: plotly reads a subset of HTML in any text it draws (an `<a href>` becomes a live
    link), and a token's piece can come from an uploaded trace (issue 19). Its entities show as the characters."""
    return html.escape(str(text), quote=False)
