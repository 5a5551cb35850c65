"""A class's shared state, against both stores: SQLite (a file, WAL) and a real redis-server (skipped with
the reason where it is absent). A class created, three students joined, predictions stored and counted, the
histogram's counts those submitted; only the teacher key moves or ends the class; a wrong code is refused; the
limits hold, under students joining at once too; a class's data is gone after it ends, by the teacher or idle."""

from __future__ import annotations

import threading

import pytest
from class_helpers import PROJECTOR, T0  # the store fixture (both kinds) is tests/classroom/conftest.py's

from llmviz.classroom import classes, tally
from llmviz.classroom.classes import ClassError
from llmviz.classroom.store import Limits
from llmviz.classroom.stores import open_store
from llmviz.errors import ConfigError


def code_of(store) -> tuple[str, str]:
    return classes.start(store, Limits(students=5, submissions=3), now=T0, device=PROJECTOR)


def test_three_students_predict_and_the_projector_counts_them(store):
    code, key = code_of(store)
    assert len(code) == 6 and set(code) <= set(classes.CODE_ALPHABET) and key not in repr(store.get(code))
    a, b, c = (classes.join(store, code.lower(), f"10.0.0.{i}", now=T0 + i) for i in range(3))  # typed lower case
    assert [s.id for s in store.students(code)] == [a.id, b.id, c.id] and len({a.id, b.id, c.id}) == 3
    for student, value in ((a, 1.5), (b, 2.0), (c, 1.55)):
        classes.predict(store, code, student.id, "K1", 1, value, now=T0 + 10)
    classes.predict(store, code, a.id, "K1", 1, 3.0, now=T0 + 11)  # a change of mind replaces the first
    assert store.predictions(code, "K1", 1) == {a.id: 3.0, b.id: 2.0, c.id: 1.55}
    assert tally.answered(store, code, "K1", 1) == (3, 3) and tally.answered(store, code, "K1", 2) == (0, 3)
    # the slider: x0.25..x6.00 by 0.05, 116 positions, 3 a bin (at most 40 bins): 39 bins of 0.15. By hand: x1.55 is
    # position 26 (bin 8), x2.00 position 35 (bin 11), x3.00 position 55 (bin 18)
    width, counts = tally.histogram(list(store.predictions(code, "K1", 1).values()), 0.25, 6.0, 0.05)
    assert width == pytest.approx(0.15) and len(counts) == 39
    assert {i: n for i, n in enumerate(counts) if n} == {8: 1, 11: 1, 18: 1}
    assert store.submissions(code, a.id) == 1  # one item and round, however often it changed


def test_only_the_teachers_key_moves_the_class(store):
    code, key = code_of(store)
    with pytest.raises(ClassError) as refused:
        classes.move(store, code, "not-the-key", PROJECTOR, "1.2.3", now=T0)
    assert refused.value.code == "no_class" and store.get(code).step == "1.1.1"  # the same answer as a wrong code
    classes.move(store, code, key, PROJECTOR, "1.2.3", now=T0 + 5)
    assert store.get(code).step == "1.2.3" and store.get(code).active == T0 + 5
    with pytest.raises(ClassError):
        classes.end(store, code, key[:-1] + ("x" if key[-1] != "x" else "y"), now=T0)


def test_a_wrong_code_and_a_full_class_are_refused(store):
    code, _ = code_of(store)
    with pytest.raises(ClassError) as wrong:
        classes.join(store, "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY", "10.0.0.1", now=T0)
    assert wrong.value.code == "no_class"
    for i in range(5):
        classes.join(store, code, f"10.0.1.{i}", now=T0)
    with pytest.raises(ClassError) as full:
        classes.join(store, code, "10.0.1.9", now=T0)
    assert full.value.code == "full" and len(store.students(code)) == 5


def test_joining_at_once_never_passes_the_limit(store):
    code, _ = code_of(store)
    results: list = []

    def try_join(i):
        try:
            results.append(classes.join(store, code, f"10.0.2.{i}", now=T0))
        except ClassError as exc:
            results.append(exc.code)

    threads = [threading.Thread(target=try_join, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for r in results if r == "full") == 11 and len(store.students(code)) == 5


def test_the_rate_limit_and_the_submission_limit(store):
    code, _ = code_of(store)
    for i in range(classes.JOIN_ATTEMPTS):  # wrong codes count too: guessing is what the limit stops
        with pytest.raises(ClassError):
            classes.join(store, "AAAAAA" if code != "AAAAAA" else "BBBBBB", "10.9.9.9", now=T0 + i * 0.1)
    with pytest.raises(ClassError) as many:
        classes.join(store, code, "10.9.9.9", now=T0 + 20)
    assert many.value.code == "too_many"
    assert classes.join(store, code, "10.9.9.9", now=T0 + 61)  # the next minute
    s = classes.join(store, code, "10.9.9.8", now=T0)
    for item in ("K1", "K2", "K3"):
        classes.predict(store, code, s.id, item, 1, 1.0, now=T0)
    with pytest.raises(ClassError) as limit:
        classes.predict(store, code, s.id, "K4", 1, 1.0, now=T0)
    assert limit.value.code == "limit"
    classes.predict(store, code, s.id, "K1", 1, 2.0, now=T0)  # changing a kept one is no new submission
    for bad in (float("nan"), float("inf"), "2"):
        with pytest.raises(ClassError):
            classes.predict(store, code, s.id, "K1", 1, bad, now=T0)
    with pytest.raises(ClassError):
        classes.predict(store, code, "not-a-student", "K1", 1, 1.0, now=T0)


def test_a_class_ended_or_idle_leaves_nothing(store):
    code, key = code_of(store)
    s = classes.join(store, code, "10.0.3.1", now=T0)
    classes.predict(store, code, s.id, "K1", 1, 1.2, now=T0)
    assert classes.rename(store, code, s.id, "  Ada  L. ", now=T0) == "Ada L."
    for bad in ("x" * (classes.NAME_CHARS + 1), " ", "a\x07b"):
        with pytest.raises(ClassError):
            classes.rename(store, code, s.id, bad, now=T0)
    assert [x.name for x in store.students(code)] == ["Ada L."]
    classes.end(store, code, key, now=T0 + 1)
    assert store.get(code) is None and store.students(code) == [] and store.predictions(code, "K1", 1) == {}
    assert store.submissions(code, s.id) == 0 and code not in store.codes()
    if hasattr(store, "r"):  # Redis: no key of the class is left
        assert list(store.r.scan_iter(match=f"class:{code}*")) == []
    idle, _ = classes.start(store, Limits(idle_s=600), now=T0)
    kept, _ = classes.start(store, Limits(idle_s=600), now=T0 + 500)
    assert classes.sweep(store, now=T0 + 700) == [idle] and store.get(idle) is None and store.get(kept) is not None
    with pytest.raises(ClassError):
        classes.join(store, kept, "10.0.3.2", now=T0 + 500 + 601)  # idle past its time: ended on the next touch
    assert store.get(kept) is None


def test_a_second_process_reads_what_the_first_wrote(tmp_path):
    """A replica restarting (or another one) loses nothing the store holds."""
    url = f"sqlite:///{tmp_path / 'class.db'}"
    code, _ = classes.start(open_store(url), now=T0)
    classes.join(open_store(url), code, "10.0.4.1", now=T0)
    again = open_store(url)
    assert len(again.students(code)) == 1 and classes.live(again, code, now=T0).code == code


@pytest.mark.parametrize("bad", [{"students": 0}, {"submissions": 1001}, {"prompt_chars": 2.5}, {"idle_s": 10},
                                 {"idle_s": float("nan")}, {"students": True}])
def test_limits_are_checked(bad):
    with pytest.raises(ConfigError):
        Limits(**bad)


def test_a_store_is_named_by_its_url():
    with pytest.raises(ConfigError, match="sqlite:///path or redis://"):
        open_store("mysql://x")
    assert classes.normal_code(" ab-c d9 ") == "ABCD9"


def test_the_teachers_summary_names_nothing_but_the_generated_names(store):
    code, key = code_of(store)
    a = classes.join(store, code, "10.0.5.1", now=T0)
    b = classes.join(store, code, "10.0.5.2", now=T0)
    classes.rename(store, code, b.id, "Lin", now=T0)
    classes.predict(store, code, a.id, "K1", 1, 1.5, now=T0)
    classes.predict(store, code, b.id, "K1", 2, 2.5, now=T0)
    with pytest.raises(ClassError):
        classes.summary(store, code, "wrong", now=T0)
    out = classes.summary(store, code, key, now=T0)
    assert [s["name"] for s in out["students"]] == [a.name, "Lin"]
    assert out["predictions"] == [{"name": a.name, "item": "K1", "round": 1, "value": 1.5},
                                  {"name": "Lin", "item": "K1", "round": 2, "value": 2.5}]
    assert a.id not in repr(out) and key not in repr(out)  # no device id, no key
    with pytest.raises(ClassError):
        classes.predict(store, code, a.id, "K:1", 1, 1.0, now=T0)


def test_a_second_vote_after_the_discussion(store):
    """Peer instruction: the teacher opens the second round; a prediction then goes to round 2, round 1 kept; the
    next step starts at round 1 again."""
    code, key = code_of(store)
    s = classes.join(store, code, "10.0.6.1", now=T0)
    assert store.get(code).round == 1
    classes.predict(store, code, s.id, "K2", store.get(code).round, 1.5, now=T0)
    with pytest.raises(ClassError):
        classes.second_round(store, code, "nope", now=T0)
    classes.second_round(store, code, key, now=T0 + 1)
    classes.predict(store, code, s.id, "K2", store.get(code).round, 3.0, now=T0 + 2)
    assert store.predictions(code, "K2", 1) == {s.id: 1.5} and store.predictions(code, "K2", 2) == {s.id: 3.0}
    classes.move(store, code, key, PROJECTOR, "1.2.7", now=T0 + 3)
    assert store.get(code).round == 1


def test_the_chapters_answers_counted(store):
    """A chapter's question on the projector: how many answered right, and the most common wrong answer."""
    code, key = code_of(store)
    students = [classes.join(store, code, f"10.0.7.{i}", now=T0) for i in range(4)]
    for s, (given, right) in zip(students, ((96.0, True), (24.0, False), (24.0, False), (48.0, False)), strict=True):
        classes.answer(store, code, s.id, "1.1", given, right, 96.0, now=T0)  # one question: 96 is right
    assert tally.answer_stats(store, code, "1.1") == (1, 4, (0.25, 2, 24.0))  # 24 of 96: a quarter, by two
    classes.answer(store, code, students[1].id, "1.1", 96.0, True, 96.0, now=T0)  # tried again: replaced
    assert tally.answer_stats(store, code, "1.1") == (2, 4, (0.25, 1, 24.0))  # a tie with x0.5: the smaller
    assert tally.answer_stats(store, code, "1.2") == (0, 0, None)
    assert store.submissions(code, students[1].id) == 1
    for chapter in ("1.2", "2.1"):  # predictions and answers share the limit of 3 (code_of's)
        classes.answer(store, code, students[1].id, chapter, 1.0, False, 2.0, now=T0)
    with pytest.raises(ClassError) as limit:
        classes.predict(store, code, students[1].id, "K1", 1, 1.0, now=T0)
    assert limit.value.code == "limit"
    classes.end(store, code, key, now=T0)
    assert store.answers(code, "1.1") == {}
    if hasattr(store, "r"):
        assert list(store.r.scan_iter(match=f"class:{code}*")) == []


def test_the_classs_own_requests(store):
    """§3.2's workload: each student submits a prompt (a later one replaces it, unapproved again); only the teacher
    approves them and sees them; each student reads back what the run drew for theirs."""
    code, key = code_of(store)
    a, b = (classes.join(store, code, f"10.0.8.{i}", now=T0 + i) for i in range(2))
    assert classes.submit_prompt(store, code, a.id, "  济南的冬天  是 ", now=T0 + 5) == "济南的冬天 是"
    classes.submit_prompt(store, code, b.id, "The list of", now=T0 + 6)
    with pytest.raises(ClassError):
        classes.submit_prompt(store, code, b.id, "x" * 201, now=T0)
    with pytest.raises(ClassError):
        classes.workload(store, code, "nope", now=T0)
    assert [(w["name"], w["text"], w["approved"]) for w in classes.workload(store, code, key, now=T0)] == [
        (a.name, "济南的冬天 是", False), (b.name, "The list of", False)]
    assert classes.approve(store, code, key, [(a.id, "济南的冬天 是")], now=T0) == 1
    assert [w["approved"] for w in classes.workload(store, code, key, now=T0)] == [True, False]
    classes.submit_prompt(store, code, b.id, "Return the", now=T0 + 9)  # changed after the teacher read it:
    assert classes.approve(store, code, key, [(b.id, "The list of")], now=T0) == 0  # what was read is not approved
    assert [(w["text"], w["approved"]) for w in classes.workload(store, code, key, now=T0)] == [
        ("济南的冬天 是", True), ("Return the", False)]
    assert store.submissions(code, b.id) == 1
    classes.put_results(store, code, key, {a.id: {"text": "天气", "ttft_ms": 12.5}}, now=T0)
    assert store.result(code, a.id) == {"text": "天气", "ttft_ms": 12.5} and store.result(code, b.id) is None
    classes.end(store, code, key, now=T0)
    assert store.prompts(code) == [] and store.result(code, a.id) is None


def test_nothing_is_written_for_a_class_that_just_ended(store):
    """Review finding: a write that passed its check before the end must not leave rows or keys behind; and a
    class's leftovers (however made) go at the next sweep."""
    from llmviz.classroom.store import Student

    code, key = code_of(store)
    s = classes.join(store, code, "10.0.9.1", now=T0)
    classes.end(store, code, key, now=T0)
    assert store.add_student(code, Student("ab", "Late", T0), 5) == ("gone", None)
    assert not store.put_prediction(code, s.id, "K1", 1, 1.0, 5)
    assert not store.put_answer(code, s.id, "1.1", 1.0, True, 1.0, 5)
    assert not store.put_prompt(code, s.id, "late", T0, 5)
    store.put_result(code, s.id, {"text": "late"})
    assert not store.set_step(code, "1.2.1", T0) and not store.lead(code, PROJECTOR, T0, 30.0, True)
    store.touch(code, T0)
    assert store.get(code) is None and store.students(code) == [] and store.result(code, s.id) is None
    if hasattr(store, "r"):
        assert list(store.r.scan_iter(match=f"class:{code}*")) == []
        store.r.hset("class:ZZZZZZ:pred:K1:1", "x", "1.0")  # an orphan, as a crash could leave
        classes.sweep(store, now=T0)
        assert list(store.r.scan_iter(match="class:ZZZZZZ*")) == []
    else:
        import sqlite3

        with sqlite3.connect(store.path) as db:
            held = {t: db.execute(f"SELECT COUNT(*) FROM {t} WHERE code = ?", (code,)).fetchone()[0]
                    for t in ("students", "predictions", "answers", "prompts", "results", "classes")}
            db.execute("INSERT INTO predictions VALUES ('ZZZZZZ', 'x', 'K1', 1, 1.0)")  # an orphan
        assert set(held.values()) == {0}
        classes.sweep(store, now=T0)
        with sqlite3.connect(store.path) as db:
            assert db.execute("SELECT COUNT(*) FROM predictions").fetchone()[0] == 0


def test_sixty_students_sixty_names(store):
    code, _ = classes.start(store, Limits(students=60), now=T0)
    names = [classes.join(store, code, f"10.1.0.{i}", now=T0).name for i in range(60)]
    assert len(set(names)) == 60


def test_the_rate_limits_keep_no_address_past_their_window(tmp_path):
    """SQLite: a window's counters go when it is past, every address's, not only the next one counted."""
    import sqlite3

    store = open_store(f"sqlite:///{tmp_path / 'class.db'}")
    for i in range(3):
        store.hit(f"join:10.2.0.{i}", 60.0, T0 + 60 * i)
    with sqlite3.connect(store.path) as db:
        assert [k for (k,) in db.execute("SELECT key FROM hits")] == ["join:10.2.0.2"]
    classes.start(store, now=T0)  # the command line's (no client): not counted
    for _ in range(classes.STARTS):
        classes.start(store, now=T0, client="10.2.0.9")
    with pytest.raises(ClassError) as many:
        classes.start(store, now=T0, client="10.2.0.9")
    assert many.value.code == "too_many_starts" and "an hour" in str(many.value)  # its own window, not a minute


def test_a_class_starts_only_at_a_step_of_the_lesson(store):
    """Issue 47, finding 10: `--step 9.9.9` was kept, and every student page of that class then failed."""
    from llmviz.analysis.lesson_plan import POSITIONS

    with pytest.raises(ClassError) as bad:
        classes.start(store, now=T0, step="9.9.9", steps=POSITIONS)
    assert bad.value.code == "bad_value" and store.codes() == []
    code, _ = classes.start(store, now=T0, step="4.2.1", steps=POSITIONS)
    assert store.get(code).step == "4.2.1"



def test_a_machine_meant_to_have_redis_fails_rather_than_skips(monkeypatch):
    """Issue 48 (8): where .ci/run found redis-server it says so (LLMVIZ_EXPECT_REDIS); a store test that then
    cannot find it fails instead of skipping silently; elsewhere it skips with the reason."""
    import redis_server

    monkeypatch.setenv(redis_server.EXPECTED, "1")
    with pytest.raises(pytest.fail.Exception, match="says this machine has it"):
        redis_server.absent()
    monkeypatch.delenv(redis_server.EXPECTED)
    with pytest.raises(pytest.skip.Exception, match="redis-server is absent"):
        redis_server.absent()
