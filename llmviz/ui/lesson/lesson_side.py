"""The lesson's side of a step, beside its live panel: tabs switched in the browser (no rerun), so that
the panel's chart keeps its size and nothing pushes it below the first screen.

- The step's map (analysis/step_map.py): the tensors the step is about with the run's shapes, prefill beside decode
  where the step contrasts them, the cache growing, and what a decode step reads (M).
- The whole model (viz/model_map.py): every part with its prefill and decode shapes, the step's parts lit.
- On a chapter's last step, its recap and question (ui/lesson/lesson_check.py), the tab shown first (Q; not R,
  which is Streamlit's own rerun key).
- The article's slips on this step, when it has any (S).

Under them, the glossary (G) beside "open the full page".
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.analysis.model_map import PARTS, step_parts
from llmviz.analysis.step_map import step_map
from llmviz.ui import article_view, state
from llmviz.ui.chrome import ARTICLE_SHAPES, article_shapes_offered, literal, use_model
from llmviz.ui.frame import PAGES
from llmviz.ui.lesson import lesson_check
from llmviz.ui.lesson.lesson_steps import CHAPTER_ENDS
from llmviz.ui.settings import DEFAULT_MODEL
from llmviz.viz.model_map import model_map_svg
from llmviz.viz.step_map import step_map_svg

TABS_KEY = "lesson_side"
NOWHERE = 9  # a tab index no step has: a key whose tab this step lacks presses nothing
GLOSSARY_KEY = "lesson_glossary"
HIGHLIGHTS = {  # the parts of the whole model's map a panel is about
    "tokens": ("embed",), "bert": ("embed",), "embedding": ("embed",), "qkv": ("q", "k", "v"), "scores": ("scores",),
    "kv_shape": ("cache",), "kv_bytes": ("cache",), "decode_input": ("embed",), "decode_qkv": ("q", "k", "v"),
    "cache_growth": ("cache",), "kv_bytes_1024": ("cache",), "contiguous": ("cache",), "paged": ("cache",),
    "locality": ("cache",), "oom_budget": ("cache",), "max_seq": ("cache",), "slowdown": ("scores", "cache"),
    "kv_dtype": ("cache",), "gqa": ("k", "v", "cache"), "sparse": ("scores",), "quant": ("q", "k", "v", "mlp"),
    "continuation": ("head",),
}
BLOCKS = (*PARTS, "ids", "weights")


def this_step(t, run, step, decoded: int) -> None:
    """The step's own map, and what its decode step reads."""
    config = run.trace.model_card["config"]
    n = len(run.trace.prompt_ids)
    m = step_map(config, n, step.recipe, max(1, decoded), int(run.trace.steps[0].kv["element_bytes"]),
                 lesson_check.weights_format(run))
    titles = {"prefill": t("lesson.side.prefill", n=n), "decode": t("lesson.side.decode", n=n)}
    st.image(step_map_svg(m, {b: t(f"lesson.part.{b}") for b in BLOCKS}, titles), width="stretch")
    notes = [t("lesson.side.per_layer", layers=m.layers)] if any(b.name == "cache" for b in m.blocks) else []
    if m.read_bytes is not None:
        notes.append(t("lesson.side.reads", at=m.read_at, total=human(m.read_bytes),
                       weights=human(m.read_bytes - m.cache_read_bytes), cache=human(m.cache_read_bytes),
                       share=m.cache_read_bytes / m.read_bytes))
    notes.append(t("lesson.concepts", items=" · ".join(f"{c} {t(f'concept.{c}')}" for c in step.concepts)))
    st.caption("  \n".join(notes))


def whole_model(t, run, step) -> None:
    config = run.trace.model_card["config"]
    n = len(run.trace.prompt_ids)
    names = {name: t(f"lesson.part.{name}") for name in PARTS}
    st.image(model_map_svg(step_parts(config, n), step_parts(config, 1, n), names, config["num_layers"],
                           t("lesson.layers"), HIGHLIGHTS.get(step.panel, ()), decoding=step.section != "1.1"),
             width="stretch")
    model = literal(str(run.trace.model_card["name"]))  # a replayed file's name: any text
    st.caption(t("lesson.map_caption", model=model, n=n))


def tab_order(step) -> list[str]:
    """The tabs of a step, in order: the map, the whole model, the chapter's end where it is one, the slips."""
    return ["step", "model", *(["recap"] if step.id in CHAPTER_ENDS else []), *(["slips"] if step.slips else [])]


def keys(step) -> dict[str, str]:
    """The keys that open a tab (keys.press), on this step: M the map, Q the recap and question, S the slips."""
    order = tab_order(step)
    return {"g": GLOSSARY_KEY} | {key: f"{TABS_KEY}/{order.index(tab) if tab in order else NOWHERE}"
                                  for key, tab in (("m", "step"), ("q", "recap"), ("s", "slips"))}


SHAPES_KEY = "lesson_shapes"
HOME_MODEL = "llmviz_lesson_home_model"  # the model the student ran before the article's shapes (back to it)


def _flip_shapes() -> None:
    if st.session_state.get(SHAPES_KEY):
        st.session_state[HOME_MODEL] = state.settings().model
        use_model(ARTICLE_SHAPES)
    else:
        use_model(st.session_state.pop(HOME_MODEL, None) or DEFAULT_MODEL)


def article_shapes(t, run) -> None:
    """The switch between the student's model and the article's shapes (gpt2-124m-random: 768 x 12 heads of 64 x
    12 layers, random weights): the same step on the article's [n, 768], one click from the student's own."""
    if not article_shapes_offered():
        return
    on = run.trace.model_card.get("name") == ARTICLE_SHAPES
    st.toggle(t("lesson.article_shapes"), value=on, key=SHAPES_KEY, on_change=_flip_shapes,
              help=t("lesson.article_shapes_help"))


def glossary(t) -> None:
    """The glossary, one click (or G) from any step."""
    names = {file.removesuffix(".py"): t(title) for file, title, _, _ in PAGES}
    with st.popover(t("lesson.glossary"), key=GLOSSARY_KEY, icon=":material/menu_book:", width="content"):
        article_view.glossary_table(t, names)


def side(t, run, step, decoded: int) -> None:
    """The tabs; `decoded`: the decode steps the run holds (the map draws the cache after each, up to four)."""
    order = tab_order(step)
    labels = {"step": t("lesson.tab.step"), "model": t("lesson.tab.model"),
              "recap": t("lesson.tab.recap", chapter=step.section), "slips": t("lesson.tab.slips", n=len(step.slips))}
    tabs = dict(zip(order, st.tabs([labels[o] for o in order], key=TABS_KEY,
                                   default=labels["recap"] if "recap" in order else None), strict=True))
    with tabs["step"]:
        this_step(t, run, step, decoded)
    with tabs["model"]:
        whole_model(t, run, step)
    if "recap" in tabs:
        with tabs["recap"]:
            lesson_check.chapter_end(t, run, step.section)
    if "slips" in tabs:
        with tabs["slips"]:
            article_view.slips_notes(t, step.slips)
