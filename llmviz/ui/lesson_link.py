"""The round trip between the lesson and a full page: the lesson opens a page with the lesson's context
(the session's model, prompt, language and presenter view are shared settings; a page's own inputs start on the
lesson's, e.g. the Batch page on the student's prompt beside the article's §3.1 prompts), and that page offers the
way back to the very step it was opened from. `from_lesson=1` in the URL (beside `lesson=3.1.2`) says so, so a
link to the page keeps the way back too. Shared by the frame (every page) and the lesson page.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.article import ARTICLE_BATCH
from llmviz.ui import state

LESSON_FILE = "app_pages/lesson.py"


def batch_prompts() -> tuple[str, ...]:
    """The lesson's batch: the student's prompt beside the article's two (§3.1's pad_sequences example), once each."""
    return tuple(dict.fromkeys((state.settings().prompt, *ARTICLE_BATCH)))


def context(page: str) -> dict:
    """The settings a page opened from the lesson starts on, beyond the shared ones (its own inputs)."""
    if page == "batch":
        return {"batch": {"prompts": "\n".join(batch_prompts())}}
    return {}


def open_page(page: str, file: str) -> None:
    """The lesson's "open the full page": that page, with the lesson's context and the way back."""
    state.update(lesson={"from_lesson": True}, **context(page))
    st.switch_page(file)


def back_offer(t, url_path: str) -> None:
    """At the top of a page opened from the lesson: back to the step it was opened from (its id and title)."""
    s = state.settings()
    if not s.lesson.from_lesson or url_path == "lesson":
        return
    label = t("lesson.back_to", step=s.lesson.at, title=t(f"lesson.{s.lesson.at}.title") if s.lesson.at != "end"
              else t("lesson.end_title"))
    if st.button(label, key="lesson_return", icon=":material/undo:", type="primary"):
        state.update(lesson={"from_lesson": False})
        st.switch_page(LESSON_FILE)


def arrived() -> None:
    """On the lesson page: the way back is used (or the lesson opened directly); the URL no longer carries it."""
    if state.settings().lesson.from_lesson:
        state.update(lesson={"from_lesson": False})
