"""Text from an uploaded trace or a link renders as text on the pages: a card whose
model name, device and dtype are markdown, HTML or bare URLs, and a link whose ?prompt= and ?seed= are URLs, give
no live link and no image on Home, the lesson and the KV layouts page. AppTest reads every element's protobuf (the
strings Streamlit's renderer takes as markdown, tests/support/markup_scan.py); tests/ui/test_browser_markup.py
counts the links a real Chromium draws."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_helpers import TRIED, time_limit
from markup_scan import CARD, URL, hostile_zip, live_links, live_markdown
from ui_helpers import APP, EMBEDDED_WEIGHTS, declared_pages, page_file, rendered_text

from llmviz.trace.records import trace_from_zip

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="records a run of the embedded model")

@pytest.fixture(scope="module")
def replayed(tiny):
    """The app with the hostile trace uploaded on the Trace page (file name hostile too)."""
    from streamlit.testing.v1 import AppTest

    data = hostile_zip(tiny)
    assert trace_from_zip(data).model_card["device"] == CARD["device"]  # any text: shown escaped, not refused
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["model"] = "/no/such/model"  # nothing live: the pages can show only the file
    at.run()
    at.switch_page(page_file("trace")).run()
    at.file_uploader[0].set_value((f"{URL} [x](https://evil.example).zip", data, "application/zip")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_scan_finds_each_kind_of_live_link():
    """The check can fail: every hostile form is live as it stands, and none is once escaped."""
    from llmviz.ui.markdown import escape

    forms = [URL, "www.evil.example", "me@evil.example", "[c](y)", "![i](y)", "<a href='y'>"]
    assert [live_markdown(f"x {f}") for f in forms] == [True] * len(forms)
    assert [live_markdown(f"x {escape(f)}") for f in forms] == [False] * len(forms)
    # st.html (the token chips): a tag leads out, escaped text and a bare URL do not
    from html import escape as html_escape

    from markup_scan import HTML_OUT

    assert HTML_OUT.search("<a href='y'>t</a>") and HTML_OUT.search("<img src=y>")
    assert not HTML_OUT.search(f"<span>{html_escape(forms[-1])} {URL}</span>")


SHOWS_CARD = ("trace", "home", "lesson", "tokens", "prefill")  # the pages that name the model or its fields
LINK_TEXT = {"prompt": f"{URL} www.evil.example me@evil.example", "seed": URL, "engine": URL, "cmp_a": URL,
             "cmp_b": URL, "kv_prompts": URL, "kv_lengths": URL, "batch": URL, "history": URL}


@pytest.mark.parametrize("page", declared_pages())
def test_a_hostile_traces_card_renders_as_text(replayed, page):
    TRIED["pages"] += 1
    with time_limit(60):
        at = replayed.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert live_links(at) == []
    if Path(page).stem in SHOWS_CARD:
        assert any("evil" in text for text in rendered_text(at))  # the fields are there, as text


def test_the_lesson_map_caption_names_the_model_as_text_on_every_step_shown(replayed):
    at = replayed.switch_page(page_file("lesson")).run()
    steps = set()
    for _ in range(5):  # into the decode steps
        at.button(key="lesson_next").click().run()
        steps.add(at.subheader[0].value)  # "§1.1.2 · ...": the step shown
        captions = [c.value for c in at.caption if "evil" in c.value]
        assert captions and live_links(at) == [], live_links(at)
    assert len(steps) == 5, steps


def test_a_link_of_urls_renders_as_text_on_every_page():
    """Every free-text setting of a link set to URLs (prompt, seed, engine, comparisons, KV layouts, batch): Home
    names what it refused, and no page draws a link."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(LINK_TEXT)
    with time_limit(90):
        at.run()
    assert any("evil" in w.value for w in at.warning) and live_links(at) == []  # the seed named, as text
    shown = {}
    for page in declared_pages():
        TRIED["pages"] += 1
        with time_limit(60):
            at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert live_links(at) == [], (page, live_links(at))
        shown[Path(page).stem] = any("evil" in text for text in rendered_text(at))
    assert shown["home"] and shown["kv_layouts"] and shown["compare"], shown  # the prompt is shown, as text
