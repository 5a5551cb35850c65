"""Page changes that keep what was typed (defect 1).

A text box sends its value when it loses focus. Type in the Prompt box and click a page in the sidebar at once,
and the browser sends two requests: the page change and the typed text. Streamlit 1.67 runs them in arrival
order, and the typed text arrives tagged with the page it was typed on, so it interrupts the new page and takes
the session back (seen in Chromium with a click as quick as a script's; a person's slower click arrives after
the text and navigates). Two things keep it right:

- every input widget that holds a draft keeps its value across pages (`persist_state="session"`, see KEEP), so
  the text is never lost and no other box falls back to its default;
- `follow()` notices that bounce: the previous run was a page change that never finished, this run is another
  page, and a typed value changed meanwhile. It then goes on to the page that was asked for.

A script's instant click still beat the typed value in about 2 of 9 tries: the page change was lost, or
the text was. `guard()` puts the two in order in the browser: a press on a page link while a text box has the
focus first sends the box's value (blur), waits until the app has run it, then follows the link.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field

import streamlit as st
from streamlit.errors import StreamlitAPIException

NAV_KEY = "llmviz_nav"
PLAYING = "dec_playing"  # the Decode page's Play is on: leaving the page stops it (ui/frame.py)
KEEP = {"persist_state": "session"}  # for every input widget that holds a draft (st.text_area(..., **KEEP))


@dataclass(frozen=True)
class Visit:
    page: str  # url_path of the page a run drew ("" = Home)
    finished: bool
    typed: dict = field(default_factory=dict)  # the text boxes' values when the last finished run ended


def typed_values() -> dict:
    """The session's text values that a person types (widget keys; the app's own keys start with llmviz_)."""
    return {k: v for k, v in st.session_state.items() if isinstance(v, str) and not k.startswith("llmviz_")}


def is_bounce(before: Visit | None, page: str, typed: dict) -> bool:
    """A run that a typed value's late arrival took back from the page change before it."""
    if before is None or before.finished or before.page == page:
        return False
    return any(key in before.typed and before.typed[key] != value for key, value in typed.items())


def follow(page, pages: list) -> None:
    """Call before running `page` (st.navigation's choice): on a bounce, switch to the page that was asked for;
    otherwise note that `page` has started."""
    before = st.session_state.get(NAV_KEY)
    typed = typed_values()
    if is_bounce(before, page.url_path, typed):
        target = next((p for p in pages if p.url_path == before.page), None)
        if target is not None:
            for key, value in typed.items():  # the typed values, set as the session's own: they outlive the switch
                if before.typed.get(key, value) != value:
                    with suppress(StreamlitAPIException):  # a sidebar widget, already drawn in this run
                        st.session_state[key] = value
            st.session_state[NAV_KEY] = Visit(before.page, False, typed)
            st.switch_page(target)
    st.session_state[NAV_KEY] = Visit(page.url_path, False, before.typed if before else typed)


def finished(page) -> None:
    """Call after `page` ran to its end (an interrupted run never gets here)."""
    st.session_state[NAV_KEY] = Visit(page.url_path, True, typed_values())


# The browser side of guard(): one listener per browser tab (a frame Streamlit replaced leaves a dead one behind).
_GUARD = """<script>
const doc = window.parent.document;
const LINKS = '[data-testid="stSidebarNav"] a, [data-testid="stSidebarNavLink"]';
const TEXT = ["text", "number", "search", "password", "email", "url", ""];  // boxes whose value goes on blur
const idle = () => doc.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]') !== null;
if (doc.llmvizGuard) {
  for (const [name, handler] of Object.entries(doc.llmvizGuard)) doc.removeEventListener(name, handler, true);
}
const later = (f, ms) => window.parent.setTimeout(f, ms);  // the page's timer: this frame may be replaced meanwhile
let held = null;  // the link pressed while a text box had the focus
const down = (e) => {
  const link = e.target.closest && e.target.closest(LINKS);
  const box = doc.activeElement;
  const typing = box && (box.tagName === "TEXTAREA" || (box.tagName === "INPUT" && TEXT.includes(box.type)));
  if (!link || !typing) return;
  held = link;
  box.blur();  // the typed value goes first
};
const up = (e) => {  // released off the link: no click follows, nothing is held
  if (held && !(e.target.closest && e.target.closest(LINKS) === held)) held = null;
};
const click = (e) => {
  const link = e.target.closest && e.target.closest(LINKS);
  if (!link || link !== held || link.dataset.llmvizGo) return;
  e.preventDefault(); e.stopPropagation();
  held = null;
  const began = Date.now();
  let seenRunning = false;
  const go = () => {
    seenRunning = seenRunning || !idle();
    if ((seenRunning && idle()) || Date.now() - began > 4000 || (!seenRunning && Date.now() - began > 350)) {
      link.dataset.llmvizGo = "1"; link.click(); delete link.dataset.llmvizGo;
    } else { later(go, 30); }
  };
  later(go, 30);
};
doc.llmvizGuard = {mousedown: down, mouseup: up, click: click};
for (const [name, handler] of Object.entries(doc.llmvizGuard)) doc.addEventListener(name, handler, true);
</script>"""


def guard() -> None:
    """Install the guard (a fixed script of ours, in a frame of the page's origin, in the sidebar: no room taken)."""
    with st.sidebar:
        st.iframe(_GUARD, height=1)
