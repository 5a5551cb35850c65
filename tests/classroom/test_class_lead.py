"""A class's lead, its lifetime and its clean-up, against both stores: one of the teacher's devices leads
(the projector), a second one with the key follows and moves nothing until it takes the lead; a silent leader gives
way; a class ends at its lifetime however active; Redis expires a class's keys by itself should no process sweep;
the app's sweep runs on a timer, with no student joining; a SQLite file of an earlier version gains the new columns;
a chapter's answers on neighbours' different numbers are counted by the mistake, not the value."""

from __future__ import annotations

import math
import sqlite3
import time

import pytest
from class_helpers import PROJECTOR, T0

from llmviz.classroom import classes, tally
from llmviz.classroom.classes import LEAD_STALE_S, RELOAD_S, ClassError
from llmviz.classroom.store import Limits, Student
from llmviz.classroom.stores import open_store, sweep_every

TAB = "phone.tab1"  # the teacher's key opened on another device (another browser)


def test_one_device_leads_and_a_second_follows_until_it_takes_the_lead(store):
    code, key = classes.start(store, now=T0, device=PROJECTOR)
    assert classes.lead(store, code, key, PROJECTOR, now=T0 + 1)
    assert not classes.lead(store, code, key, TAB, now=T0 + 2, opened=True)  # the projector said so a second ago
    with pytest.raises(ClassError) as second:
        classes.move(store, code, key, TAB, "2.2.1", now=T0 + 2)
    assert second.value.code == "not_leader" and store.get(code).step == "1.1.1"
    with pytest.raises(ClassError) as wrong:
        classes.lead(store, code, "not-the-key", TAB, now=T0 + 2, take=True)
    assert wrong.value.code == "no_class" and store.get(code).leader == PROJECTOR
    with pytest.raises(ClassError) as bad:
        classes.lead(store, code, key, "no-tab", now=T0 + 2)
    assert bad.value.code == "bad_value"
    assert classes.lead(store, code, key, TAB, now=T0 + 3, take=True)  # the teacher's click on the second device
    assert not classes.lead(store, code, key, PROJECTOR, now=T0 + 4)  # the projector now follows
    with pytest.raises(ClassError):
        classes.move(store, code, key, PROJECTOR, "1.2.1", now=T0 + 4)
    classes.move(store, code, key, TAB, "2.2.1", now=T0 + 5)
    assert store.get(code).step == "2.2.1" and store.get(code).leader == TAB


def test_a_busy_projector_keeps_the_lead_and_a_closed_one_gives_it_to_a_device_that_opens(store):
    """A long Reveal runs no poll: a device already open never takes the lead by itself, however long the silence;
    a device opening the class takes it from a leader silent past LEAD_STALE_S (the projector closed), not before."""
    code, key = classes.start(store, now=T0, device=PROJECTOR)
    assert not classes.lead(store, code, key, TAB, now=T0 + LEAD_STALE_S + 600)
    assert not classes.lead(store, code, key, "desk.tab1", now=T0 + LEAD_STALE_S - 1, opened=True)
    assert classes.lead(store, code, key, "desk.tab1", now=T0 + LEAD_STALE_S + 1, opened=True)
    assert store.get(code).leader == "desk.tab1" and store.get(code).led == T0 + LEAD_STALE_S + 1


def test_a_reloaded_projector_leads_on_and_a_second_tab_does_not_fight_it(store):
    """A reload is a new tab of the same browser: it takes the lead once the old tab is silent RELOAD_S (three
    polls), at any run; while the leading tab still polls, a second tab of the same browser follows."""
    code, key = classes.start(store, now=T0, device=PROJECTOR)
    again = "laptop.tab2"
    assert not classes.lead(store, code, key, again, now=T0 + RELOAD_S - 1, opened=True)  # tab1 may still be there
    assert classes.lead(store, code, key, PROJECTOR, now=T0 + RELOAD_S - 0.5)  # it is: its poll
    assert not classes.lead(store, code, key, again, now=T0 + 2 * RELOAD_S - 1)
    assert classes.lead(store, code, key, again, now=T0 + 2 * RELOAD_S)  # tab1 silent past RELOAD_S: reloaded
    assert not classes.lead(store, code, key, PROJECTOR, now=T0 + 2 * RELOAD_S + 1)
    assert not classes.lead(store, code, key, TAB, now=T0 + 10 * RELOAD_S)  # another browser: only on a click


def test_a_class_started_by_the_command_line_is_led_by_its_first_device(store):
    code, key = classes.start(store, now=T0)  # `llmviz class start`: no browser yet
    assert store.get(code).leader == ""
    with pytest.raises(ClassError):
        classes.move(store, code, key, TAB, "1.2.1", now=T0)
    assert classes.lead(store, code, key, TAB, now=T0 + 1)
    assert not classes.lead(store, code, key, PROJECTOR, now=T0 + 2, opened=True)


def test_a_class_ends_at_its_lifetime_however_active(store):
    code, key = classes.start(store, Limits(idle_s=600, lifetime_s=3600), now=T0, device=PROJECTOR)
    for minute in range(1, 60):  # active every minute: never idle
        classes.move(store, code, key, PROJECTOR, f"1.2.{minute % 7 + 1}", now=T0 + 60 * minute)
    assert classes.live(store, code, now=T0 + 3600).code == code
    assert classes.sweep(store, now=T0 + 3601) == [code] and store.get(code) is None


def test_redis_expires_a_class_by_itself(store):
    """Every key of a class carries the class's expiry (its lifetime's end and a minute); a class whose expiry has
    passed is gone from Redis with no sweep, and the next prune forgets its code."""
    if not hasattr(store, "r"):
        pytest.skip("Redis's own expiry: the SQLite store relies on the sweep")
    from llmviz.classroom.redis_store import EXPIRE_AFTER_S

    code, key = classes.start(store, Limits(lifetime_s=3600, submissions=5), now=T0, device=PROJECTOR)
    s = classes.join(store, code, "10.3.0.1", now=T0)
    classes.predict(store, code, s.id, "K1", 1, 1.5, now=T0)
    classes.answer(store, code, s.id, "1.1", 10.0, False, 20.0, now=T0)
    classes.submit_prompt(store, code, s.id, "济南", now=T0)
    classes.put_results(store, code, key, {s.id: {"text": "x"}}, now=T0)
    keys = list(store.r.scan_iter(match=f"class:{code}*"))
    assert len(keys) == 8  # the class, students, names, done, a prediction, answers, prompts, results
    at = math.ceil(T0 + 3600) + EXPIRE_AFTER_S  # by hand: 1,800,003,660
    assert at == 1_800_003_660 and {store.r.execute_command("EXPIRETIME", k) for k in keys} == {at}
    now = time.time()
    gone, _ = classes.start(store, Limits(lifetime_s=3600), now=now - 3600 - EXPIRE_AFTER_S - 5)  # expired 5 s ago
    assert store.r.exists(f"class:{gone}") == 0 and store.get(gone) is None
    assert gone in store.r.smembers("classes")
    store.prune(now)
    assert gone not in store.r.smembers("classes") and code in store.r.smembers("classes")


def test_the_app_sweeps_on_a_timer_with_no_one_joining(tmp_path):
    """The sweep runs every minute in the app's process (here every 50 ms): a class idle past its time ends though
    no student joins and no page asks."""
    store = open_store(f"sqlite:///{tmp_path / 'class.db'}")
    idle, _ = classes.start(store, Limits(idle_s=600), now=time.time() - 700)
    kept, _ = classes.start(store, Limits(idle_s=600))
    stop = sweep_every(lambda: store, every_s=0.05)
    try:
        deadline = time.monotonic() + 10
        while store.get(idle) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
    assert store.get(idle) is None and store.get(kept) is not None


def test_a_store_file_of_an_earlier_version_gains_the_new_columns(tmp_path):
    """A store file outlives an upgrade (LLMVIZ_CLASS_STORE's, or the default in the user's state folder). A file as
    the first version made it (no round, leader, led, starter or answer; students without their device; rate-limit
    windows by number) works on."""
    path = tmp_path / "class.db"
    with sqlite3.connect(path) as db:  # the tables as the first version of the store made them
        db.execute("CREATE TABLE classes (code TEXT PRIMARY KEY, teacher_hash TEXT NOT NULL, limits TEXT NOT NULL, "
                   "step TEXT NOT NULL, created REAL NOT NULL, active REAL NOT NULL)")
        db.execute("CREATE TABLE answers (code TEXT NOT NULL, student TEXT NOT NULL, chapter TEXT NOT NULL, "
                   "given REAL NOT NULL, right INTEGER NOT NULL, PRIMARY KEY (code, student, chapter))")
        db.execute("CREATE TABLE hits (key TEXT NOT NULL, window INTEGER NOT NULL, count INTEGER NOT NULL, "
                   "PRIMARY KEY (key, window))")
        db.execute("CREATE TABLE students (code TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, joined REAL NOT "
                   "NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT, UNIQUE (code, id))")
        db.execute("INSERT INTO students (code, id, name, joined) VALUES ('ABCDEF', 's1', 'Otter 12', ?)", (T0,))
        db.execute("INSERT INTO classes VALUES ('ABCDEF', 'h', '{}', '1.2.1', ?, ?)", (T0, T0))
        db.execute("INSERT INTO answers VALUES ('ABCDEF', 's1', '1.1', 24.0, 0)")
        db.execute("INSERT INTO hits VALUES ('join:10.0.0.1', 1, 3)")
    store = open_store(f"sqlite:///{path}")
    kept = store.get("ABCDEF")
    assert (kept.step, kept.round, kept.leader, kept.led, kept.limits) == ("1.2.1", 1, "", 0.0, Limits())
    assert store.hit("join:10.0.0.1", 60.0, T0) == 1  # the counters start afresh
    code, _ = classes.start(store, now=T0, client="10.0.0.2")  # a class started, as the lesson's button does
    assert store.get(code).round == 1
    assert store.answers("ABCDEF", "1.1") == {"s1": (24.0, False, None)}  # no right answer was kept then
    assert store.lead("ABCDEF", PROJECTOR, T0, LEAD_STALE_S, False)
    assert [(x.id, x.name, x.device) for x in store.students("ABCDEF")] == [("s1", "Otter 12", "")]
    assert store.get("ABCDEF").starter == ""
    said, seated = store.add_student("ABCDEF", Student("s2", "Heron 40", T0, "ab12"), 60)  # a device's seat now
    assert said == "joined" and store.add_student("ABCDEF", Student("s3", "Lynx 50", T0, "ab12"), 60)[1] == seated


def test_a_mistake_counted_on_neighbours_numbers(store):
    """§1.2's question differs per student (their own draw): four students forget that K and V are both cached,
    each on their own number, so four different wrong values are one mistake, half the right answer."""
    code, _ = classes.start(store, Limits(students=8), now=T0)
    cases = [(96.0, 48.0), (120.0, 60.0), (144.0, 72.0), (168.0, 84.0),  # (right, given): half of it
             (96.0, 192.0), (120.0, 240.0),  # twice it (fp32 counted for fp16)
             (96.0, 96.0), (120.0, 7.0)]  # right; a stray value (x0.058)
    for i, (right_answer, given) in enumerate(cases):
        s = classes.join(store, code, f"10.4.0.{i}", now=T0)
        classes.answer(store, code, s.id, "1.2", given, given == right_answer, right_answer, now=T0)
    assert tally.answer_stats(store, code, "1.2") == (1, 8, (0.5, 4, None))  # no one value: each their own
    assert [tally.mistake(g, r) for r, g in cases[-3:]] == [2.0, 1.0, pytest.approx(7 / 120)]
    assert tally.mistake(5.0, 0.0) is None and tally.mistake(5.0, None) is None
    late, _ = classes.start(store, Limits(students=8), now=T0)  # no ratio (a right answer of 0): by the value
    for i, (right_answer, given) in enumerate([(0.0, 3.0), (0.0, 3.0), (0.0, 4.0), (10.0, 5.0)]):
        s = classes.join(store, late, f"10.4.1.{i}", now=T0)
        classes.answer(store, late, s.id, "1.2", given, False, right_answer, now=T0)
    assert tally.answer_stats(store, late, "1.2") == (0, 4, (None, 2, 3.0))
