"""The UI's one escaper (llmviz/ui/markdown.py): each hostile form, escaped by hand. A bare URL,
www. and an email get a WORD JOINER (U+2060) inside the literal GFM would autolink; every markdown mark a
backslash; what a person reads (the escapes read, the joiners unseen) is the text as typed."""

from __future__ import annotations

import re

import pytest
from markup_scan import live_markdown, unescaped

from llmviz.ui.markdown import WORD_JOINER as WJ
from llmviz.ui.markdown import escape

TABLE = [  # (typed, escaped: written out by hand)
    ("https://x.y", f"h{WJ}ttps\\://x\\.y"),
    ("http://x.y/p", f"h{WJ}ttp\\://x\\.y/p"),
    ("HTTPS://X.Y", f"H{WJ}TTPS\\://X\\.Y"),
    ("www.x.y", f"w{WJ}ww\\.x\\.y"),
    ("wwww.x.y", f"ww{WJ}ww\\.x\\.y"),
    ("a@b.c", f"a{WJ}@b\\.c"),
    ("mailto:a@b.c", f"mailto\\:a{WJ}@b\\.c"),
    ("[x](y)", "\\[x\\]\\(y\\)"),
    ("![x](y)", "\\!\\[x\\]\\(y\\)"),
    ("<a href='h'>x</a>", "\\<a href='h'\\>x\\</a\\>"),
    (":red[x]", "\\:red\\[x\\]"),
    ("$x$", "\\$x\\$"),
    ("a\nb\r", "a ↵ b"),
    ("http, www and a @ alone", "http, www and a @ alone".replace("@", f"{WJ}@")),
    # a character reference would bring back what a name's filter refused: CommonMark reads \& as "&"
    ("Lin&rlm;&ZeroWidthSpace;", "Lin\\&rlm;\\&ZeroWidthSpace;"),
    ("A & B", "A \\& B"),
]


@pytest.mark.parametrize(("typed", "expected"), TABLE, ids=[t for t, _ in TABLE])
def test_escape_by_hand(typed, expected):
    assert escape(typed) == expected


@pytest.mark.parametrize(("typed", "expected"), TABLE[:10], ids=[t for t, _ in TABLE[:10]])
def test_escaped_text_reads_as_typed_and_links_nothing(typed, expected):
    assert live_markdown(f"see {typed}")  # live as typed (the scan can fail)...
    assert not live_markdown(f"see {escape(typed)}")  # ...and not once escaped
    assert unescaped(escape(typed)).replace(WJ, "") == typed  # a reader sees the same characters


def test_the_joiner_is_invisible_and_not_a_space():
    """U+2060 is a format character (Cf): no width, no line break, not whitespace (so a URL does not wrap there)."""
    import unicodedata

    assert unicodedata.category(WJ) == "Cf" and not WJ.isspace() and not re.match(r"\s", WJ)
