"""Text every page draws (llmviz/ui/chrome.py): a run's text with its new part in bold (Decode, the lesson's
§1.2 continuation, the seed comparison), rendered by a CommonMark parser as the browser's would.

The bug this pins: the embedded model continues 济南的冬天 with 。 and the page showed 济南的冬天**。 ↵ ↵ 有几个**,
asterisks and all, because CommonMark does not open bold between a letter and punctuation.
"""

from __future__ import annotations

import pytest

from llmviz.ui.chrome import with_bold_tail

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (a CommonMark parser) is not installed")


def rendered(text: str) -> str:
    """The paragraph's inner HTML, as CommonMark renders it."""
    html = markdown_it.MarkdownIt("commonmark").render(text).strip()
    assert html.startswith("<p>") and html.endswith("</p>"), html
    return html[3:-4]


@pytest.mark.parametrize(("plain", "tail", "html"), [
    ("济南的冬天", "。\n\n有几个", "济南的冬天\u200a<strong>。 ↵  ↵ 有几个</strong>"),  # letter, then CJK punctuation
    ("济南的", "冬天", "济南的<strong>冬天</strong>"),  # letter then letter: no space added
    ("Hello", " world.", "Hello <strong>world.</strong>"),  # the tail's own space stays outside the bold
    ("ab", ".c", "ab\u200a<strong>.c</strong>"),  # an escaped ASCII mark starts with a backslash, punctuation too
    ("x. ", "(y)", "x. <strong>(y)</strong>"),  # after a space, punctuation opens bold as it is
    ("", "。a", "<strong>。a</strong>"),  # nothing before: the start of the line opens it
    ("a*b", "_c_", "a*b\u200a<strong>_c_</strong>"),  # markdown's own marks in the text are shown as typed
])
def test_the_new_text_is_bold_and_nothing_else_changes(plain, tail, html):
    assert rendered(with_bold_tail(plain, tail)) == html


def test_a_blank_tail_is_shown_without_marks():
    assert "*" not in with_bold_tail("a", "   ")
    assert rendered(with_bold_tail("a", "   ")) == "a"
