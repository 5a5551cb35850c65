"""Lesson -> full page -> back: "open the full page" opens the step's page with the lesson's context (the
shared settings stay: prompt, model, language, presenter view; the Batch page starts on the student's prompt beside
the article's §3.1 prompts, not its English examples), the URL says it came from the lesson, and the page's "back to
step" returns to that very step, in the app and from a link."""

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file, settings

from llmviz.i18n.translator import translate
from llmviz.ui.batch.batch_run import prompts_of

PAGE = page_file("lesson")

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the embedded model is not trained yet")


def test_batch_opens_on_the_articles_prompts_and_comes_back():
    at = open_app(PAGE, lang="zh", present=1, lesson="3.1.1")
    prompt = settings(at).prompt
    at.button(key="lesson_open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    s = settings(at)
    assert (s.lesson.from_lesson, s.lesson.at, s.lang, s.present, s.prompt) == (1, "3.1.1", "zh", 1, prompt)
    assert prompts_of(s) == ["济南的冬天", "人工智能"]  # the student's prompt is the article's first
    params = at.query_params
    assert params.get("from_lesson") in ("1", ["1"]) and params.get("lesson") in ("3.1.1", ["3.1.1"])
    back = at.button(key="lesson_return")
    assert back.label == translate("zh", "lesson.back_to", step="3.1.1", title=translate("zh", "lesson.3.1.1.title"))
    back.click().run()
    s = settings(at)
    assert (s.lesson.from_lesson, s.lesson.at) == (0, "3.1.1")
    assert next(h.value for h in at.subheader).startswith("§3.1 · ")


def test_a_link_keeps_the_way_back():
    at = open_app(page_file("compare"), lang="en", lesson="2.2.2", from_lesson=1)
    assert at.button(key="lesson_return").label.startswith(translate("en", "lesson.back_to", step="2.2.2", title=""))
    at = open_app(page_file("compare"), lang="en", lesson="2.2.2")  # not opened from the lesson: no way back
    assert not [b for b in at.button if b.key == "lesson_return"]


def test_an_english_student_keeps_their_prompt_first():
    at = open_app(PAGE, lang="en", lesson="3.1.1")
    at.button(key="lesson_open").click().run()
    assert prompts_of(settings(at)) == [settings(at).prompt, "济南的冬天", "人工智能"]
