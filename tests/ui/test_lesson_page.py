"""The lesson page (first increment): Next walks every step in the article's order in both languages
with no exception; the URL follows; each step's map holds the run's own shapes (from the config and the
prompt's token count); a link opens its step, a hostile one the first."""

import base64
import json

import pytest
from ui_helpers import open_app, page_file

from llmviz.i18n.translator import translate
from llmviz.ui.lesson.lesson_steps import END, POSITIONS, STEPS
from llmviz.ui.state import RUN_KEY
from llmviz.viz.model_map import FONT

PAGE = page_file("lesson")
BOLD = f'font-weight="bold" font-family="{FONT}"'


def model_map(at) -> str:
    """The SVG of the step's model map (st.image sends it as a data URL)."""
    url = at.get("image")[-1].proto.imgs[0].url
    assert url.startswith("data:image/svg+xml;base64,"), url[:60]
    return base64.b64decode(url.split(",", 1)[1]).decode("utf-8")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_next_walks_every_step_with_the_runs_shapes(app_model, lang):
    at = open_app(PAGE, model=app_model, lang=lang)
    run = at.session_state[RUN_KEY]
    config, n = run.trace.model_card["config"], len(run.trace.prompt_ids)
    d, heads, hd = config["hidden_size"], config["num_heads"], config["head_dim"]
    for i, step in enumerate(STEPS):
        assert at.query_params.get("lesson", [POSITIONS[0]]) in (step.id, [step.id]) or i == 0
        title = f"§{step.section} · {translate(lang, f'lesson.{step.id}.title')}"
        assert next(s.value for s in at.subheader) == title
        named = f"{step.concepts[0]} {translate(lang, f'concept.{step.concepts[0]}')}"
        assert any(named in c.value for c in at.caption), named  # the IDs it cites, named
        spec = model_map(at)
        # prefill (every prompt token at once) beside decode (one token, n + 1 keys), the current step's in bold
        assert f"[{n}, {d}]" in spec and f"[{heads}, {n}, {n}]" in spec
        assert f"[1, {d}]" in spec and f"[1, {heads}, {hd}]" in spec and f"[{heads}, 1, {n + 1}]" in spec
        prefilling, decoding = f'{BOLD}>[{n}, {d}]<' in spec, f'{BOLD}>[1, {d}]<' in spec
        assert (prefilling, decoding) == ((True, False) if step.section == "1.1" else (False, True)), step.id
        at.button(key="lesson_next").click().run()
        assert not at.exception, (step.id, [e.value for e in at.exception])
    assert at.session_state["llmviz_settings"].lesson.at == END
    assert any(translate(lang, "lesson.end") in i.value for i in at.info)
    assert at.button(key="lesson_next").disabled


@pytest.mark.parametrize("given, shown", [("1.2.3", "1.2.3"), ("5.2", "5.2"), ("9.9", "1.1.1")])
def test_a_link_opens_its_step(app_model, given, shown):
    at = open_app(None, model=app_model, lesson=given)
    warned = " ".join(w.value for w in at.warning)  # the link's first run names what it dropped
    assert ("lesson=" in warned) == (given != shown), warned
    at.switch_page(PAGE).run()
    step = next(s for s in STEPS if s.id == shown)
    assert next(s.value for s in at.subheader).startswith(f"§{step.section} · ")
    assert at.session_state["llmviz_settings"].lesson.at == shown


def test_back_and_the_chapter_list_move_the_position(app_model):
    at = open_app(PAGE, model=app_model, lesson="2.1.2")
    at.button(key="lesson_back").click().run()
    assert at.session_state["llmviz_settings"].lesson.at == "2.1.1"
    at.selectbox(key="lesson_chapter").set_value("4.2").run()
    assert at.session_state["llmviz_settings"].lesson.at == "4.2.1"
    assert json.dumps(at.query_params.get("lesson")).count("4.2.1") == 1


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_home_offers_the_lesson_first(app_model, lang):
    at = open_app(None, model=app_model, lang=lang)
    links = at.get("page_link")
    assert links and links[0].proto.page == "lesson" and links[0].proto.label == translate(lang, "home.lesson")
