"""What on a page would lead outside the app: markdown that a file or a link supplied and that renders as
a live link or image, and a link tag in a plotly figure's text.

Streamlit's frontend reads an element's body, label, help, value (a metric's body), delta, captions, title and,
for some widgets, options as GitHub-flavoured markdown (react-markdown with remark-gfm). There a string is live
when it holds `](` or `![` that no backslash escapes, a raw `<a`, or, once its escapes are read, one of GFM's
autolink literals: `http://`, `https://`, `www.` and an email's `x@y.z` (the rule of mdast-util-gfm-autolink-literal;
checked against Chromium by tests/ui/test_browser_markup.py). Plotly reads `<a href>` in any text it draws; st.html
(the token chips) is HTML, not markdown: there only a tag that survived escaping leads out (a text URL is text). The
scan walks every element's protobuf, blocks (tabs, expanders) included, so a new element kind is covered without
being named here.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Sequence

from google.protobuf.message import Message

from llmviz.trace.records import trace_to_zip

MARKDOWN_FIELDS = {"body", "label", "help", "delta", "captions", "title", "delta_description", "content"}
# Whose options are markdown too (seen in Chromium: a select slider's, a radio's, pills' and a segmented control's;
# a selectbox's and a multiselect's show as typed).
MARKDOWN_OPTIONS = {"select_slider", "radio", "button_group"}
BRACKETS = re.compile(r"(?<!\\)(?:\]\(|!\[)|(?<!\\)<\s*a\b", re.IGNORECASE)
AUTOLINK = re.compile(r"(?:https?://|www\.)[-\w]|[-.\w+]@[-\w]+\.[-\w]", re.IGNORECASE)  # on the unescaped text
LINK_TAG = re.compile(r"<\s*/?\s*a(?![\w-])", re.IGNORECASE)  # plotly's is `<a ` or `<a>`: this is wider
HTML_OUT = re.compile(r"<\s*(?:a|img|iframe|link|script)(?![\w-])", re.IGNORECASE)  # st.html's live tags


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
        if kind == "html":  # st.html: HTML as written (sanitized), never markdown: only a real tag leads out
            found += [f"html.body: {proto.body}"] if HTML_OUT.search(proto.body) else []
            continue
        fields = MARKDOWN_FIELDS | ({"options"} if kind in MARKDOWN_OPTIONS else set())
        found += [f"{kind}.{field}: {text}" for field, text in _strings(proto, fields) if live_markdown(text)]
    return found


def _figure_strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _figure_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _figure_strings(v)]
    return []


# --- the hostile catalogue's trace (tests/hostile/test_file_text.py, tests/ui/test_browser_markup.py) ---
URL = "https://evil.example/x"
HOSTILE_TEXT = (f"{URL} www.evil.example me@evil.example [click](https://evil.example) "
                "![img](https://evil.example/a.png) <a href='https://evil.example'>a</a> :red[x] $x$")
TOKEN = "<a href='https://evil.example/t'>The</a>"  # a token's text, as a file may spell it
CARD = {"name": f"tiny {HOSTILE_TEXT}", "device": f"cpu {URL}", "dtype": "fp32 ![i](https://evil.example/i.png)"}


def hostile_zip(tiny) -> bytes:
    """A real run's trace (4 decode steps, full capture: the lesson's panels draw) whose card fields and first
    prompt token are hostile."""
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig, SamplingConfig

    config = EngineConfig(sampling=SamplingConfig(temperature=0), capture="full")
    data = trace_to_zip(Session(tiny, "The list of", config).generate(5))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        doc, arrays = json.loads(archive.read("trace.json")), archive.read("arrays.npz")
    doc["model_card"].update(CARD)
    first = next(iter(doc["tokens"]))  # a token of the prompt or of the output: drawn on the pages
    doc["tokens"][first].update(piece=TOKEN, text=TOKEN, bytes=TOKEN.encode().hex())  # the token strip, the tables
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("trace.json", json.dumps(doc))
        archive.writestr("arrays.npz", arrays)
    return buffer.getvalue()
