"""What on a page would lead outside the app (issue 35): markdown that a file or a link supplied and that renders as
a live link or image, and a link tag in a plotly figure's text.

Streamlit's frontend reads an element's body, label, help, value (a metric's body), delta, captions, option and
title as GitHub-flavoured markdown (react-markdown with remark-gfm). There a string is live when it holds `](` or
`![` that no backslash escapes, a raw `<a`, or, once its escapes are read, one of GFM's autolink literals: `http://`,
`https://`, `www.` and an email's `x@y.z` (the rule of mdast-util-gfm-autolink-literal; checked against Chromium by
tests/ui/test_browser_markup.py). Plotly reads `<a href>` in any text it draws. The scan walks every element's
protobuf, blocks (tabs, expanders) included, so a new element kind is covered without being named here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from google.protobuf.message import Message

MARKDOWN_FIELDS = {"body", "label", "help", "delta", "captions", "title", "delta_description", "content"}
BRACKETS = re.compile(r"(?<!\\)(?:\]\(|!\[)|(?<!\\)<\s*a\b", re.IGNORECASE)
AUTOLINK = re.compile(r"(?:https?://|www\.)[-\w]|[-.\w+]@[-\w]+\.[-\w]", re.IGNORECASE)  # on the unescaped text
LINK_TAG = re.compile(r"<\s*a\b", re.IGNORECASE)


def unescaped(markdown: str) -> str:
    """The text a markdown string holds once its backslash escapes are read (CommonMark: before punctuation)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def live_markdown(text: str) -> bool:
    """Whether remark-gfm would render a link or an image from `text` (a code span's text is never one)."""
    text = re.sub(r"(?<!\\)`[^`]*`", "", text)
    return bool(BRACKETS.search(text) or AUTOLINK.search(unescaped(text)))


def _strings(message: Message, fields: set[str], inside: str = ""):
    """(field, text) of every string field named in `fields`, at any depth of `message` (repeated ones too)."""
    for field, value in message.ListFields():
        values = value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
        for v in values:
            if isinstance(v, Message):
                yield from _strings(v, fields, field.name)
            elif isinstance(v, str) and (field.name in fields or inside in fields):
                yield field.name, v


def _nodes(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _nodes(child)


def live_links(at) -> list[str]:
    """'kind.field: text' of every rendered string on the AppTest page that would be a live link or image."""
    found = []
    for node in _nodes(at._tree):
        proto, kind = getattr(node, "proto", None), getattr(node, "type", "?")
        if proto is None:
            continue
        if kind == "plotly_chart":
            found += [f"plotly: {s}" for s in _figure_strings(json.loads(proto.spec)) if LINK_TAG.search(s)]
            continue
        found += [f"{kind}.{field}: {text}" for field, text in _strings(proto, MARKDOWN_FIELDS) if live_markdown(text)]
    return found


def _figure_strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _figure_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _figure_strings(v)]
    return []
