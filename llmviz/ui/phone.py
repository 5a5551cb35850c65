"""A phone's screen (390 px wide, a class's students): the styles that keep a page usable there, on every page.

Under 640 px Streamlit stacks columns into full-width rows, Plotly's toolbar covers a chart's title, pills run off
the screen's edge and a page link is cut. Here, at that width only: pills and page links wrap; no chart toolbar (a
phone has no hover to reveal it, and its buttons sit over the title); the lesson's
Back, chapter list and Next stay in one row (a class's line under it), without the keyboard shortcut a phone lacks;
the page's top margin is the header's height, so a step's title sits in the top half of the first screen. A desktop
or a projector sees none of it.
"""

from __future__ import annotations

import streamlit as st

PHONE_PX = 640  # Streamlit stacks columns below this width
NAV_KEY = "lesson-nav"  # the lesson's navigation row (ui/lesson/lesson_nav.py)
# A container keyed with one of these prefixes shows on a wide screen only, or on a phone only (the Home page's
# diagram: left to right on a desktop, top to bottom on a phone, where the wide one's labels shrink unreadably)
WIDE_ONLY, PHONE_ONLY = "wide-only", "phone-only"

CSS = f"""<style>
[class*="st-key-{PHONE_ONLY}"] {{ display: none !important; }}
@media (max-width: {PHONE_PX}px) {{
  [class*="st-key-{PHONE_ONLY}"] {{ display: flex !important; }}
  [class*="st-key-{WIDE_ONLY}"] {{ display: none !important; }}
  .modebar-container {{ display: none !important; }}
  [data-testid="stButtonGroup"] [role="radiogroup"] {{ flex-wrap: wrap; overflow-x: visible; }}
  [data-testid="stPageLink-NavLink"], [data-testid="stPageLink-NavLink"] p {{ white-space: normal; height: auto; }}
  [data-testid="stMainBlockContainer"] {{ padding-top: 3.6rem; padding-left: 0.9rem; padding-right: 0.9rem; }}
  .st-key-{NAV_KEY} [data-testid="stHorizontalBlock"] {{ flex-wrap: nowrap !important; gap: 0.35rem; }}
  .st-key-{NAV_KEY} [data-testid="stColumn"] {{ min-width: 0 !important; width: auto !important;
    flex: 1 1 0 !important; }}
  .st-key-{NAV_KEY} [data-testid="stColumn"]:nth-child(2) {{ flex-grow: 2.2 !important; }}
  .st-key-{NAV_KEY} [data-testid="stHorizontalBlock"]:has(> :nth-child(4)) {{ flex-wrap: wrap !important; }}
  .st-key-{NAV_KEY} [data-testid="stColumn"]:nth-child(3):nth-last-child(2) {{ order: 9; flex-basis: 100% !important; }}
  .st-key-{NAV_KEY} kbd {{ display: none; }}
  .st-key-{NAV_KEY} button {{ padding-left: 0.3rem; padding-right: 0.3rem; }}
}}
</style>"""


def frame() -> None:
    """At the top of every page: the phone's styles (inert above PHONE_PX)."""
    st.html(CSS)
