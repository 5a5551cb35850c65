"""The lesson's navigation: Back, the chapter list and Next in one row, the progress, and in a
class the class's line; the presenter view's compact styles for the panel."""

from __future__ import annotations

import streamlit as st

from llmviz.ui import phone, presenter, state
from llmviz.ui.lesson import lesson_class, lesson_reveal
from llmviz.ui.lesson.lesson_steps import CHAPTERS, POSITIONS, STEPS

# While presenting, the panel's figures (metrics, notes) at the page's usual size, not the projector's: the base size
# grows by a quarter for the step's words; the panel's numbers stay readable at 1280 px and leave its chart in view.
COMPACT = """<style>
.st-key-lesson-panel [data-testid="stMetricValue"] { font-size: 1.2rem; }
.st-key-lesson-panel [data-testid="stMetricLabel"] p, .st-key-lesson-panel [data-testid="stCaptionContainer"] {
  font-size: 0.75rem; }
.st-key-lesson-panel [data-testid="stMarkdownContainer"] { font-size: 0.85rem; }
.st-key-lesson-panel [data-testid="stVerticalBlock"] { gap: 0.5rem; }
[data-testid="stMain"] h3 { padding-top: 0.2rem; padding-bottom: 0.4rem; }
</style>"""


def move(to: int) -> None:
    """Back / Next / a chapter (a callback): the position is a setting, so the URL follows. Next from a claim's step
    whose prediction was skipped says so (once); a student in a class leaves the class's pace."""
    at = POSITIONS.index(state.settings().lesson.at)
    lesson_class.left_pace()
    if to == at + 1 and at < len(STEPS) and STEPS[at].claim:
        lesson_reveal.passed(STEPS[at].claim)
    state.update(lesson={"at": POSITIONS[max(0, min(len(POSITIONS) - 1, to))]})


def navigation(t, at: int) -> None:
    """Back, the chapter list and Next in one row; the progress above it, or in the row while presenting (one line
    less above the panel)."""
    ended = at == len(STEPS)  # the summary after the last step
    progress = t("lesson.progress_end" if ended else "lesson.progress", n=at + 1, total=len(STEPS))
    if not presenter.active():
        st.progress(at / (len(POSITIONS) - 1), text=progress)
    here = STEPS[at].section if at < len(STEPS) else CHAPTERS[-1]
    with st.container(key=phone.NAV_KEY):  # one row on a phone too (ui/phone.py)
        row(t, at, here, progress)


def row(t, at: int, here: str, progress: str) -> None:
    """Back, the chapter list, (the class's line or the progress, while presenting) and Next."""
    if presenter.active() or lesson_class.role():
        left, middle, where, right = st.columns([1, 2.2, 0.8, 1], vertical_alignment="center")
        with where:  # a class's line in place of the progress: the code and the counts matter more to a room
            if lesson_class.role():
                lesson_class.status(t, STEPS[at].claim if at < len(STEPS) else None)
            else:
                st.caption(progress)
    else:
        left, middle, right = st.columns([1, 3, 1])
    left.button(t("lesson.back"), key="lesson_back", on_click=move, args=(at - 1,), disabled=at == 0,
                width="stretch", shortcut="Left")
    right.button(t("lesson.next"), key="lesson_next", on_click=move, args=(at + 1,),
                 disabled=at == len(POSITIONS) - 1, type="primary", width="stretch", shortcut="Right")
    st.session_state["lesson_chapter"] = here  # follows Next
    middle.selectbox(t("lesson.chapters"), CHAPTERS, key="lesson_chapter", on_change=jump, label_visibility="collapsed",
                     format_func=lambda c: f"§{c} {t(f'lesson.chapter.{c}')}")


def jump() -> None:
    """A chapter picked (a callback): its first step."""
    chapter = st.session_state["lesson_chapter"]
    move(next(i for i, s in enumerate(STEPS) if s.section == chapter))
