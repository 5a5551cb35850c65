"""Issue 47, the class's workload on a public server (§3.2): the students pick a prompt from a list, and a client
may send any value for that box over Streamlit's protocol. A value not on the list (a number, an index past it, a
text of its own) is refused where it enters: a clear message on the page, one log line and no traceback, nothing
submitted. Before, a number was submitted and then failed the box with a traceback on every rerun, and a text of the
client's own reached the class's prompts, which a public server never takes typed."""

import logging

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1.element_tree import Selectbox
from ui_helpers import open_app, page_file

from llmviz.classroom.stores import STORE_ENV
from llmviz.i18n.translator import translate
from llmviz.ui.lesson.lesson_class import store
from llmviz.ui.lesson.lesson_workload import PROMPT_KEY, STEP
from llmviz.ui.settings import EXAMPLE_PROMPTS

PAGE = page_file("lesson")


@pytest.fixture
def phone(tmp_path, monkeypatch, app_model):
    """A student's phone in a class at K7's step on a public server: (the phone, the class's code)."""
    monkeypatch.setenv(STORE_ENV, f"sqlite:///{tmp_path / 'class.db'}")
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    teacher = open_app(PAGE, lang="zh", lesson=STEP)
    teacher.button(key="class_start").click().run()
    code = teacher.session_state["llmviz_settings"].lesson.room
    return open_app(PAGE, lang="zh", room=code), code


def sends(at, **value) -> None:
    """The client sends `value` (a WidgetState field: string_value=..., int_value=...) for the prompt box on the next
    run, whatever the box offers, as a hostile client may over the protocol (AppTest itself sends only an option)."""
    box = at.selectbox(key=PROMPT_KEY)

    class Sent(Selectbox):
        @property
        def _widget_state(self) -> WidgetState:
            return WidgetState(id=self.id, **value)

    box.__class__ = Sent


def records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.INFO]


VALUES = [{"int_value": 99}, {"int_value": len(EXAMPLE_PROMPTS)}, {"string_value": "typed words of my own"},
          {"string_value": "99"}, {"double_value": 1.5}]


@pytest.mark.parametrize("value", VALUES)
def test_a_value_not_on_the_list_is_refused_and_nothing_is_sent(phone, caplog, value):
    at, code = phone
    sends(at, **value)
    with caplog.at_level(logging.INFO):
        at.button(key="class_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert translate("zh", "class.error.not_offered") in [w.value for w in at.warning]
    assert store().prompts(code) == []
    [record] = records(caplog)
    assert record.exc_info is None and "not on the public list" in record.getMessage()
    assert at.selectbox(key=PROMPT_KEY).value == EXAMPLE_PROMPTS[0]  # the box shows the list again
    at.run()  # the next run: quiet
    assert not at.exception and not at.warning


@pytest.mark.parametrize("value", VALUES[:1] + VALUES[2:3])
def test_a_rerun_carrying_the_value_is_one_line_not_a_traceback(phone, caplog, value):
    at, code = phone
    sends(at, **value)
    with caplog.at_level(logging.INFO):
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert translate("zh", "class.error.not_offered") in [w.value for w in at.warning]
    assert len(records(caplog)) == 1 and store().prompts(code) == []


def test_a_prompt_from_the_list_is_sent(phone):
    at, code = phone
    at.selectbox(key=PROMPT_KEY).select(EXAMPLE_PROMPTS[-1]).run()
    at.button(key="class_send").click().run()
    assert not at.exception and not at.warning
    assert [text for _, text, _, _ in store().prompts(code)] == [EXAMPLE_PROMPTS[-1]]
