"""Keys that press a page's buttons, beyond the one shortcut Streamlit gives a button: the Decode page's
n / p, the lesson's Space and its side tabs' M and S. One listener per browser tab reads a table the pages add to,
{key: button key}; a key whose button is not on the page now (another page's) does nothing, and keys typed into a
text box are left alone.
"""

from __future__ import annotations

import json

import streamlit as st

_SCRIPT = """<script>
const doc = window.parent.document;
doc.llmvizKeys = Object.assign(doc.llmvizKeys || {}, TABLE);
// The listener is this frame's: a listener left by a frame Streamlit has since replaced never fires again (its
// document is gone), so each new frame takes the old one's place.
if (doc.llmvizKeyListener) doc.removeEventListener("keydown", doc.llmvizKeyListener, true);
doc.llmvizKeyListener = (e) => {
  const tag = (e.target.tagName || "").toLowerCase();
  if (e.repeat || e.ctrlKey || e.metaKey || e.altKey || e.target.isContentEditable) return;  // a held key: once
  if (tag === "input" || tag === "textarea" || tag === "select") return;
  const key = doc.llmvizKeys[e.key.length === 1 ? e.key.toLowerCase() : e.key];
  const [name, nth] = (key || "").split("/");  // "name/2": the third tab of the st.tabs keyed name
  const button = key && (nth === undefined ? doc.querySelector(".st-key-" + name + " button")
                                           : doc.querySelectorAll(".st-key-" + name + " [role=tab]")[Number(nth)]);
  if (button && !button.disabled) { e.preventDefault(); e.stopPropagation(); button.click(); }
};
doc.addEventListener("keydown", doc.llmvizKeyListener, true);
</script>"""


def script(table: dict[str, str]) -> str:
    """The listener's script for {key as the browser names it (a letter, " " for Space): button key}; a button key
    "name/N" opens the (N+1)th tab of the st.tabs keyed `name`."""
    for key, button in table.items():
        name, _, nth = button.partition("/")
        if not key or not name.replace("_", "").replace("-", "").isalnum() or (nth and not nth.isdigit()):
            raise ValueError(f"a key and a plain button key, got {key!r}: {button!r}")
    return _SCRIPT.replace("TABLE", json.dumps(table))


def press(table: dict[str, str]) -> None:
    """Install the keys on this page (our own fixed script, never user input, in a frame of the page's origin)."""
    st.iframe(script(table), height=1)
