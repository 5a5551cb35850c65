"""A lesson step is one declaration: a toy step (tests/support/toy_lesson_step.py: its Step, its panel, its words)
added in one call is walked to by Next, opened by its link and drawn from the student's own run; a toy claim (K99,
declared in one module of its own) placed in the lesson by its step alone is predicted and revealed there; a step
without its panel or its words fails the lesson's check by its id, before any student sees it."""

import re

import numpy as np
import pytest
import toy_claim
import toy_lesson_step as toy
from ui_helpers import open_app, page_file

from llmviz.analysis import lesson_plan
from llmviz.analysis.lesson_plan import CHAPTER_ENDS, POSITIONS, STEP_IDS, STEPS, Step, check_built
from llmviz.errors import ConfigError, UnknownNameError
from llmviz.i18n import translator
from llmviz.i18n.translator import Translator, translate
from llmviz.ui.lesson import lesson_panels
from llmviz.ui.state import RUN_KEY

PAGE = page_file("lesson")


def panels() -> set[str]:
    """The panels the lesson page draws: the lesson's table and the page's own locality section (app_pages/lesson)."""
    return {*lesson_panels.panels(), "locality"}


@pytest.fixture
def toy_step(tmp_path, monkeypatch):
    toy_claim.add_lines(tmp_path, monkeypatch, toy.LINES)
    toy.add()
    yield toy.STEP
    toy.remove()
    translator.catalog.cache_clear()


def test_the_toy_step_joins_the_lesson_where_it_was_placed(toy_step):
    at = STEP_IDS.index("1.1.9")
    assert STEP_IDS[at - 1] == "1.1.3" and STEP_IDS[at + 1] == "1.1.4" and len(STEPS) == 38
    assert lesson_plan.position("1.1.9") == "1.1.9" and POSITIONS[-1] == "end" and "1.1.9" in POSITIONS
    assert "1.1.8" in CHAPTER_ENDS and "1.1.9" not in CHAPTER_ENDS  # the chapter still ends at its question
    check_built(STEPS, panels(), lambda key: key in Translator("zh"))  # whole: no error


def test_next_walks_to_the_toy_step_and_its_panel_reads_the_run(app_model, toy_step):
    at = open_app(PAGE, model=app_model, lang="zh", lesson="1.1.3")
    at.button(key="lesson_next").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["llmviz_settings"].lesson.at == "1.1.9"
    assert next(s.value for s in at.subheader) == f"§1.1 · {toy.LINES['zh']['lesson.1.1.9.title']}"
    run = at.session_state[RUN_KEY]
    rows = run.trace.steps[0].hook("embed").array[0]  # [n, d]: the student's own embedding rows
    shown = next(d.value for d in at.dataframe if "norm" in d.value.columns)
    assert list(shown["norm"]) == pytest.approx(np.sqrt((rows.astype(np.float64) ** 2).sum(-1)), rel=1e-5)
    assert len(shown) == len(run.trace.prompt_ids)
    at.button(key="lesson_next").click().run()
    assert at.session_state["llmviz_settings"].lesson.at == "1.1.4"


def test_a_link_opens_the_toy_step_and_it_is_gone_once_removed(app_model, toy_step):
    at = open_app(PAGE, model=app_model, lesson="1.1.9")
    assert at.session_state["llmviz_settings"].lesson.at == "1.1.9" and not at.exception
    toy.remove()
    with pytest.raises(UnknownNameError):
        lesson_plan.position("1.1.9")
    assert len(STEPS) == 37 and "toy_norms" not in lesson_panels.panels()


def test_a_claims_step_without_the_claims_cause_fails_by_its_id(tmp_path, monkeypatch):
    toy_claim.install(tmp_path, monkeypatch, {lang: {k: v for k, v in lines.items() if "cause" not in k}
                                              for lang, lines in toy.LINES.items()})
    toy.add_claim_step()
    try:
        with pytest.raises(ConfigError, match=re.escape("1.1.10 (no text lesson.cause.K99)")):
            check_built(STEPS, panels(), lambda key: key in Translator("zh"))
    finally:
        toy.remove()
        toy_claim.uninstall()


def test_a_step_without_its_panel_or_words_fails_by_its_id():
    bare = Step("1.1.9", "nowhere", "tokens", ("C2",), map=lesson_plan.PROMPT_IDS)
    STEPS.add(bare, "1.1.3")
    try:
        with pytest.raises(ConfigError) as err:
            check_built(STEPS, panels(), lambda key: key in Translator("en"))
        text = str(err.value)
        assert "1.1.9 (no panel 'nowhere')" in text and "1.1.9 (no text lesson.1.1.9.title)" in text
        assert "1.1.8" not in text  # only the step that is not whole is named
    finally:
        STEPS.remove("1.1.9")
    with pytest.raises(ConfigError, match="declared twice"):
        STEPS.add(Step("1.1.3", "tokens", "tokens", ("C1",), map=lesson_plan.PROMPT_IDS), "1.1.2")
    with pytest.raises(ConfigError, match=re.escape("no step '9.9'")):
        STEPS.add(bare, "9.9")
    with pytest.raises(ConfigError, match=re.escape("is not 1.1.3's")):
        STEPS.add(Step("4.2.9", "tokens", "tokens", ("C1",), map=lesson_plan.PROMPT_IDS), "1.1.3")
    with pytest.raises(ConfigError, match=re.escape("after 1.1.1 ends its chapter")):  # it would split §1.1
        STEPS.add(Step("1.2.9", "tokens", "tokens", ("C1",), map=lesson_plan.PROMPT_IDS), "1.1.1")
    STEPS.add(Step("1.2.9", "tokens", "tokens", ("C1",), map=lesson_plan.PROMPT_IDS), "1.1.8")  # §1.2's first
    try:
        assert STEP_IDS[STEP_IDS.index("1.1.8") + 1] == "1.2.9" and "1.1.8" in CHAPTER_ENDS
        assert lesson_plan.opened("1.2") == "1.2.9"  # the chapter opens at its new first step
    finally:
        STEPS.remove("1.2.9")
    with pytest.raises(ConfigError, match="no map"):  # a step that draws no map is refused where it is declared
        Step("1.1.9", "tokens", "tokens", ("C1",))
    with pytest.raises(ConfigError, match="cannot be removed"):
        STEPS.remove("1.1.1")
    assert len(STEPS) == 37


def test_a_toy_claim_is_placed_in_the_lesson_by_its_step_alone(app_model, tmp_path, monkeypatch):
    """K99's module and its step (and their words): the lesson predicts it and reveals its measured figure."""
    toy_claim.install(tmp_path, monkeypatch, toy.LINES)
    toy.add_claim_step()
    try:
        assert STEP_IDS[STEP_IDS.index("1.1.8") + 1] == "1.1.10"
        check_built(STEPS, panels(), lambda key: key in Translator("en"))  # its words, the claim's cause among them
        at = open_app(PAGE, model=app_model, lang="en", lesson="1.1.10")
        assert not at.exception, [e.value for e in at.exception]
        assert next(s.value for s in at.subheader) == f"§1.1 · {toy.LINES['en']['lesson.1.1.10.title']}"
        at.slider(key="lesson_predict_K99").set_value(1.5).run()
        at.button(key="lesson_reveal_K99").click().run(timeout=300)
        assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
        kept = at.session_state["llmviz_lesson_revealed"]["K99"]
        effect = kept["claim"]["effects"][0]
        assert effect["name"] == "toy_doubling" and effect["rounds"] >= 3 and kept["predicted"] == pytest.approx(0.5)
        assert translate("en", "claims.effect.toy_doubling") in " ".join(m.label for m in at.metric) + " ".join(
            c.value for c in at.caption) + " ".join(m.value for m in at.markdown)
    finally:
        toy.remove()
        toy_claim.uninstall()
