"""Sending a figure to the browser, bounded: a figure whose JSON passes MAX_CHART_BYTES is not sent,
and the page says so in the session's language.

Streamlit sends a chart as its whole JSON in one message and refuses a message over `server.maxMessageSize`
(200 MB by default) with its own raw English error ("Data of size 225.3 MB exceeds the message size limit");
well below that, tens of MB a rerun freeze the browser. The figures are built bounded (the Serving page's Gantt
bins its cells: analysis/serving_timeline.py); this is the net under them, one check for any chart.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from streamlit import config

from llmviz.i18n.translator import Translator

MAX_CHART_BYTES = 8 * 2**20  # a chart's JSON at most: 8x the Serving page's largest bounded Gantt (~1 MB)


def chart_limit() -> int:
    """The most bytes a chart may send: MAX_CHART_BYTES, or half of Streamlit's message limit if that is lower."""
    return min(MAX_CHART_BYTES, int(config.get_option("server.maxMessageSize")) * 2**20 // 2)


# An upper bound of one value's JSON: a number at most 32 characters (plotly sends numpy arrays as base64, less), a
# string at most 6 per character (a "\uXXXX" escape; UTF-8 text is sent as is, 1-3 bytes a character).
NUMBER_BYTES, CHAR_BYTES = 32, 6


def size_bound(node) -> int:
    """An upper bound of the JSON bytes of a figure's data or layout (plain dicts, lists, numpy arrays, strings and
    numbers, as go.Figure keeps them and as the lean builders make them), in microseconds for a small figure, where
    serialising it costs a millisecond (the Decode page draws six a Next)."""
    if isinstance(node, dict):
        return sum(len(str(k)) + 4 + size_bound(v) for k, v in node.items()) + 2
    if isinstance(node, list | tuple):
        return sum(size_bound(v) + 1 for v in node) + 2
    if isinstance(node, np.ndarray):
        if node.dtype.kind in "US":
            return int(node.size) * (CHAR_BYTES * max(1, node.dtype.itemsize) + 3)
        if node.dtype.kind == "O":
            return sum(size_bound(v) + 1 for v in node.ravel().tolist()) + 2
        return int(node.size) * NUMBER_BYTES + 64
    if isinstance(node, str):
        return CHAR_BYTES * len(node) + 2
    return NUMBER_BYTES


def figure_bound(fig) -> int:
    """size_bound of a go.Figure (its data and layout dicts) or of a plain spec."""
    if isinstance(fig, go.Figure):
        return size_bound(fig._data) + size_bound(fig._layout) + 64  # plotly's own storage: plain dicts
    return size_bound(fig)


# The tallest a chart may be drawn inside `fitted` (the lesson's one screen per step): set per script run,
# in that run's own thread and context, never shared between sessions.
_MOST_HEIGHT: ContextVar[int | None] = ContextVar("llmviz_most_chart_height", default=None)


@contextlib.contextmanager
def fitted(height: int | None):
    """Charts drawn inside are at most `height` px tall (a taller figure is drawn at that height, never cropped);
    None lifts an outer cap."""
    token = _MOST_HEIGHT.set(height)
    try:
        yield
    finally:
        _MOST_HEIGHT.reset(token)


def capped(fig: go.Figure | dict, most: int | None) -> go.Figure | dict:
    """The figure with its layout height at most `most` (the same object; unchanged when it is lower or unset)."""
    if most is None:
        return fig
    layout = fig.layout if isinstance(fig, go.Figure) else fig.setdefault("layout", {})
    height = layout.height if isinstance(fig, go.Figure) else layout.get("height")
    if height is None or height > most:
        if isinstance(fig, go.Figure):
            fig.update_layout(height=most)
        else:
            layout["height"] = most
    return fig


def chart(t: Translator, fig: go.Figure | dict, key: str | None = None, **options) -> bool:
    """Draw `fig` (st.plotly_chart, full width unless `options` say otherwise) when its JSON is within
    chart_limit(); else a warning with its size and the limit, and nothing sent. Whether it was drawn. A figure whose
    upper bound is within the limit is drawn without being serialised twice."""
    limit = chart_limit()
    size = 0 if figure_bound(fig) <= limit else len(pio.to_json(fig, validate=False))
    if size > limit:
        st.warning(t("chart.too_large", size=size / 2**20, limit=limit / 2**20))
        return False
    st.plotly_chart(capped(fig, _MOST_HEIGHT.get()), key=key, **{"width": "stretch", **options})
    return True
