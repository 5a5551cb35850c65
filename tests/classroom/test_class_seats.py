"""A class no single client can shut or stuff, against both stores: one seat a
device, new seats from one client bounded well under the class's size, the teacher removing a seat for good, every
code check counted with one answer for a wrong code and a wrong key, names unique in a class, and no address kept
after the class ends."""

from __future__ import annotations

import pytest
from class_helpers import PROJECTOR, T0  # the store fixture (both kinds) is tests/classroom/conftest.py's

from llmviz.classroom import classes
from llmviz.classroom.classes import ClassError
from llmviz.classroom.store import Limits


def start(store, students: int = 60) -> tuple[str, str]:
    return classes.start(store, Limits(students=students), now=T0, device=PROJECTOR, client="198.51.100.9")


def test_one_device_is_one_seat_however_many_sessions(store):
    code, _ = start(store)
    first = classes.join(store, code, "203.0.113.5", now=T0, device="aaaa1111aaaa1111")
    again = [classes.join(store, code, "203.0.113.5", now=T0 + i, device="aaaa1111aaaa1111") for i in range(1, 30)]
    assert {s.id for s in again} == {first.id} and len(store.students(code)) == 1
    other = classes.join(store, code, "203.0.113.5", now=T0 + 31, device="bbbb2222bbbb2222")
    assert other.id != first.id and len(store.students(code)) == 2
    # a vote is one a student: the same device voting from thirty sessions is one value, the last
    for i, value in enumerate((1.5, 2.0, 2.5)):
        classes.predict(store, code, again[i].id, "K1", 1, value, now=T0 + 40 + i)
    assert store.predictions(code, "K1", 1) == {first.id: 2.5}


def test_one_client_takes_at_most_its_seats_a_minute(store):
    """The red team's 61 joins from one address in 8 s: now SEATS_PER_MINUTE, then a wait; others join meanwhile."""
    code, _ = start(store)
    took = [classes.join(store, code, "203.0.113.66", now=T0 + i * 0.1) for i in range(classes.SEATS_PER_MINUTE)]
    assert len({s.id for s in took}) == 20 == classes.SEATS_PER_MINUTE < Limits().students // 2
    with pytest.raises(ClassError) as refused:
        classes.join(store, code, "203.0.113.66", now=T0 + 3)
    assert refused.value.code == "too_many_seats"
    honest = [classes.join(store, code, f"198.51.100.{i}", now=T0 + 4) for i in range(30)]  # every one gets in
    assert len(store.students(code)) == 50 and all(s.id in {x.id for x in store.students(code)} for s in honest)
    later = classes.join(store, code, "203.0.113.66", now=T0 + 61)  # the next minute's window
    assert later.id in {s.id for s in store.students(code)}


def test_the_teacher_removes_a_seat_for_good(store):
    code, key = start(store)
    stuffer = classes.join(store, code, "203.0.113.66", now=T0, device="dddd0000dddd0000")
    honest = classes.join(store, code, "198.51.100.1", now=T0, device="eeee0000eeee0000")
    classes.predict(store, code, stuffer.id, "K1", 1, 6.0, now=T0)
    classes.predict(store, code, honest.id, "K1", 1, 1.5, now=T0)
    classes.answer(store, code, stuffer.id, "1.1", 3.0, False, 4.0, now=T0)
    classes.submit_prompt(store, code, stuffer.id, "spam", now=T0)
    with pytest.raises(ClassError):
        classes.remove(store, code, "not-the-key", stuffer.id, now=T0)
    assert classes.remove(store, code, key, stuffer.id, now=T0 + 1)
    assert [s.id for s in store.students(code)] == [honest.id]
    assert store.predictions(code, "K1", 1) == {honest.id: 1.5}  # its vote is gone from the count
    assert store.answers(code, "1.1") == {} and store.prompts(code) == []
    assert not classes.remove(store, code, key, stuffer.id, now=T0 + 2)  # already out
    with pytest.raises(ClassError) as back:
        classes.join(store, code, "203.0.113.67", now=T0 + 3, device="dddd0000dddd0000")  # another address
    assert back.value.code == "removed" and len(store.students(code)) == 1
    with pytest.raises(ClassError) as gone:
        classes.predict(store, code, stuffer.id, "K1", 1, 6.0, now=T0 + 4)  # its id no longer votes
    assert gone.value.code == "no_student"
    # a write that passed the rules' check just before the removal lands nowhere: the store checks the seat itself
    assert not store.put_prediction(code, stuffer.id, "K1", 1, 6.0, 40)
    assert not store.put_answer(code, stuffer.id, "1.1", 3.0, False, 4.0, 40)
    assert not store.put_prompt(code, stuffer.id, "late", T0, 40)
    assert store.predictions(code, "K1", 1) == {honest.id: 1.5} and store.prompts(code) == []


def test_every_code_check_counts_and_reads_the_same(store):
    """Finding 4: the teacher's path answered 'no class' or 'teacher only' without counting a try."""
    code, key = start(store)
    wrong_code = "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY"
    refusals = set()
    for i in range(classes.JOIN_ATTEMPTS):
        with pytest.raises(ClassError) as no:
            classes.teacher(store, wrong_code if i % 2 else code, "guess", now=T0 + 1, client="203.0.113.66")
        refusals.add((no.value.code, str(no.value)))
    assert refusals == {("no_class", classes.NOT_YOURS)}  # a wrong code and a wrong key: one answer
    for attempt in (lambda: classes.teacher(store, code, "guess", now=T0 + 2, client="203.0.113.66"),
                    lambda: classes.join(store, code, "203.0.113.66", now=T0 + 2)):  # joins share the count
        with pytest.raises(ClassError) as locked:
            attempt()
        assert locked.value.code == "too_many"
    assert classes.teacher(store, code, key, now=T0 + 2, client="203.0.113.66").code == code  # the key still works
    assert classes.join(store, code, "198.51.100.2", now=T0 + 2).name  # another client is not locked out
    assert classes.join(store, code, "203.0.113.66", now=T0 + 61).name  # nor this one the next minute


def test_names_are_unique_in_a_class(store):
    code, _ = start(store)
    a = classes.join(store, code, "198.51.100.1", now=T0)
    b = classes.join(store, code, "198.51.100.2", now=T0)
    classes.rename(store, code, a.id, "Lin", now=T0)
    for taken in ("Lin", "lin", "  LIN "):
        with pytest.raises(ClassError) as same:
            classes.rename(store, code, b.id, taken, now=T0)
        assert same.value.code == "name_taken"
    assert classes.rename(store, code, a.id, "LIN", now=T0) == "LIN"  # one's own name in another case is theirs
    drawn = {classes.draw_name(store, code, b.id, now=T0) for _ in range(20)}
    assert all(classes.unique_name(n) != "lin" for n in drawn)
    names = [s.name for s in store.students(code)]
    assert len({classes.unique_name(n) for n in names}) == len(names) == 2


def held_keys(store, address: str) -> list[str]:
    """The rate limits' rows that name `address`, as the store keeps them."""
    if hasattr(store, "r"):
        return [k for k in store.r.scan_iter(match="hits:*") if address in k]
    import sqlite3

    with sqlite3.connect(store.path) as db:
        return [k for (k,) in db.execute("SELECT key FROM hits") if address in k]


def test_ending_classes_frees_their_starts_and_no_more(store):
    """A review's loop: start 5, end 1, start again... Ending a class takes back its own start only: a client holds
    at most STARTS classes an hour, and once none counts its address is kept nowhere."""
    teacher_at = "198.51.100.30"
    started = [classes.start(store, now=T0, client=teacher_at) for _ in range(classes.STARTS)]
    for round_ in range(3):  # end one, start one: always STARTS live, never a sixth
        code, key = started.pop(0)
        classes.end(store, code, key, now=T0 + round_)
        started.append(classes.start(store, now=T0 + round_, client=teacher_at))
        with pytest.raises(ClassError) as sixth:
            classes.start(store, now=T0 + round_, client=teacher_at)
        assert sixth.value.code == "too_many_starts"
    assert len(store.codes()) == classes.STARTS
    for code, key in started:
        classes.end(store, code, key, now=T0 + 10)
    assert held_keys(store, teacher_at) == []


def test_a_seat_not_taken_spends_nothing(store):
    """A full class, or a removed device, takes no seat: the network's seats a minute are not spent on it."""
    code, _ = start(store, students=1)
    classes.join(store, code, "198.51.100.40", now=T0)
    for _ in range(classes.SEATS_PER_MINUTE + 5):
        with pytest.raises(ClassError) as full:
            classes.join(store, code, "203.0.113.40", now=T0)
        assert full.value.code == "full"
    code2, _ = start(store)
    assert classes.join(store, code2, "203.0.113.40", now=T0).name  # its seats a minute untouched


def test_ending_a_class_keeps_no_address_of_its_teacher(store):
    """Finding 11: rate-limit rows kept the teacher's address an hour after End."""
    code, key = start(store)
    classes.end(store, code, key, now=T0 + 5)
    assert held_keys(store, "198.51.100.9") == []
