"""Sending a figure to the browser, bounded (issue 35): a figure whose JSON passes MAX_CHART_BYTES is not sent,
and the page says so in the session's language.

Streamlit sends a chart as its whole JSON in one message and refuses a message over `server.maxMessageSize`
(200 MB by default) with its own raw English error ("Data of size 225.3 MB exceeds the message size limit");
well below that, tens of MB a rerun freeze the browser. The figures are built bounded (the Serving page's Gantt
bins its cells: analysis/serving_timeline.py); this is the net under them, one check for any chart.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from streamlit import config

from llmviz.i18n.translator import Translator

MAX_CHART_BYTES = 8 * 2**20  # a chart's JSON at most: 8x the Serving page's largest bounded Gantt (~1 MB)


def chart_limit() -> int:
    """The most bytes a chart may send: MAX_CHART_BYTES, or half of Streamlit's message limit if that is lower."""
    return min(MAX_CHART_BYTES, int(config.get_option("server.maxMessageSize")) * 2**20 // 2)


def chart(t: Translator, fig: go.Figure, key: str, **options) -> bool:
    """Draw `fig` (st.plotly_chart, full width unless `options` say otherwise) when its JSON is within
    chart_limit(); else a warning with its size and the limit, and nothing sent. Whether it was drawn."""
    size, limit = len(pio.to_json(fig, validate=False)), chart_limit()
    if size > limit:
        st.warning(t("chart.too_large", size=size / 2**20, limit=limit / 2**20))
        return False
    st.plotly_chart(fig, key=key, **{"width": "stretch", **options})
    return True
