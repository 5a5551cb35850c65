"""The one markdown escaper of the UI: text that a person, a link or a file supplied, shown as itself.

Streamlit renders st.markdown, st.caption, st.info/warning/error/success, st.write of a string, widget labels
and help tooltips as markdown: a prompt, a model name, a URL value or an uploaded file's name or fields put
there raw could show an image fetched from any host, or a link (issue 19). Every such value passes through
`escape` first; catalog strings (ours) keep their own markdown. No streamlit here: pure text.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~:])")  # ":" too: Streamlit's :color[...] and :icon: directives


def escape(text: object) -> str:
    """`text` shown as typed inside markdown: no emphasis, links, images, LaTeX ($), directives or line breaks
    taken (a newline becomes ↵, so a row stays one line; a carriage return is dropped)."""
    return _SPECIAL.sub(r"\\\1", str(text)).replace("\r", "").replace("\n", " ↵ ")


def escape_values(params: dict) -> dict:
    """The same dict with every string value escaped (numbers are left to the catalog's format specs)."""
    return {k: escape(v) if isinstance(v, str) else v for k, v in params.items()}
