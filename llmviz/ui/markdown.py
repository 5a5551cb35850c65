"""The one markdown escaper of the UI: text that a person, a link or a file supplied, shown as itself.

Streamlit renders st.markdown, st.caption, st.info/warning/error/success, st.write of a string, st.metric's label,
value and delta, widget labels and help tooltips, tab and expander labels as markdown: a prompt, a model name, a
URL value or an uploaded file's name or fields put there raw could show an image fetched from any host, or a link
. Every such value passes through `escape` first; catalog strings (ours) keep their own markdown. No
streamlit here: pure text.

Backslashes are not enough for a bare URL: Streamlit's renderer (react-markdown with remark-gfm) finds
GFM's autolink literals, `http://`, `https://`, `www.` and `a@b.c`, in the text after its escapes are read, so
`https\\:\\/\\/x\\.y` still became a live link. A WORD JOINER (U+2060: no width, no break, nothing a reader sees)
inside each of those literals breaks it: `h⁠ttps://`, `w⁠ww.`, `a⁠@b.c` (checked in Chromium: no link; the text
reads and wraps as before).
"""

from __future__ import annotations

import re

# ":" too: Streamlit's :color[...] and :icon: directives; "&" too: a character reference (&rlm;, &ZeroWidthSpace;) would
# bring back a character the text never held (characters a name's filter refuses)
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~:&])")
WORD_JOINER = "\u2060"
# Where GFM's autolink literal would start: after the `h` of http(s)://, after the first `w` of www., before an @.
_AUTOLINK = re.compile(r"h(?=ttps?://)|w(?=ww\.)|(?=@)", re.IGNORECASE)


def unlinked(text: str) -> str:
    """`text` with a WORD JOINER inside every GFM autolink literal (scheme, www., an email's @): the same to read,
    never a link."""
    return _AUTOLINK.sub(lambda m: m.group() + WORD_JOINER, text)


def escape(text: object) -> str:
    """`text` shown as typed inside markdown: no emphasis, links (bracketed or bare URLs and emails), images,
    LaTeX ($), directives or line breaks taken (a newline becomes ↵, so a row stays one line; a carriage return is
    dropped)."""
    return _SPECIAL.sub(r"\\\1", unlinked(str(text))).replace("\r", "").replace("\n", " ↵ ")


def escape_values(params: dict) -> dict:
    """The same dict with every string value escaped (numbers are left to the catalog's format specs)."""
    return {k: escape(v) if isinstance(v, str) else v for k, v in params.items()}
