"""The lesson: the article section by section on the student's own run. Each step says what the article
says there, draws its live panel from the run (one control each; a claim's step predicts, then reveals a
measurement) beside the model map with the step's real shapes and parts highlighted, shows the article's slips on
it, and opens the full page; Back / Next (→, Space, ←) and a chapter list move through the steps, the URL carries
the position (lesson=1.2.3), and the end sums up what was revealed."""

import streamlit as st

from llmviz.analysis.recorded import missing_tensors
from llmviz.ui import keys, lesson_link, presenter, state
from llmviz.ui.charts import fitted
from llmviz.ui.chrome import heading, missing_note, shown_run, translator
from llmviz.ui.errors import guarded
from llmviz.ui.frame import PAGES
from llmviz.ui.layouts import locality_view
from llmviz.ui.lesson import (
    class_wall,
    lesson_claim_views,
    lesson_class,
    lesson_decode,
    lesson_end,
    lesson_nav,
    lesson_panels,
    lesson_reveal,
    lesson_side,
    lesson_workload,
)
from llmviz.ui.lesson.lesson_steps import END, POSITIONS, STEPS, check_built

SPACE = {" ": "lesson_next"}  # Space goes forward too (→ and ← are the buttons' own shortcuts)
CHART_PX = 300  # a panel's chart at most (the step's words, its control and its chart in one 720 px screen)
PAGE_FILES = {file.removesuffix(".py"): f"app_pages/{file}" for file, _, _, _ in PAGES}




def panels() -> dict:
    """The lesson's panels (the stock ones, any an added step brought) and the KV layouts page's locality section."""
    locality = lambda t, run: locality_view.section(t, state.settings(), titled=False)  # noqa: E731
    return {**lesson_panels.panels(), "locality": locality}


def ensure_decode_steps(run) -> None:
    """A decode step's panels read the first DECODE_STEPS decode steps: a live run computes them once (the step
    shown stays where it was); a recording holds its own."""
    cursor = run.cursor
    while lesson_decode.decode_steps(run) < lesson_decode.DECODE_STEPS and run.can_compute:
        run.cursor = len(run.trace.steps) - 1
        state.advance(run)
    run.cursor = cursor


def live(t, run, step) -> None:
    """The step's live panel (or its claim's prediction and reveal)."""
    if step.claim is not None:
        lesson_reveal.panel(t, step.claim)
        lesson_claim_views.panel(t, step.claim)  # K5's batch grid, K7's Gantt
        lesson_workload.panel(t, step)  # K7's step in a class: the class's own requests
        return
    layers = run.trace.model_card["config"]["num_layers"]
    missing = missing_tensors(run.trace.steps[0], lesson_panels.needs(step.panel, layers))
    if missing:
        missing_note(t, run.trace.steps[0], missing)
        return
    panels()[step.panel](t, run)


def panel(t, run, step) -> None:
    """The live panel (its control and chart, at most CHART_PX tall) beside the step's map, its slips a tab away."""
    with st.container(key="lesson-panel", border=True):
        left, right = st.columns([3, 2])
        with left, fitted(CHART_PX):
            guarded(t, lambda: live(t, run, step))
        with right:
            lesson_side.article_shapes(t, run)  # at the top: the page does not move under the click
            lesson_side.side(t, run, step, min(lesson_decode.DECODE_STEPS, lesson_decode.decode_steps(run)))
            with st.container(horizontal=True):
                if st.button(t("lesson.open_page"), key="lesson_open", icon=":material/open_in_new:",
                             help=t("lesson.open_page_help", step=step.id)):
                    lesson_link.open_page(step.page, PAGE_FILES[step.page])
                lesson_side.glossary(t)
                if lesson_class.role() == "teacher":
                    class_wall.join_panel(t, state.settings().lesson.room)
                    class_wall.seats_panel(t)
                    class_wall.end_panel(t)
                lesson_class.start(t)
                lesson_class.name_panel(t)  # a student's generated name, changeable


def show(t, run, step) -> None:
    st.subheader(f"§{step.section} · {t(f'lesson.{step.id}.title')}")
    st.markdown(t(f"lesson.{step.id}.says"))
    if step.section != "1.1":
        ensure_decode_steps(run)
    if presenter.active():
        st.html(lesson_nav.COMPACT)
    panel(t, run, step)


def main() -> None:
    t = translator()
    check_built(STEPS, panels(), lambda key: key in t)  # a step without its panel or words fails here, by its id
    lesson_link.arrived()
    if lesson_class.role() and (found := lesson_class.record(t)) is not None:
        lesson_class.keep_pace(found)  # the teacher's step to the store; a following student to the teacher's
    at = POSITIONS.index(state.settings().lesson.at)
    if at == 0 and not presenter.active():  # the intro once; from then on the step's title says where we are
        heading(t, "lesson")
    lesson_nav.navigation(t, at)
    lesson_reveal.say_passed(t)
    lesson_class.say_refused(t)
    lesson_class.say_follows(t)  # a teacher's second device: it follows the projector, and says so
    lesson_class.remember_device()  # a browser keeps its token: a reloaded projector leads, a student has one seat
    run = shown_run(t)
    if POSITIONS[at] == END:
        lesson_end.summary(t)
    elif run is not None:
        show(t, run, STEPS[at])
    keys.press({**SPACE, "j": class_wall.JOIN_KEY, **(lesson_side.keys(STEPS[at]) if at < len(STEPS) else {})})
    state.sync_url()


main()
