"""The lesson (issue 23): the article section by section on the student's own run. Each step says what the article
says there, draws its live panel from the run (one control each; a claim's step predicts, then reveals a
measurement) beside the model map with the step's real shapes and parts highlighted, shows the article's slips on
it, and opens the full page; Back / Next (→, Space, ←) and a chapter list move through the steps, the URL carries
the position (lesson=1.2.3), and the end sums up what was revealed."""

import streamlit as st

from llmviz.analysis.model_map import PARTS, step_parts
from llmviz.analysis.recorded import missing_tensors
from llmviz.ui import article_view, keys, state
from llmviz.ui.chrome import heading, literal, missing_note, shown_run, translator
from llmviz.ui.errors import guarded
from llmviz.ui.frame import PAGES
from llmviz.ui.layouts import locality_view
from llmviz.ui.lesson import lesson_decode, lesson_end, lesson_memory, lesson_prefill, lesson_reveal
from llmviz.ui.lesson.lesson_steps import CHAPTERS, END, POSITIONS, STEPS
from llmviz.viz.model_map import model_map_svg

HIGHLIGHTS = {  # the parts of the map a panel is about
    "tokens": ("embed",), "bert": ("embed",), "embedding": ("embed",), "qkv": ("q", "k", "v"), "scores": ("scores",),
    "kv_shape": ("cache",), "kv_bytes": ("cache",), "decode_input": ("embed",), "decode_qkv": ("q", "k", "v"),
    "cache_growth": ("cache",), "kv_bytes_1024": ("cache",), "contiguous": ("cache",), "paged": ("cache",),
    "locality": ("cache",), "oom_budget": ("cache",), "max_seq": ("cache",), "slowdown": ("scores", "cache"),
    "kv_dtype": ("cache",), "gqa": ("k", "v", "cache"), "sparse": ("scores",), "quant": ("q", "k", "v", "mlp"),
    "continuation": ("head",),
}
SPACE = {" ": "lesson_next"}  # Space goes forward too (→ and ← are the buttons' own shortcuts)
PAGE_FILES = {file.removesuffix(".py"): f"app_pages/{file}" for file, _, _, _ in PAGES}


def move(to: int) -> None:
    """Back / Next / a chapter (a callback): the position is a setting, so the URL follows."""
    state.update(lesson=POSITIONS[max(0, min(len(POSITIONS) - 1, to))])


def navigation(t, at: int) -> None:
    st.progress(at / (len(POSITIONS) - 1), text=t("lesson.progress", n=min(at + 1, len(STEPS)), total=len(STEPS)))
    left, middle, right = st.columns([1, 3, 1])
    left.button(t("lesson.back"), key="lesson_back", on_click=move, args=(at - 1,), disabled=at == 0,
                width="stretch", shortcut="Left")
    right.button(t("lesson.next"), key="lesson_next", on_click=move, args=(at + 1,),
                 disabled=at == len(POSITIONS) - 1, type="primary", width="stretch", shortcut="Right")
    st.session_state["lesson_chapter"] = STEPS[at].section if at < len(STEPS) else CHAPTERS[-1]  # follows Next
    middle.selectbox(t("lesson.chapters"), CHAPTERS, key="lesson_chapter", on_change=jump, label_visibility="collapsed",
                     format_func=lambda c: f"§{c} {t(f'lesson.chapter.{c}')}")


def jump() -> None:
    """A chapter picked (a callback): its first step."""
    chapter = st.session_state["lesson_chapter"]
    move(next(i for i, s in enumerate(STEPS) if s.section == chapter))


def step_shapes(run):
    """The shapes on the student's run: the prefill of its prompt and one decode step after it."""
    config = run.trace.model_card["config"]
    n = len(run.trace.prompt_ids)
    return step_parts(config, n), step_parts(config, 1, n)


PANELS = {**lesson_prefill.PANELS, **lesson_decode.PANELS, **lesson_memory.PANELS,
          "locality": lambda t, run: locality_view.section(t, state.settings())}


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
        return
    layers = run.trace.model_card["config"]["num_layers"]
    missing = missing_tensors(run.trace.steps[0], lesson_prefill.needs(step.panel, layers))
    if missing:
        missing_note(t, run.trace.steps[0], missing)
        return
    PANELS[step.panel](t, run)


def panel(t, run, step) -> None:
    with st.container(key="lesson-panel", border=True):
        left, right = st.columns([3, 2])
        with left:
            guarded(t, lambda: live(t, run, step))
        with right:
            prefill, decode = step_shapes(run)
            names = {name: t(f"lesson.part.{name}") for name in PARTS}
            layers = run.trace.model_card["config"]["num_layers"]
            st.image(model_map_svg(prefill, decode, names, layers, t("lesson.layers"), HIGHLIGHTS.get(step.panel, ()),
                                   decoding=step.section != "1.1"), width="stretch")
            model = literal(str(run.trace.model_card["name"]))  # a replayed file's name: any text
            st.caption(t("lesson.map_caption", model=model, n=len(run.trace.prompt_ids)))


def show(t, run, step) -> None:
    st.subheader(f"§{step.section} · {t(f'lesson.{step.id}.title')}")
    st.markdown(t(f"lesson.{step.id}.says"))
    st.caption(t("lesson.concepts", items=" · ".join(f"{c} {t(f'concept.{c}')}" for c in step.concepts)))
    if step.section != "1.1":
        ensure_decode_steps(run)
    panel(t, run, step)
    if step.slips:
        st.markdown(t("lesson.slips"))
        article_view.slips_notes(t, step.slips)
    st.page_link(PAGE_FILES[step.page], label=t("lesson.open_page"), icon=":material/open_in_new:")


def main() -> None:
    t = translator()
    heading(t, "lesson")
    at = POSITIONS.index(state.settings().lesson)
    navigation(t, at)
    run = shown_run(t)
    if POSITIONS[at] == END:
        lesson_end.summary(t)
    elif run is not None:
        show(t, run, STEPS[at])
    keys.press(SPACE)
    state.sync_url()


main()
