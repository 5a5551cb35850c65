"""The class's seats on the page: the teacher sees who joined and removes a seat (its vote leaves the
projector's count, its phone is told and cannot come back); a wrong teacher key reads as a wrong code and counts as a
try; on a public server a student draws another name, never types one."""

import sqlite3

import pytest
from ui_helpers import open_app, page_file, settings

from llmviz.classroom.classes import ANIMALS
from llmviz.i18n.translator import translate
from llmviz.ui.lesson.lesson_class import store

PAGE = page_file("lesson")


pytestmark = pytest.mark.usefixtures("class_store")  # a class store of each test's own (tests/ui/conftest.py)


def teacher_at(position: str):
    at = open_app(PAGE, lang="zh", lesson=position)
    at.button(key="class_start").click().run()
    return at, settings(at).lesson.room, settings(at).lesson.teach


def test_the_teacher_removes_a_seat_and_its_vote(app_model):
    teacher, code, _ = teacher_at("2.2.2")
    phones = [open_app(PAGE, lang="zh", room=code) for _ in range(2)]
    for phone, value in zip(phones, (6.0, 1.5), strict=True):
        phone.slider(key="lesson_predict_K4").set_value(value).run()
    teacher.run()
    assert any(translate("zh", "class.answered", n=2, joined=2) in c.value for c in teacher.caption)
    stuffer, honest = (settings(p).lesson.me for p in phones)
    name = next(s.name for s in store().students(code) if s.id == stuffer)
    teacher.button(key=f"class_remove_{stuffer}").click().run()
    assert [s.id for s in store().students(code)] == [honest]
    assert store().predictions(code, "K4", 1) == {honest: 1.5}
    assert any(translate("zh", "class.answered", n=1, joined=1) in c.value for c in teacher.caption)
    assert [x.value for x in teacher.toast] == [translate("zh", "class.removed", name=name)]
    phones[0].run()  # the removed phone: told, out of the class (its URL drops the code), no new seat taken
    assert [w.value for w in phones[0].warning] == [translate("zh", "class.error.removed")]
    assert settings(phones[0]).lesson.room == "" and [s.id for s in store().students(code)] == [honest]


def test_a_wrong_teacher_key_reads_as_a_wrong_code_and_counts(app_model, tmp_path):
    _, code, _ = teacher_at("1.1.1")
    said = []
    for room in (code, "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY"):
        at = open_app(PAGE, lang="zh", room=room, teach="a-guess")
        said.append([w.value for w in at.warning])
        assert settings(at).lesson.room == "" and settings(at).lesson.teach == ""
    assert said[0] == said[1] == [translate("zh", "class.error.no_class")]
    with sqlite3.connect(tmp_path / "class.db") as db:
        counted = sum(n for k, n in db.execute("SELECT key, count FROM hits") if k.startswith("join:"))
    assert counted == 2  # each refused teacher link is one of its client's tries


def test_a_public_servers_student_draws_a_name(app_model, monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    _, code, _ = teacher_at("1.1.1")
    phone = open_app(PAGE, lang="zh", room=code)
    assert not [b for b in phone.text_input if b.key == "class_name"]  # nothing to type a name into
    [first] = [s.name for s in store().students(code)]
    phone.button(key="class_draw_name").click().run()
    [second] = [s.name for s in store().students(code)]
    assert second != first and second.split()[0] in ANIMALS


def test_a_network_past_its_seats_keeps_the_link_and_tries_again(app_model, monkeypatch):
    """A class behind one NAT address: past the network's seats of a minute a phone is told it tries again by
    itself, and keeps the class's code (before, it lost the link and had to open it again)."""
    from llmviz.classroom import classes
    from llmviz.ui.lesson import lesson_class
    from llmviz.ui.lesson.lesson_class import RETRY_S

    monkeypatch.setattr(classes, "SEATS_PER_MINUTE", 1)
    monkeypatch.setattr(lesson_class, "_try_again", lambda: None)  # AppTest runs a timed fragment at once: the
    _, code, _ = teacher_at("1.1.1")  # retry would loop here until the minute turned; a browser waits RETRY_S
    first = open_app(PAGE, lang="zh", room=code)
    second = open_app(PAGE, lang="zh", room=code)  # the same network (AppTest's one client), its minute spent
    assert settings(first).lesson.me and not settings(second).lesson.me
    assert [w.value for w in second.warning] == [translate("zh", "class.error.too_many_seats",
                                                           seconds=round(RETRY_S))]
    assert settings(second).lesson.room == code and len(store().students(code)) == 1
    monkeypatch.setattr(classes, "SEATS_PER_MINUTE", 2)  # the next minute, as far as the limit is concerned
    second.run()
    assert settings(second).lesson.me and len(store().students(code)) == 2
