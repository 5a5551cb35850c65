"""The presenter view: for a projector at 1280x720. Large type and figures, no sidebar, no
developer detail; on the Decode page the stepper, the KV grid and the next-token chart in one screen.

On with the sidebar's toggle or `?present=1` (it is a setting, so a link keeps it); off with the button at the
bottom of every page, or Esc. The Decode page adds "Reset demo" (decode_controls.reset_demo).
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from llmviz.ui import state

FONT_PX = 20  # the page's base size (Streamlit's is 16): every rem-sized text grows by a quarter
FIGURE_FONT_PX = 17
# Hide the sidebar and its opener, tighten the page's top, enlarge the base size.
_CSS = f"""<style>
html {{ font-size: {FONT_PX}px; }}
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
header[data-testid="stHeader"] {{ display: none; }}
.block-container, [data-testid="stMainBlockContainer"] {{ padding-top: 0.6rem; padding-bottom: 1rem; }}
[data-testid="stMetricValue"] {{ font-size: 1.6rem; }}
</style>"""


def active() -> bool:
    return bool(state.settings().present)


def toggle(t) -> None:
    """The sidebar's switch."""
    st.sidebar.toggle(t("present.toggle"), value=active(), key="present_toggle", on_change=_flip,
                      help=t("present.help"))


def _flip() -> None:
    state.update(present=bool(st.session_state.get("present_toggle")))


def _leave() -> None:
    state.update(present=False)
    st.session_state["present_toggle"] = False


def frame() -> None:
    """At the top of every page while presenting: the styles."""
    if active():
        st.html(_CSS)


def footer(t) -> None:
    """At the bottom of every page while presenting: the way out (also the Esc key)."""
    if active():
        st.button(t("present.leave"), on_click=_leave, key="present_leave", shortcut="Esc")


def enlarge(fig: go.Figure) -> go.Figure:
    """A figure's text at projector size while presenting (unchanged otherwise)."""
    if active():
        fig.update_layout(font={"size": FIGURE_FONT_PX}, title={"font": {"size": FIGURE_FONT_PX + 3}})
    return fig
